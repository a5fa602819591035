"""The dead-letter desk's queries: dead letters listed, grouped, paged and counted;
retry requests, their answers, retries and discards; the cap on how many are kept.

A job is dead when it failed for good or ran out of attempts (the dispatcher records
that, :mod:`core.store.queue`); from here it goes back to the queue only by an
admin's approval. A retry request and its answer are rows of ``approval`` (kind
``retry``, the one table of what a second person decides): a dead letter shows at most
one, its ``shown`` row (pending while it waits, rejected once an admin said no); a new
request, a retry or a discard closes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from core import routing
from core.models import LOCAL_TENANT, ApprovalKind, ApprovalState, JobState, Outcome
from core.store.base import APPROVAL, JOB, JOB_DESTINATION, SCHEDULE, AuditEntry, Gateway
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
    #: The pending retry request's approval row (None: nobody is asking).
    approval_id: int | None = None

    @property
    def retry_note(self) -> str | None:
        """Where its retry stands, in words: ``asked by X``, ``rejected by X: why``."""
        if self.retry_requested_by is not None:
            return f"asked by {self.retry_requested_by}"
        if self.retry_rejected_by is not None:
            why = f": {self.retry_reject_reason}" if self.retry_reject_reason else ""
            return f"rejected by {self.retry_rejected_by}{why}"
        return None


#: Why a dead letter's retry needs a decision, in an approval's words (as migration
#: 0019 wrote it for the requests it moved).
RETRY_WHY = "a dead letter sent again"
_RETRY = ApprovalKind.RETRY.value
_PENDING = ApprovalState.PENDING.value
_REJECTED = ApprovalState.REJECTED.value
#: A job and the retry request or answer it shows (at most one row: a job's shown
#: row is closed before another is written, under the job's row lock).
SHOWN_RETRY = JOB.outerjoin(
    APPROVAL,
    sa.and_(APPROVAL.c.job_id == JOB.c.id, APPROVAL.c.shown, APPROVAL.c.kind == _RETRY),
)


def _when(state: str, column: Any) -> Any:
    """``column`` of the shown approval while it is in ``state``, else NULL."""
    return sa.case((APPROVAL.c.state == state, column))


#: Who asks for a retry now (NULL: nobody), in a query over :data:`SHOWN_RETRY`.
RETRY_REQUESTED_BY = _when(_PENDING, APPROVAL.c.requested_by)

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
    RETRY_REQUESTED_BY.label("retry_requested_by"),
    _when(_PENDING, APPROVAL.c.requested_at).label("retry_requested_at"),
    _when(_REJECTED, APPROVAL.c.decided_by).label("retry_rejected_by"),
    _when(_REJECTED, APPROVAL.c.reason).label("retry_reject_reason"),
    _when(_PENDING, APPROVAL.c.id).label("approval_id"),
)


def _dead_from(q: Any, *, shown: bool) -> Any:
    """``q`` over jobs and their schedules, and each job's shown approval when ``shown``
    (a query that reads no approval column joins none: a count stays on the job index)."""
    jobs = SHOWN_RETRY if shown else JOB
    return q.select_from(jobs.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))


def _shown_of(job_ids: Sequence[int]) -> Any:
    """The retry approvals these jobs show."""
    return sa.and_(
        APPROVAL.c.job_id.in_(list(job_ids)), APPROVAL.c.shown, APPROVAL.c.kind == _RETRY
    )


def _new_requests(job_ids: list[int], actor: str, now: datetime) -> Any:
    """Pending retry approvals of ``actor``'s for these jobs, each in its schedule's
    tenant (where every tenant's list of pending approvals finds it)."""
    columns = ("tenant", "kind", "job_id", "state", "requested_by", "requested_at", "why")
    rows = (
        sa.select(
            SCHEDULE.c.tenant,
            sa.literal(_RETRY, APPROVAL.c.kind.type),
            JOB.c.id,
            sa.literal(_PENDING, APPROVAL.c.state.type),
            sa.literal(actor, APPROVAL.c.requested_by.type),
            sa.literal(now, APPROVAL.c.requested_at.type),
            sa.literal(RETRY_WHY, APPROVAL.c.why.type),
        )
        .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
        .where(JOB.c.id.in_(job_ids))
    )
    return sa.insert(APPROVAL).from_select(columns, rows)


async def _close(
    conn: AsyncConnection, job_ids: list[int], pending_to: str, **decided: Any
) -> None:
    """Close what these jobs show: a pending request becomes ``pending_to`` (with
    ``decided``), and no row of theirs is shown any more."""
    await conn.execute(
        sa.update(APPROVAL)
        .where(_shown_of(job_ids), APPROVAL.c.state == _PENDING)
        .values(state=pending_to, **decided)
    )
    await conn.execute(sa.update(APPROVAL).where(_shown_of(job_ids)).values(shown=False))


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

    async def dead_letters(
        self,
        *,
        owner: str | None = None,
        tenant: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int = 200,
    ) -> list[DeadLetter]:
        """Dead jobs, newest first (optionally one owner's, one tenant's, or the given ids)."""
        q = _dead_from(sa.select(*DEAD_COLUMNS), shown=True).where(
            JOB.c.state == JobState.DEAD.value
        )
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
        """``f`` as conditions (``requested`` reads the approval of :data:`SHOWN_RETRY`)."""
        where: list[Any] = [JOB.c.state == JobState.DEAD.value]
        if f.owner is not None:
            where.append(SCHEDULE.c.owner == f.owner)
        if f.tenant is not None:
            where.append(SCHEDULE.c.tenant == f.tenant)
        if f.reason is not None:
            where.append(reason_key(JOB.c.last_error) == f.reason)
        if f.destination:
            where.append(has_prefix(JOB_DESTINATION, f.destination))
        if f.requested:
            # a plain equality makes the outer join an inner one, so the databases
            # start from the few pending requests, not from every dead letter
            where.append(APPROVAL.c.state == _PENDING)
        elif f.requested is not None:
            where.append(RETRY_REQUESTED_BY.is_(None))
        return where

    async def dead_groups(self, f: DeadFilter, *, limit: int = 50) -> list[DeadGroup]:
        """Dead letters matching ``f`` grouped by reason, biggest group first."""
        reason = reason_key(JOB.c.last_error)
        q = _dead_from(
            sa.select(
                reason.label("reason"),
                sa.func.count().label("total"),
                sa.func.count(RETRY_REQUESTED_BY).label("requested"),
            ),
            shown=True,
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
            _dead_from(sa.select(*DEAD_COLUMNS), shown=True)
            .where(*self._dead_where(f))
            .where(keyset_after((JOB.c.finished_at, JOB.c.id), before, desc=True))
            .order_by(JOB.c.finished_at.desc(), JOB.c.id.desc())
            .limit(limit)
        )
        async with self._read() as conn:
            return [DeadLetter(**row._mapping) for row in await conn.execute(q)]

    async def count_dead(self, f: DeadFilter) -> int:
        q = _dead_from(sa.select(sa.func.count()), shown=f.requested is not None)
        async with self._read() as conn:
            return int(await conn.scalar(q.where(*self._dead_where(f))) or 0)

    async def dead_ids(self, f: DeadFilter, *, after_id: int = 0, limit: int = 500) -> list[int]:
        """Ids of dead letters matching ``f`` in id order, one chunk."""
        q = (
            _dead_from(sa.select(JOB.c.id), shown=f.requested is not None)
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
        """Mark dead letters as awaiting an admin's decision: a pending retry approval in
        their schedule's tenant (a letter already asked about stays one request, now
        ``actor``'s; an earlier answer is no longer shown)."""

        async def ask(conn: AsyncConnection, changed: list[int]) -> None:
            await conn.execute(
                sa.update(APPROVAL)
                .where(_shown_of(changed), APPROVAL.c.state != _PENDING)
                .values(shown=False)
            )
            again = await conn.execute(
                sa.update(APPROVAL)
                .where(_shown_of(changed), APPROVAL.c.state == _PENDING)
                .values(requested_by=actor, requested_at=now)
                .returning(APPROVAL.c.job_id)
            )
            asked = {row[0] for row in again}
            new = [job_id for job_id in changed if job_id not in asked]
            if new:
                await conn.execute(_new_requests(new, actor, now))

        return await self._dead_update(job_ids, {}, now, audit, then=ask)

    async def reject_dead_retry(
        self,
        job_ids: Sequence[int],
        *,
        by: str,
        reason: str | None,
        now: datetime,
        audit: AuditEntry,
    ) -> int:
        """Turn pending retry requests down; the jobs stay dead and keep showing who
        turned them down (``by``) and why, for whoever asked. Letters nobody asked
        about are left as they are (and not counted)."""

        async def reject(conn: AsyncConnection, changed: list[int]) -> None:
            await conn.execute(
                sa.update(APPROVAL)
                .where(_shown_of(changed), APPROVAL.c.state == _PENDING)
                .values(state=_REJECTED, decided_by=by, decided_at=now, reason=reason)
            )

        asked = sa.select(APPROVAL.c.job_id).where(_shown_of(job_ids), APPROVAL.c.state == _PENDING)
        return await self._dead_update(
            job_ids, {}, now, audit, then=reject, where=JOB.c.id.in_(asked)
        )

    async def retry_dead(self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry) -> int:
        """Put dead letters back in the queue, due now, with a fresh attempt budget and
        the same idempotency key, at the first step of their recipient's chain. A
        pending request is approved by the retry's actor; nothing shows any more."""
        values = {
            "state": JobState.PENDING.value,
            "attempts": 0,
            "due_at": now,
            "last_error": None,
            "finished_at": None,
        }

        async def approve(conn: AsyncConnection, changed: list[int]) -> None:
            await _close(
                conn,
                changed,
                ApprovalState.APPROVED.value,
                decided_by=audit.actor,
                decided_at=now,
            )

        return await self._dead_update(
            job_ids,
            values,
            now,
            audit,
            then=approve,
            notify=True,
            outcome=Outcome.RETRYING.value,
        )

    async def discard_dead(
        self, job_ids: Sequence[int], *, now: datetime, audit: AuditEntry
    ) -> int:
        """Give up on dead letters for good (a pending request is withdrawn)."""

        async def withdraw(conn: AsyncConnection, changed: list[int]) -> None:
            await _close(conn, changed, ApprovalState.WITHDRAWN.value, decided_at=now)

        values = {"state": JobState.DISCARDED.value}
        return await self._dead_update(job_ids, values, now, audit, then=withdraw)

    async def _dead_update(
        self,
        job_ids: Sequence[int],
        values: dict[str, Any],
        now: datetime,
        audit: AuditEntry,
        *,
        then: Callable[[AsyncConnection, list[int]], Awaitable[None]],
        where: Any = None,
        notify: bool = False,
        outcome: str | None = None,
    ) -> int:
        """Change the dead ones of ``job_ids`` (and matching ``where``), then their
        approvals (``then``), in one transaction: the jobs' row locks, taken first, keep
        two requests for one letter from writing two shown rows."""
        if not job_ids:
            return 0
        dead = [JOB.c.id.in_(list(job_ids)), JOB.c.state == JobState.DEAD.value]
        if where is not None:
            dead.append(where)
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB).where(*dead).values(**values, updated_at=now).returning(JOB.c.id)
            )
            changed = sorted(row[0] for row in result)
            if not changed:
                return 0
            await then(conn, changed)
            if notify:
                await self._first_steps(conn, changed, now)
                await self._notify_due(conn)
            if outcome is not None:
                await conn.execute(
                    sa.update(SCHEDULE)
                    .where(
                        SCHEDULE.c.id.in_(sa.select(JOB.c.schedule_id).where(JOB.c.id.in_(changed)))
                    )
                    .values(last_outcome=outcome)
                )
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
