"""The dead-letter desk's queries: dead letters listed, grouped, paged and counted;
retry requests, their answers, retries and discards; the cap on how many are kept.

A job is dead when it failed for good or ran out of attempts (the dispatcher records
that, :mod:`core.store.queue`); from here it goes back to the queue only by an
admin's approval.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from core import routing
from core.models import LOCAL_TENANT, JobState, Outcome
from core.store.base import JOB, JOB_DESTINATION, SCHEDULE, AuditEntry, Gateway
from core.store.paging import has_prefix, keyset_after, reason_key


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
    tenant: str = LOCAL_TENANT
    #: The admin who turned the last retry request down, and why (None: no answer yet).
    retry_rejected_by: str | None = None
    retry_reject_reason: str | None = None

    @property
    def retry_note(self) -> str | None:
        """Where its retry stands, in words: ``asked by X``, ``rejected by X: why``."""
        if self.retry_requested_by is not None:
            return f"asked by {self.retry_requested_by}"
        if self.retry_rejected_by is not None:
            why = f": {self.retry_reject_reason}" if self.retry_reject_reason else ""
            return f"rejected by {self.retry_rejected_by}{why}"
        return None


#: A dead letter's columns, as :class:`DeadLetter` names them.
DEAD_COLUMNS = (
    JOB.c.id.label("job_id"),
    JOB.c.schedule_id,
    SCHEDULE.c.tenant,
    SCHEDULE.c.owner,
    JOB_DESTINATION.label("destination"),
    SCHEDULE.c.body,
    JOB.c.attempts,
    JOB.c.last_error,
    JOB.c.occurrence_at,
    JOB.c.finished_at,
    JOB.c.retry_requested_by,
    JOB.c.retry_requested_at,
    JOB.c.retry_rejected_by,
    JOB.c.retry_reject_reason,
)
#: No answer to a retry request (a new request, or a retry, clears the last one).
_NO_ANSWER = {"retry_rejected_by": None, "retry_reject_reason": None}


@dataclass(frozen=True)
class DeadFilter:
    owner: str | None = None
    tenant: str | None = None
    #: A group key: the first ``REASON_CHARS`` characters of the last error.
    reason: str | None = None
    destination: str | None = None
    requested: bool | None = None


@dataclass(frozen=True)
class DeadGroup:
    reason: str
    count: int
    requested: int


class DeadLetterQueries(Gateway):
    """Dead letters as the dead-letter desk, the console and housekeeping see them."""

    # --- reads ------------------------------------------------------------------------

    def _dead_query(self) -> sa.Select[Any]:
        return (
            sa.select(*DEAD_COLUMNS)
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(JOB.c.state == JobState.DEAD.value)
        )

    async def dead_letters(
        self,
        *,
        owner: str | None = None,
        tenant: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int = 200,
    ) -> list[DeadLetter]:
        """Dead jobs, newest first (optionally one owner's, one tenant's, or the given ids)."""
        q = self._dead_query()
        if owner is not None:
            q = q.where(SCHEDULE.c.owner == owner)
        if tenant is not None:
            q = q.where(SCHEDULE.c.tenant == tenant)
        if ids is not None:
            q = q.where(JOB.c.id.in_(list(ids)))
        q = q.order_by(JOB.c.finished_at.desc(), JOB.c.id.desc()).limit(limit)
        async with self._read() as conn:
            return [DeadLetter(**row._mapping) for row in await conn.execute(q)]

    @staticmethod
    def _dead_where(f: DeadFilter) -> list[Any]:
        where: list[Any] = [JOB.c.state == JobState.DEAD.value]
        if f.owner is not None:
            where.append(SCHEDULE.c.owner == f.owner)
        if f.tenant is not None:
            where.append(SCHEDULE.c.tenant == f.tenant)
        if f.reason is not None:
            where.append(reason_key(JOB.c.last_error) == f.reason)
        if f.destination:
            where.append(has_prefix(JOB_DESTINATION, f.destination))
        if f.requested is not None:
            requested = JOB.c.retry_requested_by.is_not(None)
            where.append(requested if f.requested else sa.not_(requested))
        return where

    def _dead_from(self, q: Any) -> Any:
        return q.select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))

    async def dead_groups(self, f: DeadFilter, *, limit: int = 50) -> list[DeadGroup]:
        """Dead letters matching ``f`` grouped by reason, biggest group first."""
        reason = reason_key(JOB.c.last_error)
        q = self._dead_from(
            sa.select(
                reason.label("reason"),
                sa.func.count().label("total"),
                sa.func.count(JOB.c.retry_requested_by).label("requested"),
            )
        )
        q = (
            q.where(
                *self._dead_where(
                    DeadFilter(owner=f.owner, tenant=f.tenant, destination=f.destination)
                )
            )
            .group_by(reason)
            .order_by(sa.func.count().desc(), reason)
            .limit(limit)
        )
        async with self._read() as conn:
            return [
                DeadGroup(str(r.reason), int(r.total), int(r.requested))
                for r in await conn.execute(q)
            ]

    async def dead_page(
        self,
        f: DeadFilter,
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[DeadLetter]:
        """One page of dead letters matching ``f``, newest first (keyset: ``before``)."""
        q = (
            self._dead_from(sa.select(*DEAD_COLUMNS))
            .where(*self._dead_where(f))
            .where(keyset_after((JOB.c.finished_at, JOB.c.id), before, desc=True))
            .order_by(JOB.c.finished_at.desc(), JOB.c.id.desc())
            .limit(limit)
        )
        async with self._read() as conn:
            return [DeadLetter(**row._mapping) for row in await conn.execute(q)]

    async def count_dead(self, f: DeadFilter) -> int:
        q = self._dead_from(sa.select(sa.func.count())).where(*self._dead_where(f))
        async with self._read() as conn:
            return int(await conn.scalar(q) or 0)

    async def dead_ids(self, f: DeadFilter, *, after_id: int = 0, limit: int = 500) -> list[int]:
        """Ids of dead letters matching ``f`` in id order, one chunk."""
        q = (
            self._dead_from(sa.select(JOB.c.id))
            .where(*self._dead_where(f), JOB.c.id > after_id)
            .order_by(JOB.c.id)
            .limit(limit)
        )
        async with self._read() as conn:
            return [int(row[0]) for row in await conn.execute(q)]

    # --- retry requests, their answers, retries and discards ------------------------

    async def request_dead_retry(
        self, job_ids: Sequence[int], *, actor: str, now: datetime, audit: AuditEntry
    ) -> int:
        """Mark dead letters as awaiting an admin's decision (an earlier answer goes)."""
        values = {"retry_requested_by": actor, "retry_requested_at": now, **_NO_ANSWER}
        return await self._dead_update(job_ids, values, now, audit)

    async def reject_dead_retry(
        self,
        job_ids: Sequence[int],
        *,
        by: str,
        reason: str | None,
        now: datetime,
        audit: AuditEntry,
    ) -> int:
        """Turn pending retry requests down; the jobs stay dead and keep who turned them
        down (``by``) and why, for whoever asked."""
        values = {
            "retry_requested_by": None,
            "retry_requested_at": None,
            "retry_rejected_by": by,
            "retry_reject_reason": reason,
        }
        return await self._dead_update(job_ids, values, now, audit)

    async def retry_dead(self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry) -> int:
        """Put dead letters back in the queue, due now, with a fresh attempt budget and
        the same idempotency key, at the first step of their recipient's chain."""
        values = {
            "state": JobState.PENDING.value,
            "attempts": 0,
            "due_at": now,
            "last_error": None,
            "finished_at": None,
            "retry_requested_by": None,
            "retry_requested_at": None,
            **_NO_ANSWER,
        }
        return await self._dead_update(
            job_ids, values, now, audit, notify=True, outcome=Outcome.RETRYING.value
        )

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
        outcome: str | None = None,
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
                await self._first_steps(conn, changed, now)
                await self._notify_due(conn)
            if outcome is not None and changed:
                await conn.execute(
                    sa.update(SCHEDULE)
                    .where(
                        SCHEDULE.c.id.in_(sa.select(JOB.c.schedule_id).where(JOB.c.id.in_(changed)))
                    )
                    .values(last_outcome=outcome)
                )
            if changed:
                entry = dataclasses.replace(audit, object_type="job")
                await self._audit_each(conn, entry, now, [(str(i), {}) for i in changed])
            return len(changed)

    async def _first_steps(self, conn: AsyncConnection, job_ids: list[int], now: datetime) -> None:
        """Jobs of a chain back at its first step, which begins now (an admin's retry
        starts the chain again, its first step's time limit counted afresh)."""
        routes = await conn.execute(
            sa.select(JOB.c.route).where(JOB.c.id.in_(job_ids), JOB.c.route.is_not(None)).distinct()
        )
        for (route,) in routes:  # one statement per chain, not per job
            await conn.execute(
                sa.update(JOB)
                .where(JOB.c.id.in_(job_ids), JOB.c.route == route)
                .values(destination=routing.parse_route(route).first, step=0, step_since=now)
            )

    # --- housekeeping ---------------------------------------------------------------

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
