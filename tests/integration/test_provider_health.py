"""Providers' shared health (issue 36, failover): the ``provider_health`` rows every
dispatcher reads, on SQLite and PostgreSQL, and two dispatchers' ProviderHealth (two
Store instances: two connection pools, as two processes) sharing a mark within
HEALTH_TTL. Time is injected (the marks' clock and the reading's monotonic clock): no
sleeps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from core.channels.failover import HEALTH_TTL, ProviderHealth
from core.store import Store
from tests.conftest import START

T = START


class Ticks:
    """The clocks a ProviderHealth is given: ``now`` (the dispatcher's) and
    ``monotonic`` (the age of its reading), both moved by hand."""

    def __init__(self) -> None:
        self.at = T
        self.mono = 1000.0

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)
        self.mono += seconds


@pytest.fixture
async def other(db_url: str, store: Store) -> AsyncIterator[Store]:
    """A second dispatcher's Store on the same database (its own pool)."""
    second = await Store.open(db_url)
    try:
        yield second
    finally:
        await second.close()


def health(store: Store, ticks: Ticks, cooldown: float = 60.0) -> ProviderHealth:
    h = ProviderHealth(cooldown, now=ticks.now, monotonic=ticks.monotonic)
    h.store = store
    return h


# --- the rows ---------------------------------------------------------------------------


async def test_a_mark_lasts_its_cool_down_and_a_later_one_never_shortens_it(
    store: Store,
) -> None:
    await store.mark_provider_down("twilio", T + timedelta(seconds=60), "Twilio answered 503.")
    [down] = await store.providers_down(T)
    assert (down.provider, down.until, down.reason) == (
        "twilio",
        T + timedelta(seconds=60),
        "Twilio answered 503.",
    )
    assert await store.providers_down(T + timedelta(seconds=59)) != []
    assert await store.providers_down(T + timedelta(seconds=60)) == []  # ended on the dot

    await store.mark_provider_down("sendgrid", T + timedelta(seconds=600), "429, Retry-After 600.")
    await store.mark_provider_down("sendgrid", T + timedelta(seconds=60), "503.")
    [down] = await store.providers_down(T + timedelta(seconds=60))
    assert down.until == T + timedelta(seconds=600)  # not shortened
    assert down.reason == "503."  # the last failure's words
    await store.mark_provider_down("sendgrid", T + timedelta(seconds=900), "x" * 5000)
    [down] = await store.providers_down(T + timedelta(seconds=60))
    assert down.until == T + timedelta(seconds=900)  # a longer one lengthens it
    assert len(down.reason) == 2000  # cut


async def test_marking_up_ends_the_mark_for_everyone_and_keeps_the_row(
    store: Store, other: Store
) -> None:
    await other.mark_provider_up("mailgun", now=T)  # never marked: no row
    assert await store.provider_health() == []
    await store.mark_provider_down("twilio", T + timedelta(seconds=60), "refused")
    await store.mark_provider_down("vonage", T + timedelta(seconds=60), "503")
    await other.mark_provider_up("twilio", now=T + timedelta(seconds=5))
    assert [d.provider for d in await store.providers_down(T + timedelta(seconds=5))] == ["vonage"]
    rows = {row.provider: row for row in await store.provider_health()}
    assert list(rows) == ["twilio", "vonage"]  # the console's list, by name
    assert rows["twilio"].down_until == T + timedelta(seconds=5)
    assert rows["twilio"].reason == "refused"  # why it was last down

    await store.mark_provider_up("vonage", now=T + timedelta(seconds=90))  # ended already
    rows = {row.provider: row for row in await store.provider_health()}
    assert rows["vonage"].down_until == T + timedelta(seconds=60)  # left as it was

    await store.mark_provider_down("twilio", T + timedelta(seconds=80), "timeout")
    down = {d.provider: d for d in await store.providers_down(T + timedelta(seconds=20))}
    assert (down["twilio"].until, down["twilio"].reason) == (  # a new cool-down
        T + timedelta(seconds=80),
        "timeout",
    )


# --- two dispatchers ----------------------------------------------------------------------


async def test_a_mark_by_one_dispatcher_is_seen_by_another_within_the_ttl(
    store: Store, other: Store
) -> None:
    ticks = Ticks()
    first, second = health(store, ticks), health(other, ticks)
    await second.refresh()  # the second read the marks just before: none
    assert second.held("twilio") is None

    await first.mark_down("twilio", "Twilio refused the connection.", None)
    assert first.held("twilio") is not None  # at once in the process that found it
    ticks.advance(HEALTH_TTL / 2)
    await second.refresh()
    assert second.held("twilio") is None  # its reading is younger than the TTL
    ticks.advance(HEALTH_TTL / 2)
    await second.refresh()
    mark = second.held("twilio")
    assert mark is not None
    assert mark.until == T + timedelta(seconds=60)  # the first's cool-down, not its own
    assert await second.turn("twilio") is None  # skipped: never probed by the second

    late = health(other, ticks)  # a third, started now: it reads before sending
    assert set(await late.down()) == {"twilio"}
    assert await late.turn("twilio") is None


async def test_a_longer_mark_elsewhere_is_read_and_a_probes_answer_ends_it_for_everyone(
    store: Store, other: Store
) -> None:
    ticks = Ticks()
    first, second = health(store, ticks, cooldown=30), health(other, ticks, cooldown=30)
    await first.mark_down("twilio", "503", None)  # until T+30
    ticks.advance(HEALTH_TTL)
    await second.refresh()
    assert second.held("twilio") is not None

    # the second dispatcher marks it again, longer: the first's reading catches up
    ticks.advance(10)
    await second.mark_down("twilio", "429, Retry-After 120", 120.0)  # until T+132
    ticks.advance(25)  # the first's own cool-down is over; the shared one is not
    await first.refresh()
    mark = first.held("twilio")
    assert mark is not None
    assert mark.until == T + timedelta(seconds=HEALTH_TTL + 10 + 120)

    # it ended: the first probes Twilio while the second finds it down once more ...
    ticks.advance(100)
    await first.refresh()
    assert await first.turn("twilio") is True  # the probe
    await second.mark_down("twilio", "timeout", None)
    assert await store.providers_down(ticks.at) != []
    # ... and the probe's answer ends that mark for every dispatcher
    await first.answered("twilio", probe=True)
    first.probed("twilio")
    assert await first.turn("twilio") is False  # trusted: no more probes
    assert await store.providers_down(ticks.at) == []
    ticks.advance(HEALTH_TTL)
    await second.refresh()
    assert second.held("twilio") is None
    assert await second.turn("twilio") is True  # not trusted there: its next send probes
