"""The congestion forecast's cost per save (issue 41: "≤ 20 ms per save on a database of
100,000 active schedules").

``python -m bench.forecast [--schedules N] [--saves S] [--backends sqlite,postgres]``
builds, per backend, a database of N active one-off schedules (default 100,000), each
with its pending job, due over one day and spread over 5,000 destinations (Slack and
Discord channels and webhooks, 20 each), and a crowded Slack channel with 300 due at
09:00 (``create_schedules_bulk``, as ``herald bench`` and bench/archive.py fill theirs).
Then, in S rounds (default 200) each in turn:

- ``congestion_of`` of a schedule of the crowd (it says ≈ 5 min late) and of a
  schedule into a plain destination (it says nothing): the forecast itself, what a
  save adds to read what is planned there;
- ``duplicates_of`` the same two (the other check a save makes: it reads the
  schedules into the destination and compares their texts);
- ``create_schedule`` into the crowded channel (warned), into a plain channel (nothing
  said), and into a plain channel with the save's warnings left out
  (``save_warnings`` answering nothing): the whole save, and what the warnings
  (duplicates and congestion) add to it.

It prints one JSON object per backend: each figure's median and p95 in ms, and the
median of this process's CPU time (the wall time on a busy machine waits for a core). With
``--explain`` it first prints the query plans of the statements one forecast and one
duplicate check run (captured as they are sent; PostgreSQL's with ANALYZE). The creates
add their schedules, so the crowd grows by S over the run (the last creates forecast
S more). PostgreSQL is ``HERALD_BENCH_PG_URL`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``); each run makes a schema of its own
and drops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bot.cli.bench import schedule_rows
from core import db
from core.cases import Herald
from core.clock import ManualClock
from core.models import Schedule
from core.settings import load_settings
from core.store import ScheduleQuery, Store
from core.views import warnings_of

PG_URL = os.environ.get("HERALD_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SCHEDULES = 100_000
SAVES = 200
DESTINATIONS = 5_000
CROWD = 300
CROWDED = "slack:C0CROWDED"
#: The day the schedules are due (a Monday), and the crowded minute.
DAY = datetime(2027, 1, 4, tzinfo=UTC)
NINE = DAY + timedelta(hours=9)
#: The clock: the day before at noon, so "tomorrow at 9am" is the crowded minute.
NOW = DAY - timedelta(hours=12)
PART = 20_000
ACTOR = "local:bench"


def destination(i: int) -> str:
    """The i-th schedule's destination: one of 5,000, Slack, Discord and webhooks."""
    n = i % DESTINATIONS
    if n % 5 < 3:
        return f"slack:C{n:08d}"
    if n % 5 == 3:
        return f"discord:{900_000_000_000_000_000 + n}"
    return f"webhook:https://hooks.example.com/h/{n}"


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def _database(backend: str, tmp: str) -> AsyncIterator[str]:
    """A fresh database's URL: a SQLite file, or a PostgreSQL schema dropped after."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp}/forecast.db"
        return
    schema = f"bench_forecast_{secrets.token_hex(4)}"
    with psycopg.connect(_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    text = url.render_as_string(hide_password=False)
    await asyncio.to_thread(db.upgrade, text)
    try:
        yield text
    finally:
        with psycopg.connect(_conninfo(PG_URL), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


async def fill(store: Store, schedules: int) -> float:
    """``schedules`` one-offs over the day into 5,000 destinations, then the crowd of
    300 at 09:00; the seconds it took."""
    started = time.perf_counter()
    step = 86_400 / schedules
    for first in range(0, schedules, PART):
        count = min(PART, schedules - first)
        rows = schedule_rows(
            count,
            DAY + timedelta(seconds=first * step),
            step,
            lambda i, first=first: destination(first + i),  # type: ignore[misc]
            owner=ACTOR,
        )
        await _insert(store, rows)
    await _insert(store, schedule_rows(CROWD, NINE, 0.0, CROWDED, owner=ACTOR))
    if store.backend == "sqlite":
        await store.optimize()
    else:
        async with store._engine.begin() as conn:
            await conn.exec_driver_sql("ANALYZE")
    return time.perf_counter() - started


async def _insert(store: Store, rows: list[dict[str, Any]]) -> None:
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor=ACTOR, action="bench", now=NOW
    )


async def _schedules_into(store: Store, where: str, n: int) -> list[Schedule]:
    return await store.list_schedules(ScheduleQuery(destination=where, limit=n))


async def explain(
    store: Store, calls: dict[str, Callable[[], Awaitable[Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """The plans of the SELECTs each of ``calls`` sends (captured as they are sent)."""
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH", "(SELECT")):
            sent.append((statement, params))

    engine = store._engine.sync_engine
    plans: dict[str, list[dict[str, Any]]] = {}
    for name, call in calls.items():
        sent.clear()
        sa.event.listen(engine, "before_cursor_execute", capture)
        try:
            await call()
        finally:
            sa.event.remove(engine, "before_cursor_execute", capture)
        found = []
        for statement, params in list(sent):
            prefix = (
                "EXPLAIN QUERY PLAN "
                if store.backend == "sqlite"
                else "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
            )
            async with store._engine.connect() as conn:
                rows = await conn.exec_driver_sql(prefix + statement, params)
                plan = [" | ".join(str(v) for v in row) for row in rows]
            found.append({"sql": " ".join(statement.split())[:300], "plan": plan})
        plans[name] = found
    return plans


def _ms(values: list[tuple[float, float]]) -> dict[str, float]:
    """Median and p95 of the wall times, and the median of this process's CPU time
    (the database server's not counted): on a busy machine the wall time waits for a
    core, the CPU time does not."""
    ordered = sorted(wall for wall, _ in values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(p95, 2),
        "cpu_median_ms": round(statistics.median(cpu for _, cpu in values), 2),
    }


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[tuple[float, float], Any]:
    started, cpu = time.perf_counter(), time.process_time()
    out = await call()
    wall = (time.perf_counter() - started) * 1000
    return (wall, (time.process_time() - cpu) * 1000), out


async def measure(backend: str, schedules: int, saves: int, plans: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with _database(backend, tmp) as url:
            store = await Store.open(url)
            try:
                return await _measure(store, url, backend, schedules, saves, plans)
            finally:
                await store.close()


async def _measure(
    store: Store, url: str, backend: str, schedules: int, saves: int, plans: bool
) -> dict[str, Any]:
    filled = await fill(store, schedules)
    settings = load_settings(
        HERALD_DATABASE_URL=url, HERALD_DEFAULT_TZ="UTC", HERALD_ADMINS=ACTOR, _env_file=None
    )
    herald = Herald(store, settings, ManualClock(NOW))
    actor = await herald.actor(ACTOR)
    crowd = await _schedules_into(store, CROWDED, saves)
    plain = [
        s
        for s in await _schedules_into(store, destination(schedules // 2 + 1), saves)
        if s.next_run_at is not None
    ]
    figures: dict[str, list[tuple[float, float]]] = {
        "congestion_of, crowded": [],
        "congestion_of, plain": [],
        "duplicates_of, crowded": [],
        "duplicates_of, plain": [],
        "create, crowded (warned)": [],
        "create, plain": [],
        "create, plain, no warnings": [],
    }
    said = {"crowded": 0, "plain": 0}
    if plans:
        c, p = crowd[0], plain[0]
        found = await explain(
            store,
            {
                "congestion_of, crowded": lambda: herald.congestion_of(c, [c.destination]),
                "congestion_of, plain": lambda: herald.congestion_of(p, [p.destination]),
                "duplicates_of, plain": lambda: herald.duplicates_of(actor, p, [p.destination]),
            },
        )
        print(json.dumps({"backend": backend, "plans": found}, indent=1), flush=True)

    async def nothing(*args: Any, **kwargs: Any) -> list[Any]:
        return []

    async def create(to: str, text: str) -> Schedule:
        s, _ = await herald.create_schedule(ACTOR, to=to, when="tomorrow at 9am", text=text)
        return s

    for i in range(saves):
        c, p = crowd[i % len(crowd)], plain[i % len(plain)]
        ms, out = await _timed(lambda c=c: herald.congestion_of(c, [c.destination]))
        figures["congestion_of, crowded"].append(ms)
        said["crowded"] += bool(out)
        ms, out = await _timed(lambda p=p: herald.congestion_of(p, [p.destination]))
        figures["congestion_of, plain"].append(ms)
        said["plain"] += bool(out)
        ms, _ = await _timed(lambda c=c: herald.duplicates_of(actor, c, [c.destination]))
        figures["duplicates_of, crowded"].append(ms)
        ms, _ = await _timed(lambda p=p: herald.duplicates_of(actor, p, [p.destination]))
        figures["duplicates_of, plain"].append(ms)
        ms, s = await _timed(lambda i=i: create(CROWDED, f"crowded {i}"))
        figures["create, crowded (warned)"].append(ms)
        assert [w.kind for w in warnings_of(s)] == ["congestion"], warnings_of(s)
        ms, s = await _timed(lambda i=i: create(destination(i * 7), f"plain {i}"))
        figures["create, plain"].append(ms)
        assert warnings_of(s) == [], warnings_of(s)
        herald.save_warnings = nothing  # type: ignore[method-assign]
        try:
            ms, s = await _timed(lambda i=i: create(destination(i * 7 + 1), f"bare {i}"))
        finally:
            del herald.save_warnings
        figures["create, plain, no warnings"].append(ms)
    return {
        "backend": backend,
        "schedules": schedules + CROWD,
        "fill_s": round(filled, 1),
        "saves": saves,
        "forecasts said late": said,
        **{name: _ms(values) for name, values in figures.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.forecast", description=__doc__)
    parser.add_argument("--schedules", type=int, default=SCHEDULES)
    parser.add_argument("--saves", type=int, default=SAVES)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--explain", action="store_true", help="print the query plans first")
    args = parser.parse_args(argv)
    for backend in args.backends.split(","):
        found = asyncio.run(measure(backend.strip(), args.schedules, args.saves, args.explain))
        print(json.dumps(found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
