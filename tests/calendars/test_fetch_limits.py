"""Calendar fetches within limits and behind the network guard: redirects (at most 3,
never inside), a trickling server and oversized bodies cut off at the limits (small
limits here), and refusals that never quote what an internal server said."""

from __future__ import annotations

import time

import pytest

from core import calendars
from core.calendars import CalendarError, FetchLimits
from core.cases import Herald
from core.clock import ManualClock
from core.netguard import Guard
from core.settings import load_settings
from core.store import Store
from tests.conftest import START
from tests.fakes.hostile import SECRET_BODY, SECRET_REASON, HostileServer
from tests.support.guard import INSIDE, OUTSIDE, Pair, Rebinding, pair

__all__ = ["pair"]  # the fixture

pytestmark = pytest.mark.timeout(60)


async def fetch(url: str, limits: FetchLimits | None = None) -> calendars.Fetched:
    return await calendars.fetch(url, guard=Rebinding(times=10**6).guard(), limits=limits)


async def refusal(url: str, limits: FetchLimits | None = None) -> str:
    with pytest.raises(CalendarError) as refused:
        await fetch(url, limits)
    return str(refused.value)


# --- redirects ----------------------------------------------------------------------


async def test_up_to_three_redirects_are_followed(pair: Pair) -> None:
    got = await fetch(f"http://cal.test:{pair.port}/hops/2")  # 3 redirects in all
    assert got.body is not None and "Labour Day" in got.body
    assert pair.outside.paths == ["/hops/2", "/hops/1", "/hops/0", "/ok"]


async def test_a_fourth_redirect_is_refused(pair: Pair) -> None:
    url = f"http://cal.test:{pair.port}/hops/3"
    assert await refusal(url) == (
        f"{url} redirects more than 3 times; use the calendar's final URL."
    )
    assert pair.outside.paths == ["/hops/3", "/hops/2", "/hops/1", "/hops/0"]


async def test_a_redirect_inside_is_refused_without_asking_inside(pair: Pair) -> None:
    for target in (f"http://{INSIDE}:{pair.port}/secret", f"http://localhost:{pair.port}/secret"):
        url = f"http://cal.test:{pair.port}/to?url={target}"
        text = await refusal(url)
        assert text.startswith(f"{url} redirects to an internal address: ")
        assert "HERALD_WEBHOOK_ALLOW_PRIVATE" in text
    assert pair.inside.requests == []


async def test_a_redirect_to_another_scheme_is_refused(pair: Pair) -> None:
    url = f"http://cal.test:{pair.port}/to?url=file:///etc/passwd"
    assert "only http and https" in await refusal(url)


async def test_an_internal_calendar_url_is_refused_before_connecting(pair: Pair) -> None:
    text = await refusal(f"http://{INSIDE}:{pair.port}/secret")
    assert text.startswith(f"{INSIDE} is an internal address; ")
    text = await refusal(f"webcal://intranet.test:{pair.port}/secret")  # resolves inside
    assert text.startswith("intranet.test is an internal address; ")
    assert INSIDE not in text  # the internal address a name resolves to is not told
    assert pair.inside.requests == []


async def test_refusals_never_quote_the_server() -> None:
    # an inside server reached with the admin's permission, answering an error
    async with HostileServer(INSIDE) as inside:
        allowed = Rebinding(times=0)
        guard = Guard(allow_private=True, lookup=allowed)
        with pytest.raises(CalendarError) as failed:
            await calendars.fetch(f"http://inside.test:{inside.port}/secret", guard=guard)
        assert inside.paths == ["/secret"]
    text = str(failed.value)
    assert text == f"Fetching http://inside.test:{inside.port}/secret answered HTTP 500."
    assert SECRET_BODY not in text and SECRET_REASON not in text


# --- limits ---------------------------------------------------------------------------


async def test_a_trickling_server_is_cut_off_at_the_deadline() -> None:
    async with HostileServer(OUTSIDE, trickle_every=0.05) as slow:
        url = f"http://cal.test:{slow.port}/trickle"
        started = time.monotonic()
        text = await refusal(url, FetchLimits(deadline=0.5))
        elapsed = time.monotonic() - started
    assert text == (
        f"{url} did not finish within 0.5 s, the most Herald waits for a calendar "
        "(HERALD_CALENDAR_FETCH_TIMEOUT)."
    )
    # each byte came well within any read timeout; only the whole-fetch deadline ends it
    assert 0.5 <= elapsed < 5


async def test_an_oversized_body_is_cut_off_while_streaming() -> None:
    limits = FetchLimits(max_bytes=64 * 1024)
    async with HostileServer(OUTSIDE) as big:
        url = f"http://cal.test:{big.port}/endless"
        assert await refusal(url, limits) == (
            f"{url} is larger than 64 KB, the most Herald reads from a calendar "
            "(HERALD_CALENDAR_MAX_BYTES)."
        )


async def test_a_declared_300_mb_body_is_refused_before_it_is_read() -> None:
    async with HostileServer(OUTSIDE) as big:
        url = f"http://cal.test:{big.port}/endless?declared={300 * 1024 * 1024}"
        text = await refusal(url)  # the default limits: 5 MB
        sent = big.sent
    assert text == (
        f"{url} is larger than 5 MB, the most Herald reads from a calendar "
        "(HERALD_CALENDAR_MAX_BYTES)."
    )
    assert sent < 50 * 1024 * 1024  # what the socket buffers took before the client left


async def test_a_compressed_body_is_inflated_only_up_to_the_limit() -> None:
    async with HostileServer(OUTSIDE) as bomb:
        url = f"http://cal.test:{bomb.port}/bomb"  # ~64 KB of gzip, 64 MB inflated
        text = await refusal(url, FetchLimits(max_bytes=1024 * 1024))
    assert text.startswith(f"{url} is larger than 1 MB")


async def test_a_calendar_within_the_limits_is_read() -> None:
    async with HostileServer(OUTSIDE) as server:
        got = await fetch(f"http://cal.test:{server.port}/ok", FetchLimits(max_bytes=4096))
    assert got.body is not None and "Labour Day" in got.body


async def test_the_service_uses_the_configured_limits(sqlite_url: str) -> None:
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_CALENDAR_MAX_BYTES="2048",
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",
        _env_file=None,
    )
    assert settings.calendar_limits() == FetchLimits(deadline=20.0, max_bytes=2048)
    store = await Store.open(sqlite_url)
    try:
        herald = Herald(store, settings, ManualClock(START))
        async with HostileServer(INSIDE) as big:
            url = f"http://{INSIDE}:{big.port}/endless"
            with pytest.raises(CalendarError, match=r"larger than 2 KB"):
                await herald.load_calendar(await herald.actor("local:ada"), url)
            # without the admin's permission the guard refuses the inside address
            strict = load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None)
            herald = Herald(store, strict, ManualClock(START))
            with pytest.raises(CalendarError, match="internal address"):
                await herald.load_calendar(await herald.actor("local:ada"), url)
            assert big.paths == ["/endless"]
    finally:
        await store.close()
