"""A dispatcher killed with SIGKILL mid-burst and restarted at once: the restarted one
finds the dead one's process gone and delivers every job it held within seconds,
not when their 60 s leases run out; nothing is lost.

The recording destination is ``log:``: each dispatcher prints every delivery with the
job's idempotency key to its own output file, which the test reads.

The default run (`make test`) kills it on PostgreSQL, where recovery is most at risk:
the killed process's transactions and row locks are the server's to end, and a claim
there skips locked rows (``FOR UPDATE SKIP LOCKED``), so a lock outliving its process
would hold its jobs back. ``HERALD_RELIABILITY=full`` (`make reliability`) runs it on
SQLite too; in `make test` tests/integration/test_leases.py reclaims a dead process's
jobs at once on both backends, in process.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli.bench import PLACEHOLDER
from core import db
from core.dispatcher.liveness import machine_id
from core.store import Store
from core.store.benchmarks import move_waiting_jobs
from tests.reliability.conftest import FULL, report, size
from tests.reliability.test_processes import (
    _delivered,
    _workers,
    fill,
    keys_in,
    start,
    wait_until,
)
from tests.support.store import leased_by

#: The target: every job the dead one held is delivered within this many seconds of
#: the restarted dispatcher being up.
RECOVERY_SECONDS = 5.0


@pytest.mark.parametrize(
    "db_url",
    [
        pytest.param(
            "sqlite",
            marks=pytest.mark.skipif(
                not FULL,
                reason="SQLite's restart after SIGKILL runs in make reliability "
                "(HERALD_RELIABILITY=full); the default run kills it on PostgreSQL",
            ),
        ),
        "postgres",
    ],
    indirect=True,
)
@pytest.mark.skipif(machine_id() is None, reason="needs /proc to tell a dead process")
@pytest.mark.timeout(600)
async def test_a_restart_delivers_a_killed_dispatchers_jobs_within_seconds(
    db_url: str, tmp_path: Path
) -> None:
    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    store = await Store.open(db_url)
    jobs = size(10_000, 40_000)
    # the default 60 s lease: recovery must not wait for it
    env = {"HERALD_LEASE_SECONDS": "60", "HERALD_BATCH_SIZE": "500"}
    victim_out, restart_out = tmp_path / "victim", tmp_path / "restart"
    victim = start(db_url, victim_out, **env)
    restarted = None
    try:
        await wait_until(lambda: _workers(store, 1), 60, "the victim dispatcher")
        [worker] = await store.workers()
        await fill(store, jobs)
        await move_waiting_jobs(
            store, datetime.now(UTC), due_before=PLACEHOLDER + timedelta(days=1)
        )

        async def stopped_holding_jobs() -> bool:
            """Deliveries are in full flow and the victim, frozen (SIGSTOP) where it
            stands, holds leased jobs: the kill lands with jobs in flight, not in the
            gap between a batch's records and the next claim (or after the last)."""
            if not await _delivered(store, 100):
                return False
            victim.send_signal(signal.SIGSTOP)
            if await leased_by(store, worker.id):
                return True
            victim.send_signal(signal.SIGCONT)
            return False

        await wait_until(stopped_holding_jobs, 120, "deliveries in full flow")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        held = await leased_by(store, worker.id)
        assert held, "the kill should have landed with jobs in flight"
        spawned = time.monotonic()
        restarted = start(db_url, restart_out, **env)
        await wait_until(lambda: _running(store, worker.id), 60, "the restarted dispatcher")
        up = time.monotonic()

        async def held_sent() -> bool:
            return held <= set(keys_in([restart_out]))

        await wait_until(held_sent, 60, "the dead dispatcher's jobs")
        recovered = time.monotonic()
        await wait_until(lambda: _delivered(store, jobs), 240, "every job")
    finally:
        for p in (victim, restarted):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=60)
        await store.close()
    seen = keys_in([victim_out, restart_out])
    assert len(seen) == jobs  # nothing lost
    doubled = {k for k, n in seen.items() if n > 1}
    assert doubled <= held  # sent again only where the dead one held the lease
    after_up, after_spawn = recovered - up, recovered - spawned
    report(
        "restart after SIGKILL",
        f"{jobs:,} jobs ({db.backend(db_url)}), 60 s lease, killed mid-burst holding {len(held):,}",
        f"all {len(held):,} delivered {after_up:.1f} s after the restarted dispatcher was up "
        f"({after_spawn:.1f} s after it was started); 0 lost",
    )
    assert after_up < RECOVERY_SECONDS


async def _running(store: Store, dead: str) -> bool:
    """A dispatcher other than the dead one has reported a heartbeat."""
    return any(w.id != dead and w.stopped_at is None for w in await store.workers())
