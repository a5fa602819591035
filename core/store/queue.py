"""Queries of the dispatcher: claim, finish, leases, dead letters, workers.

The hot path is set-based SQLAlchemy Core: one claim statement per batch (``UPDATE …
RETURNING``, with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL) and one transaction that
records a whole batch of outcomes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from core.models import WAITING_SQL, JobState, ScheduleState, Worker, sqlite_utc_text
from core.store.base import ATTEMPT, JOB, SCHEDULE, AuditEntry, Gateway, new_idempotency_key

WORKER = Worker.__table__  # type: ignore[attr-defined]
CLAIMABLE = (JobState.PENDING.value, JobState.RETRYING.value)

TERMINAL_FOR_SCHEDULE = ("delivered", "dead", "expired")


@dataclass(slots=True)
class ClaimedJob:
    """A job this worker now holds a lease on, with what it needs to send it.

    This and :class:`AttemptRecord` and :class:`Finished` are built once per delivery:
    they are slotted and read-only by convention, not frozen (a frozen dataclass takes
    five times as long to build)."""

    id: int
    schedule_id: int
    occurrence_at: datetime
    due_at: datetime
    attempts: int
    idempotency_key: str
    destination: str
    body: str
    rrule: str | None
    max_lateness_s: int | None
    options: dict[str, Any]
    #: The schedule's time zone (what ``{date}`` in its text means).
    timezone: str = "UTC"


@dataclass(slots=True)
class AttemptRecord:
    """One row of the delivery log."""

    started_at: datetime
    finished_at: datetime
    outcome: str
    status_code: int | None = None
    error: str | None = None
    message_id: str | None = None


@dataclass(slots=True)
class Finished:
    """The outcome of one claimed job, to record.

    ``state`` is delivered, retrying, dead or expired (or pending, for a job handed
    back untried). ``next_run`` is a recurring schedule's next occurrence, computed by
    the dispatcher from ``rrule``; it is inserted only if the schedule is still active
    with that same rule.
    """

    job: ClaimedJob
    state: str
    attempt: AttemptRecord | None = None
    error: str | None = None
    retry_at: datetime | None = None
    next_run: datetime | None = None
    refund_attempt: bool = False


@dataclass(frozen=True)
class QueueStats:
    """What the metrics gauges show: jobs by state, retry requests awaiting an admin,
    and how long the oldest waiting job has been due."""

    counts: dict[str, int]
    dead_awaiting: int
    oldest_overdue_seconds: float


@dataclass(frozen=True)
class DeadLetter:
    job_id: int
    schedule_id: int
    owner: str
    destination: str
    body: str
    attempts: int
    last_error: str | None
    occurrence_at: datetime
    finished_at: datetime | None
    retry_requested_by: str | None
    retry_requested_at: datetime | None


# SQLite's planner, without statistics, would prefer the (state, due_at) index and
# sort; the partial index already holds waiting jobs in due order. SQLite holds the
# only write lock (BEGIN IMMEDIATE), so the chosen rows need no second state test.
_SCHEDULE_FIELDS = ", ".join(
    f"(SELECT {column} FROM schedule WHERE schedule.id = job.schedule_id)"
    for column in ("destination", "body", "rrule", "max_lateness_s", "options", "timezone")
)
_SQLITE_CLAIM = f"""
UPDATE job SET state = 'claimed', lease_owner = ?, lease_expires_at = ?,
    attempts = attempts + 1, updated_at = ?
WHERE id IN (
    SELECT id FROM job INDEXED BY ix_job_waiting_due
    WHERE {WAITING_SQL} AND due_at <= ? ORDER BY due_at LIMIT ?
)
RETURNING id, schedule_id, occurrence_at, due_at, attempts, idempotency_key, {_SCHEDULE_FIELDS}
"""

_SQLITE_DELIVERED = """
UPDATE job SET state = 'delivered', lease_owner = NULL, lease_expires_at = NULL,
    last_error = NULL, finished_at = ?, updated_at = ?
