"""Herald against the two set-ups people usually build by hand, on the same machine,
the same work and the same SQLite: one run, figures as medians and ratios.

- Peer A: APScheduler 3 alone, one date-trigger job per message in a
  ``SQLAlchemyJobStore`` on SQLite (what most Python tutorials suggest).
- Peer B: the tutorial polling loop: ``SELECT`` due rows, send each, mark it sent,
  sleep 10 s.

Beside them, in interleaved rounds (``bench/rounds.py``), the two stacks architecture
guides recommend for this job, each in its own runtime and service: Node.js + BullMQ on
Redis (``bench/bullmq_peer.py``) and Python + Celery on RabbitMQ
(``bench/celery_peer.py``); each is skipped, with the reason in the table, when its
runtime or service is missing here. The webhook rows also show the bare HTTP clients'
ceiling (aiohttp, httpx, and Node's fetch for BullMQ).

Workloads: a 10,000-message burst due at one instant; 300 messages staggered over
10 s; ingest of schedules; 2,000 webhooks due at one instant. The null channel (no I/O)
isolates the scheduler's cost. Writes ``bench/RESULTS.md`` and ``bench/staggered.png``.

``python -m bench.peers SYSTEM WORKLOAD`` runs one system on one workload and prints its
figures as JSON (``{"skipped": reason}`` for a peer that cannot run here).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.services import PeerError, one_line

HERE = Path(__file__).resolve().parent
BURST = 10_000
STAGGERED = 300
STAGGER_SECONDS = 10.0
INGEST = 100_000
PEER_A_INGEST = 5_000
WEBHOOK_BURST = 2_000  # APScheduler adds one job per INSERT+commit: measured on fewer


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


# --- Peer A: APScheduler with SQLAlchemyJobStore ------------------------------------------

STARTS: dict[int, float] = {}
#: Where deliveries go in the webhook variant (None: the null channel).
TARGET: str | None = None


def _post(i: int) -> None:
    import httpx

    if TARGET is not None:
        httpx.post(f"{TARGET}/h/{i % 200}", json={"i": i}, timeout=30)


def _peer_a_send(i: int, due: float) -> None:
    STARTS[i] = time.time() - due
    _post(i)


async def peer_a(n: int, spread: float, db: Path) -> dict[str, Any]:
    import logging

    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # one line per missed job
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    STARTS.clear()
    scheduler = AsyncIOScheduler(jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{db}")})
    scheduler.start(paused=True)
    # add_job writes one row and commits each time (~150-200/s here): start the clock
    # only after every job is in, so ingest time is not counted as lateness
    lead = 5.0 + n / 120
    t0 = time.time() + lead
    for i in range(n):
        due = t0 + (spread * i / n if spread else 0)
        scheduler.add_job(
            _peer_a_send,
            "date",
            run_date=datetime.fromtimestamp(due, UTC),
            args=[i, due],
            id=str(i),
        )
    scheduler.resume()
    deadline = t0 + spread + 60
    while len(STARTS) < n and time.time() < deadline:
        if not scheduler.get_jobs() and time.time() > t0 + spread + 2:
            break  # nothing left to run: the rest were dropped
        await asyncio.sleep(0.05)
    scheduler.shutdown(wait=True)
    late = [v * 1000 for v in STARTS.values()]
    return _summary(n, late, spread)


async def peer_a_ingest(n: int, db: Path) -> float:
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    scheduler = AsyncIOScheduler(jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{db}")})
    scheduler.start(paused=True)
    due = datetime.now(UTC) + timedelta(days=1)
    start = time.perf_counter()
    for i in range(n):
        scheduler.add_job(_peer_a_send, "date", run_date=due, args=[i, 0.0], id=str(i))
    rate = n / (time.perf_counter() - start)
    scheduler.shutdown(wait=False)
    return rate


# --- Peer B: the polling loop --------------------------------------------------------------


def _peer_b_fill(db: Path, n: int, t0: float, spread: float) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, due REAL, sent INT)")
    conn.executemany(
        "INSERT INTO message (due, sent) VALUES (?, 0)",
        [(t0 + (spread * i / n if spread else 0),) for i in range(n)],
    )
    conn.commit()
    conn.close()


def peer_b(n: int, spread: float, db: Path, poll: float = 10.0) -> dict[str, Any]:
    t0 = time.time() + 1.0
    _peer_b_fill(db, n, t0, spread)
    conn = sqlite3.connect(db)
    late: list[float] = []
    deadline = t0 + spread + poll + 30
    while len(late) < n and time.time() < deadline:
        now = time.time()
        rows = conn.execute("SELECT id, due FROM message WHERE sent = 0 AND due <= ?", (now,))
        for row_id, due in rows.fetchall():
            late.append((time.time() - due) * 1000)
            _post(row_id)
            conn.execute("UPDATE message SET sent = 1 WHERE id = ?", (row_id,))
            conn.commit()
        if len(late) < n:
            time.sleep(poll)
    conn.close()
    return _summary(n, late, spread)


def peer_b_ingest(n: int, db: Path) -> float:
    start = time.perf_counter()
    _peer_b_fill(db, n, time.time() + 86400, 0)
    return n / (time.perf_counter() - start)


# --- the bare HTTP clients: the ceiling of the webhook burst ------------------------------

BARE_IN_FLIGHT = 64  # as HERALD_CONCURRENCY


async def bare_client(kind: str, n: int) -> dict[str, Any]:
    """``n`` POSTs due at one instant over the same URLs as Herald's, 64 in flight, with
    nothing but the client (aiohttp or httpx): no queue, no database, no signing."""
    assert TARGET is not None
    from bot.cli.bench import WEBHOOK_URLS

    late: list[float] = []
    todo = iter(range(n))
    if kind == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=BARE_IN_FLIGHT, limit_per_host=0)
        )

        async def post(i: int) -> None:
            async with session.post(f"{TARGET}/h/{i % WEBHOOK_URLS}", json={"i": i}) as answer:
                await answer.read()

        close = session.close
    else:
        import httpx

        client = httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=BARE_IN_FLIGHT, max_keepalive_connections=BARE_IN_FLIGHT
            ),
            timeout=30,
        )

        async def post(i: int) -> None:
            await client.post(f"{TARGET}/h/{i % WEBHOOK_URLS}", json={"i": i})

        close = client.aclose

    async def worker(due: float) -> None:
        for i in todo:
            late.append((time.time() - due) * 1000)
            await post(i)

    try:
        due = time.time() + 0.5
        await asyncio.sleep(0.5)
        cpu = _cpu_seconds()
        await asyncio.gather(*(worker(due) for _ in range(BARE_IN_FLIGHT)))
        cpu = _cpu_seconds() - cpu
    finally:
        await close()
    return {**_summary(n, late, 0.0), "cpu_ms_per_msg": round(cpu * 1000 / n, 3)}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- Herald ---------------------------------------------------------------------------------


async def herald_dispatch(
    n: int, spread: float, db: Path, *, service: bool = False
) -> dict[str, Any]:
    """Herald's dispatcher with the service's logging: in this process, or (``service``)
    as a ``herald run`` process."""
    from bot.cli.bench import bench_dispatch
    from core.settings import load_settings

    settings = load_settings(
        HERALD_DATABASE_URL=f"sqlite:///{db}", HERALD_WEBHOOK_ALLOW_PRIVATE="true", _env_file=None
    )
    data = await bench_dispatch(
        settings,
        jobs=n,
        spread=spread,
        channel="null" if TARGET is None else f"webhook:{TARGET}",
        dispatchers=1,
        pending=0,
        samples=True,
        service=service,
    )
    return {
        **_summary(n, data["lateness_samples_ms"], spread),
        "cpu_ms_per_msg": data["cpu_ms_per_job"],
    }


async def herald_ingest(n: int) -> float:
    from bench.import_bench import _bulk, _lines

    with tempfile.TemporaryDirectory() as tmp:
        return await _bulk(Path(tmp) / "h.db", _lines(n))


def _summary(n: int, late_ms: list[float], spread: float) -> dict[str, Any]:
    late_ms = sorted(late_ms)
    busy = (late_ms[-1] / 1000) if late_ms and not spread else None
    return {
        "sent": len(late_ms),
        "dropped": n - len(late_ms),
        "drain_per_s": round(len(late_ms) / busy) if busy else None,
        "first_ms": round(late_ms[0], 1) if late_ms else None,
        "p50_ms": round(pct(late_ms, 0.5), 1),
        "p99_ms": round(pct(late_ms, 0.99), 1),
        "last_ms": round(late_ms[-1], 1) if late_ms else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "samples": late_ms,
    }


# --- the queue peers, each in its own runtime ----------------------------------------------

#: The peers run by another runtime or against another service: skipped, with a reason,
#: where that is missing, and never failing the benchmark.
QUEUE_PEERS = ("bullmq", "celery", "bare fetch")


def peer_missing(system: str) -> str | None:
    """Why a queue peer cannot run on this machine (one line), or None (also for the
    systems that always can). May install the BullMQ peer's packages (``npm ci``)."""
    from bench import bullmq_peer, celery_peer

    if system == "bullmq":
        return bullmq_peer.missing()
    if system == "bare fetch":
        return bullmq_peer.missing(redis=False)
    if system == "celery":
        return celery_peer.missing()
    return None


