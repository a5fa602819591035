"""Four dispatchers on one PostgreSQL queue send to one webhook URL limited to 100/s:
together they send no faster than one would (the limit lives in the database, not in
each process), and the burst takes as long as the limit says."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from bot.cli.bench import schedule_rows
from core import db
from core.store import Store
from core.store.base import ATTEMPT
from tests.fakes.http import unused_port
from tests.reliability.conftest import FULL, report
from tests.reliability.test_processes import _workers, wait_until

RATE = 100

pytestmark = [
    pytest.mark.parametrize("db_url", ["postgres"], indirect=True),
    # four service processes and a paced run: a measurement for `make reliability`
    pytest.mark.skipif(not FULL, reason="HERALD_RELIABILITY=full runs it"),
]


#: The provider: a receiver in a process of its own, so that nothing else on its event
#: loop delays the moment it reads an arrival (it stamps each webhook's first arrival
#: by its id, on the wall clock, before reading the body).
RECEIVER = """
import sys, time
from aiohttp import web
seen = {}
async def hook(request):
    at = time.time()
    seen.setdefault(request.headers.get("webhook-id", ""), at)
    await request.read()
    return web.Response(text="ok")
async def count(_):
    return web.Response(text=str(len(seen)))
async def times(_):
    return web.json_response(sorted(seen.values()))
app = web.Application()
app.router.add_post("/hook", hook)
app.router.add_get("/count", count)
app.router.add_get("/times", times)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def start(url: str, out: Path, limit: str) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
        "HERALD_RATE_LIMITS": limit,
        "HERALD_HTTP_PORT": "0",
        "HERALD_LOG_LEVEL": "WARNING",
    }
    with out.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"], env=env, stdout=sink, stderr=sink
        )


@pytest.mark.timeout(600)
async def test_four_dispatchers_share_one_destinations_limit(db_url: str, tmp_path: Path) -> None:
    db.upgrade(db_url)
    store = await Store.open(db_url)
    jobs = 3_000
    port = unused_port()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])  # noqa: ASYNC220
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:

            async def arrived_count() -> int:
                try:
                    return int((await client.get("/count")).text)
                except httpx.HTTPError:
                    return -1

            async def up() -> bool:
                return await arrived_count() >= 0

            await wait_until(up, 30, "the receiver")
            target = f"{base}/hook"
            procs = [
                start(db_url, tmp_path / f"d{i}.log", f"webhook:{target}={RATE}/s")
                for i in range(4)
            ]
            try:
                await wait_until(lambda: _workers(store, 4), 60, "four dispatchers")
                now = datetime.now(UTC)
                rows = schedule_rows(
                    jobs, now, 0.0, lambda i: f"webhook:{target}", owner="local:rl"
                )
                await store.create_schedules_bulk(
                    rows, details=[{} for _ in rows], actor="local:rl", action="test", now=now
                )

                async def all_arrived() -> bool:
                    return await arrived_count() >= jobs

                await wait_until(all_arrived, jobs / RATE * 3 + 60, f"{jobs} webhooks")
            finally:
                for p in procs:
                    p.send_signal(signal.SIGTERM)
                codes = [p.wait(timeout=60) for p in procs]
            times = (await client.get("/times")).json()
        # when each send started, as the dispatchers recorded it
        async with store._engine.connect() as conn:
            rows_started = await conn.execute(sa.select(ATTEMPT.c.started_at))
            started = sorted(_aware(at).timestamp() for (at,) in rows_started)
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)
        await store.close()
    assert codes == [0, 0, 0, 0]
    assert len(times) == jobs  # each webhook arrived (a repeat would not count twice)
    took = times[-1] - times[0]
    sent, arrived = busiest_second(started), busiest_second(times)
    report(
        "shared rate limit",
        f"{jobs:,} webhooks to one URL limited to {RATE}/s, 4 dispatchers on PostgreSQL",
        f"took {took:.1f} s (limit says {jobs / RATE:.0f} s); busiest second: {sent} sends "
        f"started, {arrived} arrived",
    )
    expected = (jobs - 1) / RATE
    # together no faster than the limit, and not slower either: each claim keeps only
    # what its destination takes within max_rate_wait, so no one sits on jobs
    assert expected * 0.9 <= took <= expected * 1.1
    # Slots come from the database spaced for a send up to slot_grace late, and a later
    # send takes a fresh slot: whichever dispatcher sends, no one-second window holds
    # more starts than the limit. Unshared, four dispatchers would each send at the
    # limit: four times the rate.
    assert sent <= RATE
    # As the provider saw it, stamped by a receiver with a process of its own: slots
    # leave room (ratelimit.TRANSIT) for journeys that differ, so no second there holds
    # more than the limit either (before that room, 102 arrived once at load 4-5).
    assert arrived <= RATE


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def busiest_second(times: list[float]) -> int:
    """The most of ``times`` (sorted, seconds) in any window [t, t + 1)."""
    busiest, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= 1.0:
            first += 1
        busiest = max(busiest, last - first + 1)
    return busiest
