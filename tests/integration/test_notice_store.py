"""The notice rows a chat adapter takes and tells (issue 38), on SQLite and PostgreSQL:
a take leases them (a second taker, another process, gets none of them), released ones
are taken again, held ones wait until their time, a lease that runs out is taken again
(the taker died), told ones are gone, and each platform takes only its owners'."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import sqlalchemy as sa

from core.clock import ManualClock
from core.models import Notice
from core.store import Store

NOTICE = Notice.__table__  # type: ignore[attr-defined]


async def write(store: Store, clock: ManualClock, *owners: str) -> None:
    """Notices as the outcome transaction writes them (core/store/outcomes.py)."""
    async with store._conn() as conn:
        for owner in owners:
            await conn.execute(
                sa.insert(NOTICE).values(
                    tenant="slack:T1" if owner.startswith("slack:") else "discord:1",
                    owner=owner,
                    kind="dead",
                    reason="gone",
                    at=clock.now(),
                )
            )


async def test_a_take_leases_release_holds_and_deletes(store: Store, clock: ManualClock) -> None:
    await write(store, clock, "slack:U1", "slack:U2", "discord:7")
    now = clock.now()
    first, second = await asyncio.gather(
        store.take_notices("slack:", now=now, lease=60),
        store.take_notices("slack:", now=now, lease=60),
    )
    taken = [*first, *second]
    assert sorted(n.owner for n in taken) == ["slack:U1", "slack:U2"]  # once each
    assert await store.take_notices("slack:", now=now, lease=60) == []
    assert await store.pending_notices("slack:") == 2 and await store.pending_notices() == 3

    u1 = next(n.id for n in taken if n.owner == "slack:U1")
    u2 = next(n.id for n in taken if n.owner == "slack:U2")
    await store.release_notices([u1])
    await store.hold_notices([u2], until=now + timedelta(seconds=300))
    assert [n.id for n in await store.take_notices("slack:", now=now, lease=60)] == [u1]

    later = now + timedelta(seconds=61)  # u1's lease ran out: its taker died
    assert [n.id for n in await store.take_notices("slack:", now=later, lease=60)] == [u1]
    at_last = now + timedelta(seconds=300)
    assert sorted(n.id for n in await store.take_notices("slack:", now=at_last, lease=60)) == [
        u1,
        u2,
    ]
    await store.delete_notices([u1, u2])
    assert await store.pending_notices("slack:") == 0
    [discord] = await store.take_notices("discord:", now=now, lease=60)
    assert discord.owner == "discord:7" and discord.destination is None
