"""The running service: woken at once by new work, in its own process and across
processes (PostgreSQL LISTEN/NOTIFY); graceful shutdown on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core import db
from core.cases import Herald
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.ratelimit import RateLimits
from core.settings import load_settings
from core.store import Store
from tests.support.channels import RecordingChannel

IDLE = DispatcherConfig(sweep_seconds=3600)  # no safety-net sweep during the test


def in_the_past() -> ManualClock:
    """A clock a few seconds behind the wall: what it schedules "in 2 seconds" is
    already due for a dispatcher on the real clock, so no test waits for a schedule."""
    return ManualClock(datetime.now(UTC) - timedelta(seconds=5))


async def test_an_idle_dispatcher_is_woken_by_a_new_earlier_schedule(db_url: str) -> None:
    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    store = await Store.open(db_url)
    settings = load_settings(HERALD_DATABASE_URL=db_url, _env_file=None)
    channel = RecordingChannel()
    dispatcher = Dispatcher(store, {"log": channel}, clock=SystemClock(), config=IDLE)
    writer = Herald(store, settings, in_the_past(), on_due=dispatcher.wake)
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.serve(stop))
    try:
        later = Herald(store, settings, SystemClock(), on_due=dispatcher.wake)
        await later.create_schedule("local:a", to="log:", when="in 2 hours", text="later")
        await _wait_for_worker(store)  # idle, its wake-up planned two hours from now
        started = time.monotonic()
        await writer.create_schedule("local:a", to="log:", when="in 2 seconds", text="now")
        await asyncio.wait_for(channel.arrived.wait(), timeout=5)
        assert time.monotonic() - started < 1.0
        assert [d.body for d in channel.deliveries] == ["now"]
    finally:
        stop.set()
        await running
        await store.close()


def _start_service(url: str) -> subprocess.Popen[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_SWEEP_SECONDS": "3600",
        "PYTHONUNBUFFERED": "1",
        "HERALD_HTTP_PORT": "0",  # several services on one machine
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _read_until(proc: subprocess.Popen[str], needle: str, within: float) -> str:
    assert proc.stdout is not None
    loop = asyncio.get_running_loop()
    seen = []

    async def read() -> str:
        while True:
            line = await loop.run_in_executor(None, proc.stdout.readline)  # type: ignore[union-attr]
            if not line:
                raise AssertionError(f"service exited; it printed {seen!r}")
            seen.append(line)
            if needle in line:
                return line

    return await asyncio.wait_for(read(), timeout=within)


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_another_process_is_woken_by_notify(db_url: str) -> None:
    db.upgrade(db_url)
    proc = _start_service(db_url)
    store = await Store.open(db_url)
    try:
        await _wait_for_worker(store)  # started, swept once, listening
        writer = Herald(
            store, load_settings(HERALD_DATABASE_URL=db_url, _env_file=None), in_the_past()
        )
        started = time.monotonic()
        s, _ = await writer.create_schedule("local:a", to="log:", when="in 2 seconds", text="ping")
        line = await _read_until(proc, f"schedule {s.id},", within=10)
        assert "ping" in line
        assert time.monotonic() - started < 2.0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        await store.close()
    assert proc.returncode == 0, err


async def _wait_for_worker(store: Store) -> None:
    for _ in range(400):
        if await store.workers():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the service never reported a heartbeat")


async def test_a_stop_does_not_wait_for_a_fresh_slot_that_never_comes(db_url: str) -> None:
    """A send that missed its rate-limit slot waits for a fresh one; the database holds
    that reservation back (a lock held elsewhere). The service stops within its
    shutdown timeout all the same, and the job is handed back, not sent."""
    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    store = await Store.open(db_url)
    settings = load_settings(HERALD_DATABASE_URL=db_url, _env_file=None)
    channel = RecordingChannel()
    config = DispatcherConfig(
        sweep_seconds=3600, shutdown_timeout=0.2, rate_limits=RateLimits.parse("log:=100/s:100")
    )
    dispatcher = Dispatcher(store, {"log": channel}, clock=SystemClock(), config=config)
    writer = Herald(store, settings, in_the_past(), on_due=dispatcher.wake)
    real, asked = store.reserve_slots, asyncio.Event()

    async def stalled(wanted: Any, **kwargs: Any) -> Any:
        if asked.is_set() or kwargs.get("not_before") is None:  # a fresh slot: held back
            asked.set()
            await asyncio.Event().wait()
        granted = await real(wanted, **kwargs)
        for slots in granted.values():  # the loop stalled: a second past the slot
            slots.times[:] = [at - timedelta(seconds=1) for at in slots.times]
        return granted

    store.reserve_slots = stalled  # type: ignore[method-assign]
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.serve(stop))
    try:
        await writer.create_schedule("local:a", to="log:", when="in 2 seconds", text="held")
        await asyncio.wait_for(asked.wait(), timeout=10)
        stop.set()
        await asyncio.wait_for(running, timeout=10)
        assert channel.deliveries == []
        counts = await store.job_counts()
        assert (counts.get("pending"), counts.get("claimed")) == (1, None)
    finally:
        stop.set()
        if not running.done():
            running.cancel()
        await store.close()