def queue_peer(system: str, n: int, spread: float) -> dict[str, Any]:
    """One queue peer on ``n`` messages, its report summarised as the Python peers'
    are. ``{"skipped": reason}`` when it cannot run here, ``{"error": reason}`` when it
    failed while running."""
    from bench import bullmq_peer, celery_peer

    if reason := peer_missing(system):
        return {"skipped": reason}
    try:
        if system == "bullmq":
            report = bullmq_peer.run(n, spread, TARGET)
        elif system == "celery":
            report = celery_peer.run(n, spread, TARGET)
        elif TARGET is None:
            return {"skipped": "the bare client only sends webhooks"}
        else:
            report = bullmq_peer.run_bare(n, TARGET)
    except PeerError as error:
        return {"error": str(error)}
    summary = _summary(n, report["samples"], spread)
    summary["dropped"] += report.get("failed", 0)  # a failed POST was not delivered
    summary["peak_rss_mb"] = report.get("peak_rss_mb")  # the peer's process, not this one
    for key in ("last_finish_ms", "added_late_ms", "pool", "add_ms"):
        if key in report:
            summary[key] = report[key]
    return summary


# --- orchestration ---------------------------------------------------------------------------


def scale() -> float:
    """``HERALD_BENCH_SCALE`` (default 1): the dispatch workloads' sizes are multiplied by
    it, for a quick check of the harness (0.05: bursts of 500 and 100 webhooks)."""
    return float(os.environ.get("HERALD_BENCH_SCALE", "1"))


