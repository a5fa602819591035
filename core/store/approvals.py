"""Approvals (core.approvals): the one table of what a second person decides, read for
every kind, and the held messages' requests written, decided, postponed and expired.

A dead letter's retry request is written and decided by core/store/dead_letters.py;
this room writes a held message's (kind ``send``): in the transaction that saves or
edits the schedule (:meth:`ApprovalQueries._hold`, called by core/store/schedules.py),
and each decision in one of its own, with the schedule's change, its first job, the
audit row and the notices that tell the author (and ask the approvers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from core.errors import Conflict
from core.models import ApprovalKind, ApprovalState, Notice, ScheduleState
from core.store.arming import Arming
from core.store.base import APPROVAL, JOB, SCHEDULE, AuditEntry

NOTICE = Notice.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ApprovalRow:
    """One approval with what it is about (its schedule's text and destination, or
    the dead letter's)."""

    id: int
    tenant: str
    kind: str
    state: str
    requested_by: str
    requested_at: datetime
    why: str
    decided_by: str | None
    decided_at: datetime | None
    reason: str | None
    expires_at: datetime | None
    schedule_id: int | None
    schedule_version: int | None
    job_id: int | None
    #: The schedule's (or the dead letter's schedule's) text, destination, when in
    #: words, rule, owner, state and version now.
    body: str | None = None
    destination: str | None = None
    expression: str | None = None
    rrule: str | None = None
    owner: str | None = None
    schedule_state: str | None = None
    version_now: int | None = None
    options: Mapping[str, Any] | None = None
    timezone: str | None = None


@dataclass(frozen=True)
class Tell:
    """A notice to write with a request or a decision: to whom, what kind, the sentence."""

    owner: str
    kind: str
    reason: str


@dataclass(frozen=True)
class Held:
    """A message held for an approver, as the use case asks the store to save it with
    its schedule: why, until when it must be decided, and whom to ask."""

    why: str
    expires_at: datetime | None
    tell: Sequence[Tell]

    def as_kwargs(self, tenant: str, schedule_id: int, version: int, owner: str) -> dict[str, Any]:
        return {
            "tenant": tenant,
            "schedule_id": schedule_id,
            "version": version,
            "requested_by": owner,
            "why": self.why,
            "expires_at": self.expires_at,
            "tell": self.tell,
        }


_COLUMNS = (
    APPROVAL.c.id,
    APPROVAL.c.tenant,
    APPROVAL.c.kind,
    APPROVAL.c.state,
    APPROVAL.c.requested_by,
    APPROVAL.c.requested_at,
    APPROVAL.c.why,
    APPROVAL.c.decided_by,
    APPROVAL.c.decided_at,
    APPROVAL.c.reason,
    APPROVAL.c.expires_at,
    sa.func.coalesce(APPROVAL.c.schedule_id, JOB.c.schedule_id),
    APPROVAL.c.schedule_version,
    APPROVAL.c.job_id,
    SCHEDULE.c.body,
    sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination),
    SCHEDULE.c.expression,
    SCHEDULE.c.rrule,
    SCHEDULE.c.owner,
    SCHEDULE.c.state,
    SCHEDULE.c.version,
    SCHEDULE.c.options,
    SCHEDULE.c.timezone,
)
_FROM = APPROVAL.outerjoin(JOB, JOB.c.id == APPROVAL.c.job_id).outerjoin(
    SCHEDULE,
    SCHEDULE.c.id == sa.func.coalesce(APPROVAL.c.schedule_id, JOB.c.schedule_id),
)


