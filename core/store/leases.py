"""Queries of leases, dispatchers and shared rate limits: heartbeats and lease
renewals, reclaiming what dead or stalled dispatchers held, what a drain leaves, and
send slots from each destination's bucket (see :mod:`core.leases` and
:mod:`core.ratelimit`)."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from core.channels.base import RateLimit
from core.models import OPEN_STATE_VALUES, JobState, RateBucket, Worker, sqlite_utc_text
from core.ratelimit import allocate, next_slot, pause
from core.store.base import JOB, Gateway

WORKER = Worker.__table__  # type: ignore[attr-defined]
BUCKET = RateBucket.__table__  # type: ignore[attr-defined]
CLAIMABLE = OPEN_STATE_VALUES


@dataclass(frozen=True)
class KeptAlive:
    """What a keep-alive found: the jobs whose leases it extended, and whether this
    worker had been declared dead (and its other jobs handed back) before it."""

    held: set[int]
    revived: bool


@dataclass(frozen=True)
class Slots:
    """Send slots taken from a destination's shared bucket, in order, and when its
    next one is free (for the jobs that got none)."""

    times: list[datetime]
    next_free: datetime


@dataclass(frozen=True)
class Backlog:
    """What waits besides what a drain can send now (see :meth:`LeaseQueries.backlog`)."""

    due_later: int
    next_due_at: datetime | None
    held_elsewhere: int
    next_lease_end: datetime | None


def _aware(value: Any) -> datetime | None:
    """An aggregate's timestamp: SQLite returns the stored text, not a datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        return sqlite_datetime(value)
    moment: datetime = value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def held_by(worker: str, job_ids: Sequence[int]) -> sa.ColumnElement[bool]:
    """Jobs among ``job_ids`` that ``worker`` still holds a lease on."""
    return sa.and_(
        JOB.c.id.in_(list(job_ids)),
        JOB.c.lease_owner == worker,
        JOB.c.state == JobState.CLAIMED.value,
    )


@functools.lru_cache(maxsize=4096)
def sqlite_datetime(text: str) -> datetime:
    """A timestamp read below SQLAlchemy from SQLite (see :func:`sqlite_utc_text`).
    Remembered for the last few thousand: a claimed batch's jobs share a few due times
    (a datetime cannot change)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_EPOCH_TEXT = sqlite_utc_text(_EPOCH)
_SQLITE_BUCKET_INSERT = (
    "INSERT INTO rate_bucket (destination, tat) VALUES (?, ?) ON CONFLICT (destination) DO NOTHING"
)
_SQLITE_BUCKET_SELECT = (
    "SELECT destination, tat FROM rate_bucket WHERE destination IN (SELECT value FROM json_each(?))"
)
_SQLITE_BUCKET_UPDATE = "UPDATE rate_bucket SET tat = ? WHERE destination = ?"


class LeaseQueries(Gateway):
    """Dispatchers' heartbeats and leases, and the shared rate-limit buckets."""

    def _insert(self) -> Any:
        dialect = postgresql if self.backend == "postgresql" else sqlite
        return dialect.insert

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
        return Backlog(int(later), _aware(next_due), int(held), _aware(lease_ends))

    async def reserve_slots(
        self,
        wanted: Mapping[str, tuple[int, RateLimit]],
        *,
        now: datetime,
        window: float,
        not_before: Mapping[str, datetime] | None = None,
    ) -> dict[str, Slots]:
        """Take send slots from the shared buckets of destinations: for each, up to the
        count wanted, none before its ``not_before`` (when its first job is due) and
        none later than ``window`` seconds from now, under its limit. One transaction;
        the buckets' rows are locked in one order, so dispatchers taking slots at the
        same moment queue behind each other and share each limit."""
        if not wanted:
            return {}
        keys = sorted(wanted)
        found: dict[str, Slots] = {}
        starts = not_before or {}

        def take(tats: dict[str, datetime | None]) -> None:
            for key in keys:
                count, limit = wanted[key]
                slots, tat = allocate(
                    tats.get(key), now, count, limit, window, start=starts.get(key)
                )
                tats[key] = tat
                found[key] = Slots(slots, next_slot(tat, now, limit))

        await self._buckets(keys, take)
        return found

    async def pause_bucket(self, key: str, until: datetime, limit: RateLimit) -> None:
        """The provider asked that ``key`` be left alone until ``until`` (Retry-After):
        its shared bucket hands out no slot before then, to any dispatcher."""

        def paused(tats: dict[str, datetime | None]) -> None:
            tats[key] = pause(tats.get(key), until, limit)

        await self._buckets([key], paused)

    async def _buckets(
        self, keys: list[str], change: Callable[[dict[str, datetime | None]], None]
    ) -> None:
        """The buckets of ``keys`` (sorted), locked for one transaction: ``change`` is
        given their theoretical arrival times, by key, and what it sets is written back.

        The statements do not depend on how many keys there are (the rows are
        inserted and updated as one statement run for many rows), so each is compiled
        once, not per call: a statement of a row per key cost more to compile than the
        database took to run it, on the event loop. On SQLite the whole transaction,
        ``change`` included, is one round trip to the driver's thread
        (:meth:`Gateway._sqlite_run`): a reservation made of a round trip per
        statement waited ~10 ms in a webhook burst, and the sends waited for it."""
        if self.backend == "sqlite":

            def work(sqlite: sqlite3.Connection) -> None:
                sqlite.executemany(_SQLITE_BUCKET_INSERT, [(k, _EPOCH_TEXT) for k in keys])
                rows = sqlite.execute(_SQLITE_BUCKET_SELECT, (json.dumps(keys),)).fetchall()
                tats: dict[str, datetime | None] = {row[0]: sqlite_datetime(row[1]) for row in rows}
                change(tats)
                sqlite.executemany(
                    _SQLITE_BUCKET_UPDATE,
                    [(sqlite_utc_text(t), k) for k in keys if (t := tats[k]) is not None],
                )

            await self._sqlite_run(work)
            return
        async with self._tx() as conn:
            await conn.execute(
                self._insert()(BUCKET).on_conflict_do_nothing(index_elements=["destination"]),
                [{"destination": k, "tat": _EPOCH} for k in keys],
            )
            locked = (
                sa.select(BUCKET.c.destination, BUCKET.c.tat)
                .where(BUCKET.c.destination.in_(keys))
                # one order for every dispatcher: two taking slots queue, never deadlock
                .order_by(BUCKET.c.destination)
                .with_for_update()
            )
            tats = {row[0]: _aware(row[1]) for row in await conn.execute(locked)}
            change(tats)
            await conn.execute(
                sa.update(BUCKET)
                .where(BUCKET.c.destination == sa.bindparam("key"))
                .values(tat=sa.bindparam("new_tat")),
                [{"key": k, "new_tat": tats[k]} for k in keys],
            )

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

    async def leased_by(self, worker: str) -> set[str]:
        """Idempotency keys of the jobs ``worker`` holds a lease on."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(JOB.c.idempotency_key).where(
                    JOB.c.lease_owner == worker, JOB.c.state == JobState.CLAIMED.value
                )
            )
            return {row[0] for row in rows}

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
