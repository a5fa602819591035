"""A dispatcher killed with SIGKILL again and again while it delivers to a webhook
receiver loses nothing; an idempotent receiver (by ``webhook-id``) accepts each message
once; re-sent deliveries are counted."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli.bench import schedule_rows
from core.store import Store
from tests.fakes import WebhookReceiver
from tests.reliability.conftest import report, size

DESTINATIONS = 200  # webhooks are rate limited per URL (10/s): spread over many URLs


def start(url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
        "HERALD_LEASE_SECONDS": "2",
        "HERALD_SWEEP_SECONDS": "0.5",
        "HERALD_HTTP_PORT": "0",
    }
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"], env=env, stdout=sink, stderr=sink
        )


async def fill(store: Store, hook: WebhookReceiver, n: int) -> None:
    now = datetime.now(UTC)
    for first in range(0, n, 5000):
        rows = schedule_rows(
            min(5000, n - first),
            now,
            0.0,
            lambda i, first=first: f"webhook:{hook.url}/hook/{(first + i) % DESTINATIONS}",
            owner="local:crash",
        )
        await store.create_schedules_bulk(
            rows, details=[{} for _ in rows], actor="local:crash", action="test", now=now
        )


@pytest.mark.timeout(900)  # 20 kills, each waited for, then the drain
async def test_repeated_sigkill_loses_nothing(tmp_path: Path) -> None:
    jobs, kills = size(1_000, 10_000), size(3, 20)
    url = f"sqlite:///{tmp_path}/crash.db"
    rng = random.Random(20261130)
    store = await Store.open(url)
    # an endpoint that takes a quarter of a second to answer: each kill finds a full
    # window of sends in flight (answered at ~250/s, 1,000 jobs take ~4 s), and the
    # burst lasts past the last kill however fast the dispatcher is
    async with WebhookReceiver(latency=0.25) as hook:
        await fill(store, hook, jobs)
        log = tmp_path / "dispatcher.log"
        proc = start(url, log)
        try:
            for _ in range(kills):
                # kill at a random moment while deliveries are in full flow (a dispatcher
                # that drained the rest between two kills is killed once they are in)
                target = len({r.id for r in hook.received}) + rng.randint(20, jobs // (kills + 1))
                target = min(target, jobs)
                await _until(lambda t=target: len({r.id for r in hook.received}) >= t, 120)
                await asyncio.sleep(rng.uniform(0, 0.2))
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                proc = start(url, log)
            await _until(lambda: len({r.id for r in hook.received}) >= jobs, 300)
            await _until(_all_delivered(store, jobs), 60)
        except AssertionError:
            counts = await store.job_counts()
            tail = log.read_text()[-3000:]
            raise AssertionError(f"jobs {counts}; dispatcher log ends:\n{tail}") from None
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            await store.close()
        ids = [r.id for r in hook.received]
    accepted = set(ids)
    assert len(accepted) == jobs, "some message was lost"
    resent = len(ids) - len(accepted)
    report(
        "crash",
        f"{kills} SIGKILLs during {jobs:,} webhook deliveries (SQLite)",
        f"0 lost, 0 duplicates accepted (idempotent receiver), {resent} re-sent",
    )


def _all_delivered(store: Store, n: int):
    async def check() -> bool:
        return (await store.job_counts()).get("delivered", 0) >= n

    return check


async def _until(predicate, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")
