"""Queries about members, schedules and the audit log."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from core import routing, until_done
from core.errors import Conflict, DatabaseError
from core.events import EventRow
from core.models import (
    LOCAL_TENANT,
    OPEN_STATE_VALUES,
    Attempt,
    Job,
    JobState,
    Member,
    Role,
    Schedule,
)
from core.store.approvals import ApprovalQueries, Held
from core.store.arming import rank_of
from core.store.base import JOB, JOB_DESTINATION, SCHEDULE, AuditEntry
from core.store.outcomes import record_events
from core.store.states import state_condition


def _admins(tenant: str, limit: int) -> SelectOfScalar[str]:
    """The ids of ``tenant``'s admins (by role, or by their platform's word)."""
    return (
        select(Member.id)
        .where(
            col(Member.tenant) == tenant,
            sa.or_(col(Member.role) == Role.ADMIN.value, col(Member.platform_admin)),
        )
        .order_by(col(Member.id))
        .limit(limit)
    )


@dataclass(frozen=True)
class ScheduleQuery:
    """Filters for :meth:`ScheduleQueries.list_schedules`. ``None`` means "any"."""

    owner: str | None = None
    #: The tenant the rows belong to (None: every tenant).
    tenant: str | None = None
    states: tuple[str, ...] | None = None
    destination: str | None = None
    text: str | None = None
    limit: int = 200
    #: Newest first (by id) instead of soonest next run first; with ``before_id``, the
    #: page after that id (keyset).
    newest_first: bool = False
    before_id: int | None = None


@dataclass(frozen=True)
class SendsTo:
    """What one author sends to one destination (:meth:`ScheduleQueries.sends_to`):
    the due times of their jobs there, and their recurring rules there with each one's
    next run."""

    due: list[datetime]
    rules: list[tuple[str, datetime | None]]


#: The most job times (and rules) :meth:`ScheduleQueries.sends_to` reads.
SENDS_READ = 50_000

#: Rows a bulk insert writes per round trip (its transaction spans them all).
BULK_PART = 500

#: The largest schedule id the column holds (INTEGER on PostgreSQL).
MAX_SCHEDULE_ID = 2**31 - 1


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def sends_to_destination(destination: str) -> Any:
    """Schedules any of whose recipients (a step of its chain included) is ``destination``."""
    quoted = json.dumps(destination)
    escaped = quoted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sa.or_(
        SCHEDULE.c.destination == destination,
        sa.cast(SCHEDULE.c.recipients, sa.Text).like(f"%{escaped}%", escape="\\"),
    )


def _matching(query: ScheduleQuery) -> list[Any]:
    """The conditions of ``query``'s filters (its keyset ``before_id`` too)."""
    where: list[Any] = []
    if query.owner is not None:
        where.append(col(Schedule.owner) == query.owner)
    if query.tenant is not None:
        where.append(col(Schedule.tenant) == query.tenant)
    if query.states:
        where.append(state_condition(query.states))
    if query.destination is not None:
        where.append(sends_to_destination(query.destination))
    if query.text:
        where.append(sa.func.lower(col(Schedule.body)).like(_like(query.text), escape="\\"))
    if query.before_id is not None:
        where.append(col(Schedule.id) < query.before_id)
    return where


