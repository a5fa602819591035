"""Messages sent until done (core.until_done): their ladders' steps written when an
occurrence's message is delivered, and Done.

:func:`write_sqlite` and :func:`write_pg` run inside the transaction of
:meth:`core.store.queue.QueueQueries.finish`, only for a batch holding a delivered
message of a schedule sent until done: each such message gets its steps (nags,
escalations) as pending jobs, each with its own idempotency key; one that was marked done
while it was being sent (Done pressed before its outcome was recorded) is acknowledged
instead and gets only its ``done`` edit. :meth:`LadderQueries.mark_done` is Done: the
occurrence acknowledged, the steps still waiting cancelled (one already being sent goes
out: at most that one; failing, it is cancelled when its retry is recorded,
:func:`retried_steps`) and the ``done`` edit written, in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa

from core import until_done
from core.errors import InvalidInput, NotFound
from core.models import OPEN_STATE_VALUES, JobState
from core.store.base import (
    ATTEMPT,
    JOB,
    SCHEDULE,
    AuditEntry,
    Gateway,
    new_idempotency_key,
    sqlite_datetime,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from core.store.queue import Settled

_STEP = """
INSERT INTO job (schedule_id, recipient, occurrence_at, due_at, destination, state,
    attempts, idempotency_key, created_at, updated_at, priority, ladder, thread, done_by,
    done_at)
