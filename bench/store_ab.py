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
KEYS = ("caps_claim_us", "caps_finish_us", "caps_cpu_us", "claim_us", "finish_us", "cpu_us")

# Runs inside the tree under test (its own code): only the store API both sides share.
# Each run drains two databases: with the claim caps a dispatcher passes when a channel
# has a default rate limit (the webhook channel's 10/s: every claim of ``herald bench
# dispatch`` and ``herald run`` then puts off capped jobs first), and without caps,
# after a small drain of each (a first drain pays for loading and compiling).
_PROBE = f"""
import asyncio, json, resource, tempfile, time
from datetime import UTC, datetime, timedelta
from bot.cli.bench import _fill
from core.ratelimit import ClaimCaps, RateLimit, RateLimits
from core.store import Store
from core.store.queue import AttemptRecord, Verdict


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def drain(tmp, name, caps, n={JOBS}):
    store = await Store.open(f"sqlite:///{{tmp}}/{{name}}.db")
    await _fill(store, n, datetime.now(UTC) - timedelta(seconds=5), 0.0, "null:")
    claim = finish = 0.0
    done = 0
    cpu0 = cpu()
    while done < n:
        now = datetime.now(UTC)
        t = time.perf_counter()
        jobs = await store.claim_due(
            now=now, worker="ab", lease_until=now + timedelta(minutes=5), limit={BATCH},
            caps=caps,
        )
        claim += time.perf_counter() - t
        if not jobs:
            break
        done += len(jobs)
        results = [Verdict(job, "delivered", AttemptRecord(now, now, "delivered")) for job in jobs]
        t = time.perf_counter()
        await store.finish(results, worker="ab", now=now)
        finish += time.perf_counter() - t
    used = cpu() - cpu0
    await store.close()
    scale = 1e6 / max(done, 1)
    return round(claim * scale, 2), round(finish * scale, 2), round(used * scale, 2)


async def main():
    caps = ClaimCaps.of(RateLimits.parse(None), {{"webhook": RateLimit(10.0, 10.0)}}, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        await drain(tmp, "warm-capped", caps, {BATCH})  # statements compiled, code loaded
        await drain(tmp, "warm-plain", None, {BATCH})
        capped = await drain(tmp, "capped", caps)
        plain = await drain(tmp, "plain", None)
    print(json.dumps(dict(zip(
        ("caps_claim_us", "caps_finish_us", "caps_cpu_us", "claim_us", "finish_us", "cpu_us"),
        capped + plain,
    ))))


asyncio.run(main())
"""


# ``--sql``: the claim's two statements (put off what is over its cap, then claim) and
# the recording of a delivered batch, each timed alone with sqlite3 on a database of
# 10,000 waiting jobs, in a transaction rolled back after each repeat (median µs per job).
_SQL_PROBE = f"""
import asyncio, json, sqlite3, statistics, tempfile, time
from datetime import UTC, datetime, timedelta
from bot.cli.bench import _fill
from core.models import sqlite_utc_text
from core.ratelimit import ClaimCaps, RateLimit, RateLimits
from core.store import Store
from core.store import queue as q

REPEATS = 15


async def fill(path):
    store = await Store.open(f"sqlite:///{{path}}")
    await _fill(store, {JOBS}, datetime.now(UTC) - timedelta(seconds=5), 0.0, "null:")
    await store.close()


def main():
    caps = ClaimCaps.of(RateLimits.parse(None), {{"webhook": RateLimit(10.0, 10.0)}}, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{{tmp}}/q.db"
        asyncio.run(fill(path))
        db = sqlite3.connect(path, isolation_level=None)
        now = datetime.now(UTC)
        text_now = sqlite_utc_text(now)
        claim = ("ab", sqlite_utc_text(now + timedelta(minutes=5)), text_now, text_now, {BATCH})
        put_off = {{"now": text_now, "now_us": (now - q._EPOCH) // q._MICROSECOND,
                   "limit": {BATCH}, "caps": caps.as_json, "quantum_us": caps.quantum_us,
                   "error": q.CAPPED_ERROR}}
        times = {{"put_off_us": [], "claim_us": [], "delivered_us": [], "attempts_us": []}}
        for _ in range(REPEATS):
            db.execute("BEGIN IMMEDIATE")
            t0 = time.perf_counter()
            db.execute(q._SQLITE_PUT_OFF, put_off).fetchall()
            t1 = time.perf_counter()
            rows = db.execute(q._SQLITE_CLAIM, claim).fetchall()
            t2 = time.perf_counter()
            ids = json.dumps([row[0] for row in rows])
            done = q._DELIVERED.replace("{{ids}}", "(SELECT value FROM json_each(?))")
            db.execute(done.replace("%s", "?"), (text_now, text_now, ids, "ab")).fetchall()
            t3 = time.perf_counter()
            width = q._ATTEMPT_INSERT.count("%s")
            one = (text_now, text_now, "delivered", None, None, None, "ab", None, "null:")
            db.executemany(q._ATTEMPT_INSERT.replace("%s", "?"),
                           [(row[0], *one[: width - 1]) for row in rows])
            t4 = time.perf_counter()
            db.execute("ROLLBACK")
            for key, span in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[key].append(span * 1e6 / max(len(rows), 1))
        print(json.dumps({{k: round(statistics.median(v), 2) for k, v in times.items()}}))


main()
"""
SQL_KEYS = ("put_off_us", "claim_us", "delivered_us", "attempts_us")


def run(tree: Path, probe: str = _PROBE) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tree
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main(argv: list[str]) -> int:
    sql = "--sql" in argv
    argv = [a for a in argv if a != "--sql"]
    probe, keys = (_SQL_PROBE, SQL_KEYS) if sql else (_PROBE, KEYS)
    rounds = int(argv[0]) if argv else 5
    trees = [Path(t).resolve() for t in argv[1:]]
    got: dict[str, list[dict[str, Any]]] = {}
    for r in range(rounds):
        order = trees[r % len(trees) :] + trees[: r % len(trees)]  # rotated
        for tree in order:
            row = run(tree, probe)
            got.setdefault(tree.name, []).append(row)
            print(json.dumps({"round": r, "tree": tree.name, **row}), flush=True)
    for name, rows in got.items():
        med = {k: statistics.median(row[k] for row in rows) for k in keys}
        print(json.dumps({"median": name, **med}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
