"""Queries of the dispatchers' liveness: heartbeats and lease renewals, reclaiming what
dead or stalled dispatchers held, and what a drain leaves (the dispatcher's side of a
lease is :mod:`core.dispatcher`). The send slots they share are
:mod:`core.store.rate_buckets`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from core.models import OPEN_STATE_VALUES, JobState, Worker
from core.store.base import JOB, Gateway, aware, held_by

WORKER = Worker.__table__  # type: ignore[attr-defined]
CLAIMABLE = OPEN_STATE_VALUES


@dataclass(frozen=True)
class KeptAlive:
    """What a keep-alive found: the jobs whose leases it extended, and whether this
    worker had been declared dead (and its other jobs handed back) before it."""

    held: set[int]
    revived: bool


@dataclass(frozen=True)
class Backlog:
    """What waits besides what a drain can send now (see :meth:`WorkerQueries.backlog`)."""

    due_later: int
    next_due_at: datetime | None
    held_elsewhere: int
    next_lease_end: datetime | None


class WorkerQueries(Gateway):
    """Dispatchers' heartbeats, their leases, and reclaiming what dead ones held."""

    async def keep_alive(
        self,
        worker: str,
        *,
        host: str,
        pid: int,
        machine: str | None,
        now: datetime,
        job_ids: Sequence[int],
        until: datetime,
    ) -> KeptAlive:
        """In one transaction: ``worker``'s heartbeat (at ``now``) and its leases on
        ``job_ids`` extended to ``until`` where it still holds them.

        The heartbeat and :meth:`reclaim_dead_workers` lock the same worker row, so a
        worker is either still alive when its heartbeat lands or learns here (``revived``)
        that it had been declared dead, its jobs handed back."""
        values = {"host": host, "pid": pid, "machine": machine, "heartbeat_at": now}
        async with self._tx() as conn:
            beat = await conn.execute(
                sa.update(WORKER)
                .where(WORKER.c.id == worker, WORKER.c.stopped_at.is_(None))
                .values(**values)
            )
            revived = False
            if beat.rowcount == 0:
                existed = await conn.execute(sa.select(WORKER.c.id).where(WORKER.c.id == worker))
                revived = existed.first() is not None
                insert = self._insert()(WORKER).values(id=worker, started_at=now, **values)
                await conn.execute(
                    insert.on_conflict_do_update(
                        index_elements=["id"], set_={**values, "stopped_at": None}
                    )
                )
            held: set[int] = set()
            if job_ids:
                result = await conn.execute(
                    sa.update(JOB)
                    .where(held_by(worker, job_ids))
                    .values(lease_expires_at=until)
                    .returning(JOB.c.id)
                )
                held = {row[0] for row in result}
        return KeptAlive(held, revived)

    async def reclaim_expired(self, *, now: datetime) -> int:
        """Hand back jobs whose lease expired (their worker died or stalled) so they are
        claimed again with the same idempotency key. Returns how many."""
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

    async def reclaim_dead_workers(
        self, *, now: datetime, silent_since: datetime, gone: Sequence[str], me: str
    ) -> tuple[list[str], int]:
        """Declare dead the running workers (other than ``me``) that have not heartbeated
        since ``silent_since`` or whose process is ``gone``, and hand back the jobs they
        held, whatever their leases say, in one transaction. Returns the workers' ids
        and how many jobs."""
        dead_if = WORKER.c.heartbeat_at <= silent_since
        if gone:
            dead_if = sa.or_(dead_if, WORKER.c.id.in_(list(gone)))
        async with self._tx() as conn:
            rows = await conn.execute(
                sa.update(WORKER)
                .where(WORKER.c.stopped_at.is_(None), WORKER.c.id != me, dead_if)
                .values(stopped_at=now)
                .returning(WORKER.c.id)
            )
            dead = sorted(row[0] for row in rows)
            if not dead:
                return [], 0
            result = await conn.execute(
                sa.update(JOB)
                .where(JOB.c.state == JobState.CLAIMED.value, JOB.c.lease_owner.in_(dead))
                .values(
                    state=JobState.RETRYING.value,
                    lease_owner=None,
                    lease_expires_at=None,
                    last_error="The dispatcher holding this job died; it was handed back.",
                    updated_at=now,
                )
            )
            if result.rowcount:
                await self._notify_due(conn)
            return dead, int(result.rowcount)

    async def backlog(self, *, worker: str, after: datetime) -> Backlog:
        """What a drain leaves: waiting jobs due after ``after``, jobs other workers
        hold, and when the next of each falls due or has its lease end."""
        claimed = sa.and_(
            JOB.c.state == JobState.CLAIMED.value,
            sa.or_(JOB.c.lease_owner.is_(None), JOB.c.lease_owner != worker),
        )
        q = sa.select(
            sa.func.count().filter(JOB.c.state.in_(CLAIMABLE), JOB.c.due_at > after),
            sa.func.min(JOB.c.due_at).filter(JOB.c.state.in_(CLAIMABLE)),
            sa.func.count().filter(claimed),
            sa.func.min(JOB.c.lease_expires_at).filter(claimed),
        ).where(JOB.c.state.in_((*CLAIMABLE, JobState.CLAIMED.value)))
        async with self._read() as conn:
            later, next_due, held, lease_ends = (await conn.execute(q)).one()
        return Backlog(int(later), aware(next_due), int(held), aware(lease_ends))

    async def heartbeat(
        self,
        worker: str,
        *,
        host: str,
        pid: int,
        now: datetime,
        stopped: bool = False,
        machine: str | None = None,
    ) -> None:
        """Record that ``worker`` is alive (or, with ``stopped``, that it stopped)."""
        values = {
            "host": host,
            "pid": pid,
            "machine": machine,
            "heartbeat_at": now,
            "stopped_at": now if stopped else None,
        }
        insert = self._insert()(WORKER).values(id=worker, started_at=now, **values)
        async with self._tx() as conn:
            await conn.execute(insert.on_conflict_do_update(index_elements=["id"], set_=values))

    async def running_workers(self) -> list[Worker]:
        """Dispatchers that have not stopped (nor been declared dead)."""
        async with self._read() as conn:
            rows = await conn.execute(sa.select(WORKER).where(WORKER.c.stopped_at.is_(None)))
            return [Worker(**row._mapping) for row in rows]

    async def workers(self) -> list[Worker]:
        """Dispatchers that reported a heartbeat, most recent first."""
        async with self._read() as conn:
            rows = await conn.execute(sa.select(WORKER).order_by(WORKER.c.heartbeat_at.desc()))
            return [Worker(**row._mapping) for row in rows]
