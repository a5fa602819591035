"""Authors' notices (core.events.NoticeKind): taken by the chat adapters, told, gone.

A notice is written in the transaction that records its outcome (core/store/outcomes.py).
An adapter takes its platform's due ones under a lease (``lease_until``): told, they
are deleted; not told (the platform failed), released for the next sweep; and when
the adapter's process dies in between, the lease runs out and another sweep takes
them again (at least once: a duplicate message, never a lost one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from core.models import Notice
from core.store.base import JOB, JOB_DESTINATION, SCHEDULE, Gateway
from core.store.paging import has_prefix

NOTICE = Notice.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class TakenNotice:
    """A notice taken to tell, with what its message shows: where the job went and
    whether its job is still dead (a retry may be asked) and its schedule's state."""

    id: int
    tenant: str
    owner: str
    kind: str
    schedule_id: int | None
    job_id: int | None
    reason: str
    at: datetime
    #: The job's destination (None: no job, or it is gone).
    destination: str | None
    #: The job's state now (None: no job, or it is gone).
    job_state: str | None
    #: The schedule's state now (None: no schedule, or it is gone).
    schedule_state: str | None
    #: The approval an approver is asked to decide, or the author told of.
    approval_id: int | None = None


def _due(prefix: str, now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        has_prefix(NOTICE.c.owner, prefix),
        sa.or_(NOTICE.c.lease_until.is_(None), NOTICE.c.lease_until <= now),
    )


class NoticeQueries(Gateway):
    """Authors' notices (core.events.NoticeKind): taken by the chat adapters, told, gone."""

    async def take_notices(
        self, prefix: str, *, now: datetime, lease: float, limit: int = 500
    ) -> list[TakenNotice]:
        """Lease the due notices of owners starting with ``prefix`` (``slack:``) for
        ``lease`` seconds and return them, oldest first (at most ``limit``). A notice
        another process took and still holds is not taken."""
        until = now + timedelta(seconds=lease)
        async with self._conn() as conn:
            ids = (
                (
                    await conn.execute(
                        sa.select(NOTICE.c.id)
                        .where(_due(prefix, now))
                        .order_by(NOTICE.c.id)
                        .limit(limit)
                    )
                )
                .scalars()
                .all()
            )
            if not ids:
                return []
            taken = (
                (
                    await conn.execute(
                        sa.update(NOTICE)
                        .where(NOTICE.c.id.in_(ids), _due(prefix, now))
                        .values(lease_until=until)
                        .returning(NOTICE.c.id)
                    )
                )
                .scalars()
                .all()
            )
            if not taken:
                return []
            job = JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            rows = (
                await conn.execute(
                    sa.select(
                        NOTICE,
                        JOB_DESTINATION.label("destination"),
                        JOB.c.state.label("job_state"),
                    )
                    .select_from(NOTICE.outerjoin(job, JOB.c.id == NOTICE.c.job_id))
                    .where(NOTICE.c.id.in_(taken))
                    .order_by(NOTICE.c.id)
                )
            ).all()
            states: dict[int, str] = dict(
                (
                    await conn.execute(
                        sa.select(SCHEDULE.c.id, SCHEDULE.c.state).where(
                            SCHEDULE.c.id.in_({r.schedule_id for r in rows if r.schedule_id})
                        )
                    )
                ).all()
            )
        return [
            TakenNotice(
                id=r.id,
                tenant=r.tenant,
                owner=r.owner,
                kind=r.kind,
                schedule_id=r.schedule_id,
                job_id=r.job_id,
                reason=r.reason or "",
                at=r.at,
                destination=r.destination,
                job_state=r.job_state,
                schedule_state=states.get(r.schedule_id),
                approval_id=r.approval_id,
            )
            for r in rows
        ]

    async def hold_notices(self, ids: Sequence[int], *, until: datetime) -> None:
        """Keep these taken notices until ``until`` (an author's digest window)."""
        if ids:
            async with self._conn() as conn:
                await conn.execute(
                    sa.update(NOTICE).where(NOTICE.c.id.in_(list(ids))).values(lease_until=until)
                )

    async def release_notices(self, ids: Sequence[int]) -> None:
        """Give these taken notices back to the next sweep (telling failed)."""
        if ids:
            async with self._conn() as conn:
                await conn.execute(
                    sa.update(NOTICE).where(NOTICE.c.id.in_(list(ids))).values(lease_until=None)
                )

    async def delete_notices(self, ids: Sequence[int]) -> None:
        """These notices are told (or are not to be told): gone."""
        if ids:
            async with self._conn() as conn:
                await conn.execute(sa.delete(NOTICE).where(NOTICE.c.id.in_(list(ids))))

    async def pending_notices(self, prefix: str = "") -> int:
        """How many notices of owners starting with ``prefix`` wait to be told."""
        async with self._read() as conn:
            stmt = sa.select(sa.func.count()).select_from(NOTICE)
            if prefix:
                stmt = stmt.where(has_prefix(NOTICE.c.owner, prefix))
            return int((await conn.execute(stmt)).scalar_one())
