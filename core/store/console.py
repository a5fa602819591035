"""Read queries of the operator console (overview, queue, delivery log, dead letters,
audit log, timelines) and its set-based bulk changes.

Every list is one page: ``LIMIT`` plus a keyset (the last row's sort key), so a screen
costs the same on ten rows or ten million. Counts are aggregates the database answers
from an index; nothing here loads a whole table into Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from core.models import WAITING_SQL, Audit, Job, JobState, Schedule, ScheduleState, Worker
from core.preferences import HELD
from core.store.base import ATTEMPT, AUDIT, JOB, JOB_DESTINATION, SCHEDULE, AuditEntry
from core.store.dead_letters import RETRY_REQUESTED_BY, SHOWN_RETRY

# Re-exported where callers import them from (their queries: core.store.dead_letters).
from core.store.dead_letters import DeadFilter as DeadFilter
from core.store.dead_letters import DeadGroup as DeadGroup
from core.store.held import HeldQueries
from core.store.paging import has_prefix, keyset_after
from core.store.states import state_condition

WORKER = Worker.__table__  # type: ignore[attr-defined]

#: How much of an error text a detail view shows (a list: ``REASON_CHARS``).
RESPONSE_CHARS = 500
#: How much of a message's text the queue and the delivery log read (the schedule's
#: detail shows all of it).
TEXT_CHARS = 500

#: Waiting jobs, worded as the partial index ``ix_job_waiting_due`` says it (so SQLite can
#: use that index) and qualified (so it can sit beside a join with ``schedule``).
WAITING = sa.text("job." + WAITING_SQL)

#: The queue's views, each a state (or two) in the order a person reads them.
QUEUE_VIEWS = ("due", "pending", "in_flight", "retrying")


@dataclass(frozen=True)
class ScheduleFilter:
    """Which schedules a console list or bulk action covers. ``None`` means "any"."""

    owner: str | None = None
    #: The tenant the schedules belong to.
    tenant: str | None = None
    states: tuple[str, ...] | None = None
    #: A prefix of any recipient's destination, a fallback step included (``slack:``
    #: or a whole URI).
    destination: str | None = None
    #: Words the body contains (any case).
    text: str | None = None
    ids: tuple[int, ...] | None = None
    #: Of these priorities only (urgent, normal, bulk).
    priorities: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AttemptFilter:
    outcome: str | None = None
    #: A prefix of where the attempt went.
    destination: str | None = None
    schedule_id: int | None = None
    job_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    owner: str | None = None
    tenant: str | None = None


@dataclass(frozen=True)
class AuditFilter:
    actor: str | None = None
    tenant: str | None = None
    #: A prefix of the action (``schedule.`` or ``dead.retry``).
    action: str | None = None
    object_type: str | None = None
    object_id: str | None = None
    #: Where the action came from (cli, console, slack, discord, api, system).
    surface: str | None = None


@dataclass(frozen=True)
class QueueRow:
    job_id: int
    schedule_id: int
    owner: str
    #: Where the job goes: its recipient's current step.
    destination: str
    state: str
    due_at: datetime
    attempts: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: str | None
    tenant: str = "local"
    #: The message text (its first ``TEXT_CHARS`` characters).
    body: str = ""
    #: Its rank in the queue (core.preferences.RANK: 0 urgent, 1 normal, 2 bulk).
    priority: int = 1

    @property
    def held(self) -> bool:
        """Held by its recipient's quiet hours: waiting, ``last_error`` the reason."""
        waiting = self.state in (JobState.PENDING.value, JobState.RETRYING.value)
        return waiting and (self.last_error or "").startswith(HELD)


@dataclass(frozen=True)
class AttemptRow:
    id: int
    job_id: int
    schedule_id: int
    #: Where the try went (for an older Herald's attempts: its job's destination).
    destination: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    status_code: int | None
    error: str | None
    provider_message_id: str | None
    worker: str
    #: The message text as the attempt sent it, variables filled in (its first
    #: ``TEXT_CHARS`` characters; the schedule's text for attempts that kept none).
    body: str = ""
    #: The provider that took it, when its channel goes through several (``twilio``).
    provider: str | None = None
    #: What the provider reported later: delivered, undelivered or bounced (None: nothing
    #: yet), when, and its words of a failure (the first ``RESPONSE_CHARS`` characters).
    receipt: str | None = None
    receipt_at: datetime | None = None
    receipt_detail: str | None = None
    #: How many milliseconds after it fell due it started (None: an older Herald's),
    #: and whether that was past ``HERALD_LATE_AFTER`` (core.views.delay says it).
    late_ms: int | None = None
    delayed: bool = False


