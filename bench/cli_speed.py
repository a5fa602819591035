"""How fast the ``herald`` command answers: the installed console script, run as a
person runs it, on a SQLite database of 1,000 schedules (``python -m bench.cli_speed``).

Each command runs ROUNDS times, interleaved; figures are medians of the wall time from
process start to exit. Targets (issue 33): ``--version`` and ``when --tz`` (which load no
database code) within 150 ms; ``list``, ``show`` and ``schedule`` within 350 ms on the
project's 2-core machine. ``when`` without ``--tz`` reads the member's zone from the
database, so it costs what ``list`` does. ``python -X importtime`` names what a command
imports; its five heaviest packages are printed beside the ``list`` figure.

``--compare DIR`` runs the same commands, interleaved round by round, on another
checkout of Herald (say ``git archive`` of an older commit unpacked in DIR) through the
same console script and virtualenv, each tree on a database it filled itself, and
prints both: before and after in the same run, under the same load. A command the
other tree does not have is left out of its figures.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROUNDS = 15
SCHEDULES = 1_000

COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "--version": ["--version"],
    "when --tz": ["when", "every weekday at 9am", "--tz", "Europe/Berlin"],
    "when": ["when", "every weekday at 9am"],
    "list": ["list"],
    "show": ["show", "1"],
    "schedule": ["schedule", "--to", "log:", "--when", "in 1 hour", "--text", "hi", "-q"],
}
TARGETS_MS = {"--version": 150, "when --tz": 150, "list": 350, "show": 350, "schedule": 350}
HERE = Path(__file__).resolve().parent.parent


def _herald() -> str:
    found = shutil.which("herald", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("the herald console script is not installed next to this Python")
    return found


def _env(db: Path, source: Path | None) -> dict[str, str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": f"sqlite:///{db}",
        "USER": "bench",
    }
    if source is not None:  # that tree's packages before the installed (editable) ones
        env["PYTHONPATH"] = str(source)
    return env


def _fill(herald: str, env: dict[str, str]) -> None:
    lines = "".join(
        json.dumps({"to": "log:", "when": "every weekday at 9am", "text": f"m {i}", "key": str(i)})
        + "\n"
        for i in range(SCHEDULES)
    )
    subprocess.run(
        [herald, "import", "-"],
        input=lines,
        text=True,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _wall(cmd: list[str], env: dict[str, str]) -> float | None:
    """Seconds from start to exit; None when the command failed (an older tree without
    it: on this checkout a failure is raised, never left out of the figures)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - start
    return took if proc.returncode == 0 else None


def _heaviest_imports(env: dict[str, str], cwd: str) -> dict[str, float]:
    """Self import time (ms) of the five heaviest top-level packages of ``herald list``
    (run from ``cwd``: ``-m`` puts the current folder first on the path, and this
    checkout's packages must not hide the tree PYTHONPATH names)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot.cli", "list"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    total: Counter[str] = Counter()
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        total[name.strip().split(".")[0]] += int(own)
    return {name: round(us / 1000, 1) for name, us in total.most_common(5)}


def _compile(root: Path) -> None:
    """Herald's bytecode, as an installed package has it (an editable install where
    PYTHONDONTWRITEBYTECODE is set would compile every module on every run)."""
    for package in ("core", "bot", "tui", "migrations"):
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=1)


def _medians(times: dict[str, list[float]]) -> dict[str, int | None]:
    return {name: round(statistics.median(t) * 1000) if t else None for name, t in times.items()}


def run(rounds: int = ROUNDS, compare: Path | None = None) -> dict[str, Any]:
    herald = _herald()
    trees: dict[str, Path | None] = {"after": None}
    if compare is not None:
        trees = {"before": compare.resolve(), "after": None}
    for source in trees.values():
        _compile(source or HERE)
    with tempfile.TemporaryDirectory() as tmp:
        envs = {name: _env(Path(tmp) / f"{name}.db", source) for name, source in trees.items()}
        for env in envs.values():
            _fill(herald, env)
        times: dict[str, dict[str, list[float]]] = {
            name: {cmd: [] for cmd in COMMANDS} for name in trees
        }
        missing: dict[str, set[str]] = {name: set() for name in trees}
        for _ in range(rounds):
            for cmd, args in COMMANDS.items():
                for name, env in envs.items():  # before, after: the same moment's load
                    if cmd in missing[name]:
                        continue
                    took = _wall([herald, *args], env)
                    if took is None and trees[name] is None:  # this checkout has them all
                        raise RuntimeError(f"herald {' '.join(args)} failed on this checkout")
                    if took is None:
                        missing[name].add(cmd)
                        times[name][cmd] = []
                    else:
                        times[name][cmd].append(took)
        imports = {name: _heaviest_imports(env, tmp) for name, env in envs.items()}
    result: dict[str, Any] = {
        "schedules": SCHEDULES,
        "rounds": rounds,
        "targets_ms": TARGETS_MS,
        "median_ms": _medians(times["after"]),
        "list_heaviest_imports_ms": imports["after"],
    }
    if compare is not None:
        result["before"] = {
            "tree": str(compare),
            "median_ms": _medians(times["before"]),
            "list_heaviest_imports_ms": imports["before"],
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_speed", description=__doc__)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--compare", type=Path, metavar="DIR", help="another checkout of Herald to run beside"
    )
    args = parser.parse_args(argv)
    print(json.dumps(run(args.rounds, args.compare), indent=2))  # noqa: T201 - the report
    return 0


if __name__ == "__main__":
    sys.exit(main())
