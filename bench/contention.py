"""SQLite under contention: people scheduling while the dispatcher drains a burst.

``python -m bench.contention [--jobs 10000] [--calls 20] [--channel webhook|null]
[--via db|api]``

Starts ``herald run`` on a fresh SQLite file (a local webhook receiver for the
``webhook`` channel), puts ``--jobs`` one-off messages due at one instant into the
queue, and while the dispatcher drains them starts ``--calls`` concurrent
``herald schedule`` commands. Prints, as JSON, how long each call took (from its
start to its exit), whether it succeeded, and how long the burst took.

Each call's time has two parts: starting Python and importing Herald (``startup``,
CPU: 20 calls on 2 cores queue for the processor) and the command itself (``work``),
of which ``blocked`` is the time its main thread was neither running nor waiting for
a CPU (waiting for the database, mostly; Linux's schedstat). The same 20 calls are
first made with the dispatcher idle (``idle``), then during the burst (``burst``): the
difference is what the burst costs them.

``--via api`` makes the calls as a script on another host would: through the running
service's HTTP API (``HERALD_API_URL`` and ``HERALD_API_TOKEN`` set, a write token made
with ``herald token create``), so they import no database code and wait on no lock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


# One ``herald schedule`` call, timed from inside: when Herald is imported (start-up:
# CPU) and when the command is done (its database work), as JSON on the last line of
# stderr.
# The main thread's scheduler figures (Linux): nanoseconds on a CPU and waiting for
# one; the rest of the command's time it was blocked (on the database, mostly).
_CALL = """
import json, sys, time
def sched():
    with open("/proc/thread-self/schedstat") as f:
        return [int(v) / 1e9 for v in f.read().split()[:2]]
from bot import cli
imported, at_import = time.time(), sched()
try:
    code = cli.main(sys.argv[1:])
finally:
    cpu, runqueue = (b - a for a, b in zip(at_import, sched()))
    done = time.time()
    blocked = done - imported - cpu - runqueue
    print(json.dumps({"imported": imported, "done": done, "blocked": blocked}), file=sys.stderr)
sys.exit(code)
"""


def _env(db: Path, receiver: str | None) -> dict[str, str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": f"sqlite:///{db}",
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
        "HERALD_HTTP_PORT": "0",
        "HERALD_ADAPTERS": "none",
    }
    if receiver is not None:
        # one local URL takes the whole burst: lift the webhook default limit (a few
        # a second per destination) so the dispatcher runs flat out
        env["HERALD_RATE_LIMITS"] = f"{receiver}=100000/s:100000"
    return env


async def _fill(db: Path, jobs: int, destination: str) -> None:
    from bot.cli.bench import schedule_rows
    from core.store import Store

    store = await Store.open(f"sqlite:///{db}")
    try:
        now = datetime.now(UTC)
        rows = schedule_rows(jobs, now, 0.0, destination, owner="local:bench")
        await store.create_schedules_bulk(
            rows, details=[{} for _ in rows], actor="local:bench", action="bench", now=now
        )
    finally:
        await store.close()


async def _finished(db: Path) -> int:
    """Jobs finished so far (the calls' own jobs are due in an hour: never these)."""
    from core.store import Store

    store = await Store.open(f"sqlite:///{db}")
    try:
        counts = await store.job_counts()
    finally:
        await store.close()
    return sum(v for k, v in counts.items() if k in ("delivered", "dead", "expired"))


async def _call(env: dict[str, str], i: int) -> dict[str, Any]:
    start = time.time()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _CALL,
        "schedule",
        "--to",
        "null:",
        "--when",
        "in 1 hour",
        "--text",
        f"call {i}",
        "--quiet",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    took = time.time() - start
    lines = err.decode().strip().splitlines()
    times = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return {
        "ok": proc.returncode == 0,
        "seconds": round(took, 2),
        "startup": round(times["imported"] - start, 2) if times else None,
        "work": round(times["done"] - times["imported"], 2) if times else None,
        "blocked": round(times["blocked"], 2) if times else None,
        "error": None if proc.returncode == 0 else "\n".join(lines[-3:-1])[-200:],
    }


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _up(port: int) -> None:
    """Until the service answers /healthz (at most a minute)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise SystemExit("herald run did not start within a minute")


async def run(jobs: int, calls: int, channel: str, via: str = "db") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "contention.db"
        receiver = None
        base = None
        if channel == "webhook":
            port = _free_port()
            receiver = subprocess.Popen(  # noqa: ASYNC220 - set-up, not timed
                [sys.executable, "-m", "bench.receiver", str(port)], cwd=HERE.parent
            )
            base = f"webhook:http://127.0.0.1:{port}/"
            destination = f"{base}hook"
        else:
            destination = "null:"
        env = _env(db, base)
        http_port = _free_port()
        env["HERALD_HTTP_PORT"] = str(http_port)
        upgrade = [sys.executable, "-m", "bot.cli", "db", "upgrade"]
        subprocess.run(upgrade, env=env, check=True)  # noqa: ASYNC221 - set-up, not timed
        callers = env
        if via == "api":
            admin = {**env, "USER": "bench", "HERALD_ADMINS": "local:bench"}
            made = subprocess.run(  # noqa: ASYNC221 - set-up, not timed
                [sys.executable, "-m", "bot.cli", "token", "create", "--member", "local:bench"],
                env=admin,
                check=True,
                capture_output=True,
                text=True,
            )
            callers = {
                **env,
                "HERALD_API_URL": f"http://127.0.0.1:{http_port}",
                "HERALD_API_TOKEN": made.stdout.strip(),
            }
        service = subprocess.Popen(  # noqa: ASYNC220 - set-up, not timed
            [sys.executable, "-m", "bot.cli", "run"],
            env={**env, "HERALD_LOG_LEVEL": "WARNING"},
            stdout=subprocess.DEVNULL,
            stderr=open(os.environ.get("HERALD_BENCH_LOG", os.devnull), "w"),  # noqa: SIM115, ASYNC230
        )
        try:
            await _up(http_port)
            idle = await asyncio.gather(*(_call(callers, i) for i in range(calls)))
            began = time.perf_counter()
            await _fill(db, jobs, destination)
            await asyncio.sleep(0.2)  # the burst is under way
            results = await asyncio.gather(*(_call(callers, i) for i in range(calls)))
            while await _finished(db) < jobs:  # noqa: ASYNC110 - another process's queue
                await asyncio.sleep(0.5)
            burst = time.perf_counter() - began
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=60)
            if receiver is not None:
                receiver.terminate()
                receiver.wait(timeout=10)
    return {
        "jobs": jobs,
        "channel": channel,
        "calls": calls,
        "via": via,
        "idle": _summary(idle),
        "burst": _summary(results),
        "burst_seconds": round(burst, 1),
    }


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"succeeded": sum(r["ok"] for r in results)}
    for part in ("seconds", "startup", "work", "blocked"):
        values = [r[part] for r in results if r[part] is not None]
        if values:
            summary[f"{part}_median"] = round(statistics.median(values), 2)
            summary[f"{part}_max"] = max(values)
    summary["errors"] = [r["error"] for r in results if r["error"]][:3]
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.contention")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--channel", choices=("webhook", "null"), default="webhook")
    parser.add_argument(
        "--via",
        choices=("db", "api"),
        default="db",
        help="the calls open the database, or ask the running service's HTTP API (HERALD_API_URL)",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args.jobs, args.calls, args.channel, args.via))
    print(json.dumps(result, indent=2))  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
