from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from core.clock import ManualClock
from core.errors import ConfigError
from core.ratelimit import (
    LATENESS,
    TRANSIT,
    Pacer,
    Pauses,
    RateLimit,
    RateLimits,
    allocate,
    next_slot,
    parse_rate,
    pause,
    spacing,
)

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def seconds(slots: list[datetime]) -> list[float]:
    return [(s - T0).total_seconds() for s in slots]


def test_a_bucket_allows_a_burst_then_paces() -> None:
    one_per_second = RateLimit(rate=1.0, burst=3)
    slots, tat = allocate(None, T0, 5, one_per_second, window=10)
    # a second between sends, and room for one to start LATENESS after its slot and
    # arrive TRANSIT later than another
    step = 1.0 + LATENESS + TRANSIT
    assert seconds(slots) == pytest.approx([0.0, 0.0, 0.0, step, 2 * step])
    # the next caller, on this or another dispatcher, queues behind them
    more, tat = allocate(tat, T0, 2, one_per_second, window=10)
    assert seconds(more) == pytest.approx([3 * step, 4 * step])
    # the bucket fills again with time
    later = T0 + timedelta(seconds=60)
    again, _ = allocate(tat, later, 3, one_per_second, window=10)
    assert again == [later] * 3


def test_no_slot_beyond_the_window() -> None:
    hundred = RateLimit(rate=100.0, burst=100)
    slots, tat = allocate(None, T0, 3000, hundred, window=10)
    # a full bucket's 100 at once, then one every 10.7 ms (100/s with room for late
    # sends and uneven journeys) until the window ends; the next free slot is just past it
    step = (1.0 + LATENESS + TRANSIT) / 100
    assert seconds(slots[:100]) == [0.0] * 100
    assert max(seconds(slots)) <= 10.0 < seconds([next_slot(tat, T0, hundred)])[0] <= 10 + step
    # in no second do more than a burst plus the rate get a slot
    for start in range(1, 10):
        inside = [s for s in seconds(slots) if start <= s < start + 1]
        assert len(inside) <= 100


@pytest.mark.parametrize("rate", [100.0, 7.0, 1.0, 0.5])
def test_sends_up_to_lateness_late_never_crowd_a_window(rate: float) -> None:
    """Every other send arrives LATENESS + TRANSIT after its slot (it started as late
    as the dispatcher allows, and travelled that much longer than the others) and the
    rest on time: still no window of one second (of 60 s for a rate under one a second,
    e.g. 30/min) holds more than the limit, at the provider either."""
    limit = RateLimit(rate=rate, burst=1.0)
    slots, _ = allocate(None, T0, 10_000, limit, window=600)
    late = LATENESS + TRANSIT - 1e-6
    starts = [s + (late if i % 2 == 0 else 0.0) for i, s in enumerate(seconds(slots))]
    starts.sort()
    window, most = (1.0, rate) if rate >= 1 else (60.0, rate * 60)
    first = 0
    for last, at in enumerate(starts):
        while at - starts[first] >= window:
            first += 1
        assert last - first + 1 <= most


