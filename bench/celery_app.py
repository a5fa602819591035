"""The Celery app of the benchmark's Celery peer (``bench/celery_peer.py`` starts its
worker with ``celery -A bench.celery_app worker``). Two tasks: ``bench.noop`` and
``bench.webhook``; no result backend.

Each task appends one line to the file named by ``HERALD_BENCH_CELERY_RECORD``:
``i start_late_ms finish_late_ms ok`` (its own start and end minus its due time), with one
unbuffered ``write`` to a file opened in append mode, so lines from concurrent tasks
never interleave. Warm-up tasks carry no due time and write ``-1`` as ``i``.

The webhook task posts with ``requests`` through one shared ``Session`` whose pool keeps
64 connections to the receiver (as many as the worker runs tasks at once). requests,
not httpx: urllib3's pool hands out a free connection from a queue, whereas httpcore's
pool scans every connection on each request and is slower under 64 concurrent senders;
requests is also what a Celery task usually posts with.
"""

from __future__ import annotations

import os
import time

import requests
from celery import Celery
from requests.adapters import HTTPAdapter

from bench.celery_peer import CONCURRENCY, amqp_url

app = Celery("herald_bench", broker=amqp_url())
app.conf.update(
    task_ignore_result=True,
    result_backend=None,
    task_default_queue=os.environ.get("HERALD_BENCH_CELERY_QUEUE", "herald-bench"),
    worker_enable_remote_control=False,  # no pidbox queue left behind
    worker_send_task_events=False,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=False,
)

_path = os.environ.get("HERALD_BENCH_CELERY_RECORD")
_record = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if _path else -1

_session = requests.Session()
_session.mount("http://", HTTPAdapter(pool_connections=1, pool_maxsize=CONCURRENCY))


def _write(i: int, start: float, due: float | None, ok: bool) -> None:
    end = time.time()
    if due is None:
        line = f"-1 0 0 {int(ok)}\n"
    else:
        line = f"{i} {(start - due) * 1000:.3f} {(end - due) * 1000:.3f} {int(ok)}\n"
    os.write(_record, line.encode())


@app.task(name="bench.noop")
def noop(i: int, due: float | None) -> None:
    _write(i, time.time(), due, True)


@app.task(name="bench.webhook")
def webhook(i: int, due: float | None, url: str) -> None:
    start = time.time()
    ok = False
    try:
        answer = _session.post(url, json={"i": i}, timeout=30)
        answer.raise_for_status()
        ok = True
    finally:
        _write(i, start, due, ok)
