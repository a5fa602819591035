"""The operator console on real volumes: a SQLite database of (by default) 1,000,000 jobs
and 3,000,000 attempts, then the time to draw the first screen and to answer filter
changes, through the real app (headless) and the real store.

    python -m bench.console_bench build /tmp/console.db            # a few minutes
    python -m bench.console_bench measure /tmp/console.db           # medians of 3
    python -m bench.console_bench build /tmp/small.db --jobs 20000 --attempts 60000

``build`` writes with bulk Core inserts (executemany in chunks of ``CHUNK``), then runs
ANALYZE. ``measure`` prints one JSON object: each figure is the median of ``--repeat``
runs in milliseconds, beside its budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from core import db
from core.models import Approval, Attempt, Audit, Job, Schedule

SCHEDULE = Schedule.__table__
JOB = Job.__table__
ATTEMPT = Attempt.__table__
AUDIT = Audit.__table__
APPROVAL = Approval.__table__

CHUNK = 20_000
ADMIN = "local:bench-admin"
BUDGET_FIRST_SCREEN_MS = 1000
BUDGET_FILTER_MS = 200

ERRORS = [
    "HTTP 410 Gone",
    "HTTP 404 Not Found",
    "channel_not_found",
    "HTTP 500 Internal Server Error",
    "Connection refused",
    "invalid_auth",
]


def _destinations(n: int) -> list[str]:
    kinds = [
        lambda i: f"slack:C{i:08d}",
        lambda i: f"discord:{10**17 + i}",
        lambda i: f"webhook:https://hooks.example.com/{i}",
        lambda i: f"email:team{i}@example.com",
    ]
    return [kinds[i % len(kinds)](i) for i in range(n)] + ["log:"]


def _chunks(rows: Iterator[dict[str, Any]], size: int = CHUNK) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def build(
    path: str,
    *,
    jobs: int = 1_000_000,
    attempts: int = 3_000_000,
    now: datetime | None = None,
    seed: int = 8,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Create ``path`` (replacing it) with ``jobs`` jobs and about ``attempts`` attempts
    spread over 30 days before ``now``, plus the waiting jobs of the next 7 days."""
    say = progress or (lambda _: None)
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    db.ensure_schema(url)
    now = now or datetime.now(UTC)
    rnd = random.Random(seed)
    started = time.perf_counter()
    n_schedules = max(10, jobs // 20)
    owners = [f"local:user{i}" for i in range(200)]
    destinations = _destinations(500)
    engine = db.make_sync_engine(url)
    counts = {"schedules": n_schedules, "jobs": 0, "attempts": 0}

    def schedules() -> Iterator[dict[str, Any]]:
        for sid in range(1, n_schedules + 1):
            created = now - timedelta(days=31)
            yield {
                "id": sid,
                "tenant": "local",
                "owner": owners[sid % len(owners)],
                "destination": destinations[sid % len(destinations)],
                "body": f"Message {sid}: standup, deploy or coffee {rnd.randrange(10**6)}",
                "expression": "every hour",
                "timezone": "UTC",
                "rrule": "DTSTART;TZID=UTC:20260101T000000\nRRULE:FREQ=HOURLY",
                "starts_at": created,
                "next_run_at": now + timedelta(minutes=rnd.randrange(1, 7 * 1440)),
                "state": "active" if sid % 10 else "paused",
                "idempotency_key": None,
                "max_lateness_s": None,
                "options": {},
                "version": 1,
                "created_at": created,
                "updated_at": created,
            }

    def job_rows() -> Iterator[dict[str, Any]]:
        for jid in range(1, jobs + 1):
            sid = (jid - 1) % n_schedules + 1
            roll = rnd.random()
            if roll < 0.04:
                state, due = "pending", now + timedelta(seconds=rnd.randrange(1, 7 * 86400))
            elif roll < 0.045:
                state, due = "retrying", now + timedelta(seconds=rnd.randrange(1, 3600))
            elif roll < 0.047:
                state, due = "claimed", now - timedelta(seconds=rnd.randrange(1, 30))
            elif roll < 0.05:
                state, due = "pending", now - timedelta(seconds=rnd.randrange(1, 600))
            else:
                age = rnd.expovariate(1 / (5 * 86400)) if rnd.random() < 0.99 else rnd.random()
                due = now - timedelta(seconds=min(age, 30 * 86400) + 1)
                state = rnd.choices(
                    ["delivered", "dead", "expired", "cancelled"], [0.93, 0.03, 0.02, 0.02]
                )[0]
            finished = due + timedelta(seconds=2) if state not in OPEN else None
            counts["jobs"] += 1
            yield {
                "id": jid,
                "schedule_id": sid,
                "occurrence_at": now - timedelta(days=40) + timedelta(seconds=jid),
                "due_at": due,
                "state": state,
                "attempts": 0,
                "lease_owner": "bench-w1" if state == "claimed" else None,
                "lease_expires_at": now + timedelta(seconds=60) if state == "claimed" else None,
                "idempotency_key": f"k{jid:012d}",
                "last_error": rnd.choice(ERRORS) if state in ("dead", "retrying") else None,
                "created_at": due - timedelta(hours=1),
                "updated_at": finished or due,
                "finished_at": finished,
            }

    def attempt_rows(tried: list[tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
        left = attempts
        mean = attempts / max(1, len(tried))
        for job_id, state, due, error in tried:
            if left <= 0:
                break
            k = 8 if state == "dead" else max(1, round(rnd.expovariate(1 / mean)))
            k = min(k, left, 8)
            left -= k
            for i in range(k):
                start = due + timedelta(seconds=i * 30) if state != "retrying" else now
                start = min(start, now - timedelta(seconds=1))
                last = i == k - 1
                outcome = (
                    "ok"
                    if state == "delivered" and last
                    else "permanent"
                    if state == "dead" and last
                    else "retry"
                )
                counts["attempts"] += 1
                yield {
                    "job_id": job_id,
                    "started_at": start,
                    "finished_at": start + timedelta(milliseconds=rnd.randrange(20, 900)),
                    "outcome": outcome,
                    "status_code": 200 if outcome == "ok" else rnd.choice([410, 429, 500, 502]),
                    "error": None if outcome == "ok" else (error or rnd.choice(ERRORS)),
                    "provider_message_id": f"m{job_id}" if outcome == "ok" else None,
                    "worker": f"bench-w{job_id % 4}",
                }

    with engine.begin() as conn:
        for chunk in _chunks(schedules()):
            conn.execute(sa.insert(SCHEDULE), chunk)
        say(f"schedules: {n_schedules:,}")
    with engine.begin() as conn:
        for i, chunk in enumerate(_chunks(job_rows())):
            conn.execute(sa.insert(JOB), chunk)
            if i % 10 == 0:
                say(f"jobs: {counts['jobs']:,}")
        # one dead letter in seven asked to be retried: a pending approval of its own
        asked = sa.select(
            sa.literal("local"),
            sa.literal("retry"),
            JOB.c.id,
            sa.literal("pending"),
            sa.literal(owners[0]),
            sa.literal(now, APPROVAL.c.requested_at.type),
            sa.literal("a dead letter sent again"),
        ).where(JOB.c.state == "dead", JOB.c.id % 7 == 0)
        columns = ("tenant", "kind", "job_id", "state", "requested_by", "requested_at", "why")
        conn.execute(sa.insert(APPROVAL).from_select(columns, asked))
    with engine.connect() as conn:
        tried = [
            tuple(row)
            for row in conn.execute(
                sa.select(JOB.c.id, JOB.c.state, JOB.c.due_at, JOB.c.last_error)
                .where(JOB.c.state.in_(["delivered", "dead", "retrying", "expired"]))
                .order_by(JOB.c.due_at)
            )
        ]
        conn.rollback()
    with engine.begin() as conn:
        for i, chunk in enumerate(_chunks(attempt_rows(tried))):
            conn.execute(sa.insert(ATTEMPT), chunk)
            if i % 20 == 0:
                say(f"attempts: {counts['attempts']:,}")
        conn.execute(
            sa.update(JOB)
            .where(JOB.c.state.in_(["delivered", "dead", "expired", "retrying"]))
            .values(
                attempts=sa.select(sa.func.count())
                .where(ATTEMPT.c.job_id == JOB.c.id)
                .scalar_subquery()
            )
        )
    with engine.begin() as conn:
        audit = (
            {
                "at": now - timedelta(days=31),
                "actor": owners[sid % len(owners)],
                "action": "schedule.create",
                "object_type": "schedule",
                "object_id": str(sid),
                "details": {"when": "every hour"},
            }
            for sid in range(1, n_schedules + 1)
        )
        for chunk in _chunks(audit):
            conn.execute(sa.insert(AUDIT), chunk)
        conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    counts["seconds"] = round(time.perf_counter() - started, 1)
    return counts


OPEN = ("pending", "retrying", "claimed")


# --- measuring ---------------------------------------------------------------------------


async def _until(pilot: Any, done: Callable[[], bool], limit: float = 30.0) -> None:
    """Poll (every millisecond) until ``done``, then draw the whole screen once: the
    figure is "until the person sees it", without Pilot's idle waits."""
    deadline = time.perf_counter() + limit
    while not done():
        if time.perf_counter() > deadline:
            raise TimeoutError("the console did not draw in time")
        await asyncio.sleep(0.001)
    pilot.app.export_screenshot()


class _Run:
    """One headless console session and the figures it records."""

    def __init__(self, pilot: Any, figures: dict[str, list[float]]) -> None:
        self.pilot = pilot
        self.app = pilot.app
        self.figures = figures

    def record(self, name: str, started: float) -> None:
        self.figures.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    def loads(self) -> int:
        return int(getattr(self.app.screen, "loads", 0))

    async def quiet(self) -> None:
        """Let reads already under way finish, so each figure times one change alone."""
        from textual.worker import WorkerCancelled

        for _ in range(3):
            await self.pilot.pause()
            try:
                await self.app.workers.wait_for_complete()
            except WorkerCancelled:
                continue

    async def open(self, mode: str, name: str | None = None) -> None:
        await self.quiet()
        started = time.perf_counter()
        await self.app.switch_mode(mode)
        await _until(self.pilot, lambda: self.loads() > 0)
        if name:
            self.record(name, started)
        await self.quiet()

    async def change(self, name: str, change: Callable[[], Any]) -> None:
        """Time ``change`` until the screen drew what it asked for."""
        await self.quiet()
        screen = self.app.screen
        before = screen.loads
        started = time.perf_counter()
        result = change()
        if hasattr(result, "__await__"):
            await result
        await _until(self.pilot, lambda: screen.loads > before)
        self.record(name, started)
        self.figures.setdefault(f"{name} (query only)", []).append(screen.fetch_ms)

    async def filter(self, name: str, text: str) -> None:
        bar = self.app.screen.query_one("#filter")

        async def submit() -> None:
            bar.value = text
            await bar.action_submit()

        await self.change(name, submit)


async def _measure(url: str, repeat: int) -> dict[str, Any]:
    from core.cases import Herald
    from core.clock import SystemClock
    from core.settings import load_settings
    from core.store import Store
    from tui.app import make_app

    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_ADMINS=ADMIN, _env_file=None)
    store = await Store.open(url)
    herald = Herald(store, settings, SystemClock())
    figures: dict[str, list[float]] = {}
    try:
        for _ in range(repeat):
            app = make_app(settings, herald, ADMIN, refresh_interval=3600)
            started = time.perf_counter()
            async with app.run_test(size=(120, 40)) as pilot:
                run = _Run(pilot, figures)
                await _until(pilot, lambda app=app: getattr(app.screen, "loads", 0) > 0)
                run.record("first_screen_overview", started)
                figures.setdefault("first_screen_overview (query only)", []).append(
                    app.screen.fetch_ms  # type: ignore[attr-defined]
                )
                for mode in ("schedules", "queue", "deliveries", "dead", "audit"):
                    await run.open(mode, f"open_{mode}")
                    figures.setdefault(f"open_{mode} (query only)", []).append(
                        app.screen.fetch_ms  # type: ignore[attr-defined]
                    )
                await run.open("schedules")
                await run.filter("filter_schedules_text", "coffee 12")
                await run.filter("filter_schedules_owner", "owner:local:user7 state:active")
                await run.filter("filter_schedules_destination", "to:webhook:")
                await run.open("queue")
                queue = app.screen
                for view in ("pending", "in_flight", "retrying", "due"):
                    await run.change(f"queue_view_{view}", partial(queue.action_view, view))
                await run.open("deliveries")
                await run.filter("filter_log_outcome", "outcome:permanent")
                await run.filter("filter_log_since", "since:1h")
                await run.filter("filter_log_schedule", "schedule:77")
                await run.filter("filter_log_destination", "to:slack:C00000004")
                await run.open("dead")
                groups = app.screen.query_one("#groups")
                await run.change("filter_dead_reason", partial(setattr, groups, "highlighted", 1))
    finally:
        await store.close()
    return {
        name: {
            "median_ms": round(statistics.median(values), 1),
            "budget_ms": (
                BUDGET_FIRST_SCREEN_MS if name.startswith(("first", "open")) else BUDGET_FILTER_MS
            ),
        }
        for name, values in figures.items()
    }


def measure(path: str, *, repeat: int = 3) -> dict[str, Any]:
    url = f"sqlite:///{path}"
    engine = sa.create_engine(db.sync_url(url))
    with engine.connect() as conn:
        size = {
            "jobs": conn.scalar(sa.select(sa.func.count()).select_from(JOB)),
            "attempts": conn.scalar(sa.select(sa.func.count()).select_from(ATTEMPT)),
            "schedules": conn.scalar(sa.select(sa.func.count()).select_from(SCHEDULE)),
        }
    engine.dispose()
    return {"database": size, "repeat": repeat, "figures": asyncio.run(_measure(url, repeat))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.console_bench")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="generate the database")
    b.add_argument("path")
    b.add_argument("--jobs", type=int, default=1_000_000)
    b.add_argument("--attempts", type=int, default=3_000_000)
    m = sub.add_parser("measure", help="time the console on it")
    m.add_argument("path")
    m.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.command == "build":
        result = build(
            args.path,
            jobs=args.jobs,
            attempts=args.attempts,
            progress=lambda text: print(text, file=sys.stderr, flush=True),
        )
    else:
        result = measure(args.path, repeat=args.repeat)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