VALUES (%s, %s, %s, %s, %s, 'pending', 0, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (schedule_id, recipient, occurrence_at, ladder) DO NOTHING
"""
_MARKED = "SELECT id, done_by, done_at FROM job WHERE id IN {ids} AND done_at IS NOT NULL"
# A step going back to wait for a retry whose message was marked done meanwhile.
_STOP_AFTER_DONE = """
UPDATE job SET state = 'cancelled', finished_at = %s, updated_at = %s
WHERE id IN {ids} AND state = 'retrying' AND EXISTS (
    SELECT 1 FROM job AS m WHERE m.schedule_id = job.schedule_id
        AND m.recipient = job.recipient AND m.occurrence_at = job.occurrence_at
        AND m.ladder = '' AND m.done_at IS NOT NULL)
"""
# PostgreSQL: each such step's message, its row lock shared so that a Done being
# written is waited for and read (a Done that comes after cancels the step itself).
_PG_MESSAGES_OF = """
SELECT s.id, m.done_at FROM job AS s JOIN job AS m ON m.schedule_id = s.schedule_id
    AND m.recipient = s.recipient AND m.occurrence_at = s.occurrence_at AND m.ladder = ''
WHERE s.id = ANY(%s)
FOR SHARE OF m
"""
_ACKNOWLEDGE = "UPDATE job SET state = 'acknowledged' WHERE id IN {ids} AND state = 'delivered'"


class _Db(Protocol):
    """The SQLite recorder of core.store.queue (``%s`` parameters, ``{ids}`` a list)."""

    def rows(self, statement: str, params: tuple[Any, ...]) -> list[Any]: ...
    def run(self, statement: str, params: tuple[Any, ...]) -> None: ...
    def many(self, statement: str, rows: list[tuple[Any, ...]]) -> None: ...
    @staticmethod
    def ids(ids: Sequence[int]) -> Any: ...
    @staticmethod
    def at(value: datetime | None) -> Any: ...


def sent_until_done(results: Sequence[Settled], owned: set[int]) -> list[Settled]:
    """The occurrences' messages of the batch, still this worker's, delivered, of a
    schedule sent until done (empty, at the cost of a dict lookup each, otherwise)."""
    return [
        r
        for r in results
        if r.state == JobState.DELIVERED.value
        and not r.job.ladder
        and until_done.OPTION in r.job.options
        and r.job.id in owned
    ]


def retried_steps(results: Sequence[Settled], owned: set[int]) -> list[int]:
    """The batch's nags and escalations, still this worker's, going back to wait for a
    retry: Done pressed while one was being sent lets that one go out, not come again
    later (:func:`stop_after_done_sqlite`, :func:`stop_after_done_pg`)."""
    return [
        r.job.id
        for r in results
        if r.state == JobState.RETRYING.value
        and r.job.ladder
        and until_done.step_kind(r.job.ladder) != until_done.DONE
        and r.job.id in owned
    ]


def stop_after_done_sqlite(db: _Db, retried: Sequence[int], now: datetime) -> None:
    """Cancel the ``retried`` steps whose message is done (SQLite writes one
    transaction at a time: a Done is written wholly before or after this)."""
    at = db.at(now)
    db.run(_STOP_AFTER_DONE, (at, at, db.ids(retried)))


async def stop_after_done_pg(conn: AsyncConnection, retried: Sequence[int], now: datetime) -> None:
    """Cancel the ``retried`` steps whose message is done, on PostgreSQL."""
    found = await conn.exec_driver_sql(_PG_MESSAGES_OF, (list(retried),))
    rows: list[Any] = list(found.all())
    done = [row[0] for row in rows if row[1] is not None]
    if done:
        await conn.exec_driver_sql(
            "UPDATE job SET state = 'cancelled', finished_at = %s, updated_at = %s "
            "WHERE id = ANY(%s) AND state = 'retrying'",
            (now, now, done),
        )


@dataclass(frozen=True, slots=True)
class _Row:
    schedule_id: int
    recipient: int
    occurrence_at: datetime
    due: datetime
    destination: str | None
    priority: int
    ladder: str
    thread: str | None
    done_by: str | None
    done_at: datetime | None


def _rows(
    sent: Sequence[Settled], marked: dict[int, tuple[str, datetime]], now: datetime
) -> list[_Row]:
    """Each message's steps: its ladder, or (marked done while it was sent) its edit."""
    rows: list[_Row] = []
    for r in sent:
        job = r.job
        message = r.attempt.message_id if r.attempt is not None else None
        if job.id in marked:
            if message is not None and until_done.edits(job.destination):
                by, at = marked[job.id]
                rows.append(_done_row(job, message, by, at, now))
            continue
        rule = until_done.of_options(job.options)
        if rule is None:
            continue
        for step in until_done.steps(rule, now, message):
            escalation = step.destination is not None
            rows.append(
                _Row(
                    job.schedule_id,
                    job.recipient,
                    job.occurrence_at,
                    step.due,
                    step.destination if escalation else job.destination,
                    job.priority,
                    step.ladder,
                    # an escalation is a message of its own: it names where the
                    # occurrence's went (the job's destination); a nag replies
                    job.destination if escalation else step.thread,
                    None,
                    None,
                )
            )
    return rows


def _done_row(job: Any, message: str, by: str, at: datetime, now: datetime) -> _Row:
    return _Row(
        job.schedule_id,
        job.recipient,
        job.occurrence_at,
        now,
        job.destination,
        job.priority,
        until_done.DONE,
        message,
        by,
        at,
    )


def write_sqlite(db: _Db, sent: Sequence[Settled], now: datetime) -> None:
    """The ladders of ``sent`` (see :func:`sent_until_done`), on SQLite's recorder."""
    ids = db.ids([r.job.id for r in sent])
    marked = {row[0]: (row[1], _as_time(row[2])) for row in db.rows(_MARKED, (ids,))}
    if marked:
        db.run(_ACKNOWLEDGE, (db.ids(list(marked)),))
    at = db.at(now)
    db.many(
        _STEP,
        [
            (
                s.schedule_id,
                s.recipient,
                db.at(s.occurrence_at),
                db.at(s.due),
                s.destination,
                new_idempotency_key(),
                at,
                at,
                s.priority,
                s.ladder,
                s.thread,
                s.done_by,
                db.at(s.done_at),
            )
            for s in _rows(sent, marked, now)
        ],
    )


async def write_pg(conn: AsyncConnection, sent: Sequence[Settled], now: datetime) -> None:
    """The ladders of ``sent`` (see :func:`sent_until_done`), on PostgreSQL."""
    ids = [r.job.id for r in sent]
    found = await conn.exec_driver_sql(
        "SELECT id, done_by, done_at FROM job WHERE id = ANY(%s) AND done_at IS NOT NULL",
        (ids,),
    )
    rows_found: list[Any] = list(found.all())
    marked: dict[int, tuple[str, datetime]] = {r[0]: (r[1], r[2]) for r in rows_found}
    if marked:
        await conn.exec_driver_sql(
            "UPDATE job SET state = 'acknowledged' WHERE id = ANY(%s) AND state = 'delivered'",
            (list(marked),),
        )
    rows = [
        (
            s.schedule_id,
            s.recipient,
            s.occurrence_at,
            s.due,
            s.destination,
            new_idempotency_key(),
            now,
            now,
            s.priority,
            s.ladder,
            s.thread,
            s.done_by,
            s.done_at,
        )
        for s in _rows(sent, marked, now)
    ]
    if rows:
        await conn.exec_driver_sql(_STEP, rows)


def _as_time(value: Any) -> datetime:
    return value if isinstance(value, datetime) else sqlite_datetime(value)


@dataclass(frozen=True)
class Done:
    """What Done did: the occurrence's job, who marked it done and when (the first
    one's, when it was done already), and how many waiting steps it stopped."""

    job_id: int
    schedule_id: int
    by: str
    at: datetime
    already: bool
    stopped: int
    #: Where the occurrence's message went (its job's destination).
    destination: str
    #: Seconds from its delivery to this Done (None: done while being sent, or again).
    waited: float | None = None


@dataclass(frozen=True)
class DoneJob:
    """An occurrence of a schedule sent until done, as Done reads it."""

    job_id: int
    schedule_id: int
    tenant: str
    owner: str
    state: str
    ladder: str
    destination: str
    options: dict[str, Any]
    done_by: str | None
    done_at: datetime | None
    #: Whether its delivery wrote a ladder (steps of its occurrence exist): it was sent
    #: with a Done button even if its schedule has been edited to send plainly since.
    laddered: bool = False


@dataclass(frozen=True)
class Awaiting:
    """A delivered message waiting for someone to mark it done (the console's view)."""

    job_id: int
    schedule_id: int
    tenant: str
    owner: str
    destination: str
    body: str
    delivered_at: datetime | None
    #: Its steps sent so far, and those still waiting.
    nags_sent: int
    steps_waiting: int


#: The other steps of a message's occurrence (its ladder), beside the job read.
STEP = JOB.alias("step")


def _steps_counted(*where: sa.ColumnElement[bool]) -> sa.ScalarSelect[int]:
    """How many steps of the read job's ladder match ``where``."""
    return (
        sa.select(sa.func.count())
        .where(
            STEP.c.schedule_id == JOB.c.schedule_id,
            STEP.c.recipient == JOB.c.recipient,
            STEP.c.occurrence_at == JOB.c.occurrence_at,
            *where,
        )
        .scalar_subquery()
    )


class LadderQueries(Gateway):
    """Done, and what waits for it."""

    async def done_job(self, job_id: int) -> DoneJob | None:
        """The occurrence ``job_id`` with its schedule's tenant, owner and options, and
        whether its ladder was written (None: no such job)."""
        query = (
            sa.select(
                JOB.c.id,
                JOB.c.schedule_id,
                SCHEDULE.c.tenant,
                SCHEDULE.c.owner,
                JOB.c.state,
                JOB.c.ladder,
                sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination),
                SCHEDULE.c.options,
                JOB.c.done_by,
                JOB.c.done_at,
                _steps_counted(STEP.c.ladder != ""),
            )
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(JOB.c.id == job_id)
        )
        async with self._read() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        options = row[7] if isinstance(row[7], dict) else json.loads(row[7] or "{}")
        return DoneJob(*row[:7], options, row[8], row[9], bool(row[10]))

    async def mark_done(self, job_id: int, *, by: str, now: datetime, audit: AuditEntry) -> Done:
        """Done on occurrence ``job_id``, in one transaction: acknowledged with who and
        when, its waiting steps cancelled, the edit of its message written (when the
        message is known and can be edited), and the audit row. Pressed while the
        message is being sent, who and when are kept and the recording of its outcome
        acknowledges it (:func:`write_sqlite`). Done again says who did it first and
        changes nothing. InvalidInput for a message not sent yet or past sending."""
        async with self._session() as s:
            conn = await s.connection()
            row = (
                await conn.execute(
                    sa.select(
                        JOB.c.schedule_id,
                        JOB.c.recipient,
                        JOB.c.occurrence_at,
                        JOB.c.state,
                        JOB.c.done_by,
                        JOB.c.done_at,
                        sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination),
                        JOB.c.priority,
                        JOB.c.finished_at,
                    )
                    .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
                    .where(JOB.c.id == job_id)
                    .with_for_update(of=JOB)
                )
            ).first()
            if row is None:
                raise NotFound(f"There is no message {job_id}.")
            schedule_id, recipient, occurrence, state, done_by, done_at, dest, rank, sent = row
            if done_by is not None:
                return Done(job_id, schedule_id, done_by, done_at, True, 0, dest)
            if state not in (JobState.DELIVERED.value, JobState.CLAIMED.value):
                raise InvalidInput(_not_doable(state))
            values: dict[str, Any] = {"done_by": by, "done_at": now, "updated_at": now}
            if state == JobState.DELIVERED.value:
                values["state"] = JobState.ACKNOWLEDGED.value
            await conn.execute(sa.update(JOB).where(JOB.c.id == job_id).values(**values))
            stopped = 0
            if state == JobState.DELIVERED.value:
                stopped = (
                    await conn.execute(
                        sa.update(JOB)
                        .where(
                            JOB.c.schedule_id == schedule_id,
                            JOB.c.recipient == recipient,
                            JOB.c.occurrence_at == occurrence,
                            JOB.c.ladder != "",
                            JOB.c.state.in_((JobState.PENDING.value, JobState.RETRYING.value)),
                        )
                        .values(state=JobState.CANCELLED.value, finished_at=now, updated_at=now)
                    )
                ).rowcount
                message = await self._message_of(conn, job_id)
                if message is not None and until_done.edits(dest):
                    await conn.execute(
                        sa.insert(JOB).values(
                            schedule_id=schedule_id,
                            recipient=recipient,
                            occurrence_at=occurrence,
                            due_at=now,
                            destination=dest,
                            state=JobState.PENDING.value,
                            attempts=0,
                            idempotency_key=new_idempotency_key(),
                            created_at=now,
                            updated_at=now,
                            priority=rank,
                            ladder=until_done.DONE,
                            thread=message,
                            done_by=by,
                            done_at=now,
                        )
                    )
                    await self._notify_due(s)
            entry = replace(
                audit,
                object_type="job",
                object_id=str(job_id),
                details={**audit.details, "stopped": stopped},
            )
            await self._audit(s, entry, now)
        waited = None if sent is None else max((now - sent).total_seconds(), 0.0)
        return Done(job_id, schedule_id, by, now, False, stopped, dest, waited)

    @staticmethod
    async def _message_of(conn: AsyncConnection, job_id: int) -> str | None:
        """The provider's id of the message the job's delivered attempt posted."""
        found = await conn.execute(
            sa.select(ATTEMPT.c.provider_message_id)
            .where(
                ATTEMPT.c.job_id == job_id,
                ATTEMPT.c.outcome == "ok",
                ATTEMPT.c.provider_message_id.is_not(None),
            )
            .order_by(ATTEMPT.c.started_at.desc())
            .limit(1)
        )
        return found.scalar()

    async def awaiting_done(
        self,
        *,
        tenant: str | None,
        since: datetime,
        limit: int = 200,
        owner: str | None = None,
    ) -> list[Awaiting]:
        """Messages of schedules sent until done delivered since ``since`` that nobody
        marked done yet, the oldest first (a tenant's, or every tenant's with None; an
        owner's)."""
        sent = _steps_counted(
            STEP.c.ladder.like(f"{until_done.NAG} %"),
            STEP.c.state == JobState.DELIVERED.value,
        )
        waiting = _steps_counted(
            STEP.c.ladder != "",
            STEP.c.state.in_((*OPEN_STATE_VALUES, JobState.CLAIMED.value)),
        )
        query = (
            sa.select(
                JOB.c.id,
                JOB.c.schedule_id,
                SCHEDULE.c.tenant,
                SCHEDULE.c.owner,
                sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination),
                SCHEDULE.c.body,
                JOB.c.finished_at,
                sent,
                waiting,
            )
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(
                JOB.c.state == JobState.DELIVERED.value,
                JOB.c.finished_at >= since,  # ix_job_state_finished: recent ones only
                JOB.c.ladder == "",
                sa.cast(SCHEDULE.c.options, sa.Text).like(f'%"{until_done.OPTION}"%'),
            )
            .order_by(JOB.c.finished_at, JOB.c.id)
            .limit(limit)
        )
        if tenant is not None:
            query = query.where(SCHEDULE.c.tenant == tenant)
        if owner is not None:
            query = query.where(SCHEDULE.c.owner == owner)
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return [Awaiting(*row) for row in rows]

    async def ack_seconds(
        self, *, tenant: str | None, since: datetime, limit: int = 10_000
    ) -> list[float]:
        """Seconds from each message's delivery to its Done, for messages marked done
        since ``since`` (a tenant's, or all), at most ``limit`` of the latest."""
        query = (
            sa.select(JOB.c.finished_at, JOB.c.done_at)
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(
                JOB.c.state == JobState.ACKNOWLEDGED.value,
                JOB.c.ladder == "",
                JOB.c.done_at >= since,
            )
            .order_by(JOB.c.done_at.desc())
            .limit(limit)
        )
        if tenant is not None:
            query = query.where(SCHEDULE.c.tenant == tenant)
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return [
            max((done - sent).total_seconds(), 0.0)
            for sent, done in rows
            if sent is not None and done is not None
        ]


def _not_doable(state: str) -> str:
    if state in (JobState.PENDING.value, JobState.RETRYING.value):
        return "It has not been sent yet: it can be marked done once it is."
    return f"It was not delivered ({state}): there is nothing to mark done."
