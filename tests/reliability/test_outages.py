"""Outages: a provider that answers 503 and then 429 for a while, and a database that
stops answering. Nothing is dropped; retries back off; the dispatcher recovers alone."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web

from bot.cli.bench import schedule_rows
from core.channels import build_channels
from core.clock import SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import load_settings
from core.store import Store
from tests.fakes import WebhookReceiver
from tests.reliability.conftest import FULL, report, size


class FlakyReceiver(WebhookReceiver):
    """503 until ``down_until``, then 429 with Retry-After until ``limited_until``."""

    def __init__(self) -> None:
        super().__init__()
        self.down_until = 0.0
        self.limited_until = 0.0
        self.refused_at: list[float] = []
        self.accepted: set[str] = set()

    async def _receive(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        if now < self.down_until:
            self.refused_at.append(now)
            return web.json_response({"error": "down"}, status=503)
        if now < self.limited_until:
            self.refused_at.append(now)
            return web.json_response(
                {"error": "slow down"}, status=429, headers={"Retry-After": "1"}
            )
        response = await super()._receive(request)
        self.accepted.add(request.headers.get("webhook-id", ""))
        return response


async def _fill(store: Store, url: str, n: int, destinations: int = 50) -> None:
    now = datetime.now(UTC)
    rows = schedule_rows(n, now, 0.0, lambda i: f"webhook:{url}/h/{i % destinations}")
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:bench", action="test", now=now
    )


async def _until(check, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.timeout(400)  # a 70 s outage at full size, then the drain
async def test_provider_outage_drops_nothing_and_backs_off(tmp_path: Path) -> None:
    jobs = size(300, 3_000)
    outage, limited = (60.0, 10.0) if FULL else (4.0, 2.0)
    url = f"sqlite:///{tmp_path}/outage.db"
    settings = load_settings(
        HERALD_DATABASE_URL=url, HERALD_WEBHOOK_ALLOW_PRIVATE="true", _env_file=None
    )
    store = await Store.open(url)
    config = replace(
        DispatcherConfig.from_settings(settings),
        backoff_base=0.25,
        backoff_cap=4.0,
        max_attempts=30,
        sweep_seconds=1.0,
    )
    async with FlakyReceiver() as hook:
        hook.down_until = time.monotonic() + outage
        hook.limited_until = hook.down_until + limited
        await _fill(store, hook.url, jobs)
        dispatcher = Dispatcher(store, build_channels(settings), clock=SystemClock(), config=config)
        stop = asyncio.Event()
        running = asyncio.create_task(dispatcher.serve(stop))
        try:

            async def settled() -> bool:
                counts = await store.job_counts()
                return counts.get("delivered", 0) + counts.get("dead", 0) >= jobs

            await _until(settled, outage + limited + 120)
        finally:
            stop.set()
            await running
        counts = await store.job_counts()
        await store.close()
    assert counts.get("delivered", 0) + counts.get("dead", 0) == jobs  # none dropped
    assert len(hook.accepted) == counts.get("delivered", 0)
    rate = len(hook.refused_at) / (outage + limited)
    report(
        "provider outage",
        f"{jobs:,} webhooks; receiver 503 for {outage:g} s, then 429 (Retry-After 1) "
        f"for {limited:g} s",
        f"{counts.get('delivered', 0):,} delivered, {counts.get('dead', 0)} dead, 0 dropped; "
        f"{rate:.0f} requests/s during the outage",
    )
    # backing off: a handful of tries per job, not a tight loop (which would be hundreds)
    assert len(hook.refused_at) / jobs <= 12


@pytest.mark.timeout(300)
# connections cut by the server's stop are dropped by the pool without a goodbye;
# psycopg warns when they are collected: collect them here, not in the next test
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.skipif(not FULL, reason="stops the machine's PostgreSQL: make reliability only")
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_database_outage_recovers_by_itself(db_url: str) -> None:
    await asyncio.to_thread(_migrate, db_url)
    store = await Store.open(db_url)
    settings = load_settings(HERALD_DATABASE_URL=db_url, _env_file=None)
    config = replace(DispatcherConfig.from_settings(settings), sweep_seconds=1.0)
    from tests.support.channels import RecordingChannel

    channel = RecordingChannel()
    dispatcher = Dispatcher(store, {"log": channel}, clock=SystemClock(), config=config)
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.serve(stop))
    await _fill_log(store, 200)
    await _pg("stop")
    try:
        await asyncio.sleep(30)  # the outage itself
    finally:
        await _pg("start")
    try:
        await _fill_log(store, 200)  # works again once the database is back
        await _until(lambda: _delivered(store, 400), 120)
    finally:
        stop.set()
        await running
        await store.close()
        gc.collect()
    assert len(channel.per_key()) == 400
    report(
        "database outage", "PostgreSQL stopped for 30 s with jobs due", "recovered alone, 0 lost"
    )


def _migrate(url: str) -> None:
    from core import db

    db.upgrade(url)


async def _fill_log(store: Store, n: int) -> None:
    now = datetime.now(UTC)
    rows = schedule_rows(n, now, 0.0, "log:")
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:bench", action="test", now=now
    )


async def _delivered(store: Store, n: int) -> bool:
    try:
        return (await store.job_counts()).get("delivered", 0) >= n
    except Exception:
        return False


async def _pg(action: str) -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    cmd = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action]
    await asyncio.to_thread(subprocess.run, cmd, check=True)