class ApprovalQueries(Arming):
    """Approvals of every kind, and the held messages' requests and decisions."""

    async def approvals(
        self,
        *,
        tenant: str | None,
        state: str | None = ApprovalState.PENDING.value,
        kind: str | None = None,
        requested_by: str | None = None,
        ids: Sequence[int] | None = None,
        schedule_id: int | None = None,
        limit: int = 200,
    ) -> list[ApprovalRow]:
        """Approvals of ``tenant`` (None: every tenant's), oldest first: in ``state``
        (None: any), of ``kind``, asked by ``requested_by``, among ``ids``, of a
        schedule; at most ``limit``."""
        query = sa.select(*_COLUMNS).select_from(_FROM).order_by(APPROVAL.c.id).limit(limit)
        if tenant is not None:
            query = query.where(APPROVAL.c.tenant == tenant)
        if state is not None:
            query = query.where(APPROVAL.c.state == state)
            if state == ApprovalState.PENDING.value:
                query = query.where(APPROVAL.c.shown)
        if kind is not None:
            query = query.where(APPROVAL.c.kind == kind)
        if requested_by is not None:
            query = query.where(APPROVAL.c.requested_by == requested_by)
        if ids is not None:
            query = query.where(APPROVAL.c.id.in_(list(ids)))
        if schedule_id is not None:
            query = query.where(APPROVAL.c.schedule_id == schedule_id)
        return await self._approval_rows(query)

    async def _approval_rows(self, query: sa.Select[Any]) -> list[ApprovalRow]:
        async with self._read() as conn:
            return [ApprovalRow(*r) for r in (await conn.execute(query)).all()]

    async def _hold(
        self,
        s: AsyncSession,
        *,
        tenant: str,
        schedule_id: int,
        version: int,
        requested_by: str,
        why: str,
        expires_at: datetime | None,
        tell: Sequence[Tell],
        now: datetime,
    ) -> int:
        """A held message's request, in the caller's transaction: any earlier request of
        the schedule still pending withdrawn, the new one written, its approvers asked
        (``tell``: notices carrying its id). Returns its id."""
        await s.execute(
            sa.update(APPROVAL)
            .where(
                APPROVAL.c.schedule_id == schedule_id,
                APPROVAL.c.state == ApprovalState.PENDING.value,
            )
            .values(state=ApprovalState.WITHDRAWN.value, shown=False, decided_at=now)
        )
        approval_id = (
            await s.execute(
                sa.insert(APPROVAL)
                .values(
                    tenant=tenant,
                    kind=ApprovalKind.SEND.value,
                    schedule_id=schedule_id,
                    schedule_version=version,
                    state=ApprovalState.PENDING.value,
                    requested_by=requested_by,
                    requested_at=now,
                    why=why[:500],
                    expires_at=expires_at,
                    shown=True,
                )
                .returning(APPROVAL.c.id)
            )
        ).scalar_one()
        await self._tell(s, tenant, schedule_id, approval_id, tell, now)
        return int(approval_id)

    async def _withdraw(self, s: AsyncSession, schedule_id: int, now: datetime) -> None:
        """A held message's pending request made moot (its schedule cancelled)."""
        await s.execute(
            sa.update(APPROVAL)
            .where(
                APPROVAL.c.schedule_id == schedule_id,
                APPROVAL.c.state == ApprovalState.PENDING.value,
            )
            .values(state=ApprovalState.WITHDRAWN.value, shown=False, decided_at=now)
        )

    @staticmethod
    async def _tell(
        s: AsyncSession,
        tenant: str,
        schedule_id: int,
        approval_id: int,
        tell: Sequence[Tell],
        now: datetime,
    ) -> None:
        if tell:
            await s.execute(
                sa.insert(NOTICE),
                [
                    {
                        "tenant": tenant,
                        "owner": t.owner,
                        "kind": t.kind,
                        "schedule_id": schedule_id,
                        "approval_id": approval_id,
                        "reason": t.reason,
                        "at": now,
                    }
                    for t in tell
                ],
            )

    @staticmethod
    async def _lock_schedule(s: AsyncSession, schedule_id: int) -> None:
        """The schedule's row lock, taken before its request's: an edit changes the
        schedule, then writes its new request (:meth:`_hold`), so a decision or a lapse
        taking the request first deadlocked with it on PostgreSQL (SQLite writes one
        transaction at a time)."""
        await s.execute(
            sa.select(SCHEDULE.c.id).where(SCHEDULE.c.id == schedule_id).with_for_update()
        )

    async def decide_send(
        self,
        approval: ApprovalRow,
        *,
        approve: bool,
        by: str,
        reason: str | None,
        now: datetime,
        schedule_values: Mapping[str, Any],
        arm_at: datetime | None,
        audit: AuditEntry,
        tell: Sequence[Tell],
    ) -> None:
        """A held message decided, in one transaction: the request approved or rejected
        (Conflict when someone decided it first, a lapse moved it to its next occurrence,
        or the schedule changed since it was asked), the schedule changed
        (``schedule_values``: active, or cancelled), its first job armed at ``arm_at``,
        the audit row and the notices."""
        assert approval.schedule_id is not None
        async with self._session() as s:
            await self._lock_schedule(s, approval.schedule_id)
            decided = await s.execute(
                sa.update(APPROVAL)
                .where(
                    APPROVAL.c.id == approval.id,
                    APPROVAL.c.state == ApprovalState.PENDING.value,
                    # still for the occurrence the decision was read for (a lapse moves
                    # a recurring one's to its next and tells its author so)
                    APPROVAL.c.expires_at.is_not_distinct_from(approval.expires_at),
                )
                .values(
                    state=(ApprovalState.APPROVED if approve else ApprovalState.REJECTED).value,
                    decided_by=by,
                    decided_at=now,
                    reason=reason,
                    shown=not approve,
                )
            )
            if decided.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(
                    f"Request {approval.id} was decided, or moved to its next occurrence, "
                    "meanwhile; look at it again."
                )
            changed = await s.execute(
                sa.update(SCHEDULE)
                .where(
                    SCHEDULE.c.id == approval.schedule_id,
                    SCHEDULE.c.version == approval.schedule_version,
                    SCHEDULE.c.state == ScheduleState.AWAITING.value,
                )
                .values(**schedule_values, version=SCHEDULE.c.version + 1, updated_at=now)
            )
            if changed.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(
                    f"Schedule {approval.schedule_id} changed since approval was asked; "
                    "look at the new request."
                )
            if arm_at is not None:
                await self._arm(s, approval.schedule_id, arm_at, now)
                await self._notify_due(s)
            entry = replace(audit, object_type="approval", object_id=str(approval.id))
            await self._audit(s, entry, now)
            await self._tell(s, approval.tenant, approval.schedule_id, approval.id, tell, now)

    async def due_approvals(self, *, now: datetime, limit: int = 200) -> list[ApprovalRow]:
        """Held messages' requests still pending at or past the occurrence they had to
        be decided before, oldest first."""
        query = (
            sa.select(*_COLUMNS)
            .select_from(_FROM)
            .where(
                APPROVAL.c.state == ApprovalState.PENDING.value,
                APPROVAL.c.kind == ApprovalKind.SEND.value,
                APPROVAL.c.expires_at <= now,
            )
            .order_by(APPROVAL.c.expires_at, APPROVAL.c.id)
            .limit(limit)
        )
        return await self._approval_rows(query)

    async def lapse_approval(
        self,
        approval: ApprovalRow,
        *,
        now: datetime,
        until: datetime | None,
        reason: str,
        audit: AuditEntry,
        tell: Sequence[Tell],
    ) -> bool:
        """A request undecided at its occurrence: waiting for the next (``until``, a
        recurring schedule's next occurrence) or expired (None: the request and its
        one-off schedule end; nothing is sent). Returns False when it was decided or
        moved meanwhile (nothing changed)."""
        assert approval.schedule_id is not None
        async with self._session() as s:
            await self._lock_schedule(s, approval.schedule_id)
            values: dict[str, Any] = {"expires_at": until}
            if until is None:
                values |= {
                    "state": ApprovalState.EXPIRED.value,
                    "decided_at": now,
                    "reason": reason,
                }
            moved = await s.execute(
                sa.update(APPROVAL)
                .where(
                    APPROVAL.c.id == approval.id,
                    APPROVAL.c.state == ApprovalState.PENDING.value,
                    APPROVAL.c.expires_at == approval.expires_at,
                )
                .values(**values)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                return False
            await s.execute(
                sa.update(SCHEDULE)
                .where(
                    SCHEDULE.c.id == approval.schedule_id,
                    SCHEDULE.c.state == ScheduleState.AWAITING.value,
                )
                .values(
                    **(
                        {"next_run_at": until}
                        if until is not None
                        else {"state": ScheduleState.CANCELLED.value, "next_run_at": None}
                    ),
                    updated_at=now,
                )
            )
            entry = replace(audit, object_type="approval", object_id=str(approval.id))
            await self._audit(s, entry, now)
            await self._tell(s, approval.tenant, approval.schedule_id, approval.id, tell, now)
        return True
