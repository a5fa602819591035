"""The channel's view: what is scheduled into one destination (its agenda, the
candidates of a duplicate), what is planned there (the congestion forecast,
core.congestion) and sending a schedule's next occurrence now.

The planned jobs of one destination are read in two parts, each on an index: the jobs
that go to their schedule's own destination (``job.destination`` NULL: the schedules
into it by ``ix_schedule_destination``, their jobs by the job's unique key) and those
whose own destination it is (another recipient, a fallback step:
``ix_job_waiting_destination``). A save's forecast then reads the jobs of one
destination, never a time window of every destination's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from core.congestion import Planned
from core.models import OPEN_STATE_VALUES, WAITING_SQL, Schedule, ScheduleState
from core.store.base import JOB, MEMBER, SCHEDULE, AuditEntry, Gateway, new_idempotency_key

#: The most planned jobs one forecast reads (a destination with more is crowded
#: beyond any doubt: the forecast says so with these).
PLANNED_READ = 20_000


@dataclass(frozen=True)
class SentNow:
    """What :meth:`ChannelViewQueries.send_next_now` moved: the occurrence sent now and the
    jobs (one per recipient) now due."""

    occurrence_at: datetime
    job_ids: list[int]


class ChannelViewQueries(Gateway):
    async def into(
        self,
        tenant: str | None,
        destination: str,
        *,
        viewer: str,
        others: bool = True,
        states: Sequence[str] = (ScheduleState.ACTIVE.value,),
        limit: int = 200,
    ) -> list[Schedule]:
        """Schedules of ``tenant`` (None: every tenant's, for a Herald-wide operator) in
        ``states`` into ``destination``: the ``viewer``'s own, and with ``others``
        everyone else's not marked private; soonest next run first.

        Into it means its first recipient's first step is ``destination``, or one of
        its waiting jobs goes there (another recipient, a fallback step reached): both
        found on an index. A chain's step not reached is not counted (the message goes
        there only if the steps before it fail), nor a recipient whose job is being
        sent at this moment (its next is planned once it is recorded). Reading the
        recipients' JSON instead (``sends_to_destination``) scans every active
        schedule of the tenant: 50-67 ms a save at 100,000 schedules (bench.forecast)."""
        stmt = (
            select(Schedule)
            .where(*_into(tenant, destination, viewer, others, states))
            .order_by(
                col(Schedule.next_run_at).is_(None),
                col(Schedule.next_run_at),
                col(Schedule.id),
            )
            .limit(limit)
        )
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def texts_into(
        self,
        tenant: str,
        destination: str,
        *,
        viewer: str,
        others: bool = True,
        states: Sequence[str] = (ScheduleState.ACTIVE.value,),
        limit: int = 5_000,
    ) -> list[tuple[int, str]]:
        """The ids and texts of the schedules :meth:`into` finds (the candidates of a
        duplicate: their texts are compared before any is read whole)."""
        stmt = (
            sa.select(SCHEDULE.c.id, SCHEDULE.c.body)
            .where(*_into(tenant, destination, viewer, others, states))
            .order_by(SCHEDULE.c.id)
            .limit(limit)
        )
        async with self._read() as conn:
            return [(int(sid), str(body)) for sid, body in await conn.execute(stmt)]

    async def display_names(self, members: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The names of ``members`` (tenant, member id) that have one, in one query."""
        if not members:
            return {}
        stmt = sa.select(MEMBER.c.tenant, MEMBER.c.id, MEMBER.c.display_name).where(
            sa.tuple_(MEMBER.c.tenant, MEMBER.c.id).in_(sorted(set(members))),
            MEMBER.c.display_name != "",
        )
        async with self._read() as conn:
            return {(t, m): str(n) for t, m, n in await conn.execute(stmt)}

    async def schedules_by_id(self, ids: Sequence[int]) -> list[Schedule]:
        """The schedules of ``ids`` (those that exist), by id."""
        if not ids:
            return []
        stmt = select(Schedule).where(col(Schedule.id).in_(list(ids))).order_by(col(Schedule.id))
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def planned_into(
        self,
        destination: str,
        *,
        start: datetime,
        end: datetime,
        exclude: int | None = None,
    ) -> list[Planned]:
        """The jobs waiting to be sent to ``destination`` (every tenant's: the
        provider's limit is theirs together) due from ``start`` to ``end``, with their
        rank, in due order; those of the schedule ``exclude`` left out."""
        # the partial indexes' own text: SQLite uses ix_job_waiting_destination only then
        waiting = sa.text("job." + WAITING_SQL)
        window: tuple[Any, ...] = (JOB.c.due_at >= start, JOB.c.due_at <= end)
        if exclude is not None:
            window = (*window, JOB.c.schedule_id != exclude)
        own = (
            sa.select(JOB.c.due_at, JOB.c.priority)
            .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
            .where(
                SCHEDULE.c.destination == destination,
                JOB.c.destination.is_(None),
                waiting,
                *window,
            )
        )
        theirs = sa.select(JOB.c.due_at, JOB.c.priority).where(
            JOB.c.destination == destination, JOB.c.destination.is_not(None), waiting, *window
        )
        stmt = sa.union_all(own, theirs).order_by("due_at").limit(PLANNED_READ)
        async with self._read() as conn:
            return [(row[0], int(row[1])) for row in await conn.execute(stmt)]

    async def planned_between(
        self,
        *,
        start: datetime,
        end: datetime,
        tenant: str | None = None,
        limit: int = 500_000,
    ) -> dict[str, list[Planned]]:
        """Every job waiting to be sent from ``start`` to ``end``, by destination (the
        console's forecast of the day). With ``tenant``, only the destinations its jobs
        go to, each with every tenant's jobs there (a destination's limit is theirs
        together); None: every destination."""
        where = [
            JOB.c.state.in_(OPEN_STATE_VALUES),
            JOB.c.due_at >= start,
            JOB.c.due_at <= end,
        ]
        to = sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination)
        joined = JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
        if tenant is not None:
            theirs = sa.select(to).select_from(joined).where(*where, SCHEDULE.c.tenant == tenant)
            where.append(to.in_(theirs))
        stmt = (
            sa.select(to, JOB.c.due_at, JOB.c.priority)
            .select_from(joined)
            .where(*where)
            .order_by(JOB.c.due_at)
            .limit(limit)
        )
        out: dict[str, list[Planned]] = {}
        async with self._read() as conn:
            for destination, due, rank in await conn.execute(stmt):
                out.setdefault(str(destination), []).append((due, int(rank)))
        return out

    async def due_into(
        self, destination: str, *, start: datetime, end: datetime, tenant: str | None = None
    ) -> list[tuple[int, datetime]]:
        """The active schedules (of ``tenant``, when given) with a job waiting to be
        sent to ``destination`` from ``start`` to ``end``: each schedule's id and its
        earliest such job's due time (what the console's spread moves), in due order."""
        where = [
            sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination) == destination,
            JOB.c.state.in_(OPEN_STATE_VALUES),
            JOB.c.due_at >= start,
            JOB.c.due_at <= end,
            SCHEDULE.c.state == ScheduleState.ACTIVE.value,
        ]
        if tenant is not None:
            where.append(SCHEDULE.c.tenant == tenant)
        first = sa.func.min(JOB.c.due_at)
        stmt = (
            sa.select(JOB.c.schedule_id, first)
            .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
            .where(*where)
            .group_by(JOB.c.schedule_id)
            .order_by(first, JOB.c.schedule_id)
        )
        async with self._read() as conn:
            return [(int(sid), due) for sid, due in await conn.execute(stmt)]

    async def send_next_now(
        self, schedule: Schedule, *, now: datetime, audit: AuditEntry
    ) -> SentNow | None:
        """Make the next occurrence of ``schedule`` (as read, at its version) due now:
        its waiting jobs (the message, not the steps of a ladder) are due at ``now``,
        each with a fresh idempotency key (a provider that saw the key of an earlier try
        does not take this send for it). The rule's following occurrences stay: the
        next is planned when this one is recorded, as always. None when nothing of it
        is waiting (it is being sent, or the schedule changed since it was read)."""
        assert schedule.id is not None
        waiting = sa.and_(
            JOB.c.schedule_id == schedule.id,
            JOB.c.state.in_(OPEN_STATE_VALUES),
            JOB.c.ladder == "",
        )
        async with self._conn() as conn:
            occurrence = (
                await conn.execute(sa.select(sa.func.min(JOB.c.occurrence_at)).where(waiting))
            ).scalar()
            if occurrence is None:
                return None
            # its jobs locked first (PostgreSQL): one claimed since the read above is no
            # longer waiting, and nothing is written when none is left (being sent)
            ids = [
                int(row[0])
                for row in await conn.execute(
                    sa.select(JOB.c.id)
                    .where(waiting, JOB.c.occurrence_at == occurrence)
                    .order_by(JOB.c.id)
                    .with_for_update()
                )
            ]
            if not ids:
                return None
            bumped = await conn.execute(
                sa.update(SCHEDULE)
                .where(
                    SCHEDULE.c.id == schedule.id,
                    SCHEDULE.c.version == schedule.version,
                    SCHEDULE.c.state == ScheduleState.ACTIVE.value,
                )
                .values(version=SCHEDULE.c.version + 1, updated_at=now)
            )
            if bumped.rowcount != 1:
                return None
            await conn.execute(
                sa.update(JOB)
                .where(JOB.c.id == sa.bindparam("b_id"), JOB.c.state.in_(OPEN_STATE_VALUES))
                .values(
                    due_at=now,
                    idempotency_key=sa.bindparam("b_key"),
                    updated_at=now,
                ),
                [{"b_id": i, "b_key": new_idempotency_key()} for i in ids],
            )
            await self._notify_due(conn)
            details = {**audit.details, "occurrence": occurrence.isoformat(), "jobs": ids}
            await self._audit(
                conn, replace(audit, object_id=str(schedule.id), details=details), now
            )
        return SentNow(occurrence, ids)


def _into(
    tenant: str | None, destination: str, viewer: str, others: bool, states: Sequence[str]
) -> list[Any]:
    """The conditions of :meth:`ChannelViewQueries.into`."""
    mine = col(Schedule.owner) == viewer
    who = sa.or_(mine, col(Schedule.private).is_(False)) if others else mine
    ids = sa.union(
        sa.select(SCHEDULE.c.id).where(SCHEDULE.c.destination == destination),
        sa.select(JOB.c.schedule_id).where(
            JOB.c.destination == destination,
            JOB.c.destination.is_not(None),
            sa.text("job." + WAITING_SQL),  # as ix_job_waiting_destination says it
        ),
    )
    where = [col(Schedule.id).in_(ids), col(Schedule.state).in_(list(states)), who]
    if tenant is not None:
        where.append(col(Schedule.tenant) == tenant)
    return where