def scaled(n: int) -> int:
    return max(1, round(n * scale()))


SYSTEMS = ("herald", "apscheduler", "polling")


async def _one(system: str, workload: str) -> dict[str, Any]:
    global TARGET
    if workload.startswith("webhook-"):
        TARGET = os.environ["HERALD_BENCH_TARGET"]
        workload = workload.removeprefix("webhook-")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        if workload == "fanout":  # bench/fanout.py
            from bench import fanout

            if system == "bullmq":
                return fanout.bullmq_fanout()
            return await fanout.herald_fanout(db, service=system == "herald run")
        if workload == "ingest":
            if system == "herald":
                rate = await herald_ingest(INGEST)
            elif system == "apscheduler":
                rate = await peer_a_ingest(PEER_A_INGEST, db)
            else:
                rate = peer_b_ingest(INGEST, db)
            return {"ingest_per_s": round(rate)}
        n, spread = (BURST, 0.0) if workload == "burst" else (STAGGERED, STAGGER_SECONDS)
        if TARGET is not None:
            n = WEBHOOK_BURST
        n = scaled(n)
        if system in QUEUE_PEERS:
            return queue_peer(system, n, spread)
        if system in ("herald", "herald run"):
            return await herald_dispatch(n, spread, db, service=system == "herald run")
        if system.startswith("bare "):
            return await bare_client(system.removeprefix("bare ").removesuffix(" uvloop"), n)
        if system == "apscheduler":
            return await peer_a(n, spread, db)
        return peer_b(n, spread, db)


def run_one(system: str, workload: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One system on one workload, in a fresh process (fair memory figures). A queue
    peer that fails gives ``{"error": reason}``; Herald and the SQLite peers raise."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.peers", system, workload],
        capture_output=True,
        text=True,
        check=system not in QUEUE_PEERS,
        cwd=HERE.parent,
        env={**os.environ, **(env or {})},
    )
    if out.returncode:
        return {"error": one_line(out.stderr)}
    return dict(json.loads(out.stdout.splitlines()[-1]))