class ScheduleQueries(ApprovalQueries):
    """Members, schedules and their jobs as people see them."""

    # --- members ----------------------------------------------------------------

    async def get_member(self, tenant: str, member_id: str) -> Member | None:
        async with self._read_session() as s:
            return await s.get(Member, {"tenant": tenant, "id": member_id})

    async def find_member(self, member_id: str) -> Member | None:
        """The member ``member_id`` in any tenant (the first by tenant), if Herald knows
        them anywhere: for Herald-wide actors only."""
        async with self._read_session() as s:
            result = await s.execute(
                select(Member).where(col(Member.id) == member_id).order_by(col(Member.tenant))
            )
            return result.scalars().first()

    async def admins_of(self, tenant: str, *, limit: int = 5) -> list[str]:
        """Up to ``limit`` members of ``tenant`` holding the admin role there (or whom
        their platform says administer it), by id."""
        async with self._read_session() as s:
            return list((await s.execute(_admins(tenant, limit))).scalars())

    async def make_first_admin(
        self, tenant: str, member_id: str, *, now: datetime, audit: AuditEntry
    ) -> list[str]:
        """Give ``member_id`` the admin role in ``tenant`` if nobody holds it there yet,
        in one transaction (two at once: one wins). Returns the admins who were there
        already (empty: ``member_id`` is now the first)."""
        async with self._session() as s:
            if self.backend == "postgresql":  # SQLite's BEGIN IMMEDIATE serializes already
                lock = sa.text("SELECT pg_advisory_xact_lock(hashtext(:key))")
                await s.execute(lock, {"key": f"herald:first-admin:{tenant}"})
            existing = list((await s.execute(_admins(tenant, 5))).scalars())
            if existing:
                return existing
            member = await s.get(Member, {"tenant": tenant, "id": member_id})
            if member is None:
                member = Member(tenant=tenant, id=member_id, created_at=now, updated_at=now)
                s.add(member)
            member.role = Role.ADMIN.value
            member.updated_at = now
            await self._audit(s, audit, now)
            return []

    async def save_member(
        self,
        tenant: str,
        member_id: str,
        *,
        now: datetime,
        role: str | None = None,
        timezone: str | None = None,
        display_name: str | None = None,
        platform_admin: bool | None = None,
        calendar_token: str | None = None,
        audit: AuditEntry | None = None,
    ) -> Member:
        """Create the member or update the given fields; returns the stored row."""
        async with self._session() as s:
            member = await s.get(Member, {"tenant": tenant, "id": member_id})
            if member is None:
                member = Member(tenant=tenant, id=member_id, created_at=now, updated_at=now)
                s.add(member)
            if role is not None:
                member.role = role
            if timezone is not None:
                member.timezone = timezone
            if display_name is not None:
                member.display_name = display_name
            if platform_admin is not None:
                member.platform_admin = platform_admin
            if calendar_token is not None:
                member.calendar_token = calendar_token
            member.updated_at = now
            if audit is not None:
                await self._audit(s, audit, now)
            return member

    # --- schedules: create --------------------------------------------------------

    async def find_schedule_by_key(self, tenant: str, owner: str, key: str) -> Schedule | None:
        async with self._session() as s:
            result = await s.execute(
                select(Schedule).where(
                    col(Schedule.tenant) == tenant,
                    col(Schedule.owner) == owner,
                    col(Schedule.idempotency_key) == key,
                )
            )
            return result.scalars().first()

    async def create_schedule(
        self,
        schedule: Schedule,
        *,
        first_run: datetime | None,
        audit: AuditEntry,
        now: datetime,
        held: Held | None = None,
    ) -> tuple[Schedule, bool]:
        """Insert ``schedule``, its first job (when ``first_run`` is set) and the audit
        row in one transaction; ``held``: the request an approver decides before it is
        sent (core/store/approvals.py), in the same transaction. Returns ``(schedule,
        created)``: when the owner already has a schedule with the same idempotency
        key, that one and ``False``."""
        if schedule.idempotency_key is not None:
            existing = await self.find_schedule_by_key(
                schedule.tenant, schedule.owner, schedule.idempotency_key
            )
            if existing is not None:
                return existing, False
        try:
            if not schedule.recipients:
                schedule.recipients = routing.to_json(routing.from_json([], schedule.destination))
            async with self._session() as s:
                s.add(schedule)
                await s.flush()
                assert schedule.id is not None
                if first_run is not None:
                    await self._arm(s, schedule.id, first_run, now)
                if held is not None:
                    await self._hold(
                        s,
                        **held.as_kwargs(schedule.tenant, schedule.id, 1, schedule.owner),
                        now=now,
                    )
                entry = replace(
                    audit,
                    object_type="schedule",
                    object_id=str(schedule.id),
                    tenant=schedule.tenant,
                )
                await self._audit(s, entry, now)
        except sa.exc.IntegrityError:
            # Lost a race with the same idempotency key: the other insert won.
            if schedule.idempotency_key is not None:
                existing = await self.find_schedule_by_key(
                    schedule.tenant, schedule.owner, schedule.idempotency_key
                )
                if existing is not None:
                    return existing, False
            raise
        return schedule, True

    async def existing_keys(
        self, owner: str, keys: Iterable[str], *, tenant: str = LOCAL_TENANT
    ) -> set[str]:
        """Which of ``keys`` the owner already used for a schedule in ``tenant``."""
        wanted = list(set(keys))
        found: set[str] = set()
        async with self._session() as s:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                result = await s.execute(
                    sa.select(SCHEDULE.c.idempotency_key).where(
                        SCHEDULE.c.tenant == tenant,
                        SCHEDULE.c.owner == owner,
                        SCHEDULE.c.idempotency_key.in_(chunk),
                    )
                )
                found.update(row[0] for row in result)
        return found

    async def create_schedules_bulk(
        self,
        rows: Sequence[dict[str, Any]],
        *,
        details: Sequence[dict[str, Any]],
        actor: str,
        action: str,
        now: datetime,
        tenant: str = LOCAL_TENANT,
        surface: str | None = None,
        part: int = BULK_PART,
        progress: Callable[[int], None] | None = None,
    ) -> list[int]:
        """Insert many schedules (column dicts, each with ``starts_at``), one job and one
        audit row each (``details`` in the same order, ``surface`` where the request
        came from), in one transaction: a crash leaves all of them or none.

        The rows go in ``part`` at a time (each part's statements are a round trip that
        gives the event loop back), calling ``progress(rows written so far)`` after each;
        they are committed only after the last. Returns the new ids in input order.
        Raises Conflict when another writer took one of the keys meanwhile."""
        if not rows:
            return []
        ids: list[int] = []
        try:
            async with self._conn() as conn:
                for start in range(0, len(rows), part):
                    chunk = rows[start : start + part]
                    new_ids = await self._insert_schedules(conn, chunk)
                    await self._insert_jobs(conn, list(zip(new_ids, chunk, strict=True)), now)
                    await self._audit_each(
                        conn,
                        AuditEntry(actor, action, "schedule", tenant=tenant, surface=surface),
                        now,
                        [
                            (str(sid), detail)
                            for sid, detail in zip(
                                new_ids, details[start : start + part], strict=True
                            )
                        ],
                    )
                    ids.extend(new_ids)
                    if progress is not None:
                        progress(len(ids))
                await self._notify_due(conn)
        except sa.exc.IntegrityError as exc:
            raise Conflict(
                "Another import added some of the same keys at the same time; "
                "run the import again (lines already imported are skipped)."
            ) from exc
        return ids

    async def _insert_schedules(
        self, conn: AsyncConnection, rows: Sequence[dict[str, Any]]
    ) -> list[int]:
        """Insert rows and return their ids in input order, in as few statements as the
        database allows."""
        rows = [
            row
            if row.get("recipients")
            else {**row, "recipients": routing.to_json(routing.from_json([], row["destination"]))}
            for row in rows
        ]
        if self.backend == "postgresql":
            result = await conn.execute(
                sa.insert(SCHEDULE).returning(SCHEDULE.c.id, sort_by_parameter_order=True),
                list(rows),
            )
            return [row[0] for row in result]
        # SQLite cannot promise the order of RETURNING rows, and SQLAlchemy then falls
        # back to one statement per row. But this transaction began IMMEDIATE, so it is
        # the only writer: an executemany assigns rowids max+1, max+2, ... in order.
        before = (await conn.execute(sa.select(sa.func.max(SCHEDULE.c.id)))).scalar() or 0
        await conn.execute(sa.insert(SCHEDULE), list(rows))
        result = await conn.execute(
            sa.select(SCHEDULE.c.id).where(SCHEDULE.c.id > before).order_by(SCHEDULE.c.id)
        )
        ids = [row[0] for row in result]
        if len(ids) != len(rows):
            raise DatabaseError("Another process wrote schedules during a bulk insert.")
        return ids

    # --- schedules: read ------------------------------------------------------------

    async def jobs_of_tenant(self, job_ids: Sequence[int], tenant: str) -> set[int]:
        """Which of these jobs belong to a schedule of ``tenant``."""
        if not job_ids:
            return set()
        stmt = (
            sa.select(JOB.c.id)
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(JOB.c.id.in_(list(job_ids)), SCHEDULE.c.tenant == tenant)
        )
        async with self._read() as conn:
            return {int(row[0]) for row in await conn.execute(stmt)}

    async def count_live(self, tenant: str, owner: str) -> tuple[int, int]:
        """Active and paused schedules, each once per recipient: ``(of owner in tenant, of
        the whole tenant)``."""
        live = SCHEDULE.c.state.in_(("active", "paused"))
        many = sa.func.json_array_length(SCHEDULE.c.recipients)
        each = sa.case((many > 1, many), else_=1)  # (a row older than routing: one)
        stmt = sa.select(
            sa.func.coalesce(sa.func.sum(each).filter(SCHEDULE.c.owner == owner), 0),
            sa.func.coalesce(sa.func.sum(each), 0),
        ).where(SCHEDULE.c.tenant == tenant, live)
        async with self._read() as conn:
            mine, total = (await conn.execute(stmt)).one()
        return int(mine), int(total)

    async def sends_to(
        self,
        tenant: str,
        owner: str,
        destination: str,
        *,
        start: datetime,
        end: datetime,
        exclude: int | None = None,
    ) -> SendsTo:
        """What ``owner`` sends (or sent) to ``destination`` in ``tenant`` around
        ``start`` to ``end``, for the cap on messages to one recipient per hour: the due
        times of the jobs of their schedules there that are or were to be sent (waiting,
        held, delivered, dead or discarded; not cancelled, skipped or expired), and the rules of
        their active recurring schedules there (each with its next run, whose job is
        among the times). ``exclude`` leaves out one schedule (the one being changed)."""
        sent = (
            JobState.PENDING.value,
            JobState.RETRYING.value,
            JobState.CLAIMED.value,
            JobState.DELIVERED.value,
            JobState.DEAD.value,
            JobState.DISCARDED.value,
        )
        theirs = [SCHEDULE.c.tenant == tenant, SCHEDULE.c.owner == owner]
        if exclude is not None:
            theirs.append(SCHEDULE.c.id != exclude)
        there = JOB_DESTINATION == destination
        due = (
            sa.select(JOB.c.due_at)
            .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
            .where(
                *theirs,
                there,
                JOB.c.due_at >= start,
                JOB.c.due_at < end,
                JOB.c.state.in_(sent),
            )
            .order_by(JOB.c.due_at)
            .limit(SENDS_READ)
        )
        rules = (
            sa.select(SCHEDULE.c.rrule, SCHEDULE.c.next_run_at)
            .where(
                *theirs,
                sends_to_destination(destination),
                SCHEDULE.c.state == "active",
                SCHEDULE.c.rrule.is_not(None),
            )
            .order_by(SCHEDULE.c.id)
            .limit(SENDS_READ)
        )
        async with self._read() as conn:
            times = [row[0] for row in await conn.execute(due)]
            found = [(str(row[0]), row[1]) for row in await conn.execute(rules)]
        return SendsTo(times, found)

    async def get_schedule(self, schedule_id: int) -> Schedule | None:
        try:  # (a button's id arrives as text)
            number = int(schedule_id)
        except (TypeError, ValueError):
            return None
        if not 0 < number <= MAX_SCHEDULE_ID:  # names no row (and PostgreSQL would
            return None  # refuse to compare it with an integer column)
        async with self._session() as s:
            return await s.get(Schedule, number)

    async def list_schedules(self, query: ScheduleQuery) -> list[Schedule]:
        """Schedules matching ``query``: soonest next run first, then newest (or
        newest first, ``query.newest_first``)."""
        stmt = select(Schedule).where(*_matching(query))
        if query.newest_first:
            stmt = stmt.order_by(col(Schedule.id).desc())
        else:
            stmt = stmt.order_by(
                col(Schedule.next_run_at).is_(None),
                col(Schedule.next_run_at),
                col(Schedule.id).desc(),
            )
        stmt = stmt.limit(query.limit)
        async with self._session() as s:
            return list((await s.execute(stmt)).scalars())

    async def count_listed(self, query: ScheduleQuery) -> int:
        """How many schedules match ``query`` (its limit and order aside): what a list
        cut at its limit says it left out."""
        stmt = sa.select(sa.func.count()).select_from(SCHEDULE).where(*_matching(query))
        async with self._read() as conn:
            return int((await conn.execute(stmt)).scalar() or 0)

    async def schedule_jobs(self, schedule_id: int, limit: int = 50) -> list[Job]:
        """A schedule's jobs, latest occurrence first."""
        stmt = (
            select(Job)
            .where(col(Job.schedule_id) == schedule_id)
            .order_by(col(Job.occurrence_at).desc())
            .limit(limit)
        )
        async with self._session() as s:
            return list((await s.execute(stmt)).scalars())

    async def job_attempts(self, job_ids: Sequence[int]) -> list[Attempt]:
        """Attempts of the given jobs, newest first."""
        if not job_ids:
            return []
        stmt = (
            select(Attempt)
            .where(col(Attempt.job_id).in_(list(job_ids)))
            .order_by(col(Attempt.started_at).desc())
        )
        async with self._session() as s:
            return list((await s.execute(stmt)).scalars())

    # --- schedules: change ----------------------------------------------------------

    async def change_schedule(
        self,
        schedule_id: int,
        *,
        expected_version: int,
        values: dict[str, Any],
        now: datetime,
        audit: AuditEntry,
        cancel_open_jobs: bool = False,
        arm_at: datetime | None = None,
        events: Sequence[EventRow] = (),
        held: Held | None = None,
        withdraw: bool = False,
        stop_ladders: bool = False,
    ) -> Schedule:
        """Apply ``values`` to a schedule if it is still at ``expected_version``, bump
        the version, optionally cancel its waiting jobs and arm a job at ``arm_at``,
        and write the audit row and the ``events`` someone listens to
        (:func:`core.store.outcomes.record_events`): all in one transaction.

        ``held``: the edited schedule waits for an approver again (its request written,
        any earlier one withdrawn); ``withdraw``: its pending request is moot (cancelled).
        ``stop_ladders``: its until-done rule changed or went, so the nags and escalations
        its delivered messages still wait to send, written by the old rule, are cancelled.
        A ``done`` edit is never cancelled: Done was pressed, the message says so.

        Raises Conflict when the schedule changed since it was read.
        """
        async with self._session() as s:
            if "destination" in values:
                # jobs that left their destination to the schedule's keep the one it was
                await s.execute(
                    sa.update(JOB)
                    .where(JOB.c.schedule_id == schedule_id, JOB.c.destination.is_(None))
                    .values(
                        destination=sa.select(SCHEDULE.c.destination)
                        .where(SCHEDULE.c.id == schedule_id)
                        .scalar_subquery()
                    )
                )
            result = await s.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.id == schedule_id, SCHEDULE.c.version == expected_version)
                .values(**values, version=SCHEDULE.c.version + 1, updated_at=now)
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(
                    f"Schedule {schedule_id} was changed by someone else since you read it; "
                    "look at it again and retry."
                )
            if "priority" in values:
                # its waiting jobs take the new rank in the queue (core.preferences.RANK)
                await s.execute(
                    sa.update(JOB)
                    .where(JOB.c.schedule_id == schedule_id, JOB.c.state.in_(OPEN_STATE_VALUES))
                    .values(priority=rank_of(values["priority"]))
                )
            if cancel_open_jobs or stop_ladders:
                await s.execute(
                    sa.update(JOB)
                    .where(
                        JOB.c.schedule_id == schedule_id,
                        JOB.c.state.in_(OPEN_STATE_VALUES),
                        JOB.c.ladder != until_done.DONE,
                        sa.true() if cancel_open_jobs else JOB.c.ladder != "",
                    )
                    .values(state=JobState.CANCELLED.value, updated_at=now, finished_at=now)
                )
            if arm_at is not None:
                await self._arm(s, schedule_id, arm_at, now)
            elif "recipients" in values and not cancel_open_jobs:
                await self._reroute(s, schedule_id, now)
            if held is not None:
                tenant, owner = (
                    await s.execute(
                        sa.select(SCHEDULE.c.tenant, SCHEDULE.c.owner).where(
                            SCHEDULE.c.id == schedule_id
                        )
                    )
                ).one()
                await self._hold(
                    s,
                    **held.as_kwargs(tenant, schedule_id, expected_version + 1, owner),
                    now=now,
                )
            elif withdraw:
                await self._withdraw(s, schedule_id, now)
            entry = replace(audit, object_type="schedule", object_id=str(schedule_id))
            await self._audit(s, entry, now)
            if events:
                await record_events(await s.connection(), events)
            updated = await s.get(Schedule, schedule_id, populate_existing=True)
            assert updated is not None
            return updated
