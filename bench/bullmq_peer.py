"""The BullMQ peer: Node.js + BullMQ on Redis, the stack architecture guides recommend for
delayed jobs, run by ``bench/bullmq/bench.js``.

The jobs are added with ``addBulk`` as delayed jobs all due at one instant (or spread),
after 200 warm-up jobs; one Worker with concurrency 64 runs them: a no-op, or a POST
with Node's built-in fetch (keep-alive) to the same receiver URLs as Herald's. The
packages are pinned in ``bench/bullmq/package-lock.json`` and installed with ``npm ci``
on first use. Redis: ``HERALD_BENCH_REDIS_URL`` (default database 15 of the local Redis;
the queue has a new name each run and is obliterated afterwards).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from bench.services import PeerError, not_on_path, one_line, peer_json, unreachable

DIR = Path(__file__).resolve().parent / "bullmq"
REDIS_URL = "redis://127.0.0.1:6379/15"


def redis_url() -> str:
    return os.environ.get("HERALD_BENCH_REDIS_URL", REDIS_URL)


def missing(*, redis: bool = True) -> str | None:
    """Why the peer cannot run on this machine (one line), or None. Installs the pinned
    packages (``npm ci``) when they are not installed yet; ``redis=False``: Node alone
    (the bare fetch ceiling)."""
    if reason := not_on_path("node"):
        return reason
    if redis and (reason := unreachable("Redis", redis_url())):
        return reason
    return _install()


def _install() -> str | None:
    installed = DIR / "node_modules" / ".package-lock.json"  # npm writes it last
    lock = DIR / "package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return None
    if reason := not_on_path("npm"):
        return reason
    try:
        out = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "npm ci did not finish within 5 minutes"
    if out.returncode:
        return f"npm ci failed: {one_line(out.stderr or out.stdout)}"
    return None


def run(n: int, spread: float, target: str | None) -> dict[str, Any]:
    """``n`` delayed jobs due at one instant (``spread`` 0) or over ``spread`` seconds;
    a POST each to ``target`` when given. Returns the script's report (``samples``:
    each job's start minus its due time, ms). Raises PeerError when the script fails."""
    return _node([str(n), str(spread), *([target] if target else [])], timeout=spread + n + 300)


def run_bare(n: int, target: str) -> dict[str, Any]:
    """The ceiling of the webhook burst in Node: ``n`` POSTs due at one instant with
    fetch alone, 64 in flight (no queue, no Redis)."""
    return _node(["--bare", str(n), target], timeout=n + 300)


def _node(args: list[str], timeout: float) -> dict[str, Any]:
    try:
        out = subprocess.run(
            ["node", "bench.js", *args],
            cwd=DIR,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "HERALD_BENCH_REDIS_URL": redis_url()},
        )
    except subprocess.TimeoutExpired as error:
        raise PeerError(f"node bench.js did not finish within {timeout:.0f} s") from error
    if out.returncode:
        raise PeerError(one_line(out.stderr or out.stdout))
    return peer_json(out.stdout)