def test_limits_by_longest_prefix_else_the_channel_default() -> None:
    limits = RateLimits.parse(
        "webhook:https://hooks.internal/=200/s, webhook:https://hooks.internal/slow/=30/min:2"
    )
    default = RateLimit(rate=10.0, burst=10.0)
    fast = limits.for_destination("webhook:https://hooks.internal/a", default)
    slow = limits.for_destination("webhook:https://hooks.internal/slow/b", default)
    other = limits.for_destination("webhook:https://example.com/", default)
    assert (fast.rate, fast.burst) == (200.0, 1.0)
    assert (slow.rate, slow.burst) == (0.5, 2.0)
    assert other == default


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("webhook:https://x.org/?token=s3cret", "reads like 200/s"),
        ("webhook:https://x.org/s3cret", "PREFIX=RATE pairs"),
        ("webhook:https://x.org/=fast", "reads like 200/s"),
        ("slack:C1=0/s", "between 0 and 100000/s"),
        ("slack:C1=1/s:0", "A burst is between 1"),
    ],
)
def test_bad_limits_say_so_without_echoing_the_url(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        RateLimits.parse(text)
    assert "s3cret" not in str(caught.value)


def test_parse_rate_units() -> None:
    assert parse_rate("30/min") == RateLimit(rate=0.5, burst=1.0)
    assert parse_rate(" 5 / s : 20 ") == RateLimit(rate=5.0, burst=20.0)


def test_a_provider_pause_holds_only_that_destination() -> None:
    pauses = Pauses()
    pauses.pause("discord:1", T0 + timedelta(seconds=30))
    assert pauses.paused_until("discord:1", T0) == T0 + timedelta(seconds=30)
    assert pauses.paused_until("discord:2", T0) is None
    assert pauses.paused_until("discord:1", T0 + timedelta(seconds=31)) is None
    assert len(pauses) == 0


def test_a_burst_of_429s_is_news_once() -> None:
    """Sixty-four sends refused together each say Retry-After: 30 from a slightly
    later moment: the pause is shared with the other dispatchers once, not 64 times."""
    pauses = Pauses()
    answers = [T0 + timedelta(seconds=30, milliseconds=i) for i in range(64)]
    assert [pauses.pause("discord:1", at) for at in answers].count(True) == 1
    assert pauses.pause("discord:1", T0 + timedelta(seconds=20)) is False  # shorter
    assert pauses.pause("discord:1", T0 + timedelta(seconds=60)) is True  # longer


def test_the_pacer_spaces_sends_whatever_their_slots_say() -> None:
    pacer, limit, t0 = Pacer(), RateLimit(rate=2.0, burst=2.0), datetime(2026, 1, 1, tzinfo=UTC)
    step = spacing(limit).total_seconds()  # 0.5 s, and room for a late send
    # the burst of two, and one more: a send late on its slot does not delay the rest
    assert [pacer.take("a", t0, limit) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert pacer.take("a", t0, limit) == pytest.approx(step)  # then one every step
    assert pacer.take("b", t0, limit) == 0.0  # another destination has its own pace
    assert pacer.take("a", t0 + timedelta(seconds=step), limit) == 0.0
    assert pacer.take("a", t0 + timedelta(seconds=step), limit) == pytest.approx(step)


def test_a_pause_moves_the_next_slot_past_it() -> None:
    limit, t0 = RateLimit(rate=10.0, burst=5.0), datetime(2026, 1, 1, tzinfo=UTC)
    until = t0 + timedelta(seconds=30)
    tat = pause(None, until, limit)
    assert next_slot(tat, t0, limit) == until
    slots, _ = allocate(tat, t0, 3, limit, window=60)
    # after a pause sends resume at the pace, not with a burst that the provider has
    # just said it cannot take
    step = spacing(limit).total_seconds()
    assert [(s - until).total_seconds() for s in slots] == pytest.approx([0, step, 2 * step])
    later = t0 + timedelta(seconds=40)
    assert pause(later, until, limit) == later  # an earlier pause never shortens a wait


async def test_sleepers_wake_in_order_at_their_own_moments() -> None:
    clock, t0 = ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), datetime(2026, 1, 1, tzinfo=UTC)
    seen: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        seen.append((name, (clock.now() - t0).total_seconds()))

    await asyncio.gather(sleeper("c", 3), sleeper("a", 1), sleeper("b", 2))
    assert seen == [("a", 1.0), ("b", 2.0), ("c", 3.0)]  # not 1, 3, 6


def test_no_slot_before_the_jobs_are_due() -> None:
    """Jobs claimed ahead of their time get slots from when they are due: a slot
    before that would be past its grace by the time they are sent."""
    limit = RateLimit(rate=10.0, burst=1.0)
    due = T0 + timedelta(seconds=0.3)
    slots, _ = allocate(None, T0, 3, limit, window=10, start=due)
    step = spacing(limit).total_seconds()
    assert seconds(slots) == pytest.approx([0.3, 0.3 + step, 0.3 + 2 * step])
    # a bucket already busy past that moment keeps its order
    busy = T0 + timedelta(seconds=1)
    later, _ = allocate(busy, T0, 1, limit, window=10, start=due)
    assert later == [busy]
