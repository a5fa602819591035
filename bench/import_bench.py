"""Import throughput: `herald import`'s bulk path against the peer a team would write by
hand (one ORM insert and commit per schedule through the same use case), on SQLite.

Each side runs REPEAT times on a fresh database; figures are medians.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from core.cases import Herald, import_schedules
from core.clock import SystemClock
from core.settings import load_settings
from core.store import Store

ROWS = 20_000
PEER_ROWS = 2_000
REPEAT = 3


def _lines(n: int) -> list[str]:
    base = datetime.now(UTC) + timedelta(days=1)
    return [
        json.dumps(
            {
                "to": "log:",
                "when": (base + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "text": f"message {i}",
                "key": f"key-{i}",
            }
        )
        for i in range(n)
    ]


async def _herald(path: Path) -> Herald:
    url = f"sqlite:///{path}"
    store = await Store.open(url)
    return Herald(store, load_settings(HERALD_DATABASE_URL=url, _env_file=None), SystemClock())


async def _bulk(path: Path, lines: list[str]) -> float:
    herald = await _herald(path)
    try:
        start = time.perf_counter()
        report = await import_schedules(herald, "local:bench", lines)
        elapsed = time.perf_counter() - start
        assert report.imported == len(lines)
        return len(lines) / elapsed
    finally:
        await herald.store.close()


async def _one_by_one(path: Path, lines: list[str]) -> float:
    herald = await _herald(path)
    try:
        start = time.perf_counter()
        for line in lines:
            obj = json.loads(line)
            await herald.create_schedule("local:bench", **obj)
        return len(lines) / (time.perf_counter() - start)
    finally:
        await herald.store.close()


def run() -> dict[str, Any]:
    bulk_lines, peer_lines = _lines(ROWS), _lines(PEER_ROWS)
    bulk, peer = [], []
    for i in range(REPEAT):
        with tempfile.TemporaryDirectory() as tmp:
            bulk.append(asyncio.run(_bulk(Path(tmp) / f"b{i}.db", bulk_lines)))
            peer.append(asyncio.run(_one_by_one(Path(tmp) / f"p{i}.db", peer_lines)))
    bulk_median, peer_median = statistics.median(bulk), statistics.median(peer)
    return {
        "benchmark": "import",
        "db": "sqlite",
        "rows": ROWS,
        "import_per_s_median": round(bulk_median),
        "peer": "create_schedule one at a time",
        "peer_rows": PEER_ROWS,
        "peer_per_s_median": round(peer_median),
        "ratio": round(bulk_median / peer_median, 1),
        "runs": REPEAT,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
