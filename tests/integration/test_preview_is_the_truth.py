"""Issue 33, "previews are the truth": the preview every surface shows
(``Herald.preview_when``) reads a time exactly as ``create_schedule`` stores it for the
same member — in the member's zone (``herald timezone``), with the configured default
time — for every phrase of the time-phrase table, read in five zones.

On SQLite, through the use cases; the surfaces' own tests are in
tests/e2e/test_when_zone.py, tests/api/test_api_when_zone.py,
tests/slack/test_preview_zone.py and tests/tui/test_form_preview.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.errors import InvalidInput
from core.preview import ZoneSource
from core.settings import Settings, load_settings
from core.store import Store
from tests.conftest import FULL
from tests.support.time_phrases import NOW, SAID, TABLE
from tests.support.time_phrases import instant as at

#: Five zones: west and east of UTC, a southern DST, a half-hour offset without DST
#: and a half-hour DST change.
ZONES = ["America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata"]
ZONES.append("Australia/Lord_Howe")
#: Every phrase of the table once, with the "now" it is read at.
PHRASES = sorted({(phrase, now) for _, phrase, _, now, _ in TABLE})
#: and the times people write (issue 33), each with the time it is read at
PHRASES += sorted({(phrase, NOW) for _, phrase, *_ in SAID} - set(PHRASES))
#: The phrases compared: every one in `make reliability`; every third in the default
#: run (a third of a minute of saves; each row's own reading is proven by
#: tests/unit/test_timeexpr_phrases.py, here only that the preview and the save agree)
COMPARED = PHRASES if FULL else PHRASES[::3]


def member_of(zone: str) -> str:
    return "local:" + zone.lower().replace("/", "-").replace("_", "-")


@pytest.fixture
def settings(sqlite_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_DEFAULT_TIME="07:45",  # not 09:00: the preview must take the setting too
        HERALD_TENANT_DEFAULT_TIMES="slack:T1=08:15",
        _env_file=None,
    )


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    s = await Store.open(sqlite_url)
    try:
        yield s
    finally:
        await s.close()


def test_every_row_of_the_table_is_compared() -> None:
    assert len(PHRASES) >= 75 and len(ZONES) == 5


async def test_the_preview_is_what_the_schedule_stores(store: Store, settings: Settings) -> None:
    setup = Herald(store, settings, ManualClock(at("2026-01-01T00:00:00Z")))
    for zone in ZONES:
        await setup.set_timezone(member_of(zone), zone)
    compared = refused = 0
    mismatches: list[str] = []
    for phrase, now in COMPARED:
        herald = Herald(store, settings, ManualClock(at(now)))
        for zone in ZONES:
            member = member_of(zone)
            try:
                shown = await herald.preview_when(member, phrase, count=2)
            except InvalidInput as exc:
                with pytest.raises(InvalidInput) as saved:
                    await herald.create_schedule(member, to="log:", when=phrase, text="x")
                assert str(saved.value) == str(exc), (zone, phrase)
                refused += 1
                continue
            s, created = await herald.create_schedule(member, to="log:", when=phrase, text="x")
            assert created
            told = (shown.zone, shown.reading.rule, shown.reading.first, shown.occurrences[0])
            kept = (s.timezone, s.rrule, s.starts_at, s.next_run_at)
            if told != kept or shown.source is not ZoneSource.MEMBER:
                mismatches.append(f"{zone} {phrase!r}: preview {told}, saved {kept}")
            # the member's zone, unless the phrase names one ("… PST", "… Europe/Berlin")
            assert shown.zone == zone or shown.zone == shown.reading.timezone != zone
            compared += 1
    assert not mismatches, "\n".join(mismatches)
    assert compared >= 4 * len(COMPARED)  # most phrases read in every zone
    assert compared + refused == len(COMPARED) * len(ZONES)


async def test_a_zone_given_with_the_request_wins_as_it_does_for_a_save(
    store: Store, settings: Settings
) -> None:
    herald = Herald(store, settings, ManualClock(at("2026-03-06T15:00:00Z")))
    await herald.set_timezone("local:berliner", "Europe/Berlin")
    shown = await herald.preview_when("local:berliner", "every weekday", tz="tokyo")
    s, _ = await herald.create_schedule(
        "local:berliner", to="log:", when="every weekday", text="x", tz="tokyo"
    )
    assert (shown.zone, shown.source) == ("Asia/Tokyo", ZoneSource.GIVEN)
    assert shown.reading.rule == s.rrule and shown.occurrences[0] == s.next_run_at
    assert shown.reading.default_time is not None
    assert f"{shown.reading.default_time:%H:%M}" == "07:45"
    nobody = await herald.preview_when("local:newcomer", "tomorrow at 9")
    assert (nobody.zone, nobody.source) == ("UTC", ZoneSource.DEFAULT)
    # a tenant's own default time (HERALD_TENANT_DEFAULT_TIMES), as its saves take it
    slack = Principal("slack:U7", "slack:T1")
    shown = await herald.preview_when(slack, "every weekday")
    s, _ = await herald.create_schedule(slack, to="log:", when="every weekday", text="x")
    assert shown.reading.default_time is not None
    assert f"{shown.reading.default_time:%H:%M}" == "08:15"
    assert (shown.reading.rule, shown.occurrences[0]) == (s.rrule, s.next_run_at)
