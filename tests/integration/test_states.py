"""A schedule's state says what its occurrences did, and lists filter by it: a one-off
is delivered, failed, retrying or pending (never "completed" when nothing was sent); a
recurring one is active, paused or ended with its last outcome."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from tests.support.channels import RecordingChannel

ALICE, ADMIN = "local:alice", "local:root-admin"
CONFIG = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=60)


def drain(herald: Herald, script=None):
    channel = RecordingChannel(script)
    d = Dispatcher(
        herald.store, {"log": channel}, clock=herald.clock, config=CONFIG, rng=random.Random(1)
    )
    return d.drain()


async def state_of(herald: Herald, schedule_id: int) -> str:
    return (await herald.show_schedule(ALICE, schedule_id)).schedule.shown_state


async def ids_in(herald: Herald, state: str) -> list[int]:
    return sorted(s.id for s in await herald.list_schedules(ALICE, state=state))  # type: ignore[misc]


async def test_one_offs_say_what_their_occurrence_did(herald: Herald, clock: ManualClock) -> None:
    ok, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="ok")
    gone, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="gone")
    flaky, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="flaky")
    later, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 hour", text="later")
    assert {await state_of(herald, s.id) for s in (ok, gone, flaky, later)} == {"pending"}

    def script(d):
        if d.body == "gone":
            return DeliveryResult.permanent("channel_not_found", 404)
        if d.body == "flaky":
            return DeliveryResult.retry("503", 503)
        return DeliveryResult.ok(200)

    clock.advance(60)
    await drain(herald, script)
    assert [await state_of(herald, s.id) for s in (ok, gone, flaky, later)] == [
        "delivered",
        "failed",
        "retrying",
        "pending",
    ]
    assert await ids_in(herald, "delivered") == [ok.id]
    assert await ids_in(herald, "failed") == [gone.id]
    assert await ids_in(herald, "retrying") == [flaky.id]
    assert await ids_in(herald, "pending") == [later.id]
    listed = {s.id: s.shown_state for s in await herald.list_schedules(ALICE)}
    assert "completed" not in listed.values()

    # the retry fails again: out of attempts, a dead letter, so failed
    clock.advance(3600)
    await drain(herald, script)
    assert await ids_in(herald, "failed") == sorted([gone.id, flaky.id])

    # an admin retries the dead letters: retrying; discarding one keeps it failed
    [first, second] = sorted(await herald.dead_letters(ADMIN), key=lambda x: x.schedule_id)
    await herald.retry_dead_letters(ADMIN, [first.job_id])
    await herald.discard_dead_letters(ADMIN, [second.job_id])
    assert await state_of(herald, gone.id) == "retrying"
    assert await state_of(herald, flaky.id) == "failed"
    await drain(herald)
    assert await state_of(herald, gone.id) == "delivered"


async def test_a_one_off_sent_too_late_is_failed(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(timedelta(hours=3))  # over the one-hour lateness limit
    assert (await drain(herald)).outcomes["expired"] == 1
    assert await state_of(herald, s.id) == "failed"


async def test_recurring_shows_its_lifecycle_and_last_outcome(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every day at 13:00", text="daily", tz="UTC"
    )
    assert await state_of(herald, s.id) == "active"
    clock.advance(timedelta(hours=1))
    await drain(herald, lambda d: DeliveryResult.permanent("gone", 404))
    assert await state_of(herald, s.id) == "active, last failed"
    assert await ids_in(herald, "failed") == [s.id]
    assert await ids_in(herald, "active") == [s.id]
    clock.advance(timedelta(days=1))
    await drain(herald)
    assert await state_of(herald, s.id) == "active, last delivered"
    assert await ids_in(herald, "failed") == []
    await herald.pause_schedule(ALICE, s.id)
    assert await state_of(herald, s.id) == "paused, last delivered"
    assert await ids_in(herald, "delivered") == [s.id]


async def test_an_unknown_state_is_refused_with_the_choices(herald: Herald) -> None:
    with pytest.raises(InvalidInput, match="use one of pending, retrying, delivered, failed"):
        await herald.list_schedules(ALICE, state="dead")