WHERE id IN (SELECT value FROM json_each(?)) AND state = 'claimed' AND lease_owner = ?
RETURNING id
"""
_SQLITE_OWNED = """
SELECT id FROM job
WHERE id IN (SELECT value FROM json_each(?)) AND state = 'claimed' AND lease_owner = ?
"""
_SQLITE_OTHER_STATE = """
UPDATE job SET state = ?, due_at = coalesce(?, due_at), attempts = attempts - ?,
    last_error = ?, finished_at = ?, lease_owner = NULL, lease_expires_at = NULL,
    updated_at = ?
WHERE id = ?
"""
_SQLITE_NEXT_JOB = """
INSERT INTO job (schedule_id, occurrence_at, due_at, state, attempts, idempotency_key,
    created_at, updated_at)
SELECT ?, ?, ?, 'pending', 0, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM schedule WHERE id = ? AND state = 'active' AND rrule = ?)
ON CONFLICT (schedule_id, occurrence_at) DO NOTHING
"""
_SQLITE_NEXT_RUN = """
UPDATE schedule SET next_run_at = ?, updated_at = ?
WHERE id = ? AND state = 'active' AND rrule = ?
"""
_SQLITE_COMPLETED = f"""
UPDATE schedule SET state = 'completed', next_run_at = NULL, updated_at = ?
WHERE id IN (SELECT value FROM json_each(?)) AND state = 'active'
    AND NOT EXISTS (SELECT 1 FROM job WHERE job.schedule_id = schedule.id AND {WAITING_SQL})
"""

_ATTEMPT_INSERT = (
    "INSERT INTO attempt (job_id, started_at, finished_at, outcome, status_code, error, "
    "provider_message_id, worker) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)


def _sqlite_utc(text: str) -> datetime:
    """A timestamp read below SQLAlchemy from SQLite (see :func:`sqlite_utc_text`)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _attempt_rows(
    results: Sequence[Finished], worker: str, when: Callable[[datetime], Any]
) -> list[tuple[Any, ...]]:
    """The delivery-log rows of a batch, in :data:`_ATTEMPT_INSERT`'s column order."""
    return [
        (
            r.job.id,
            when(a.started_at),
            when(a.finished_at),
            a.outcome,
            a.status_code,
            a.error,
            a.message_id,
            worker,
        )
        for r in results
        if (a := r.attempt) is not None
    ]


@dataclass(slots=True)
class _Plan:
    """What recording a batch (of outcomes still this worker's) changes besides the
    jobs delivered: jobs in other states, recurring schedules' next occurrences, and
    schedules that may have ended (completed unless something still waits)."""

    others: list[Finished]
    with_next: list[Finished]
    ended: list[int]

    @classmethod
    def of(cls, mine: Sequence[Finished]) -> _Plan:
        done = [r for r in mine if r.state in TERMINAL_FOR_SCHEDULE]
        return cls(
            others=[r for r in mine if r.state != JobState.DELIVERED.value],
            with_next=[r for r in done if r.job.rrule is not None and r.next_run is not None],
            ended=sorted(
                {r.job.schedule_id for r in done if r.job.rrule is None or r.next_run is None}
            ),
        )


def _same(value: datetime) -> datetime:
    return value


def _options(text: str | None) -> dict[str, Any]:
    """A schedule's options column read as text (JSON), as a fresh dict."""
    if not text or text in ("{}", "null"):
        return {}
    value = json.loads(text)
    return dict(value) if isinstance(value, dict) else {}


def _held_by(worker: str, job_ids: Sequence[int]) -> sa.ColumnElement[bool]:
    """Jobs among ``job_ids`` that ``worker`` still holds a lease on."""
    return sa.and_(
        JOB.c.id.in_(list(job_ids)),
        JOB.c.lease_owner == worker,
        JOB.c.state == JobState.CLAIMED.value,
    )


