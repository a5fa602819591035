"""The queue's own cost, tree against tree: what the store's claim and its recording of
outcomes cost per job on SQLite, without the dispatcher around them.

``python -m bench.store_ab [ROUNDS] TREE ...``: in each round, each tree (a checkout
of Herald, e.g. a baseline exported with ``git archive``) in a fresh process from that
directory fills a new SQLite database with 10,000 one-off jobs due now, then claims
them in batches of 2,000 (``claim_due``) and records each batch delivered (``finish``,
an attempt each); it prints one JSON line per run (µs per job for the claims and for
the recording, wall time, and the process's CPU time, the driver's thread included)
and the medians per tree. Where ``python -m bench.webhook_ab`` finds a difference
between two trees, this says whether it is in the queue's SQL."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

JOBS = 10_000
BATCH = 2_000
KEYS = ("claim_us", "finish_us", "cpu_us")

# Runs inside the tree under test (its own code): only the store API both sides share.
_PROBE = f"""
import asyncio, json, resource, tempfile, time
from datetime import UTC, datetime, timedelta
from bot.cli.bench import _fill
from core.store import Store
from core.store.queue import AttemptRecord, Verdict


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(f"sqlite:///{{tmp}}/q.db")
        await _fill(store, {JOBS}, datetime.now(UTC) - timedelta(seconds=5), 0.0, "null:")
        claim = finish = 0.0
        done = 0
        cpu0 = cpu()
        while done < {JOBS}:
            now = datetime.now(UTC)
            t = time.perf_counter()
            jobs = await store.claim_due(
                now=now, worker="ab", lease_until=now + timedelta(minutes=5), limit={BATCH}
            )
            claim += time.perf_counter() - t
            if not jobs:
                break
            done += len(jobs)
            results = [
                Verdict(job, "delivered", AttemptRecord(now, now, "delivered")) for job in jobs
            ]
            t = time.perf_counter()
            await store.finish(results, worker="ab", now=now)
            finish += time.perf_counter() - t
        used = cpu() - cpu0
        await store.close()
    scale = 1e6 / max(done, 1)
    print(json.dumps({{"jobs": done, "claim_us": round(claim * scale, 2),
                      "finish_us": round(finish * scale, 2), "cpu_us": round(used * scale, 2)}}))


asyncio.run(main())
"""


def run(tree: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, cwd=tree
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 5
    trees = [Path(t).resolve() for t in argv[1:]]
    got: dict[str, list[dict[str, Any]]] = {}
    for r in range(rounds):
        order = trees[r % len(trees) :] + trees[: r % len(trees)]  # rotated
        for tree in order:
            row = run(tree)
            got.setdefault(tree.name, []).append(row)
            print(json.dumps({"round": r, "tree": tree.name, **row}), flush=True)
    for name, rows in got.items():
        med = {k: statistics.median(row[k] for row in rows) for k in KEYS}
        print(json.dumps({"median": name, **med}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
