"""Store reads only the tests make: no part of :class:`core.store.Store`."""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import col, select

from core.models import Audit, Job, JobState
from core.store import Store

JOB = Job.__table__  # type: ignore[attr-defined]


async def audit_trail(store: Store, object_type: str, object_id: str) -> list[Audit]:
    """The audit rows of one object, oldest first."""
    stmt = (
        select(Audit)
        .where(col(Audit.object_type) == object_type, col(Audit.object_id) == object_id)
        .order_by(col(Audit.id))
    )
    async with store._session() as s:
        return list((await s.execute(stmt)).scalars())


async def leased_by(store: Store, worker: str) -> set[str]:
    """Idempotency keys of the jobs ``worker`` holds a lease on."""
    async with store._read() as conn:
        rows = await conn.execute(
            sa.select(JOB.c.idempotency_key).where(
                JOB.c.lease_owner == worker, JOB.c.state == JobState.CLAIMED.value
            )
        )
        return {row[0] for row in rows}
