"""Store reads only the tests make (no part of :class:`core.store.Store`), and waiting
for aiosqlite's threads."""

from __future__ import annotations

import asyncio
import threading

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


async def aiosqlite_threads_done() -> None:
    """Wait for aiosqlite's worker threads to end while the test's loop still runs.

    A failed connect (a database file that cannot be opened) makes aiosqlite stop its
    thread with a future on the running loop that nobody awaits; on a busy machine the
    thread could answer it after the test's loop closed, an exception in that thread that
    pytest reports at a later test. Call it after the store is closed, in a test whose
    SQLite database cannot be opened."""
    for thread in threading.enumerate():
        if thread.name.endswith("(_connection_worker_thread)"):
            await asyncio.to_thread(thread.join, 10)
