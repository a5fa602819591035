"""The bounds of a bulk import (issue 32, finding 3), through the use case on SQLite and
PostgreSQL: lines and bytes a call, an API token's lines a minute on the injected clock,
a refusal that lists the first bad lines and counts the rest, and the quota of a token
whose member is in the terminal's exempt ``local`` tenant."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.actors import Principal, Surface
from core.cases import Herald, ImportRateExceeded, ImportRejected, ImportTooLarge, import_schedules
from core.clock import ManualClock
from core.settings import load_settings
from core.store import Store
from core.tenancy import QuotaExceeded
from tests.conftest import START

ALICE = "local:alice"


def _herald(store: Store, db_url: str, clock: ManualClock, **extra: Any) -> Herald:
    settings = load_settings(
        HERALD_DATABASE_URL=db_url, HERALD_DEFAULT_TZ="UTC", _env_file=None, **extra
    )
    return Herald(store, settings, clock)


def _lines(n: int, tag: str = "m") -> list[str]:
    return [json.dumps({"to": "log:", "when": "in 1 hour", "text": f"{tag}{i}"}) for i in range(n)]


def _token(token_id: str, member: str = ALICE) -> Principal:
    """``member`` as a request through the API token ``token_id`` makes it."""
    return Principal(member, "local", surface=Surface.API, via=token_id)


async def _count(herald: Herald, member: str = ALICE) -> int:
    return len(await herald.list_schedules(member))


async def test_a_refusal_lists_the_first_20_bad_lines_and_counts_them_all(
    db_url: str, store: Store
) -> None:
    herald = _herald(store, db_url, ManualClock(START))
    bad = ['{"to": "log:", "when": "whenever", "text": "x"}'] * 40
    too_long = json.dumps({"to": "log:", "when": "in 1 hour", "text": "y" * 70_000})
    with pytest.raises(ImportRejected) as refused:
        await import_schedules(herald, ALICE, [*_lines(2), too_long, *bad])
    assert refused.value.count == 41
    assert [n for n, _ in refused.value.invalid] == list(range(3, 23))
    assert refused.value.invalid[0][1] == "longer than 65,536 bytes, which no schedule needs"
    assert str(refused.value).startswith("Nothing imported: 41 bad line(s); the first is line 3")
    assert str(refused.value).endswith("(the first 20 are listed, and 21 more).")
    assert await _count(herald) == 0
    report = await import_schedules(herald, ALICE, [*_lines(2), *bad], skip_invalid=True)
    assert (report.imported, report.invalid_count, len(report.invalid)) == (2, 40, 20)


async def test_an_import_past_its_lines_or_bytes_is_refused_before_a_line_is_checked(
    db_url: str, store: Store
) -> None:
    herald = _herald(
        store,
        db_url,
        ManualClock(START),
        HERALD_IMPORT_MAX_LINES=3,
        HERALD_IMPORT_MAX_BYTES=200,
    )
    with pytest.raises(ImportTooLarge, match=r"at most 3 lines \(HERALD_IMPORT_MAX_LINES\)"):
        await import_schedules(herald, ALICE, ["not json"] * 4)  # refused unread
    # under 200 characters, but over 200 bytes of UTF-8 (each é is two)
    line = json.dumps({"to": "log:", "when": "in 1 hour", "text": "é" * 80}, ensure_ascii=False)
    assert len(line) < 200 < len(line.encode())
    with pytest.raises(ImportTooLarge, match=r"at most 200 bytes \(HERALD_IMPORT_MAX_BYTES\)"):
        await import_schedules(herald, ALICE, [line])
    assert await _count(herald) == 0
    assert (await import_schedules(herald, ALICE, "\n".join(_lines(3)))).imported == 3


async def test_an_api_tokens_lines_a_minute_on_the_clock(db_url: str, store: Store) -> None:
    clock = ManualClock(START)
    herald = _herald(store, db_url, clock, HERALD_IMPORT_LINES_PER_MINUTE=10)
    assert (await import_schedules(herald, _token("t1"), _lines(6, "a"))).imported == 6
    clock.advance(20)
    with pytest.raises(ImportRateExceeded, match="may import at most 10 lines a minute") as r:
        await import_schedules(herald, _token("t1"), _lines(5, "b"))
    assert r.value.retry_after == 40  # when the first 6 leave the minute
    assert await _count(herald) == 6
    # another token has its own minute; the terminal has none
    assert (await import_schedules(herald, _token("t2"), _lines(5, "c"))).imported == 5
    assert (await import_schedules(herald, ALICE, _lines(11, "d"))).imported == 11
    with pytest.raises(ImportRateExceeded, match="this import has 11: split it"):
        await import_schedules(herald, _token("t3"), _lines(11, "e"))
    clock.advance(40)
    assert (await import_schedules(herald, _token("t1"), _lines(5, "b"))).imported == 5


async def test_a_token_of_a_local_member_is_bound_by_the_quota(db_url: str, store: Store) -> None:
    herald = _herald(
        store,
        db_url,
        ManualClock(START),
        HERALD_QUOTA_SCHEDULES_PER_MEMBER=3,
        HERALD_QUOTA_EXEMPT_TOKENS="hk_free",
    )
    with pytest.raises(QuotaExceeded, match="may have at most 3"):
        await import_schedules(herald, _token("t1"), _lines(4))
    assert await _count(herald) == 0
    # the same member at the terminal (the exempt local tenant), and a listed token
    assert (await import_schedules(herald, ALICE, _lines(4))).imported == 4
    assert (await import_schedules(herald, _token("free"), _lines(4, "f"))).imported == 4
    with pytest.raises(QuotaExceeded):
        await herald.create_schedule(_token("t1"), to="log:", when="in 1 hour", text="one")


async def test_a_line_names_its_zone_as_the_api_does(db_url: str, store: Store) -> None:
    """``timezone`` as the API's requests and answers say it; ``tz`` still read; both
    only when they agree (issue 33: one name for one thing)."""
    herald = _herald(store, db_url, ManualClock(START))
    line = {"to": "log:", "when": "tomorrow at 9", "text": "x"}
    report = await import_schedules(
        herald,
        ALICE,
        [
            json.dumps({**line, "timezone": "Europe/Berlin"}),
            json.dumps({**line, "tz": "Asia/Tokyo"}),
            json.dumps({**line, "tz": "UTC", "timezone": "UTC"}),
        ],
    )
    assert report.imported == 3
    zones = sorted(s.timezone for s in await herald.list_schedules(ALICE))
    assert zones == ["Asia/Tokyo", "Europe/Berlin", "UTC"]
    with pytest.raises(ImportRejected) as refused:
        await import_schedules(
            herald, ALICE, [json.dumps({**line, "tz": "UTC", "timezone": "Asia/Tokyo"})]
        )
    assert refused.value.invalid == [(1, "give timezone or tz (its older name), not both")]
