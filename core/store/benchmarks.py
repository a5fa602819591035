"""Queries only the benchmarks run (``herald bench dispatch``, the reliability runs):
no part of :class:`~core.store.Store`, so the production gateway carries none of them.
Each takes the store whose engine it uses."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from core.models import OPEN_STATE_VALUES
from core.store.base import ATTEMPT, JOB, Gateway


async def move_waiting_jobs(store: Gateway, due_at: datetime, *, due_before: datetime) -> int:
    """Make every waiting job due before ``due_before`` due at ``due_at`` instead (a
    burst at one instant), and wake the dispatchers. Returns how many."""
    async with store._tx() as conn:
        result = await conn.execute(
            sa.update(JOB)
            .where(JOB.c.state.in_(OPEN_STATE_VALUES), JOB.c.due_at < due_before)
            .values(due_at=due_at)
        )
        await store._notify_due(conn)
        return int(result.rowcount)


async def lateness_samples(store: Gateway) -> list[tuple[datetime, datetime]]:
    """(due, first try started) of every job tried at least once."""
    first_try = (
        sa.select(ATTEMPT.c.job_id, sa.func.min(ATTEMPT.c.started_at).label("started"))
        .group_by(ATTEMPT.c.job_id)
        .subquery()
    )
    q = sa.select(JOB.c.due_at, first_try.c.started).join(first_try, first_try.c.job_id == JOB.c.id)
    async with store._read() as conn:
        return [(row[0], row[1]) for row in await conn.execute(q)]
