"""The Celery peer: Python + Celery on RabbitMQ, the other stack architecture guides
recommend for scheduled jobs.

One worker process (``celery -A bench.celery_app worker``) with the pool named by
``HERALD_BENCH_CELERY_POOL``, 64 tasks at once, and a queue with a new name each run
(deleted afterwards). The default pool is ``threads``: in small runs here (500 messages,
interleaved) it drained the null burst at 5,600-6,800 msg/s against gevent's
1,600-4,100 and the webhook burst at 860-930 against 380-690, and gevent started some
tasks up to 107 ms *before* their eta (its timers count from the event loop's cached
time, stale while the consumer is busy). eventlet is deprecated and was not tried.

After 200 warm-up tasks, every task is sent with ``eta`` = its due instant; RabbitMQ
hands eta tasks to the worker at once and the worker holds them until then.
Each task writes its own start and end to a file (see ``bench/celery_app.py``), which
is where the lateness comes from. RabbitMQ: ``HERALD_BENCH_AMQP_URL``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.services import PeerError, one_line, unreachable

ROOT = Path(__file__).resolve().parent.parent
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"
POOLS = ("threads", "gevent")
CONCURRENCY = 64
WARM_UP = 200


def amqp_url() -> str:
    return os.environ.get("HERALD_BENCH_AMQP_URL", AMQP_URL)


def pool() -> str:
    return os.environ.get("HERALD_BENCH_CELERY_POOL", POOLS[0])


def missing() -> str | None:
    """Why the peer cannot run on this machine (one line), or None."""
    if pool() not in POOLS:
        return f"HERALD_BENCH_CELERY_POOL must be one of {', '.join(POOLS)}"
    for module in ("celery", "requests", *(("gevent",) if pool() == "gevent" else ())):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install {module})"
    return unreachable("RabbitMQ", amqp_url())


def run(n: int, spread: float, target: str | None) -> dict[str, Any]:
    """``n`` tasks with ``eta`` at one instant (``spread`` 0) or over ``spread`` seconds;
    a POST each to ``target`` when given. Returns the report in the BullMQ script's shape
    (``samples``: each task's start minus its due time, ms); tasks that have not run
    by the deadline count as dropped. Raises PeerError when the worker exits early."""
    queue = f"herald-bench-{os.getpid()}-{time.time_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record"
        record.touch()
        log = Path(tmp) / "worker.log"
        env = {
            **os.environ,
            "HERALD_BENCH_AMQP_URL": amqp_url(),
            "HERALD_BENCH_CELERY_QUEUE": queue,
            "HERALD_BENCH_CELERY_RECORD": str(record),
        }
        from bench.celery_app import app
        from bot.cli.bench import WEBHOOK_URLS, _child_hwm_mb

        with log.open("w") as err:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "bench.celery_app", "worker"]
                + ["-P", pool(), "-c", str(CONCURRENCY), "-Q", queue, "-l", "WARNING"]
                + ["--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        lines = _Lines(record)
        try:
            name = "bench.webhook" if target else "bench.noop"

            def args(i: int, due: float | None) -> list[Any]:
                return [i, due, f"{target}/h/{i % WEBHOOK_URLS}"] if target else [i, due]

            with app.connection_for_write() as connection:
                producer = connection.Producer()
                for i in range(WARM_UP):
                    if i == WARM_UP // 2:  # the first sends open the connection
                        sent = time.perf_counter()
                    app.send_task(name, args(i, None), queue=queue, producer=producer)
                per_task = (time.perf_counter() - sent) / (WARM_UP - WARM_UP // 2)
                lines.wait(WARM_UP, time.time() + 60, worker, log)  # the worker is up and warm

                # every task is sent, and in the worker's hands, before the first is due
                # (as when messages are scheduled well ahead): twice the warm-up's pace
                due = time.time() + 1.0 + 2 * n * per_task
                for i in range(n):
                    at = due + (spread * i / n if spread else 0.0)
                    eta = datetime.fromtimestamp(at, UTC)
                    app.send_task(name, args(i, at), eta=eta, queue=queue, producer=producer)
                # until RabbitMQ has handed every task to the worker
                while connection.default_channel.queue_declare(queue, passive=True).message_count:
                    if worker.poll() is not None or time.time() > due + 60:
                        break  # the wait below says why
                    time.sleep(0.05)
            added_late = max(0.0, time.time() - due)
            lines.wait(WARM_UP + n, due + spread + 120 + n / 100, worker, log)
            peak = _child_hwm_mb(worker.pid)
        finally:
            # the run is over: a warm shutdown would only wait for the worker's event loop
            # to wake up (its next timer, up to 10 s), so a second later it is killed
            worker.terminate()
            try:
                worker.wait(timeout=1)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            with app.connection_for_write() as connection:
                channel = connection.default_channel
                channel.queue_delete(queue)
                channel.exchange_delete(queue)
        recorded = lines.close()
        return _report(recorded, added_late, peak)


def _report(lines: list[str], added_late_s: float, peak_mb: float) -> dict[str, Any]:
    samples: list[float] = []
    last_finish = 0.0
    failed = 0
    for line in lines:
        i, start, finish, ok = line.split()
        if i == "-1":
            continue  # warm-up
        samples.append(float(start))
        last_finish = max(last_finish, float(finish))
        failed += ok != "1"
    return {
        "samples": samples,
        "last_finish_ms": last_finish,
        "failed": failed,
        "added_late_ms": round(added_late_s * 1000, 1),
        "peak_rss_mb": round(peak_mb, 1),
        "pool": f"{pool()} ×{CONCURRENCY}",
    }


class _Lines:
    """The record file's complete lines, read as they come."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self._rest = b""
        self._lines: list[str] = []

    def read(self) -> list[str]:
        chunk = self._rest + self._file.read()
        *complete, self._rest = chunk.split(b"\n")
        self._lines.extend(line.decode() for line in complete)
        return self._lines

    def close(self) -> list[str]:
        """Every line, once the file is complete."""
        found = self.read()
        self._file.close()
        return found

    def wait(self, count: int, deadline: float, worker: subprocess.Popen[bytes], log: Path) -> None:
        """Until ``count`` lines are in; PeerError if the worker dies or time runs out."""
        while len(self.read()) < count:
            if worker.poll() is not None:
                raise PeerError(f"celery worker exited: {one_line(log.read_text())}")
            if time.time() > deadline:
                return  # the missing ones count as dropped
            time.sleep(0.1)
