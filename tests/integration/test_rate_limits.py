"""Rate limits are the destination's: every dispatcher takes its send slots from one
bucket per destination in the database, and none claims more for a destination than
it can send within ``max_rate_wait``."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from core.cases import Herald
from core.channels.base import Delivery, DeliveryResult
from core.clock import ManualClock
from core.dispatcher import PART_WINDOW, Dispatcher, DispatcherConfig
from core.ratelimit import RateLimit, RateLimits, spacing
from tests.support.channels import RecordingChannel
from tests.support.dispatching import settle

ALICE = "local:alice"
FIVE = RateLimit(rate=5.0, burst=5.0)


async def test_two_dispatchers_share_one_bucket(herald: Herald, clock: ManualClock) -> None:
    store, now = herald.store, clock.now()
    first = await store.reserve_slots({"webhook:https://a/": (20, FIVE)}, now=now, window=2)
    second = await store.reserve_slots(
        {"webhook:https://a/": (20, FIVE), "webhook:https://b/": (3, FIVE)}, now=now, window=2
    )
    a1, a2 = first["webhook:https://a/"].times, second["webhook:https://a/"].times
    # the burst of 5, then one every 0.21 s (0.2 s and room for a late send) up to 2 s:
    # 14 in all, split between them
    step = spacing(FIVE)
    assert (len(a1), len(a2)) == (14, 0)
    assert second["webhook:https://a/"].next_free == now + 10 * step
    assert second["webhook:https://b/"].times == [now] * 3  # another destination
    clock.advance(1)  # five more slots come free, whoever asks
    third = await store.reserve_slots({"webhook:https://a/": (20, FIVE)}, now=clock.now(), window=2)
    assert len(third["webhook:https://a/"].times) == 5


def dispatcher(herald: Herald, channel: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_rate_wait=2, rate_limits=RateLimits.parse("log:=5/s:5"))
    return Dispatcher(
        herald.store, {"log": channel}, clock=herald.clock, config=config, rng=random.Random(2)
    )


async def test_a_claim_keeps_only_what_its_destination_takes_in_time(
    herald: Herald, clock: ManualClock
) -> None:
    for i in range(30):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"m{i}")
    clock.advance(60)
    a, b = RecordingChannel(), RecordingChannel()
    first = dispatcher(herald, a)
    assert await first.pump() == 30
    await settle(first)
    # 14 fit within 2 s at 5/s (a burst of 5, then one every 0.21 s); 16 were handed
    # back at once, due when the bucket has room, so no one holds them meanwhile
    assert len(a.deliveries) == 14
    counts = await herald.store.job_counts()
    assert (counts.get("delivered"), counts.get("pending"), counts.get("claimed")) == (14, 16, None)
    second = dispatcher(herald, b)
    assert await second.pump() == 0  # nothing is due for another dispatcher either
    clock.advance(3)
    assert (await second.drain(retry_window=10)).outcomes["delivered"] == 16
    keys = Counter(d.idempotency_key for d in a.deliveries + b.deliveries)
    assert len(keys) == 30 and set(keys.values()) == {1}


async def test_a_providers_pause_holds_for_every_dispatcher(
    herald: Herald, clock: ManualClock
) -> None:
    """One dispatcher hears 429 with Retry-After: 30; another, which never talked to
    the provider, sends nothing to that destination before the 30 s are over."""
    answers = iter([DeliveryResult.retry("slow down", 429, retry_after=30)])
    told = RecordingChannel(lambda d: next(answers))
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="first")
    clock.advance(60)
    assert (await dispatcher(herald, told).drain()).outcomes["retrying"] == 1
    paused_at = clock.now()
    await herald.create_schedule(ALICE, to="log:", when="in 1 second", text="second")
    clock.advance(1)
    other = RecordingChannel()
    late = dispatcher(herald, other)
    await late.drain()  # claims "second", but its slot is after the pause: handed back
    assert other.deliveries == []
    clock.set(paused_at + timedelta(seconds=30))
    assert (await late.drain()).outcomes["delivered"] == 2
    assert {d.body for d in other.deliveries} == {"first", "second"}


async def test_late_slots_are_not_sent_together(herald: Herald, clock: ManualClock) -> None:
    """A dispatcher that stalls holds slots whose time has passed: it does not send
    them at once (that would crowd the provider), but at the limit's pace, taking
    fresh slots for the ones too late."""
    for i in range(10):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"m{i}")
    clock.advance(60)
    sent_at: list[float] = []
    start = clock.now()

    def record(d: Delivery) -> DeliveryResult:
        sent_at.append((clock.now() - start).total_seconds())
        return DeliveryResult.ok()

    config = DispatcherConfig(max_rate_wait=60, rate_limits=RateLimits.parse("log:=2/s"))
    d = Dispatcher(herald.store, {"log": RecordingChannel(record)}, clock=clock, config=config)
    step = spacing(RateLimit(rate=2.0, burst=1.0)).total_seconds()  # 0.5 s and room
    assert await d.pump() == 10  # slots one every step; the sends have not started
    clock.advance(3)  # the loop stalls for 3 s: six slots are in the past
    await settle(d)
    # the others went at the limit's pace, none in a rush after the stall; the six too
    # late took fresh slots from the shared bucket, after them, in this dispatcher (not
    # handed back to the queue to be claimed again)
    assert sent_at[:4] == pytest.approx([6 * step, 7 * step, 8 * step, 9 * step])
    assert sent_at[4:] == pytest.approx([(10 + i) * step for i in range(6)])
    counts = await herald.store.job_counts()
    assert (counts.get("delivered"), counts.get("pending")) == (10, None)
    assert all(b - a >= 0.5 for a, b in zip(sent_at, sent_at[1:], strict=False))


async def test_a_limit_the_dispatcher_cannot_reach_does_not_slow_it(
    herald: Herald, clock: ManualClock
) -> None:
    """A generous limit (1,000/s) on a dispatcher that sends slower than that (two at a
    time, 0.1 s each): jobs that reach the front after their slot take a fresh one in
    the dispatcher. None goes back to the queue to be claimed again (which, for every
    job of a burst, made a generous limit far slower than none)."""
    for i in range(40):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"m{i}")
    clock.advance(60)

    def slow(d: Delivery) -> DeliveryResult:
        clock.advance(0.1)
        return DeliveryResult.ok()

    config = DispatcherConfig(
        concurrency=2, max_rate_wait=10, rate_limits=RateLimits.parse("log:=1000/s:1000")
    )
    channel = RecordingChannel(slow)
    d = Dispatcher(herald.store, {"log": channel}, clock=clock, config=config)
    assert await d.pump() == 40
    await settle(d)
    counts = await herald.store.job_counts()
    assert (counts.get("delivered"), counts.get("pending")) == (40, None)
    assert sorted(d.body for d in channel.deliveries) == sorted(f"m{i}" for i in range(40))
    attempts = await herald.store.job_attempts(list(range(1, 41)))
    assert len(attempts) == 40  # one try each: nothing was handed back and tried again


async def test_jobs_waiting_for_fresh_slots_are_answered_when_the_first_is_cancelled(
    herald: Herald, clock: ManualClock
) -> None:
    """Jobs that miss their slots share one reservation. The first of them cancelled
    meanwhile (a lease lost), the others still get their slots, one after the other."""
    config = DispatcherConfig(max_rate_wait=60, rate_limits=RateLimits.parse("log:=2/s"))
    d = Dispatcher(herald.store, {"log": RecordingChannel()}, clock=clock, config=config)
    limit = RateLimit(rate=2.0, burst=1.0)
    reserved = _count_calls(herald.store, "reserve_slots")
    asker = asyncio.create_task(d._rates.fresh_slot("log:", limit))
    joined = [asyncio.create_task(d._rates.fresh_slot("log:", limit)) for _ in range(3)]
    await asyncio.sleep(0)  # all four have asked
    asker.cancel()
    slots = await asyncio.wait_for(asyncio.gather(*joined), timeout=30)
    assert None not in slots and slots == sorted(slots) and len(set(slots)) == 3
    assert reserved == [3]  # one reservation, for the three still waiting (none wasted)
    # the next to miss a slot asks anew and gets one after theirs
    later = await d._rates.fresh_slot("log:", limit)
    assert later is not None and later > slots[-1]
    assert reserved == [3, 1]


async def test_jobs_missing_their_slots_meanwhile_share_the_next_reservation(
    herald: Herald, clock: ManualClock
) -> None:
    """One reservation at a time: jobs that miss their slots while one is under way
    wait for it to end and share the next (not one transaction each)."""
    config = DispatcherConfig(max_rate_wait=60, rate_limits=RateLimits.parse("log:=100/s"))
    d = Dispatcher(herald.store, {"log": RecordingChannel()}, clock=clock, config=config)
    limit = RateLimit(rate=100.0, burst=1.0)
    reserved = _count_calls(herald.store, "reserve_slots")
    first = asyncio.create_task(d._rates.fresh_slot("log:", limit))
    for _ in range(3):
        await asyncio.sleep(0)  # the first reservation is under way
    rest = [asyncio.create_task(d._rates.fresh_slot("log:", limit)) for _ in range(5)]
    slots = await asyncio.wait_for(asyncio.gather(first, *rest), timeout=30)
    assert None not in slots and len(set(slots)) == 6
    assert reserved == [1, 5]


def _count_calls(store: Any, name: str) -> list[int]:
    """The number of slots each call of ``store.<name>`` asked for (patched on the
    instance: the real transaction still runs)."""
    calls: list[int] = []
    real = getattr(store, name)

    async def counted(wanted: Any, **kwargs: Any) -> Any:
        calls.append(sum(n for n, _ in wanted.values()))
        return await real(wanted, **kwargs)

    setattr(store, name, counted)
    return calls


async def test_one_feeder_starts_what_several_claims_took(
    herald: Herald, clock: ManualClock
) -> None:
    """Claims in a row hand what they cannot start at once to one feeder, which starts
    it a part at a time in order of due time (a feeder per claim put several parts at
    once in the queue for sending slots, and their last jobs missed their slots)."""
    for i in range(40):
        await herald.create_schedule(ALICE, to="log:", when=f"in {60 + i} seconds", text=f"m{i}")
    clock.advance(100)
    channel = RecordingChannel()
    config = DispatcherConfig(
        concurrency=2, batch_size=10, rate_limits=RateLimits.parse("log:=1000/s:1000")
    )
    d = Dispatcher(herald.store, {"log": channel}, clock=clock, config=config)
    # two claims of ten; a third when the first sends were recorded while the second
    # claim waited for its database (a PostgreSQL round trip lets them run)
    assert await d.pump() in (20, 30)
    assert d._feeder.running
    await settle(d)
    assert not d._feeder.running
    await d.drain()
    assert [x.body for x in channel.deliveries] == [f"m{i}" for i in range(40)]


async def test_the_feeders_part_shrinks_while_sends_come_late_after_their_slots(
    herald: Herald, clock: ManualClock
) -> None:
    """A part waits for sending slots behind the part before it: on a machine too slow
    to send two parts within the slot grace, the part shrinks (never below 8) until
    sends keep their slots, and grows back to the concurrency once they do."""
    d = Dispatcher(herald.store, {"log": RecordingChannel()}, clock=clock)
    grace, sizes = d.config.slot_grace, []
    for _ in range(8):
        for _ in range(PART_WINDOW):
            d._feeder.record_lateness(0.8 * grace)
        sizes.append(d._feeder.part)
    assert sizes == sorted(sizes, reverse=True) and sizes[0] < 64 and sizes[-1] == 8
    for _ in range(PART_WINDOW):
        # neither near the grace nor well within it: as it was
        d._feeder.record_lateness(0.45 * grace)
    assert d._feeder.part == 8
    for _ in range(10 * PART_WINDOW):
        d._feeder.record_lateness(0.1 * grace)
    assert d._feeder.part == d.config.concurrency == 64


async def test_a_job_waiting_for_a_fresh_slot_holds_no_sending_slot(
    herald: Herald, clock: ManualClock
) -> None:
    """A job that missed its slot waits for a fresh one (a transaction that may queue
    for the write lock) without one of the sending slots: held, a slow machine's late
    jobs took every sending slot while nothing was in flight."""
    await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="late")
    clock.advance(60)
    channel = RecordingChannel()
    config = DispatcherConfig(concurrency=1, rate_limits=RateLimits.parse("log:=1000/s:1000"))
    d = Dispatcher(herald.store, {"log": channel}, clock=clock, config=config)
    assert await d.pump() == 1  # its slot is now
    clock.advance(1)  # the loop stalled: far past the slot's grace
    gate, asked = asyncio.Event(), asyncio.Event()
    real = herald.store.reserve_slots

    async def slow(*args: Any, **kwargs: Any) -> Any:
        asked.set()
        await gate.wait()  # the write lock is busy elsewhere
        return await real(*args, **kwargs)

    herald.store.reserve_slots = slow  # type: ignore[method-assign]
    await asyncio.wait_for(asked.wait(), timeout=30)
    reserving = d._rates.reserving_fresh
    assert reserving is not None and not reserving.done()  # it asked, and waits
    assert d._feeder.sending == 0 and not d._events()[0].locked()  # its sending slot is free
    gate.set()
    await settle(d)
    assert [x.body for x in channel.deliveries] == ["late"]
