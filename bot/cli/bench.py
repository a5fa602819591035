"""``herald bench dispatch``: how fast and how punctually the dispatcher delivers.

It fills the database with N jobs (due at one instant, or spread evenly over
SECONDS), runs the dispatcher until every job is delivered, and prints one JSON
object: ``jobs``, ``delivered``, ``drain_per_s``, ``first_lateness_ms``,
``lateness_ms_p50``, ``lateness_ms_p99`` (lateness = start of delivery minus due time)
and ``peak_rss_mb``. With ``--pending M`` it first adds M jobs due far in the future,
to show that memory stays flat however deep the queue is.

The dispatcher runs as ``herald run`` does, logging included: in this process with the
service's logging set up (level INFO unless ``HERALD_LOG_LEVEL`` says otherwise, lines
written to /dev/null), or, with ``--service`` (or several ``--dispatchers``), as
``herald run`` processes (stderr to /dev/null). Both start warm: a few hundred jobs are
delivered before the measured ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.logs import configure_logging
from core.channels.base import Channel
from core.channels.local import LogChannel, NullChannel
from core.channels.webhook import WebhookChannel
from core.clock import SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.http_client import HTTPClient
from core.scrub import Scrubber
from core.settings import Settings
from core.store import Settled, Store
from core.store.benchmarks import lateness_samples, move_waiting_jobs

CHUNK = 20_000
#: A webhook burst is spread over this many URLs of the receiver (issue 19's workload:
#: 2,000 webhooks over 200 URLs, 10 each, within the webhook channel's burst of 10).
WEBHOOK_URLS = 200
FAR = datetime(2100, 1, 1, tzinfo=UTC)
PLACEHOLDER = FAR - timedelta(days=1)


def schedule_rows(
    n: int,
    first: datetime,
    step: float,
    destination: str | Callable[[int], str],
    owner: str = "local:bench",
) -> list[dict[str, Any]]:
    """Column values of ``n`` one-off schedules for bulk inserts (benchmarks, tests):
    the i-th due ``first + i * step`` seconds, to ``destination`` (or ``destination(i)``)."""
    now = datetime.now(UTC)
    rows = []
    for i in range(n):
        due = first + timedelta(seconds=i * step)
        rows.append(
            {
                "owner": owner,
                "tenant": "local",
                "destination": destination(i) if callable(destination) else destination,
                "body": f"bench {i}",
                "expression": "bench",
                "timezone": "UTC",
                "rrule": None,
                "starts_at": due,
                "next_run_at": due,
                "state": "active",
                "idempotency_key": None,
                "max_lateness_s": None,
                "options": {},
                "version": 1,
                "created_at": now,
                "updated_at": now,
            }
        )
    return rows


async def _fill(
    store: Store, n: int, first: datetime, step: float, destination: str | Callable[[int], str]
) -> None:
    for start in range(0, n, CHUNK):
        count = min(CHUNK, n - start)
        rows = schedule_rows(count, first + timedelta(seconds=start * step), step, destination)
        await store.create_schedules_bulk(
            rows,
            details=[{} for _ in rows],
            actor="local:bench",
            action="bench",
            now=datetime.now(UTC),
        )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child_hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def bench_dispatch(
    settings: Settings,
    *,
    jobs: int,
    spread: float,
    channel: str,
    dispatchers: int,
    pending: int,
    lead: float = 0.5,
    samples: bool = False,
    warm_up: int = 200,
    service: bool = False,
) -> dict[str, Any]:
    """Run one dispatch benchmark against ``settings.database_url`` (which should be
    empty) and return its figures. ``service``: one ``herald run`` process even for
    one dispatcher (several always are)."""
    # "null", "log", or "webhook:<base URL>" (spread over WEBHOOK_URLS URLs: each has its
    # own rate limit)
    destination: str | Callable[[int], str] = f"{channel}:"
    if channel.startswith("webhook:"):
        base = channel

        def destination(i: int) -> str:
            return f"{base}/h/{i % WEBHOOK_URLS}"

    store = await Store.open(settings.database_url)
    stack = contextlib.ExitStack()
    delivered = 0
    done = asyncio.Event()
    peak = 0.0

    warming = warm_up > 0

    def observe(item: Settled) -> None:
        nonlocal delivered
        if item.state == "delivered" and not warming:
            delivered += 1
            if delivered >= jobs:
                done.set()

    try:
        if pending:
            await _fill(store, pending, FAR, 0.0, destination)
        children: list[asyncio.subprocess.Process] = []
        runner: asyncio.Task[None] | None = None
        stop = asyncio.Event()
        dispatcher: Dispatcher | None = None
        devnull = open(os.devnull, "w")  # noqa: ASYNC230, SIM115 - set-up, not timed
        stack.callback(devnull.close)
        if dispatchers == 1 and not service:
            # the service's logging, as `herald run` sets it up (cli.main)
            handler = configure_logging(settings, default_level="INFO", stream=devnull)
            stack.callback(logging.getLogger().removeHandler, handler)
            http = HTTPClient.from_settings(settings)
            sinks: dict[str, Channel] = {
                "null": NullChannel(),
                "log": LogChannel(devnull),
                "webhook": WebhookChannel(settings.webhook_secret_for, http=http),
            }
            dispatcher = Dispatcher(
                store,
                sinks,
                clock=SystemClock(),
                config=DispatcherConfig.from_settings(settings),
                observer=observe,
                scrubber=Scrubber.from_settings(settings),
            )
            runner = asyncio.create_task(dispatcher.serve(stop))
        else:
            env = {
                **os.environ,
                "HERALD_DATABASE_URL": settings.database_url,
                "HERALD_HTTP_PORT": "0",  # several dispatchers on one machine
                "HERALD_ADAPTERS": "none",
                "HERALD_WEBHOOK_ALLOW_PRIVATE": str(settings.webhook_allow_private).lower(),
            }
            for _ in range(dispatchers):
                children.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "bot.cli",
                        "run",
                        env=env,
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                )
        await asyncio.sleep(2.0 if children else 0.3)  # dispatchers up and idle
        if warm_up:
            # a running service is warm (SQL compiled, code paths loaded): measure that
            await _fill(store, warm_up, datetime.now(UTC), 0.0, destination)
            if dispatcher is not None:
                dispatcher.wake()
                while dispatcher.outcomes["delivered"] < warm_up:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            else:
                while (await store.job_counts()).get("delivered", 0) < warm_up:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            await store.prune_finished(before=datetime.now(UTC) + timedelta(days=1))
            warming = False
        if spread == 0:
            await _fill(store, jobs, PLACEHOLDER, 0.0, destination)
            t0 = datetime.now(UTC) + timedelta(seconds=lead)
            await move_waiting_jobs(store, t0, due_before=FAR)
        else:
            t0 = datetime.now(UTC) + timedelta(seconds=lead + jobs / 20_000)
            await _fill(store, jobs, t0, spread / jobs, destination)
        if dispatcher is not None:
            dispatcher.wake()
        started = time.perf_counter()
        cpu_started = _cpu_seconds()
        if dispatcher is not None:
            await done.wait()
        else:
            # the other processes' progress is only visible in the database; the figures
            # come from its timestamps, so asking seldom (a count costs the service CPU
            # on a small machine) only delays noticing the end
            while (await store.job_counts()).get("delivered", 0) < jobs:  # noqa: ASYNC110
                await asyncio.sleep(0.25)
            delivered = jobs
        finished = time.perf_counter()
        cpu = _cpu_seconds() - cpu_started
        if runner is not None:
            stop.set()
            await runner
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        for child in children:
            peak = max(peak, _child_hwm_mb(child.pid))
            if child.returncode is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            await asyncio.wait_for(child.wait(), timeout=60)
        pairs = await lateness_samples(store)
    finally:
        stack.close()
        await store.close()
    lateness = [(start - due).total_seconds() * 1000 for due, start in pairs]
    first_due = min((due for due, _ in pairs), default=None)
    first_try = min((start for _, start in pairs), default=None)
    last_try = max((start for _, start in pairs), default=None)
    busy = (last_try - first_due).total_seconds() if first_due and last_try else 0.0
    return {
        "jobs": jobs,
        "delivered": delivered,
        "drain_per_s": round(jobs / busy) if busy > 0 and spread == 0 else None,
        "first_lateness_ms": round((first_try - first_due).total_seconds() * 1000, 2)
        if first_due and first_try
        else None,
        "lateness_ms_p50": round(_percentile(lateness, 0.50), 2),
        "lateness_ms_p99": round(_percentile(lateness, 0.99), 2),
        "peak_rss_mb": round(peak, 1),
        "wall_s": round(finished - started, 3),
        # this process's CPU (all threads) per delivered job; in-process runs only
        "cpu_ms_per_job": round(cpu * 1000 / jobs, 3) if dispatcher is not None else None,
        "pending_ballast": pending,
        "dispatchers": dispatchers,
        "service": bool(children),
        "channel": channel,
        "db": settings.database_url.split(":")[0].split("+")[0],
        **({"lateness_samples_ms": lateness} if samples else {}),
    }


DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


def run_bench_dispatch(settings: Settings, args: Any) -> dict[str, Any]:
    """`herald bench dispatch`: a fresh SQLite file or PostgreSQL schema per run."""
    import secrets
    import tempfile

    from core import db

    if args.db == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            return _run(settings, url, args)
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(os.environ.get("HERALD_BENCH_PG_URL", DEFAULT_PG))
    dsn = base.set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        url = base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
            hide_password=False
        )
        db.upgrade(url)
        return _run(settings, url, args)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _run(settings: Settings, url: str, args: Any) -> dict[str, Any]:
    from bot.service import run

    cfg = settings.model_copy(update={"database_url": url})
    return run(  # on the service's event loop
        bench_dispatch(
            cfg,
            jobs=args.jobs,
            spread=args.spread,
            channel=args.channel,
            dispatchers=args.dispatchers,
            pending=args.pending,
            service=args.service,
        ),
        cfg,
    )
