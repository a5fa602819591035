"""Archive, then prune (issue 38): do a million finished jobs slow the queue down, and
does archiving them give it back its speed?

``python -m bench.archive [--jobs N] [--rounds R] [--backends sqlite,postgres]`` builds,
per backend, three databases of the same 1,000 schedules: (c) a baseline with no
finished jobs, (a) with N finished jobs (one attempt each) in the active tables, (b)
the same after ``archive_finished`` moved them to the archive (its rate is printed).
Then, in interleaved rounds (each round measures every database, in rotated order), it
times the claim (``claim_due`` of 500 due jobs, four batches a round, inserted just
before and deleted after) and the lists (``list_schedules`` as the CLI and the API list
them, and ``schedule_jobs`` of a schedule that has N/1,000 finished jobs), and prints
the medians and the ratios b/c and a/c as JSON lines.

``python -m bench.archive partition [--jobs N]`` measures, in a scratch PostgreSQL
schema, a job-like table partitioned by month of ``finished_at`` (archiving a month is
DETACH PARTITION) against a plain one (archiving is copy-and-delete in batches of
5,000): the time to archive a month of N rows, and the claim and finish latencies on
the live table before and after.

PostgreSQL is ``HERALD_BENCH_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/
postgres``); each run makes schemas of its own and drops them."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bot.cli.bench import _fill
from core import db
from core.store import ScheduleQuery, Store

PG_URL = os.environ.get("HERALD_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SCHEDULES = 1_000
CLAIM = 500
CLAIM_BATCHES = 4
LIST_CALLS = 5
#: When the finished jobs finished: long past any retention.
PAST = datetime(2026, 1, 1, tzinfo=UTC)
#: Vacuum PostgreSQL's databases after their setup (``--no-vacuum``: only ANALYZE).
VACUUM = True


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def _database(backend: str, tmp: str, name: str) -> AsyncIterator[Store]:
    """A fresh Store: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if backend == "sqlite":
        store = await Store.open(f"sqlite:///{tmp}/{name}.db")
        try:
            yield store
        finally:
            await store.close()
        return
    schema = f"bench_archive_{name}_{secrets.token_hex(4)}"
    with psycopg.connect(_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    await asyncio.to_thread(db.upgrade, url.render_as_string(hide_password=False))
    store = await Store.open(url.render_as_string(hide_password=False))
    try:
        yield store
    finally:
        await store.close()
        with psycopg.connect(_conninfo(PG_URL), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _series(backend: str, n: int) -> str:
    """A set-based source of rows g = 1..n."""
    if backend == "sqlite":
        return (
            f"(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {n}) "
            "SELECT g FROM s)"
        )
    return f"(SELECT g FROM generate_series(1, {n}) AS g)"


def _at(backend: str, base: datetime, seconds: str) -> str:
    """The moment ``seconds`` (an SQL expression) after ``base``, as the column stores it."""
    if backend == "sqlite":
        start = base.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        moved = f"strftime('%Y-%m-%d %H:%M:%S', '{start}', '+' || ({seconds}) || ' seconds')"
        return f"({moved} || '.000000')"
    return f"(TIMESTAMPTZ '{base.isoformat()}' + ({seconds}) * INTERVAL '1 second')"


def _keyed(key: str) -> str:
    """The jobs whose idempotency key is ``key-<n>`` (a range: no LIKE pattern)."""
    return f"idempotency_key > '{key}-' AND idempotency_key < '{key}.'"


async def _jobs(store: Store, n: int, *, state: str, base: datetime, key: str, first: int) -> None:
    """``n`` jobs of the 1,000 schedules from id ``first`` on, spread over them, due
    from ``base`` a second apart; finished ones with an attempt each."""
    b = store.backend
    at = _at(b, base, "g")
    finished = at if state != "pending" else "NULL"
    async with store._engine.begin() as conn:
        await conn.exec_driver_sql(
            "INSERT INTO job (schedule_id, recipient, occurrence_at, due_at, step, state, "
            "priority, attempts, idempotency_key, created_at, updated_at, finished_at) "
            f"SELECT {first} + mod(g, {SCHEDULES}), 0, {at}, {at}, 0, '{state}', 1, "
            f"{int(state != 'pending')}, '{key}-' || g, {at}, {at}, {finished} "
            f"FROM {_series(b, n)} AS series"
        )
        if state != "pending":
            await conn.exec_driver_sql(
                "INSERT INTO attempt (job_id, started_at, finished_at, outcome, worker, "
                "delayed) SELECT id, finished_at, finished_at, 'ok', 'bench', "
                f"{'0' if b == 'sqlite' else 'false'} FROM job WHERE {_keyed(key)}"
            )


async def _setup(store: Store, finished: int, *, archive: bool) -> dict[str, Any]:
    """The 1,000 schedules, and ``finished`` finished jobs (archived with ``archive``)."""
    await _fill(store, SCHEDULES, datetime.now(UTC) + timedelta(days=30), 60.0, "null:")
    async with store._engine.connect() as conn:
        first = (await conn.execute(sa.text("SELECT min(id) FROM schedule"))).scalar_one()
    out: dict[str, Any] = {"first": first}
    if finished:
        t = time.perf_counter()
        await _jobs(store, finished, state="delivered", base=PAST, key="done", first=first)
        out["fill_s"] = round(time.perf_counter() - t, 1)
    if archive:
        t = time.perf_counter()
        moved = await store.archive_finished(before=PAST + timedelta(days=365))
        took = time.perf_counter() - t
        rows = moved["jobs"] + moved["attempts"]
        out |= {
            "archive_s": round(took, 1),
            "archived_rows": rows,
            "rows_per_s": round(rows / took),
        }
    await _analyze(store)
    return out


async def _analyze(store: Store) -> None:
    """The planner's statistics; on PostgreSQL a VACUUM too, as autovacuum does after a
    bulk delete (without it the first minutes after archiving walk a million dead
    tuples: with ``--no-vacuum``, measured as such)."""
    if store.backend == "sqlite" or not VACUUM:
        async with store._engine.begin() as conn:
            await conn.exec_driver_sql("ANALYZE")
        return
    async with store._engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await auto.exec_driver_sql("VACUUM ANALYZE")


async def _timed(call: Callable[[], Awaitable[Any]]) -> float:
    t = time.perf_counter()
    await call()
    return (time.perf_counter() - t) * 1000


async def _round(store: Store, first: int, r: int) -> dict[str, list[float]]:
    """One round on one database: claim batches, and the two lists, in ms."""
    now = datetime.now(UTC)
    key = f"due{r + 1}"
    await _jobs(
        store,
        CLAIM * CLAIM_BATCHES,
        state="pending",
        base=now - timedelta(days=1),
        key=key,
        first=first,
    )
    lease = now + timedelta(minutes=5)

    def claim() -> Awaitable[Any]:
        return store.claim_due(now=now, worker="bench", lease_until=lease, limit=CLAIM)

    claims = [await _timed(claim) for _ in range(CLAIM_BATCHES)]
    async with store._engine.begin() as conn:
        await conn.exec_driver_sql(f"DELETE FROM job WHERE {_keyed(key)}")
    query = ScheduleQuery(tenant="local", limit=200)
    lists = [await _timed(lambda: store.list_schedules(query)) for _ in range(LIST_CALLS)]
    jobs = [await _timed(lambda: store.schedule_jobs(first + 1, 50)) for _ in range(LIST_CALLS)]
    return {"claim_ms": claims, "list_ms": lists, "schedule_jobs_ms": jobs}


async def compare(backend: str, finished: int, rounds: int) -> dict[str, Any]:
    """The three databases of one backend, measured in interleaved rounds."""
    names = ("baseline", "active", "archived")
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            _database(backend, tmp, "c") as c,
            _database(backend, tmp, "a") as a,
            _database(backend, tmp, "b") as b,
        ):
            stores = dict(zip(names, (c, a, b), strict=True))
            setup = {
                "baseline": await _setup(c, 0, archive=False),
                "active": await _setup(a, finished, archive=False),
                "archived": await _setup(b, finished, archive=True),
            }
            for name in names:  # a first round compiles statements and warms caches
                await _round(stores[name], setup[name]["first"], -1)
            samples: dict[str, dict[str, list[float]]] = {n: {} for n in names}
            for r in range(rounds):
                order = names[r % 3 :] + names[: r % 3]
                for name in order:
                    got = await _round(stores[name], setup[name]["first"], r)
                    for k, v in got.items():
                        samples[name].setdefault(k, []).extend(v)
    medians = {n: {k: round(statistics.median(v), 3) for k, v in samples[n].items()} for n in names}
    ratios = {
        f"{which}/baseline": {
            k: round(medians[which][k] / medians["baseline"][k], 3) for k in medians["baseline"]
        }
        for which in ("archived", "active")
    }
    return {
        "backend": backend,
        "finished_jobs": finished,
        "rounds": rounds,
        "vacuumed": VACUUM and backend != "sqlite",
        "setup": {n: {k: v for k, v in s.items() if k != "first"} for n, s in setup.items()},
        "medians": medians,
        "ratios": ratios,
    }


# --- PostgreSQL: declarative partitioning by month against copy-and-delete -----------

_COLUMNS = (
    "id bigint NOT NULL, schedule_id int NOT NULL, state varchar(16) NOT NULL, "
    "due_at timestamptz NOT NULL, finished_at timestamptz, idempotency_key varchar(64) "
    "NOT NULL, body text"
)
_WAITING = "state IN ('pending', 'retrying')"


def _partition_ddl(months: list[datetime]) -> list[str]:
    parts = [
        f"CREATE TABLE jobp ({_COLUMNS}) PARTITION BY RANGE (finished_at)",
        # live jobs have no finished_at: they live in the default partition
        "CREATE TABLE jobp_live PARTITION OF jobp DEFAULT",
        # a unique index must hold the partition key: the key is unique per month only,
        # and no primary key (finished_at is null until the end): id is found through a
        # unique (id, finished_at), which no foreign key (attempt.job_id) can reference
        "CREATE UNIQUE INDEX ON jobp (idempotency_key, finished_at)",
        "CREATE UNIQUE INDEX ON jobp (id, finished_at)",
        f"CREATE INDEX ON jobp (due_at, id) WHERE {_WAITING}",
        "CREATE INDEX ON jobp (state, finished_at)",
        "CREATE SEQUENCE jobp_id",
    ]
    for start, end in zip(months, months[1:], strict=False):
        parts.append(
            f"CREATE TABLE jobp_{start:%Y_%m} PARTITION OF jobp "
            f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
        )
    return parts


def _plain_ddl() -> list[str]:
    return [
        f"CREATE TABLE jobc ({_COLUMNS}, PRIMARY KEY (id))",
        "CREATE UNIQUE INDEX ON jobc (idempotency_key)",
        f"CREATE INDEX ON jobc (due_at, id) WHERE {_WAITING}",
        "CREATE INDEX ON jobc (state, finished_at)",
        f"CREATE TABLE jobc_archive ({_COLUMNS}, PRIMARY KEY (id))",
        "CREATE SEQUENCE jobc_id",
    ]


def _fill_rows(table: str, n: int, month: datetime) -> str:
    """``n`` delivered rows finished within ``month``, ``n // 100`` pending ones due."""
    return (
        f"INSERT INTO {table} SELECT nextval('{table}_id'), g % 1000, 'delivered', "
        f"TIMESTAMPTZ '{month.isoformat()}' + g * INTERVAL '2 seconds', "
        f"TIMESTAMPTZ '{month.isoformat()}' + g * INTERVAL '2 seconds', 'k' || g, "
        f"repeat('x', 200) FROM generate_series(1, {n}) AS g; "
        f"INSERT INTO {table} SELECT nextval('{table}_id'), g % 1000, 'pending', "
        f"now() - INTERVAL '1 hour', NULL, 'w' || g, repeat('x', 200) "
        f"FROM generate_series(1, {max(n // 100, CLAIM * 4)}) AS g"
    )


def _claim_and_finish(conn: psycopg.Connection[Any], table: str) -> tuple[float, float]:
    """A claim of 500 due jobs (the store's shape: locked in due order, skipped when
    held) and their finish (delivered now: on the partitioned table a move out of the
    default partition), rolled back so every sample sees the same table; in ms."""
    with conn.transaction(force_rollback=True):
        t = time.perf_counter()
        ids = conn.execute(
            f"UPDATE {table} SET state = 'claimed' WHERE id IN (SELECT id FROM {table} "
            f"WHERE {_WAITING} AND due_at <= now() ORDER BY due_at, id LIMIT {CLAIM} "
            "FOR UPDATE SKIP LOCKED) RETURNING id"
        ).fetchall()
        claimed = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        conn.execute(
            f"UPDATE {table} SET state = 'delivered', finished_at = now() WHERE id = ANY(%s)",
            ([i for (i,) in ids],),
        )
        finished = (time.perf_counter() - t) * 1000
    return claimed, finished


def _latencies(conn: psycopg.Connection[Any], table: str, samples: int = 15) -> dict[str, float]:
    got = [_claim_and_finish(conn, table) for _ in range(samples)]
    return {
        "claim_ms": round(statistics.median(c for c, _ in got), 2),
        "finish_ms": round(statistics.median(f for _, f in got), 2),
    }


def partition(n: int) -> dict[str, Any]:
    """Partitioned by month against copy-and-delete, in a scratch schema."""
    schema = f"bench_partition_{secrets.token_hex(4)}"
    month = datetime(2026, 10, 1, tzinfo=UTC)
    months = [datetime(2026, m, 1, tzinfo=UTC) for m in range(9, 13)] + [
        datetime(2027, 1, 1, tzinfo=UTC)
    ]
    out: dict[str, Any] = {"rows": n}
    with psycopg.connect(_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path = "{schema}"')
        try:
            for ddl in [*_partition_ddl(months), *_plain_ddl()]:
                conn.execute(ddl)
            for table in ("jobp", "jobc"):
                t = time.perf_counter()
                conn.execute(_fill_rows(table, n, month))
                out[f"{table}_fill_s"] = round(time.perf_counter() - t, 1)
                conn.execute(f"ANALYZE {table}")
            out["partitioned_before"] = _latencies(conn, "jobp")
            out["plain_before"] = _latencies(conn, "jobc")
            t = time.perf_counter()
            conn.execute(f"ALTER TABLE jobp DETACH PARTITION jobp_{month:%Y_%m}")
            out["detach_s"] = round(time.perf_counter() - t, 3)
            t = time.perf_counter()
            moved, cols = 0, "id, schedule_id, state, due_at, finished_at, idempotency_key, body"
            end = months[months.index(month) + 1]
            while True:
                with conn.transaction():
                    batch = conn.execute(
                        "WITH chosen AS (SELECT id FROM jobc WHERE state = 'delivered' AND "
                        "finished_at >= %s AND finished_at < %s LIMIT 5000 FOR UPDATE SKIP "
                        f"LOCKED), copied AS (INSERT INTO jobc_archive SELECT {cols} FROM jobc "
                        "WHERE id IN (SELECT id FROM chosen)) DELETE FROM jobc WHERE id IN "
                        "(SELECT id FROM chosen)",
                        (month, end),
                    ).rowcount
                moved += batch
                if batch < 5000:
                    break
            out["copy_delete_s"] = round(time.perf_counter() - t, 1)
            out["copy_delete_rows_per_s"] = round(moved / (time.perf_counter() - t))
            conn.execute("VACUUM ANALYZE jobc")
            conn.execute("ANALYZE jobp")
            out["partitioned_after"] = _latencies(conn, "jobp")
            out["plain_after"] = _latencies(conn, "jobc")
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.archive", description=__doc__)
    parser.add_argument("what", nargs="?", choices=("compare", "partition"), default="compare")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--no-vacuum", action="store_true", help="PostgreSQL: ANALYZE only")
    a = parser.parse_args()
    global VACUUM
    VACUUM = not a.no_vacuum
    if a.what == "partition":
        print(json.dumps(partition(a.jobs)), flush=True)  # noqa: T201
        return
    for backend in a.backends.split(","):
        print(json.dumps(asyncio.run(compare(backend, a.jobs, a.rounds))), flush=True)  # noqa: T201


if __name__ == "__main__":
    main()
