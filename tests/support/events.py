"""Waiting for the event log to be readable (core.store.events)."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from core.store import Store


async def settled(store: Store) -> None:
    """Wait until PostgreSQL's readers see every committed event: a transaction of
    another test, open in the same cluster, holds back the snapshot's xmin for a moment
    (what a reader of the log must wait for, by design). SQLite: at once."""
    if store.backend != "postgresql":
        return
    query = sa.text(
        "SELECT (SELECT coalesce(max(tx), 0) FROM event) "
        "< pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
    )
    for _ in range(2000):
        async with store._read() as conn:
            if (await conn.execute(query)).scalar_one():
                return
        await asyncio.sleep(0.01)  # another transaction's end, not a schedule
    raise AssertionError("an open transaction held the event log back for 20 s")
