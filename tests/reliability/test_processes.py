"""Several dispatcher processes on one PostgreSQL queue: every job is delivered exactly
once; a dispatcher killed with SIGKILL mid-batch loses nothing (a restart right after a
kill: test_recovery).

The recording destination is ``log:``: each dispatcher prints every delivery with the
job's idempotency key to its own output file, which the test reads afterwards.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli.bench import PLACEHOLDER, _fill
from core import db
from core.store import Store
from core.store.benchmarks import move_waiting_jobs
from tests.reliability.conftest import report, size
from tests.support.store import leased_by

KEY = re.compile(r"key ([A-Za-z0-9_-]+)\)")
pytestmark = pytest.mark.parametrize("db_url", ["postgres"], indirect=True)


def start(url: str, out: Path, **env: str) -> subprocess.Popen[bytes]:
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "PYTHONUNBUFFERED": "1",
        "HERALD_HTTP_PORT": "0",  # several services on one machine
        **env,
    }
    with out.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"],
            env=full,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def keys_in(files: list[Path]) -> Counter[str]:
    found: Counter[str] = Counter()
    for f in files:
        found.update(KEY.findall(f.read_text()))
    return found


async def wait_until(predicate, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def fill(store: Store, n: int) -> list[str]:
    await _fill(store, n, PLACEHOLDER, 0.0, "log:")
    return []


@pytest.mark.timeout(600)  # its own waits add up to ~6 min at full size
async def test_four_dispatchers_deliver_each_job_exactly_once(db_url: str, tmp_path: Path) -> None:
    """Four dispatchers share one queue; one is SIGKILLed midway. Every job is delivered,
    once, except that jobs the killed one held may be sent again (same idempotency key)."""
    db.upgrade(db_url)
    store = await Store.open(db_url)
    jobs = size(3_000, 50_000)
    fast = {"HERALD_LEASE_SECONDS": "3", "HERALD_SWEEP_SECONDS": "1"}
    outs = [tmp_path / f"d{i}.log" for i in range(4)]
    procs = [start(db_url, out, **fast) for out in outs]
    held: set[str] = set()
    try:
        await wait_until(lambda: _workers(store, 4), 30, "four dispatchers")
        victim_pid = procs[0].pid
        victim = next(w for w in await store.workers() if w.pid == victim_pid)
        await fill(store, jobs)
        await move_waiting_jobs(
            store, datetime.now(UTC), due_before=PLACEHOLDER + timedelta(days=1)
        )
        await wait_until(lambda: _delivered(store, jobs // 2), 240, "half of the deliveries")
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(timeout=30)
        held = await leased_by(store, victim.id)
        await wait_until(lambda: _delivered(store, jobs), 240, f"{jobs} deliveries")
    finally:
        for p in procs[1:]:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=60) for p in procs[1:]]
        if procs[0].poll() is None:
            procs[0].kill()
        await store.close()
    assert codes == [0, 0, 0]
    seen = keys_in(outs)
    assert len(seen) == jobs  # nothing lost
    doubled = {k for k, n in seen.items() if n > 1}
    assert doubled <= held  # sent twice only where the killed one held the lease
    per_process = [len(KEY.findall(out.read_text())) for out in outs]
    assert min(per_process) > 0  # all four took part
    report(
        "scale-out",
        f"4 dispatchers on PostgreSQL, {jobs:,} jobs, one SIGKILLed midway",
        f"0 lost, {len(doubled)} re-sent (all held by the killed one); "
        f"shares {'/'.join(str(n) for n in per_process)}",
    )


async def _workers(store: Store, n: int) -> bool:
    return len([w for w in await store.workers() if w.stopped_at is None]) >= n


async def _delivered(store: Store, n: int) -> bool:
    return (await store.job_counts()).get("delivered", 0) >= n