@contextlib.contextmanager
def _receiver() -> Any:
    """A webhook receiver in its own process (``bench/receiver.py``) on a free port."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "bench.receiver", str(port)], cwd=HERE.parent)
    try:
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _ratio(a: float | None, b: float | None, higher_is_better: bool = True) -> str:
    if not a or not b:
        return "–"
    return f"{(a / b if higher_is_better else b / a):,.1f}×"


def main() -> int:
    results = {(s, w): run_one(s, w) for w in ("burst", "staggered", "ingest") for s in SYSTEMS}
    with _receiver() as target:
        for s in SYSTEMS:
            results[(s, "webhook burst")] = run_one(
                s, "webhook-burst", {"HERALD_BENCH_TARGET": target}
            )
    rows = [
        "| workload | figure | Herald | APScheduler + SQLAlchemyJobStore | polling loop (10 s) "
        "| Herald vs APScheduler | Herald vs polling |",
        "|---|---|---|---|---|---|---|",
    ]

    def line(workload: str, label: str, key: str, higher: bool, unit: str = "") -> None:
        h, a, b = (results[(s, workload)].get(key) for s in SYSTEMS)
        cells = [f"{v:,}{unit}" if isinstance(v, (int, float)) else "–" for v in (h, a, b)]
        rows.append(
            f"| {workload} | {label} | "
            + " | ".join(cells)
            + f" | {_ratio(h, a, higher)} | {_ratio(h, b, higher)} |"
        )

    line("burst", "drain rate (msg/s)", "drain_per_s", True)
    line("burst", "first message late (ms)", "first_ms", False)
    line("burst", "median message late (ms)", "p50_ms", False)
    line("burst", "last message late (ms)", "last_ms", False)
    line("burst", "messages dropped", "dropped", False)
    line("burst", "peak memory (MB)", "peak_rss_mb", False)
    line("staggered", "lateness p50 (ms)", "p50_ms", False)
    line("staggered", "lateness p99 (ms)", "p99_ms", False)
    line("staggered", "messages dropped", "dropped", False)
    line("ingest", "schedules/s", "ingest_per_s", True)
    line("webhook burst", "drain rate (msg/s)", "drain_per_s", True)
    line("webhook burst", "median message late (ms)", "p50_ms", False)
    line("webhook burst", "last message late (ms)", "last_ms", False)
    line("webhook burst", "messages dropped", "dropped", False)
    table = "\n".join(rows)
    from bench.rounds import rounds_table

    table += "\n\n" + rounds_table()
    from bench.fanout import fanout_table

    table += "\n\n" + fanout_table()
    note = (
        (
            f"\n\nScaled by {scale():g} (`HERALD_BENCH_SCALE`): not the figures."
            if scale() != 1
            else ""
        )
        + f"\n\nOne run on this machine (`make bench`): burst = {BURST:,} messages due at one "
        f"instant; staggered = {STAGGERED} messages over {STAGGER_SECONDS:g} s; ingest = "
        f"{INGEST:,} schedules (APScheduler measured on {PEER_A_INGEST:,}, one INSERT and "
        "commit per job). Null channel, SQLite, lateness = start of send minus due time. "
        "APScheduler drops jobs later than its 1 s misfire grace time. The webhook burst "
        f"sends {WEBHOOK_BURST:,} messages to a local receiver in its own process (200 URLs; "
        "APScheduler's thread pool and the polling loop post with httpx).\n"
    )
    print(table + note)
    written = "# Benchmark results\n\n" + table + note
    (HERE / "RESULTS.md").write_text(written + kept_sections(HERE / "RESULTS.md", written))
    _plot(results)
    return 0


def kept_sections(path: Path, written: str) -> str:
    """The sections of the results file that this run does not write (the A/B runs,
    priorities, event hooks, archive: measured by their own commands, each saying which),
    kept as they were, after the ones it wrote."""
    if not path.exists():
        return ""
    ours = {line for line in written.splitlines() if line.startswith("## ")}
    kept, keep = [], False
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("## "):
            keep = line.rstrip("\n") not in ours
        if keep:
            kept.append(line)
    return ("\n" + "".join(kept)) if kept else ""


def _plot(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[bench]')")
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for system in SYSTEMS:
        samples = sorted(results[(system, "staggered")].get("samples", []))
        if samples:
            ax.plot([100 * i / len(samples) for i in range(len(samples))], samples, label=system)
    ax.set_yscale("log")
    ax.set_xlabel("percentile of messages")
    ax.set_ylabel("lateness (ms, log scale)")
    ax.set_title(f"{STAGGERED} messages staggered over {STAGGER_SECONDS:g} s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "staggered.png", dpi=110)


if __name__ == "__main__":
    if sys.argv[1:2] == ["rounds"]:  # only the interleaved rounds (a quicker check)
        from bench.rounds import ROUNDS, rounds_table

        print(rounds_table(int(sys.argv[2]) if len(sys.argv) > 2 else ROUNDS))
    elif len(sys.argv) == 3:
        system = sys.argv[1]
        factory = None
        if system.startswith("herald") or system.endswith(" uvloop"):
            # Herald on the loop `herald run` takes (HERALD_EVENT_LOOP; uvloop here), and
            # the bare client's ceiling measured on that loop too
            from bot.service import loop_factory
            from core.settings import load_settings

            factory = loop_factory(load_settings(_env_file=None).event_loop)
        with asyncio.Runner(loop_factory=factory) as runner:
            print(json.dumps(runner.run(_one(system, sys.argv[2]))))
    else:
        sys.exit(main())