class QueueQueries(Gateway):
    """The job queue as the dispatcher and the dead-letter desk see it."""

    def _among(self, column: sa.ColumnElement[int], ids: Sequence[int]) -> Any:
        """``column IN ids``. On SQLite the ids travel as one JSON parameter: a batch of
        a thousand would otherwise be a thousand parameters, each rendered and
        processed on every execution."""
        if self.backend == "sqlite":
            values = sa.func.json_each(sa.bindparam(None, json.dumps(list(ids)), sa.String))
            return column.in_(sa.select(values.table_valued("value").c.value))
        return column.in_(list(ids))

    def _insert(self) -> Any:
        dialect = postgresql if self.backend == "postgresql" else sqlite
        return dialect.insert

    # --- claim ----------------------------------------------------------------------

    async def claim_due(
        self, *, now: datetime, worker: str, lease_until: datetime, limit: int
    ) -> list[ClaimedJob]:
        """Atomically lease up to ``limit`` due jobs, oldest due first."""
        if self.backend == "sqlite":
            return await self._claim_sqlite(now, worker, lease_until, limit)
        due = (
            sa.select(JOB.c.id)
            .where(sa.text(WAITING_SQL), JOB.c.due_at <= now)
            .order_by(JOB.c.due_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        claim = (
            sa.update(JOB)
            .where(JOB.c.id.in_(due), JOB.c.state.in_(CLAIMABLE))  # re-checked once locked
            .values(
                state=JobState.CLAIMED.value,
                lease_owner=worker,
                lease_expires_at=lease_until,
                attempts=JOB.c.attempts + 1,
                updated_at=now,
            )
            .returning(
                JOB.c.id,
                JOB.c.schedule_id,
                JOB.c.occurrence_at,
                JOB.c.due_at,
                JOB.c.attempts,
                JOB.c.idempotency_key,
            )
        )
        async with self._tx() as conn:
            jobs = (await conn.execute(claim)).all()
            if not jobs:
                return []
            result = await conn.execute(
                sa.select(
                    SCHEDULE.c.id,
                    SCHEDULE.c.destination,
                    SCHEDULE.c.body,
                    SCHEDULE.c.rrule,
                    SCHEDULE.c.max_lateness_s,
                    # decoded only when not empty: most schedules have no options
                    sa.cast(SCHEDULE.c.options, sa.Text),
                    SCHEDULE.c.timezone,
                ).where(SCHEDULE.c.id.in_(list({row[1] for row in jobs})))
            )
            schedules = {row[0]: tuple(row)[1:] for row in result}
        claimed = []
        for job in jobs:
            destination, body, rrule, max_lateness_s, options, zone = schedules[job[1]]
            claimed.append(
                ClaimedJob(
                    job[0],
                    job[1],
                    job[2],
                    job[3],
                    job[4],
                    job[5],
                    destination,
                    body,
                    rrule,
                    max_lateness_s,
                    _options(options),
                    zone,
                )
            )
        claimed.sort(key=lambda job: job.due_at)
        return claimed

    async def _claim_sqlite(
        self, now: datetime, worker: str, lease_until: datetime, limit: int
    ) -> list[ClaimedJob]:
        """The claim on SQLite: one statement that also returns each job's schedule,
        on the driver's connection (see :meth:`Gateway._sqlite_tx`)."""
        params = (
            worker,
            sqlite_utc_text(lease_until),
            sqlite_utc_text(now),
            sqlite_utc_text(now),
            limit,
        )
        async with self._sqlite_tx() as conn:
            rows: list[Any] = list(await conn.execute_fetchall(_SQLITE_CLAIM, params))
        claimed = [
            ClaimedJob(
                row[0],
                row[1],
                _sqlite_utc(row[2]),
                _sqlite_utc(row[3]),
                row[4],
                row[5],
                row[6],
                row[7],
                row[8],
                row[9],
                _options(row[10]),
                row[11],
            )
            for row in rows
        ]
        claimed.sort(key=lambda job: job.due_at)
        return claimed

    async def next_due_at(self) -> datetime | None:
        """When the earliest waiting job falls due (None when nothing waits)."""
        async with self._read() as conn:
            value = (
                await conn.execute(
                    sa.select(sa.func.min(JOB.c.due_at)).where(JOB.c.state.in_(CLAIMABLE))
                )
            ).scalar()
        return value if isinstance(value, datetime) else None

    # --- leases ---------------------------------------------------------------------

    async def renew_leases(self, job_ids: Sequence[int], *, worker: str, until: datetime) -> int:
        """Extend this worker's leases; returns how many it still holds."""
        if not job_ids:
            return 0
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB).where(_held_by(worker, job_ids)).values(lease_expires_at=until)
            )
            return int(result.rowcount)

    async def reclaim_expired(self, *, now: datetime) -> int:
        """Hand back jobs whose worker died (lease expired) so they are claimed again
        with the same idempotency key. Returns how many."""
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB)
                .where(JOB.c.state == JobState.CLAIMED.value, JOB.c.lease_expires_at <= now)
                .values(
                    state=JobState.RETRYING.value,
                    due_at=now,
                    lease_owner=None,
                    lease_expires_at=None,
                    last_error="The dispatcher holding this job stopped; it was handed back.",
                    updated_at=now,
                )
            )
            return int(result.rowcount)

    # --- finish ---------------------------------------------------------------------

    async def finish(self, results: Sequence[Finished], *, worker: str, now: datetime) -> set[int]:
        """Record a batch of outcomes in one transaction: attempts, job states, the next
        occurrence of recurring schedules, and completed one-offs. Outcomes for jobs
        whose lease this worker lost are recorded as attempts only. Returns the ids of
        the jobs that were still this worker's."""
        if not results:
            return set()
        if self.backend == "sqlite":
            return await self._finish_sqlite(results, worker, now)
        done = JobState.DELIVERED.value
        delivered = [r.job.id for r in results if r.state == done]
        others = [r.job.id for r in results if r.state != done]
        mine_q = (JOB.c.state == JobState.CLAIMED.value) & (JOB.c.lease_owner == worker)
        async with self._tx() as conn:
            owned: set[int] = set()
            if delivered:
                result = await conn.execute(
                    sa.update(JOB)
                    .where(self._among(JOB.c.id, delivered), mine_q)
                    .values(
                        state=JobState.DELIVERED.value,
                        lease_owner=None,
                        lease_expires_at=None,
                        last_error=None,
                        finished_at=now,
                        updated_at=now,
                    )
                    .returning(JOB.c.id)
                )
                owned.update(row[0] for row in result)
            if others:
                owned_q = sa.select(JOB.c.id).where(self._among(JOB.c.id, others), mine_q)
                if self.backend == "postgresql":
                    owned_q = owned_q.with_for_update()
                owned.update(row[0] for row in await conn.execute(owned_q))
            await self._insert_attempts(conn, results, worker)
            mine = [r for r in results if r.job.id in owned]
            await self._set_other_states(conn, [r for r in mine if r.state != done], now)
            await self._advance_schedules(conn, mine, now)
        return owned

    async def _finish_sqlite(
        self, results: Sequence[Finished], worker: str, now: datetime
    ) -> set[int]:
        """:meth:`finish` on SQLite's driver connection (see :meth:`Gateway._sqlite_tx`):
        the same statements as the PostgreSQL path, one round trip each."""
        at = sqlite_utc_text(now)
        done = JobState.DELIVERED.value
        delivered = json.dumps([r.job.id for r in results if r.state == done])
        others = json.dumps([r.job.id for r in results if r.state != done])
        attempts = _attempt_rows(results, worker, sqlite_utc_text)
        async with self._sqlite_tx() as conn:
            owned: set[int] = set()
            if delivered != "[]":
                rows = await conn.execute_fetchall(_SQLITE_DELIVERED, (at, at, delivered, worker))
                owned.update(row[0] for row in rows)
            if others != "[]":
                rows = await conn.execute_fetchall(_SQLITE_OWNED, (others, worker))
                owned.update(row[0] for row in rows)
            if attempts:
                await conn.executemany(_ATTEMPT_INSERT.replace("%s", "?"), attempts)
            plan = _Plan.of([r for r in results if r.job.id in owned])
            if plan.others:
                terminal = {JobState.DEAD.value, JobState.EXPIRED.value}
                await conn.executemany(
                    _SQLITE_OTHER_STATE,
                    [
                        (
                            r.state,
                            sqlite_utc_text(r.retry_at) if r.retry_at else None,
                            1 if r.refund_attempt else 0,
                            r.error,
                            at if r.state in terminal else None,
                            at,
                            r.job.id,
                        )
                        for r in plan.others
                    ],
                )
            if plan.with_next:
                nexts = [
                    (r.job.schedule_id, sqlite_utc_text(r.next_run), r.job.rrule)
                    for r in plan.with_next
                    if r.next_run is not None
                ]
                await conn.executemany(
                    _SQLITE_NEXT_JOB,
                    [
                        (sid, due, due, new_idempotency_key(), at, at, sid, rule)
                        for sid, due, rule in nexts
                    ],
                )
                await conn.executemany(
                    _SQLITE_NEXT_RUN, [(due, at, sid, rule) for sid, due, rule in nexts]
                )
            if plan.ended:
                await conn.execute_fetchall(_SQLITE_COMPLETED, (at, json.dumps(plan.ended)))
        return owned

    async def _insert_attempts(
        self, conn: AsyncConnection, results: Sequence[Finished], worker: str
    ) -> None:
        """The batch's delivery-log rows in one driver-level executemany (PostgreSQL):
        SQLAlchemy's per-row parameter processing costs more than the insert."""
        rows = _attempt_rows(results, worker, _same)
        if rows:
            await conn.exec_driver_sql(_ATTEMPT_INSERT, rows)

    async def _set_other_states(
        self, conn: AsyncConnection, others: Sequence[Finished], now: datetime
    ) -> None:
        """Retrying, dead, expired or handed-back jobs: one executemany."""
        if not others:
            return
        stmt = (
            sa.update(JOB)
            .where(JOB.c.id == sa.bindparam("b_id"))
            .values(
                state=sa.bindparam("b_state"),
                due_at=sa.func.coalesce(
                    sa.bindparam("b_due", type_=JOB.c.due_at.type), JOB.c.due_at
                ),
                attempts=JOB.c.attempts - sa.bindparam("b_refund", type_=sa.Integer),
                last_error=sa.bindparam("b_error"),
                finished_at=sa.bindparam("b_finished", type_=JOB.c.finished_at.type),
                lease_owner=None,
                lease_expires_at=None,
                updated_at=now,
            )
        )
        terminal = {JobState.DEAD.value, JobState.EXPIRED.value}
        await conn.execute(
            stmt,
            [
                {
                    "b_id": r.job.id,
                    "b_state": r.state,
                    "b_due": r.retry_at,
                    "b_refund": 1 if r.refund_attempt else 0,
                    "b_error": r.error,
                    "b_finished": now if r.state in terminal else None,
                }
                for r in others
            ],
        )

    async def _advance_schedules(
        self, conn: AsyncConnection, results: Sequence[Finished], now: datetime
    ) -> None:
        """Insert recurring schedules' next jobs and complete finished one-offs."""
        plan = _Plan.of(results)
        with_next = plan.with_next
        active_same_rule = sa.exists().where(
            SCHEDULE.c.id == sa.bindparam("b_sid"),
            SCHEDULE.c.state == ScheduleState.ACTIVE.value,
            SCHEDULE.c.rrule == sa.bindparam("b_rule"),
        )
        if with_next:
            select_new = sa.select(
                sa.bindparam("b_sid", type_=sa.Integer),
                sa.bindparam("b_next", type_=JOB.c.due_at.type),
                sa.bindparam("b_next2", type_=JOB.c.due_at.type),
                sa.literal(JobState.PENDING.value),
                sa.literal(0),
                sa.bindparam("b_key"),
                sa.literal(now, JOB.c.created_at.type),
                sa.literal(now, JOB.c.updated_at.type),
            ).where(active_same_rule)
            insert = (
                self._insert()(JOB)
                .from_select(
                    [
                        "schedule_id",
                        "occurrence_at",
                        "due_at",
                        "state",
                        "attempts",
                        "idempotency_key",
                        "created_at",
                        "updated_at",
                    ],
                    select_new,
                )
                .on_conflict_do_nothing(index_elements=["schedule_id", "occurrence_at"])
            )
            params = [
                {
                    "b_sid": r.job.schedule_id,
                    "b_next": r.next_run,
                    "b_next2": r.next_run,
                    "b_key": new_idempotency_key(),
                    "b_rule": r.job.rrule,
                }
                for r in with_next
            ]
            await conn.execute(insert, params)
            await conn.execute(
                sa.update(SCHEDULE)
                .where(
                    SCHEDULE.c.id == sa.bindparam("b_sid"),
                    SCHEDULE.c.state == ScheduleState.ACTIVE.value,
                    SCHEDULE.c.rrule == sa.bindparam("b_rule"),
                )
                .values(next_run_at=sa.bindparam("b_next"), updated_at=now),
                [
                    {"b_sid": p["b_sid"], "b_rule": p["b_rule"], "b_next": p["b_next"]}
                    for p in params
                ],
            )
        ended = plan.ended
        if ended:
            open_jobs = sa.exists().where(
                JOB.c.schedule_id == SCHEDULE.c.id, JOB.c.state.in_(CLAIMABLE)
            )
            await conn.execute(
                sa.update(SCHEDULE)
                .where(
                    self._among(SCHEDULE.c.id, ended),
                    SCHEDULE.c.state == ScheduleState.ACTIVE.value,
                    ~open_jobs,
                )
                .values(state=ScheduleState.COMPLETED.value, next_run_at=None, updated_at=now)
            )

    async def release(self, job_ids: Sequence[int], *, worker: str, now: datetime) -> int:
        """Hand back claimed jobs that were never tried (shutdown), refunding the attempt."""
        if not job_ids:
            return 0
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB)
                .where(_held_by(worker, job_ids))
                .values(
                    state=sa.case(
                        (JOB.c.attempts > 1, JobState.RETRYING.value),
                        else_=JobState.PENDING.value,
                    ),
                    attempts=JOB.c.attempts - 1,
                    lease_owner=None,
                    lease_expires_at=None,
                    updated_at=now,
                )
            )
            return int(result.rowcount)

    # --- workers --------------------------------------------------------------------

    async def heartbeat(
        self, worker: str, *, host: str, pid: int, now: datetime, stopped: bool = False
    ) -> None:
        """Record that ``worker`` is alive (or, with ``stopped``, that it stopped)."""
        values = {
            "host": host,
            "pid": pid,
            "heartbeat_at": now,
            "stopped_at": now if stopped else None,
        }
        insert = self._insert()(WORKER).values(id=worker, started_at=now, **values)
        async with self._tx() as conn:
            await conn.execute(insert.on_conflict_do_update(index_elements=["id"], set_=values))

    # --- benchmarks ---------------------------------------------------------------------

    async def move_waiting_jobs(self, due_at: datetime, *, due_before: datetime) -> int:
        """Make every waiting job due before ``due_before`` due at ``due_at`` instead
        (benchmarks: a burst at one instant)."""
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB)
                .where(JOB.c.state.in_(CLAIMABLE), JOB.c.due_at < due_before)
                .values(due_at=due_at)
            )
            await self._notify_due(conn)
            return int(result.rowcount)

    async def lateness_samples(self) -> list[tuple[datetime, datetime]]:
        """(due, first try started) of every job tried at least once."""
        first_try = (
            sa.select(ATTEMPT.c.job_id, sa.func.min(ATTEMPT.c.started_at).label("started"))
            .group_by(ATTEMPT.c.job_id)
            .subquery()
        )
        q = sa.select(JOB.c.due_at, first_try.c.started).join(
            first_try, first_try.c.job_id == JOB.c.id
        )
        async with self._read() as conn:
            return [(row[0], row[1]) for row in await conn.execute(q)]

    async def leased_by(self, worker: str) -> set[str]:
        """Idempotency keys of the jobs ``worker`` holds a lease on."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(JOB.c.idempotency_key).where(
                    JOB.c.lease_owner == worker, JOB.c.state == JobState.CLAIMED.value
                )
            )
            return {row[0] for row in rows}

    async def workers(self) -> list[Worker]:
        """Dispatchers that reported a heartbeat, most recent first."""
        async with self._read() as conn:
            rows = await conn.execute(sa.select(WORKER).order_by(WORKER.c.heartbeat_at.desc()))
            return [Worker(**row._mapping) for row in rows]

    # --- housekeeping ---------------------------------------------------------------

    async def prune_finished(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Delete attempts and finished jobs older than ``before``, ``batch`` rows per
        transaction so no lock is held long. Dead letters are not touched here."""
        finished = [
            JobState.DELIVERED.value,
            JobState.EXPIRED.value,
            JobState.CANCELLED.value,
            JobState.DISCARDED.value,
        ]
        counts = {"attempts": 0, "jobs": 0}
        old_attempts = sa.select(ATTEMPT.c.id).where(ATTEMPT.c.started_at < before).limit(batch)
        old_jobs = (
            sa.select(JOB.c.id)
            .where(JOB.c.state.in_(finished), JOB.c.finished_at < before)
            .limit(batch)
        )
        for key, table, subquery in (
            ("attempts", ATTEMPT, old_attempts),
            ("jobs", JOB, old_jobs),
        ):
            while True:
                async with self._tx() as conn:
                    result = await conn.execute(
                        sa.delete(table).where(table.c.id.in_(subquery.scalar_subquery()))
                    )
                deleted = int(result.rowcount)
                counts[key] += deleted
                if deleted < batch:
                    break
        return counts

    async def cap_dead_letters(
        self, *, older_than: datetime, keep: int, now: datetime, audit: AuditEntry
    ) -> int:
        """Discard dead letters that died before ``older_than``, and the oldest beyond
        the newest ``keep``; each gets an audit row. Returns how many."""
        async with self._tx() as conn:
            beyond = (
                sa.select(JOB.c.id)
                .where(JOB.c.state == JobState.DEAD.value)
                .order_by(JOB.c.finished_at.desc(), JOB.c.id.desc())
                .offset(keep)
            )
            too_old = sa.select(JOB.c.id).where(
                JOB.c.state == JobState.DEAD.value, JOB.c.finished_at < older_than
            )
            ids = sorted(
                {row[0] for row in await conn.execute(beyond)}
                | {row[0] for row in await conn.execute(too_old)}
            )
        if not ids:
            return 0
        total = 0
        for start in range(0, len(ids), 1000):
            total += await self.discard_dead(ids[start : start + 1000], now=now, audit=audit)
        return total

    # --- counts ---------------------------------------------------------------------

    async def queue_stats(self, *, now: datetime) -> QueueStats:
        """Jobs by state, dead letters awaiting a decision, the oldest overdue job."""
        counts = await self.job_counts()
        async with self._read() as conn:
            awaiting = (
                await conn.execute(
                    sa.select(sa.func.count()).where(
                        JOB.c.state == JobState.DEAD.value, JOB.c.retry_requested_by.is_not(None)
                    )
                )
            ).scalar() or 0
        oldest = await self.next_due_at()
        overdue = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
        return QueueStats(counts, int(awaiting), overdue)

    async def job_counts(self) -> dict[str, int]:
        """How many jobs are in each state."""
        async with self._read() as conn:
            rows = await conn.execute(sa.select(JOB.c.state, sa.func.count()).group_by(JOB.c.state))
            return {state: int(count) for state, count in rows}

    # --- dead letters ---------------------------------------------------------------

    def _dead_query(self) -> sa.Select[Any]:
        return (
            sa.select(
                JOB.c.id.label("job_id"),
                JOB.c.schedule_id,
                SCHEDULE.c.owner,
                SCHEDULE.c.destination,
                SCHEDULE.c.body,
                JOB.c.attempts,
                JOB.c.last_error,
                JOB.c.occurrence_at,
                JOB.c.finished_at,
                JOB.c.retry_requested_by,
                JOB.c.retry_requested_at,
            )
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(JOB.c.state == JobState.DEAD.value)
        )

    async def dead_letters(
        self, *, owner: str | None = None, ids: Sequence[int] | None = None, limit: int = 200
    ) -> list[DeadLetter]:
        """Dead jobs, newest first (optionally one owner's, or the given ids)."""
        q = self._dead_query()
        if owner is not None:
            q = q.where(SCHEDULE.c.owner == owner)
        if ids is not None:
            q = q.where(JOB.c.id.in_(list(ids)))
        q = q.order_by(JOB.c.finished_at.desc(), JOB.c.id.desc()).limit(limit)
        async with self._read() as conn:
            return [DeadLetter(**row._mapping) for row in await conn.execute(q)]

    async def request_dead_retry(
        self, job_ids: Sequence[int], *, actor: str, now: datetime, audit: AuditEntry
    ) -> int:
        """Mark dead letters as awaiting an admin's decision."""
        return await self._dead_update(
            job_ids, {"retry_requested_by": actor, "retry_requested_at": now}, now, audit
        )

    async def reject_dead_retry(
        self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry
    ) -> int:
        """Clear pending retry requests; the jobs stay dead."""
        return await self._dead_update(
            job_ids, {"retry_requested_by": None, "retry_requested_at": None}, now, audit
        )

    async def retry_dead(self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry) -> int:
        """Put dead letters back in the queue, due now, with a fresh attempt budget and
        the same idempotency key."""
        values = {
            "state": JobState.PENDING.value,
            "attempts": 0,
            "due_at": now,
            "last_error": None,
            "finished_at": None,
            "retry_requested_by": None,
            "retry_requested_at": None,
        }
        return await self._dead_update(job_ids, values, now, audit, notify=True)

    async def discard_dead(
        self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry
    ) -> int:
        """Give up on dead letters for good."""
        values = {"state": JobState.DISCARDED.value, "retry_requested_by": None}
        return await self._dead_update(job_ids, values, now, audit)

    async def _dead_update(
        self,
        job_ids: Sequence[int],
        values: dict[str, Any],
        now: datetime,
        audit: AuditEntry,
        *,
        notify: bool = False,
    ) -> int:
        if not job_ids:
            return 0
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB)
                .where(JOB.c.id.in_(list(job_ids)), JOB.c.state == JobState.DEAD.value)
                .values(**values, updated_at=now)
                .returning(JOB.c.id)
            )
            changed = sorted(row[0] for row in result)
            if notify and changed:
                await self._notify_due(conn)
            for job_id in changed:
                await self._audit(
                    conn,
                    AuditEntry(audit.actor, audit.action, "job", str(job_id), audit.details),
                    now,
                )
            return len(changed)
