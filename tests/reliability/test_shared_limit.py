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

import pytest
import sqlalchemy as sa

from bot.bench import schedule_rows
from core import db
from core.store import Store
from core.store.base import ATTEMPT
from tests.fakes import WebhookReceiver
from tests.reliability.conftest import FULL, report
from tests.reliability.test_processes import _workers, wait_until

RATE = 100

pytestmark = [
    pytest.mark.parametrize("db_url", ["postgres"], indirect=True),
    # four service processes and a paced run: a measurement for `make reliability`
    pytest.mark.skipif(not FULL, reason="HERALD_RELIABILITY=full runs it"),
]


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
    try:
        async with WebhookReceiver() as hook:
            target = f"{hook.url}/hook"
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
                    return len({r.id for r in hook.received}) >= jobs

                await wait_until(all_arrived, jobs / RATE * 3 + 60, f"{jobs} webhooks")
            finally:
                for p in procs:
                    p.send_signal(signal.SIGTERM)
                codes = [p.wait(timeout=60) for p in procs]
            times = sorted(r.at for r in hook.received)
        # when each send started, as the dispatchers recorded it
        async with store._engine.connect() as conn:
            rows_started = await conn.execute(sa.select(ATTEMPT.c.started_at))
            started = sorted(_aware(at).timestamp() for (at,) in rows_started)
    finally:
        await store.close()
    assert codes == [0, 0, 0, 0]
    assert len({r.id for r in hook.received}) == jobs
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
    # The receiver shares this test's event loop, and its clock reads an arrival only
    # when that loop gets to it; a request delayed there can meet the next ones.
    assert arrived <= RATE * 1.03


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
