"""Issue 40, a review's findings proven on SQLite and PostgreSQL: a ladder in flight
when its schedule's until-done rule is edited away or changed, acknowledged messages
archived with the rest of the finished history, and a decision on a held message
that races its edit on PostgreSQL's row locks."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from core import db
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


_AT = "2026-03-03 09:00:00"
_LADDER_JOB = (
    "INSERT INTO {table} (id, schedule_id, recipient, step, priority, occurrence_at, due_at,"
    " state, attempts, idempotency_key, created_at, updated_at, finished_at, ladder, done_by,"
    " done_at) VALUES (:id, 1, 0, 0, 1, :at, :at, :state, 1, :key, :at, :at, :at, :ladder, :by,"
    " :done_at)"
)
_ATTEMPT = (
    "INSERT INTO {table} (id, job_id, started_at, finished_at, outcome, worker, delayed)"
    " VALUES (:id, :job, :at, :at, 'ok', 'w', false)"
)


async def test_going_down_from_0019_leaves_no_attempt_of_a_deleted_step(db_url: str) -> None:
    """Down from 0019, the ladder steps deleted take their attempts with them (SQLite
    migrates with its foreign keys off: nothing cascades, and a later job given a
    deleted step's id would inherit its attempts), and an archived acknowledged
    message reads as delivered, as an active one does."""
    db.upgrade(db_url, "0019")
    engine = db.make_sync_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO schedule (id, tenant, owner, destination, body, expression,"
                    " timezone, starts_at, state, version, created_at, updated_at)"
                    " VALUES (1, 'slack:TA', 'slack:U1', 'slack:C0OPS', 'x', 'x', 'UTC',"
                    " :at, 'active', 1, :at, :at)"
                ),
                {"at": _AT},
            )
            for table, base in (("job", 0), ("job_archive", 10)):
                for n, (ladder, state) in enumerate(
                    (("", "acknowledged"), ("nag 1", "delivered"), ("done", "delivered"))
                ):
                    done = ("slack:U2", _AT) if not ladder else (None, None)
                    conn.execute(
                        sa.text(_LADDER_JOB.format(table=table)),
                        {
                            "id": base + n + 1,
                            "at": f"2026-03-0{3 + base // 10} 09:00:00",
                            "state": state,
                            "key": f"k{base + n}",
                            "ladder": ladder,
                            "by": done[0],
                            "done_at": done[1],
                        },
                    )
                    attempts = "attempt" if table == "job" else "attempt_archive"
                    conn.execute(
                        sa.text(_ATTEMPT.format(table=attempts)),
                        {"id": base + n + 1, "job": base + n + 1, "at": _AT},
                    )
    finally:
        engine.dispose()

    db.downgrade(db_url, "0018")
    engine = db.make_sync_engine(db_url)
    try:
        with engine.connect() as conn:

            def rows(query: str) -> list[tuple[object, ...]]:
                return [tuple(r) for r in conn.execute(sa.text(query))]

            assert rows("SELECT id, state FROM job ORDER BY id") == [(1, "delivered")]
            assert rows("SELECT job_id FROM attempt ORDER BY id") == [(1,)]
            assert rows("SELECT id, state FROM job_archive ORDER BY id") == [(11, "delivered")]
            assert rows("SELECT job_id FROM attempt_archive ORDER BY id") == [(11,)]
    finally:
        engine.dispose()


async def test_done_still_works_on_a_message_sent_before_its_schedule_went_plain(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    """The message posted with its Done button keeps it after an edit to send plainly:
    pressing it marks the message done and edits it, it is no refusal."""
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    first, _nag = place.sent
    await herald.edit_schedule(place.owner, sid, until_done=False)
    done = await herald.mark_done(place.carol, int(place.button_of(first)), seen_in=place.channel)
    assert (done.already, done.by) == (False, place.carol.id)
    await run_until(dispatcher, clock, NINE + timedelta(hours=2))
    [edit] = place.sent[2:]
    assert (edit.edit, edit.id) == (True, first.id)
    assert edit.text.startswith("Check the backups\n\n")
