"""Issue 40, a review's findings proven on SQLite and PostgreSQL: a ladder in flight
when its schedule's until-done rule is edited away or changed, acknowledged messages
archived with the rest of the finished history, and a decision on a held message
that races its edit on PostgreSQL's row locks."""

from __future__ import annotations

from datetime import timedelta

from core.cases import Herald
from core.channels.base import Delivery, DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher
from core.models import JobState
from tests.integration.test_until_done import (
    CONFIG,
    NEXT_NINE,
    NINE,
    Place,
    channels_for,
    dispatcher,
    jobs,
    place,
    run_until,
    until_done_schedule,
)

__all__ = ["dispatcher", "place"]  # the fixtures of test_until_done, used here


async def test_until_done_edited_away_mid_ladder_stops_its_nags(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    """An edit that sends the schedule plainly again stops the occurrence's waiting
    nags and escalations; nothing of its ladder is posted as a plain message."""
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    first, nag = place.sent
    await herald.edit_schedule(place.owner, sid, until_done=False)
    await run_until(dispatcher, clock, NEXT_NINE - timedelta(minutes=1))
    assert place.sent[2:] == []
    steps = [j for j in await jobs(herald, sid) if j.ladder]
    assert {j.state for j in steps} == {JobState.DELIVERED, JobState.CANCELLED}


async def test_a_changed_rule_stops_the_old_ladder_and_done_still_edits(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    """A new rule is the next occurrence's: the old rule's waiting steps stop (its
    escalation level gone, none is left to send), and Done still edits the message."""
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    first, _nag = place.sent
    await herald.edit_schedule(place.owner, sid, until_done={"nag": "30m"})
    done = await herald.mark_done(place.carol, int(place.button_of(first)), seen_in=place.channel)
    assert done.stopped == 0  # the edit stopped them already
    await run_until(dispatcher, clock, NEXT_NINE + timedelta(minutes=31))
    edit, following, nag = place.sent[2:]
    assert (edit.edit, edit.id) == (True, first.id)
    assert (following.at, nag.at, nag.reply_to) == (
        NEXT_NINE,
        NEXT_NINE + timedelta(minutes=30),
        following.id,
    )


async def test_done_pressed_then_the_schedule_paused_still_edits_the_message(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    """Pausing cancels what waits to be sent, but not the edit saying who marked the
    message done: that Done happened."""
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    first, _nag = place.sent
    await herald.mark_done(place.carol, int(place.button_of(first)), seen_in=place.channel)
    await herald.pause_schedule(place.owner, sid)
    await run_until(dispatcher, clock, NINE + timedelta(hours=2))
    [edit] = place.sent[2:]
    assert (edit.edit, edit.id) == (True, first.id)
    assert edit.text.endswith(f"Done by {place.mention(place.carol)} at 09:20")


async def test_an_acknowledged_message_is_archived_with_the_finished_history(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    """A message someone marked done is finished history: archived past the
    retention like a delivered one, not kept in the job table for good."""
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    job_id = int(place.button_of(place.sent[0]))
    await herald.mark_done(place.carol, job_id, seen_in=place.channel)
    await run_until(dispatcher, clock, NINE + timedelta(hours=2))
    moved = await herald.store.archive_finished(before=clock.now())
    assert moved["jobs"] >= 1
    assert job_id not in {j.id for j in await jobs(herald, sid)}
    archived = await herald.store.archived_job(job_id, tenant=place.tenant)
    assert archived is not None and archived.state == JobState.ACKNOWLEDGED
    assert archived.done_by == place.carol.id


async def test_a_nag_failing_while_done_is_pressed_is_not_tried_again(
    herald: Herald, clock: ManualClock, place: Place
) -> None:
    """The nag being sent when Done is pressed may go out (at most that one), but one
    that fails then is not tried again after the message says it is done."""
    [(kind, channel)] = channels_for(place).items()
    send = channel.send
    pressed: list[int] = []

    async def fail_after_done(delivery: Delivery) -> DeliveryResult:
        if delivery.body.startswith("Still not done (reminder 2)") and not pressed:
            mine = await jobs(herald, delivery.schedule_id)
            [occurrence] = [
                j for j in mine if not j.ladder and j.occurrence_at == delivery.occurrence_at
            ]
            assert occurrence.id is not None
            await herald.mark_done(place.carol, occurrence.id, seen_in=place.channel)
            pressed.append(occurrence.id)
            return DeliveryResult.retry("rate limited", 429, retry_after=30)
        return await send(delivery)

    channel.send = fail_after_done  # type: ignore[method-assign]
    d = Dispatcher(herald.store, {kind: channel}, clock=clock, config=CONFIG)
    sid = await until_done_schedule(herald, place)
    try:
        await run_until(d, clock, NEXT_NINE - timedelta(minutes=1))
    finally:
        await channel.close()
    assert pressed
    first, nag1, edit = place.sent
    assert (nag1.at, edit.edit, edit.id) == (NINE + timedelta(minutes=15), True, first.id)
    [nag2] = [j for j in await jobs(herald, sid) if j.ladder == "nag 2"]
    assert nag2.state == JobState.CANCELLED
