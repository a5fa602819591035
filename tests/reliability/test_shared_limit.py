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

from bot.bench import schedule_rows
from core import db
from core.store import Store
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
    async with WebhookReceiver() as hook:
        target = f"{hook.url}/hook"
        procs = [
            start(db_url, tmp_path / f"d{i}.log", f"webhook:{target}={RATE}/s") for i in range(4)
        ]
        try:
            await wait_until(lambda: _workers(store, 4), 60, "four dispatchers")
            now = datetime.now(UTC)
            rows = schedule_rows(jobs, now, 0.0, lambda i: f"webhook:{target}", owner="local:rl")
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
            await store.close()
        times = sorted(r.at for r in hook.received)
    assert codes == [0, 0, 0, 0]
    assert len({r.id for r in hook.received}) == jobs
    took = times[-1] - times[0]
    # the busiest second, measured at the receiver, over every one-second window
    busiest, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= 1.0:
            first += 1
        busiest = max(busiest, last - first + 1)
    report(
        "shared rate limit",
        f"{jobs:,} webhooks to one URL limited to {RATE}/s, 4 dispatchers on PostgreSQL",
        f"took {took:.1f} s (limit says {jobs / RATE:.0f} s); busiest second {busiest}",
    )
    expected = (jobs - 1) / RATE
    # together no faster than the limit, and not slower either: each claim keeps only
    # what its destination takes within max_rate_wait, so no one sits on jobs
    assert expected * 0.9 <= took <= expected * 1.1
    # Slots are handed out by the database at the limit's pace and each dispatcher
    # spaces its own sends by it; where one hands over to the next, a late send of the
    # first (at most slot_grace, 0.1 s, past its slot) can meet the second's first:
    # no window of one second holds more than the limit plus a tenth. Unshared, four
    # dispatchers would each send at the limit: four times the rate.
    assert busiest <= RATE * 1.1
