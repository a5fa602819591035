"""Only the webhook burst, Herald against the bare aiohttp client, interleaved rounds.

``python -m bench.webhook_ab [--run] [--null] [ROUNDS] [TREE ...]``: starts one receiver
(``bench/receiver.py``) and runs, in each round, the bare aiohttp client (on asyncio's
loop, then on uvloop), then Herald from
each source tree given (default: this one; another checkout of Herald, e.g. a baseline
exported with ``git archive``, is run with its own code by running it from that
directory), each in a fresh process on the same workload as ``make bench``'s webhook
burst; with ``--run``, each tree's ``herald run`` process too; with ``--null``, the
null-channel burst instead (``python -m bench.peers herald burst``: 10,000 no-op messages
due at one instant), without the bare clients. Prints one JSON line per run and the
medians per system. Each round starts one system later than the one before (rotated
order), so no tree always runs first or last in a round."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.peers import HERE, _receiver

KEYS = ("drain_per_s", "first_ms", "p50_ms", "last_ms", "cpu_ms_per_msg", "dropped")


def _run(system: str, tree: Path, target: str, workload: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.peers", system, workload],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env={**os.environ, "HERALD_BENCH_TARGET": target},
    )
    row = json.loads(out.stdout.splitlines()[-1])
    return {key: row.get(key) for key in KEYS}


def _median(values: list[Any]) -> Any:
    """The median, or None where no run gave the figure (``herald run`` has no CPU
    figure: another process did the work), not a zero that would read as free."""
    return statistics.median(values) if values else None


def main(argv: list[str]) -> int:
    service = "--run" in argv
    null = "--null" in argv
    argv = [a for a in argv if a not in ("--run", "--null")]
    rounds = int(argv[0]) if argv else 3
    trees = [Path(t).resolve() for t in argv[1:]] or [HERE.parent]
    heralds = ("herald", "herald run") if service else ("herald",)
    systems = [] if null else [("bare aiohttp", HERE.parent), ("bare aiohttp uvloop", HERE.parent)]
    systems += [(herald, t) for t in trees for herald in heralds]
    got: dict[str, list[dict[str, Any]]] = {}
    with _receiver() as target:
        for r in range(rounds):
            for system, tree in systems[r % len(systems) :] + systems[: r % len(systems)]:
                label = f"{system} {tree.name}" if system.startswith("herald") else system
                row = _run(system, tree, target, "burst" if null else "webhook-burst")
                got.setdefault(label, []).append(row)
                print(json.dumps({"round": r, "system": label, **row}), flush=True)
    for label, rows in got.items():
        med = {k: _median([r[k] for r in rows if r[k] is not None]) for k in KEYS}
        print(json.dumps({"median": label, **med}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
