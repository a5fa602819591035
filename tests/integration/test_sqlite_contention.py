"""SQLite under contention: a user's short write waits its turn behind a dispatcher
that writes back to back, and one that cannot get the write lock in time fails with
a sentence, changing nothing. Real SQLite files, two engines (two connections)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.bench import schedule_rows
from core import db
from core.clock import ManualClock
from core.errors import DatabaseError
from core.settings import load_settings
from core.store import ScheduleQuery, Store
from core.store.base import SQLITE_WRITE_GAP_SECONDS
from core.usecases import Herald

START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _herald(store: Store, url: str) -> Herald:
    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_DEFAULT_TZ="UTC", _env_file=None)
    return Herald(store, settings, ManualClock(START))


async def _schedule(herald: Herald, text: str) -> None:
    await herald.create_schedule("local:alice", to="null:", when="in 1 hour", text=text)


async def _texts(store: Store) -> list[str]:
    return [s.body for s in await store.list_schedules(ScheduleQuery(owner="local:alice"))]


async def test_a_write_waits_for_a_dispatcher_writing_back_to_back(sqlite_url: str) -> None:
    dispatcher = await Store.open(sqlite_url)
    user = await Store.open(sqlite_url)
    try:
        rows = schedule_rows(5_000, START, 0.0, "null:")
        await dispatcher.create_schedules_bulk(
            rows, details=[{} for _ in rows], actor="local:bench", action="bench", now=START
        )
        stop = asyncio.Event()
        wrote = asyncio.Event()

        async def write_back_to_back() -> None:
            # each moves 5,000 waiting jobs: a write transaction of tens of milliseconds
            while not stop.is_set():
                await dispatcher.move_waiting_jobs(START, due_before=START + timedelta(days=1))
                wrote.set()

        hog = asyncio.create_task(write_back_to_back())
        try:
            await asyncio.wait_for(wrote.wait(), 60)
            await _schedule(_herald(user, sqlite_url), "through the burst")
            # and the dispatcher is still at it: the write got in between its writes
            wrote.clear()
            await asyncio.wait_for(wrote.wait(), 60)
        finally:
            stop.set()
            await hog
        assert await _texts(user) == ["through the burst"]
    finally:
        await user.close()
        await dispatcher.close()


async def test_a_write_that_cannot_get_the_lock_fails_and_changes_nothing(
    sqlite_url: str,
) -> None:
    user = await Store.open(sqlite_url, lock_wait=0.3)
    path = db.sync_url(sqlite_url).database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        herald = _herald(user, sqlite_url)
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(DatabaseError, match="is busy: another process held its write lock"):
            await _schedule(herald, "too late")
        assert time.monotonic() - started >= 0.3
        holder.execute("ROLLBACK")
        assert await _texts(user) == []
        await _schedule(herald, "once it is free")
        assert await _texts(user) == ["once it is free"]
    finally:
        holder.close()
        await user.close()


async def test_the_dispatchers_writes_leave_the_lock_free_while_a_writer_waits(
    sqlite_url: str,
) -> None:
    store = await Store.open(sqlite_url)
    try:

        async def claim() -> None:
            await store.claim_due(now=START, worker="w", lease_until=START, limit=10)

        waiters = db.WriteWaiters(sqlite_url)
        assert not waiters.anyone()
        with db.WriteWaiters(sqlite_url).waiting():  # as another process's writer does
            assert waiters.anyone()
            await claim()
            started = time.monotonic()
            for _ in range(3):
                await claim()
            # two at once (as the pump and the flusher may): still one gap apart
            await asyncio.gather(claim(), claim())
            assert time.monotonic() - started >= 5 * SQLITE_WRITE_GAP_SECONDS * 0.99
        assert not waiters.anyone()
        waiters.close()
    finally:
        await store.close()
