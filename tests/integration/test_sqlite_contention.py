"""SQLite under contention: a user's short write waits its turn behind a dispatcher
that writes back to back, and one that cannot get the write lock in time fails with
a sentence, changing nothing. Real SQLite files, two engines (two connections)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.cli.bench import schedule_rows
from core import db
from core.cases import Herald
from core.clock import ManualClock
from core.errors import DatabaseError
from core.settings import load_settings
from core.store import ScheduleQuery, Store
from core.store.base import SQLITE_WRITE_GAP_SECONDS
from core.store.benchmarks import move_waiting_jobs

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
                await move_waiting_jobs(dispatcher, START, due_before=START + timedelta(days=1))
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


async def test_a_dispatcher_transaction_waits_for_the_lock_another_connection_holds(
    sqlite_url: str,
) -> None:
    """The hot path's one-round-trip transactions (``Gateway._sqlite_run``): held off by
    another connection's write lock past SQLite's short busy wait, a slot reservation
    waits its turn and then takes its slots; one that cannot get it in time fails."""
    from core.ratelimit import RateLimit

    store = await Store.open(sqlite_url, lock_wait=5.0)
    path = db.sync_url(sqlite_url).database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    limit = RateLimit(rate=10.0, burst=10.0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        reserving = asyncio.create_task(
            store.reserve_slots({"k": (3, limit)}, now=START, window=10)
        )
        await asyncio.sleep(0.2)
        assert not reserving.done()
        holder.execute("ROLLBACK")
        slots = await asyncio.wait_for(reserving, 10)
        assert slots["k"].times == [START] * 3
        short = await Store.open(sqlite_url, lock_wait=0.2)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(DatabaseError, match="is busy"):
                await short.reserve_slots({"k": (1, limit)}, now=START, window=10)
            holder.execute("ROLLBACK")
        finally:
            await short.close()
    finally:
        holder.close()
        await store.close()


async def test_a_dispatcher_transaction_that_fails_or_is_abandoned_changes_nothing(
    sqlite_url: str,
) -> None:
    store = await Store.open(sqlite_url)
    started = threading.Event()
    go_on = threading.Event()

    def insert_then(fail: bool, wait: bool) -> Callable[[sqlite3.Connection], None]:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO rate_bucket (destination, tat) VALUES ('x', '2026')")
            if wait:
                started.set()
                go_on.wait(10)
            if fail:
                raise sqlite3.OperationalError("disk I/O error")

        return work

    async def buckets() -> int:
        async with store._read() as conn:
            return int((await conn.exec_driver_sql("SELECT count(*) FROM rate_bucket")).scalar())

    try:
        with pytest.raises(DatabaseError, match="disk I/O error"):
            await store._sqlite_run(insert_then(fail=True, wait=False))
        assert await buckets() == 0
        # its caller cancelled while it runs: rolled back, not committed
        running = asyncio.create_task(store._sqlite_run(insert_then(fail=False, wait=True)))
        await asyncio.to_thread(started.wait, 10)
        running.cancel()
        await asyncio.sleep(0)
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert await buckets() == 0
        await store._sqlite_run(insert_then(fail=False, wait=False))
        assert await buckets() == 1
    finally:
        go_on.set()
        await store.close()
