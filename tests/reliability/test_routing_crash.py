"""Routing under a crash: 500 recurring schedules (5,000 in ``make reliability``), each
to three webhook recipients, all due at once (1,500 deliveries, or 15,000); the
dispatcher is killed with SIGKILL mid-burst, a full window of deliveries in flight, and
a second one finishes. Every (schedule, recipient) is delivered, each once as an
idempotent receiver sees it (a re-send carries the same ``Idempotency-Key``), and every
recipient of every schedule has its next occurrence waiting.

Recurring (``every day at 9am``), not one-off: the crash then also falls on the
writing of each recipient's next job (one per recipient, checked against the
schedule's recipients), which must be neither lost nor doubled.

The default run (`make test`) crashes it on PostgreSQL, where the guarantee is most at
risk: there the dispatcher claims and records outcomes (each with its recipient's next
job) on separate pooled connections at once, so the kill leaves more than one
transaction open for the server to roll back, and the second dispatcher's claims skip
locked rows (``FOR UPDATE SKIP LOCKED``); on SQLite a process has one connection and
the file one writer. ``HERALD_RELIABILITY=full`` (`make reliability`) runs it on SQLite
too."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.cli.bench import schedule_rows
from core import routing, timeexpr
from core.models import Job, JobState
from core.store import Store
from tests.fakes import WebhookReceiver
from tests.reliability.conftest import FULL, report, size
from tests.support.waiting import until

RECIPIENTS = ("a", "b", "c")  # three destinations: /hooks/a, /hooks/b, /hooks/c
RULE = "every day at 9am"
JOB = Job.__table__  # type: ignore[attr-defined]


class IdempotentReceiver(WebhookReceiver):
    """Accepts a delivery once per ``Idempotency-Key``; a repeat is answered 200 as a
    real idempotent endpoint does, and counted."""

    def __init__(self, latency: float) -> None:
        super().__init__(latency=latency)
        #: key -> (schedule id, path) of the delivery accepted with it
        self.accepted: dict[str, tuple[int, str]] = {}
        self.repeats: Counter[str] = Counter()
        #: (schedule id, path) -> every key it arrived with
        self.keys_of: defaultdict[tuple[int, str], set[str]] = defaultdict(set)

    async def _receive(self, request):  # type: ignore[no-untyped-def]
        recorded = self.requests[-1]
        key = recorded.headers.get("idempotency-key", "")
        pair = (int(recorded.json()["schedule_id"]), recorded.path)
        self.keys_of[pair].add(key)
        if key in self.accepted:
            self.repeats[key] += 1
        else:
            self.accepted[key] = pair
        return await super()._receive(request)


def start(url: str, hook: WebhookReceiver, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
        # three URLs take the whole burst: lift the default 10/s per webhook URL
        "HERALD_RATE_LIMITS": f"webhook:{hook.url}/=2000/s",
        "HERALD_LEASE_SECONDS": "2",
        "HERALD_SWEEP_SECONDS": "0.5",
        "HERALD_HTTP_PORT": "0",
    }
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"], env=env, stdout=sink, stderr=sink
        )


async def fill(store: Store, hook: WebhookReceiver, n: int) -> list[int]:
    """``n`` recurring schedules due now, each to the three destinations (recipients
    0, 1 and 2, one job each)."""
    now = datetime.now(UTC)
    rule = timeexpr.parse_when(RULE, tz="UTC", now=now).rule
    targets = tuple(f"webhook:{hook.url}/hooks/{name}" for name in RECIPIENTS)
    recipients = routing.to_json(
        [routing.Recipient(i, (t,), None, None) for i, t in enumerate(targets)]
    )
    rows = [
        {**row, "rrule": rule, "expression": RULE, "recipients": recipients}
        for row in schedule_rows(n, now, 0.0, targets[0], owner="local:crash")
    ]
    return await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:crash", action="test", now=now
    )


@pytest.mark.parametrize(
    "db_url",
    [
        pytest.param(
            "sqlite",
            marks=pytest.mark.skipif(
                not FULL,
                reason="SQLite's crash runs in make reliability (HERALD_RELIABILITY=full); "
                "the default run crashes PostgreSQL",
            ),
        ),
        "postgres",
    ],
    indirect=True,
)
@pytest.mark.timeout(900)  # full size (15,000): ~4 min on PostgreSQL on a busy 2-core machine
async def test_sigkill_mid_fan_out_loses_no_recipient(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    schedules = size(500, 5_000)
    deliveries = schedules * len(RECIPIENTS)
    # each answer takes a tenth of a second: the kill finds a full window (64) in flight
    async with IdempotentReceiver(latency=0.1) as hook:
        ids = await fill(store, hook, schedules)
        log = tmp_path / "dispatcher.log"
        proc = start(db_url, hook, log)
        try:
            await until(lambda: past(proc, len(hook.accepted) >= deliveries // 3), within=120)
            proc.send_signal(signal.SIGKILL)  # mid-burst: a third accepted
            proc.wait(timeout=30)
            killed_at = len(hook.accepted)
            proc = start(db_url, hook, log)
            await until(
                lambda: past(proc, len(hook.accepted) >= deliveries), within=60 + deliveries / 40
            )
            async with asyncio.timeout(60):  # the last outcomes recorded
                while (await store.job_counts()).get("delivered", 0) < deliveries:  # noqa: ASYNC110 - another process writes it
                    await asyncio.sleep(0.05)
        except (TimeoutError, ChildProcessError):
            counts = await store.job_counts()
            tail = log.read_text()[-3000:]
            raise AssertionError(f"jobs {counts}; dispatcher log ends:\n{tail}") from None
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    expected = {(sid, f"/hooks/{name}") for sid in ids for name in RECIPIENTS}
    assert len(expected) == deliveries
    assert set(hook.accepted.values()) == expected, "some recipient was lost"
    # a re-send carried its first key: the receiver accepted each (schedule, recipient) once
    assert all(len(keys) == 1 for keys in hook.keys_of.values()), "a delivery changed its key"
    assert len(hook.accepted) == deliveries
    counts = await store.job_counts()
    assert counts.get("delivered") == deliveries
    assert counts.get("pending") == deliveries  # tomorrow's, one per recipient
    assert await next_jobs_per_recipient(store, ids) == {(0, 1, 2)}
    resent = sum(hook.repeats.values())
    backend = "PostgreSQL" if db_url.startswith("postgres") else "SQLite"
    report(
        "crash (routing)",
        f"1 SIGKILL at {killed_at:,} of {deliveries:,} deliveries: {schedules:,} schedules "
        f"× 3 webhook recipients ({backend})",
        f"0 lost, 0 duplicates accepted (idempotent receiver), {resent} re-sent; "
        "every recipient's next occurrence waiting",
    )


def past(proc: subprocess.Popen[bytes], done: bool) -> bool:
    """``done``; raises ChildProcessError when the dispatcher has exited meanwhile."""
    if not done and proc.poll() is not None:
        raise ChildProcessError(f"the dispatcher exited ({proc.returncode})")
    return done


async def next_jobs_per_recipient(store: Store, ids: list[int]) -> set[tuple[int, ...]]:
    """For each schedule, the recipients of its waiting jobs (sorted), in one read."""
    of: defaultdict[int, list[int]] = defaultdict(list)
    async with store._read() as conn:
        rows = await conn.execute(
            sa.select(JOB.c.schedule_id, JOB.c.recipient).where(
                JOB.c.state == JobState.PENDING.value
            )
        )
        for sid, recipient in rows:
            of[sid].append(recipient)
    return {tuple(sorted(of[sid])) for sid in ids}