@dataclass(frozen=True)
class Figures:
    """The overview's numbers, read in one transaction."""

    due_next_hour: int
    #: (minute start, delivered, failed) for each minute of the last hour, oldest first.
    per_minute: list[tuple[datetime, int, int]]
    finished_last_hour: int
    first_try_ok: int
    oldest_overdue: tuple[int, datetime] | None
    dead: int
    dead_requested: int
    workers: list[Worker] = field(default_factory=list)


def _tenant_jobs(tenant: str | None) -> list[Any]:
    """A condition on JOB: its schedule belongs to ``tenant`` (none when None)."""
    if tenant is None:
        return []
    return [JOB.c.schedule_id.in_(sa.select(SCHEDULE.c.id).where(SCHEDULE.c.tenant == tenant))]


#: Where an attempt went: its own record, else its job's step, else its schedule's
#: (attempts of an older Herald kept none).
ATTEMPT_DESTINATION = sa.func.coalesce(ATTEMPT.c.destination, JOB_DESTINATION)


def _contains(column: Any, text: str) -> Any:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sa.func.lower(column).like(f"%{escaped}%", escape="\\")


class ConsoleQueries(HeldQueries):
    """What the operator console reads. All cheap, indexed, paged queries."""

    # --- overview ---------------------------------------------------------------------

    async def overview_figures(self, *, now: datetime, tenant: str | None = None) -> Figures:
        """Due soon, deliveries per minute, first-try success, oldest overdue job, dead
        letters and dispatchers, as of ``now`` (of one tenant's jobs, when given)."""
        hour_ago, soon = now - timedelta(hours=1), now + timedelta(hours=1)
        minute = self._minute(ATTEMPT.c.started_at)
        first_try = sa.and_(JOB.c.state == JobState.DELIVERED.value, JOB.c.attempts <= 1)
        mine = _tenant_jobs(tenant)
        queries = {
            "due": sa.select(sa.func.count())
            .select_from(JOB)
            .where(WAITING, JOB.c.due_at > now, JOB.c.due_at <= soon, *mine),
            "finished": sa.select(
                sa.func.count(), sa.func.sum(sa.case((first_try, 1), else_=0))
            ).where(
                JOB.c.state.in_([JobState.DELIVERED.value, JobState.DEAD.value]),
                JOB.c.finished_at > hour_ago,
                *mine,
            ),
            "oldest": sa.select(JOB.c.id, JOB.c.due_at)
            .where(WAITING, JOB.c.due_at <= now, *mine)
            .order_by(JOB.c.due_at)
            .limit(1),
            "dead": sa.select(sa.func.count(), sa.func.count(RETRY_REQUESTED_BY))
            .select_from(SHOWN_RETRY)
            .where(JOB.c.state == JobState.DEAD.value, *mine),
        }
        rates_q = (
            sa.select(minute, sa.func.sum(sa.case((ATTEMPT.c.outcome == "ok", 1), else_=0)))
            .add_columns(sa.func.count())
            .where(ATTEMPT.c.started_at > hour_ago, ATTEMPT.c.started_at <= now)
            .group_by(minute)
        )
        if tenant is not None:
            rates_q = rates_q.where(ATTEMPT.c.job_id.in_(sa.select(JOB.c.id).where(*mine)))
        workers_q = sa.select(WORKER).order_by(WORKER.c.heartbeat_at.desc()).limit(20)
        async with self._read() as conn:
            rows = {name: (await conn.execute(q)).first() for name, q in queries.items()}
            rates = (await conn.execute(rates_q)).all()
            workers = [Worker(**row._mapping) for row in await conn.execute(workers_q)]
        buckets = {str(r[0])[:16]: (int(r[1] or 0), int(r[2])) for r in rates}
        start = now.replace(second=0, microsecond=0) - timedelta(minutes=59)
        per_minute = []
        for step in range(60):
            at = start + timedelta(minutes=step)
            oks, total = buckets.get(at.strftime("%Y-%m-%d %H:%M"), (0, 0))
            per_minute.append((at, oks, total - oks))
        due, finished, oldest, dead = (rows[k] for k in ("due", "finished", "oldest", "dead"))
        assert due is not None and finished is not None and dead is not None
        return Figures(
            due_next_hour=int(due[0]),
            per_minute=per_minute,
            finished_last_hour=int(finished[0]),
            first_try_ok=int(finished[1] or 0),
            oldest_overdue=None if oldest is None else (int(oldest[0]), oldest[1]),
            dead=int(dead[0]),
            dead_requested=int(dead[1]),
            workers=workers,
        )

    async def late_tries(
        self,
        *,
        since: datetime,
        until: datetime,
        tenant: str | None = None,
        limit: int,
    ) -> list[tuple[str, int]]:
        """The minute each try from ``since`` to ``until`` (both included) started in, as
        text (``YYYY-MM-DD HH:MM``, UTC, as :meth:`_minute` writes it: no timestamp is
        parsed for each row), and how many milliseconds after it fell due; newest first,
        at most the newest ``limit`` (of one tenant's jobs, when given). Tries of an
        older Herald, which kept no lateness, are left out. Read by
        ``ix_attempt_started``: a tenant's tries are told by their job's schedule, looked
        up by primary key for each of the hour's tries (``job_id IN`` its jobs would let
        SQLite walk every job of the tenant instead)."""
        query = (
            sa.select(self._minute(ATTEMPT.c.started_at), ATTEMPT.c.late_ms)
            .where(
                ATTEMPT.c.started_at >= since,
                ATTEMPT.c.started_at <= until,
                ATTEMPT.c.late_ms.is_not(None),
            )
            .order_by(ATTEMPT.c.started_at.desc())
            .limit(limit)
        )
        if tenant is not None:
            query = query.where(
                sa.exists()
                .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
                .where(JOB.c.id == ATTEMPT.c.job_id, SCHEDULE.c.tenant == tenant)
            )
        async with self._read() as conn:
            return [(str(minute), int(late)) for minute, late in await conn.execute(query)]

    def _minute(self, column: Any) -> Any:
        """A timestamp truncated to its minute, as text ``YYYY-MM-DD HH:MM`` (UTC)."""
        if self.backend == "postgresql":
            return sa.func.to_char(
                sa.func.timezone("UTC", column), sa.literal_column("'YYYY-MM-DD HH24:MI'")
            )
        return sa.func.substr(column, 1, 16)

    # --- schedules --------------------------------------------------------------------

    def _sends_to_prefix(self, prefix: str) -> Any:
        """Schedules one of whose recipients' destinations (a step of a chain included)
        starts with ``prefix`` (:func:`core.store.schedules.sends_to_destination` for a
        prefix): the stored recipients read as JSON, in each database's own terms."""
        if self.backend == "postgresql":
            each = sa.func.json_array_elements(SCHEDULE.c.recipients).table_valued("value")
            steps = sa.func.json_array_elements_text(each.c.value.op("->")("to"))
        else:
            each = sa.func.json_each(SCHEDULE.c.recipients).table_valued("value")
            steps = sa.func.json_each(each.c.value, "$.to")
        step = steps.table_valued("value")
        # each step reads its recipient (a function in FROM may: no join condition)
        any_step = sa.exists().select_from(each.join(step, sa.true()))
        return sa.or_(
            has_prefix(SCHEDULE.c.destination, prefix),
            any_step.where(has_prefix(step.c.value, prefix)),
        )

    def _schedule_where(self, f: ScheduleFilter) -> list[Any]:
        where: list[Any] = []
        if f.owner is not None:
            where.append(SCHEDULE.c.owner == f.owner)
        if f.tenant is not None:
            where.append(SCHEDULE.c.tenant == f.tenant)
        if f.states:
            where.append(state_condition(f.states))
        if f.destination:
            where.append(self._sends_to_prefix(f.destination))
        if f.text:
            where.append(_contains(SCHEDULE.c.body, f.text))
        if f.ids is not None:
            where.append(SCHEDULE.c.id.in_(list(f.ids)))
        if f.priorities:
            where.append(SCHEDULE.c.priority.in_(sorted(set(f.priorities))))
        return where

    async def schedules_page(
        self, f: ScheduleFilter, *, before_id: int | None = None, limit: int = 100
    ) -> list[Schedule]:
        """One page of schedules matching ``f``, newest first (keyset: ``before_id``)."""
        q = sa.select(SCHEDULE).where(*self._schedule_where(f))
        if before_id is not None:
            q = q.where(SCHEDULE.c.id < before_id)
        q = q.order_by(SCHEDULE.c.id.desc()).limit(limit)
        async with self._read() as conn:
            return [Schedule(**row._mapping) for row in await conn.execute(q)]

    async def count_schedules(self, f: ScheduleFilter) -> int:
        async with self._read() as conn:
            q = sa.select(sa.func.count()).select_from(SCHEDULE).where(*self._schedule_where(f))
            return int(await conn.scalar(q) or 0)

    async def schedule_ids(
        self, f: ScheduleFilter, *, after_id: int = 0, limit: int = 500
    ) -> list[int]:
        """Ids of schedules matching ``f`` in id order, one chunk (keyset: ``after_id``)."""
        q = (
            sa.select(SCHEDULE.c.id)
            .where(*self._schedule_where(f), SCHEDULE.c.id > after_id)
            .order_by(SCHEDULE.c.id)
            .limit(limit)
        )
        async with self._read() as conn:
            return [int(row[0]) for row in await conn.execute(q)]

    async def stop_schedules(
        self,
        ids: Sequence[int],
        *,
        to_state: str,
        from_states: Sequence[str],
        owner: str | None,
        now: datetime,
        audit: AuditEntry,
        tenant: str | None = None,
    ) -> list[int]:
        """Move schedules (of ``owner``, when given) from ``from_states`` to ``to_state``
        (paused or cancelled), cancel their waiting jobs and audit each, in one
        transaction. Returns the ids that changed."""
        if not ids:
            return []
        where = [SCHEDULE.c.id.in_(list(ids)), SCHEDULE.c.state.in_(list(from_states))]
        if owner is not None:
            where.append(SCHEDULE.c.owner == owner)
        if tenant is not None:
            where.append(SCHEDULE.c.tenant == tenant)
        async with self._conn() as conn:
            rows = await conn.execute(sa.select(SCHEDULE.c.id, SCHEDULE.c.state).where(*where))
            before = {int(row[0]): str(row[1]) for row in rows}
            if not before:
                return []
            changed = sorted(before)
            await conn.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.id.in_(changed))
                .values(
                    state=to_state,
                    next_run_at=None,
                    version=SCHEDULE.c.version + 1,
                    updated_at=now,
                )
            )
            await conn.execute(
                sa.update(JOB)
                .where(JOB.c.schedule_id.in_(changed), WAITING)
                .values(state=JobState.CANCELLED.value, finished_at=now, updated_at=now)
            )
            await self._audit_each(
                conn,
                audit,
                now,
                [(str(i), {"from": before[i], "to": to_state}) for i in changed],
            )
        return changed

    async def shift_schedules(
        self,
        ids: Sequence[int],
        *,
        by: timedelta | Mapping[int, timedelta],
        owner: str | None,
        now: datetime,
        audit: AuditEntry,
        tenant: str | None = None,
    ) -> list[int]:
        """Move the waiting jobs of active schedules (of ``owner``, when given) by
        ``by`` (never earlier than ``now``), or each by its own (``by`` a mapping of
        schedule id to shift: the console's spread); a one-off's start moves with it.
        Audits each; returns the ids that changed."""
        shift = (lambda sid: by) if isinstance(by, timedelta) else by.__getitem__
        if not ids:
            return []
        where = [SCHEDULE.c.id.in_(list(ids)), SCHEDULE.c.state == ScheduleState.ACTIVE.value]
        if owner is not None:
            where.append(SCHEDULE.c.owner == owner)
        if tenant is not None:
            where.append(SCHEDULE.c.tenant == tenant)
        async with self._conn() as conn:
            schedules = {
                int(row.id): row
                for row in await conn.execute(
                    sa.select(SCHEDULE.c.id, SCHEDULE.c.rrule, SCHEDULE.c.starts_at).where(*where)
                )
            }
            if not schedules:
                return []
            jobs = (
                await conn.execute(
                    sa.select(JOB.c.id, JOB.c.schedule_id, JOB.c.due_at).where(
                        JOB.c.schedule_id.in_(list(schedules)), WAITING
                    )
                )
            ).all()
            if not jobs:
                return []
            moved: dict[int, datetime] = {}
            job_params = []
            for job in jobs:
                due = max(job.due_at + shift(int(job.schedule_id)), now)
                job_params.append({"b_id": job.id, "b_due": due})
                sid = int(job.schedule_id)
                moved[sid] = min(due, moved.get(sid, due))
            await conn.execute(
                sa.update(JOB)
                .where(JOB.c.id == sa.bindparam("b_id"))
                .values(due_at=sa.bindparam("b_due", type_=JOB.c.due_at.type), updated_at=now),
                job_params,
            )
            schedule_params = [
                {
                    "b_id": sid,
                    "b_next": due,
                    "b_start": (
                        schedules[sid].starts_at
                        if schedules[sid].rrule is not None
                        else max(schedules[sid].starts_at + shift(sid), now)
                    ),
                }
                for sid, due in moved.items()
            ]
            await conn.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.id == sa.bindparam("b_id"))
                .values(
                    next_run_at=sa.bindparam("b_next", type_=SCHEDULE.c.next_run_at.type),
                    starts_at=sa.bindparam("b_start", type_=SCHEDULE.c.starts_at.type),
                    version=SCHEDULE.c.version + 1,
                    updated_at=now,
                ),
                schedule_params,
            )
            await self._notify_due(conn)
            await self._audit_each(
                conn,
                audit,
                now,
                [(str(sid), {"next": due.isoformat()}) for sid, due in sorted(moved.items())],
            )
        return sorted(moved)

    async def record_audit(self, entry: AuditEntry, *, now: datetime) -> None:
        """Write one audit row on its own (a refused attempt, say)."""
        async with self._conn() as conn:
            await self._audit(conn, entry, now)

    # --- queue ------------------------------------------------------------------------

    async def queue_page(
        self,
        view: str,
        *,
        now: datetime,
        owner: str | None = None,
        tenant: str | None = None,
        after: tuple[datetime, int] | None = None,
        limit: int = 100,
        priorities: Sequence[int] | None = None,
    ) -> list[QueueRow]:
        """One page of the queue: ``due`` (waiting, due by now), ``pending`` (not yet
        due), ``in_flight`` (claimed, by lease expiry) or ``retrying`` (by next try);
        of the given ranks only (``priorities``, core.preferences.RANK), when given."""
        if view == "in_flight":
            key: Any = JOB.c.lease_expires_at
            where: list[Any] = [JOB.c.state == JobState.CLAIMED.value]
        elif view == "due":
            key, where = JOB.c.due_at, [WAITING, JOB.c.due_at <= now]
        elif view == "pending":
            key = JOB.c.due_at
            where = [JOB.c.state == JobState.PENDING.value, JOB.c.due_at > now]
        elif view == "retrying":
            key, where = JOB.c.due_at, [JOB.c.state == JobState.RETRYING.value]
        else:
            raise ValueError(f"unknown queue view {view!r}")
        if owner is not None:
            where.append(SCHEDULE.c.owner == owner)
        if tenant is not None:
            where.append(SCHEDULE.c.tenant == tenant)
        if priorities:
            where.append(JOB.c.priority.in_(sorted(set(priorities))))
        q = (
            sa.select(
                JOB.c.id.label("job_id"),
                JOB.c.schedule_id,
                SCHEDULE.c.owner,
                JOB_DESTINATION.label("destination"),
                JOB.c.state,
                JOB.c.due_at,
                JOB.c.attempts,
                JOB.c.lease_owner,
                JOB.c.lease_expires_at,
                # a hold's reason names a zone and a person: more than a group key
                sa.func.substr(sa.func.coalesce(JOB.c.last_error, ""), 1, RESPONSE_CHARS).label(
                    "last_error"
                ),
                SCHEDULE.c.tenant,
                sa.func.substr(SCHEDULE.c.body, 1, TEXT_CHARS).label("body"),
                JOB.c.priority,
            )
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(*where, keyset_after((key, JOB.c.id), after, desc=False))
            .order_by(key, JOB.c.id)
            .limit(limit)
        )
        async with self._read() as conn:
            return [QueueRow(**row._mapping) for row in await conn.execute(q)]

    # --- delivery log -----------------------------------------------------------------

    async def attempts_page(
        self,
        f: AttemptFilter,
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[AttemptRow]:
        """One page of the delivery log, newest first (keyset: ``before``)."""
        where: list[Any] = [keyset_after((ATTEMPT.c.started_at, ATTEMPT.c.id), before, desc=True)]
        if f.outcome:
            where.append(ATTEMPT.c.outcome == f.outcome)
        if f.since is not None:
            where.append(ATTEMPT.c.started_at >= f.since)
        if f.until is not None:
            where.append(ATTEMPT.c.started_at < f.until)
        if f.job_id is not None:
            where.append(ATTEMPT.c.job_id == f.job_id)
        if f.schedule_id is not None:
            where.append(JOB.c.schedule_id == f.schedule_id)
        if f.destination:
            where.append(has_prefix(ATTEMPT_DESTINATION, f.destination))
        if f.owner is not None:
            where.append(SCHEDULE.c.owner == f.owner)
        if f.tenant is not None:
            where.append(SCHEDULE.c.tenant == f.tenant)
        q = (
            sa.select(
                ATTEMPT.c.id,
                ATTEMPT.c.job_id,
                JOB.c.schedule_id,
                ATTEMPT_DESTINATION.label("destination"),
                ATTEMPT.c.started_at,
                ATTEMPT.c.finished_at,
                ATTEMPT.c.outcome,
                ATTEMPT.c.status_code,
                sa.func.substr(ATTEMPT.c.error, 1, RESPONSE_CHARS).label("error"),
                ATTEMPT.c.provider_message_id,
                ATTEMPT.c.worker,
                # the text as sent (before issue 33 not kept: the schedule's then)
                sa.func.substr(
                    sa.func.coalesce(ATTEMPT.c.body, SCHEDULE.c.body), 1, TEXT_CHARS
                ).label("body"),
                ATTEMPT.c.provider,
                ATTEMPT.c.receipt,
                ATTEMPT.c.receipt_at,
                sa.func.substr(ATTEMPT.c.receipt_detail, 1, RESPONSE_CHARS).label("receipt_detail"),
                ATTEMPT.c.late_ms,
                ATTEMPT.c.delayed,
            )
            .join(JOB, JOB.c.id == ATTEMPT.c.job_id)
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(*where)
            .order_by(ATTEMPT.c.started_at.desc(), ATTEMPT.c.id.desc())
            .limit(limit)
        )
        async with self._read() as conn:
            return [AttemptRow(**row._mapping) for row in await conn.execute(q)]

    # --- audit log and timelines ------------------------------------------------------

    async def audit_page(
        self, f: AuditFilter, *, before_id: int | None = None, limit: int = 100
    ) -> list[Audit]:
        """One page of the audit log, newest first (keyset: ``before_id``)."""
        q = sa.select(AUDIT)
        if f.actor:
            q = q.where(AUDIT.c.actor == f.actor)
        if f.tenant is not None:
            q = q.where(AUDIT.c.tenant == f.tenant)
        if f.action:
            q = q.where(has_prefix(AUDIT.c.action, f.action))
        if f.object_type:
            q = q.where(AUDIT.c.object_type == f.object_type)
        if f.object_id:
            q = q.where(AUDIT.c.object_id == f.object_id)
        if f.surface:
            q = q.where(AUDIT.c.surface == f.surface)
        if before_id is not None:
            q = q.where(AUDIT.c.id < before_id)
        q = q.order_by(AUDIT.c.id.desc()).limit(limit)
        async with self._read() as conn:
            return [Audit(**row._mapping) for row in await conn.execute(q)]

    async def object_audit(
        self, schedule_id: int, job_ids: Sequence[int], *, limit: int = 200
    ) -> list[Audit]:
        """Audit rows of one schedule and the given jobs of it, oldest first."""
        objects = sa.or_(
            sa.and_(AUDIT.c.object_type == "schedule", AUDIT.c.object_id == str(schedule_id)),
            sa.and_(
                AUDIT.c.object_type == "job",
                AUDIT.c.object_id.in_([str(job_id) for job_id in job_ids]),
            ),
        )
        q = sa.select(AUDIT).where(objects).order_by(AUDIT.c.id.desc()).limit(limit)
        async with self._read() as conn:
            rows = [Audit(**row._mapping) for row in await conn.execute(q)]
        return rows[::-1]

    async def get_job(self, job_id: int) -> Job | None:
        async with self._read() as conn:
            row = (await conn.execute(sa.select(JOB).where(JOB.c.id == job_id))).first()
        return None if row is None else Job(**row._mapping)

    async def attempt_job(self, attempt_id: int) -> int | None:
        """The job an attempt belongs to."""
        q = sa.select(ATTEMPT.c.job_id).where(ATTEMPT.c.id == attempt_id)
        async with self._read() as conn:
            value = await conn.scalar(q)
        return None if value is None else int(value)
