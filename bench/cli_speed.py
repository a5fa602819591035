"""How fast the ``herald`` command answers: the installed console script, run as a
person runs it, on a SQLite database of 1,000 schedules (``python -m bench.cli_speed``).

Each command runs ROUNDS times, interleaved; figures are medians of the wall time from
process start to exit. Targets (issue 20): ``--help`` within 300 ms and ``list`` within
500 ms on the project's 2-core machine. ``python -X importtime`` names what a command
imports; its five heaviest packages are printed beside the ``list`` figure.
"""

from __future__ import annotations

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
    "list": ["list"],
    "when": ["when", "every weekday at 9am"],
    "show": ["show", "1"],
    "schedule": ["schedule", "--to", "log:", "--when", "in 1 hour", "--text", "hi", "-q"],
}


def _herald() -> str:
    found = shutil.which("herald", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("the herald console script is not installed next to this Python")
    return found


def _env(db: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": f"sqlite:///{db}",
        "USER": "bench",
    }


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


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _heaviest_imports(herald: str, env: dict[str, str]) -> dict[str, float]:
    """Self import time (ms) of the five heaviest top-level packages of ``herald list``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot.cli", "list"],
        env=env,
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


def _compile() -> None:
    """Herald's bytecode, as an installed package has it (an editable install where
    PYTHONDONTWRITEBYTECODE is set would compile every module on every run)."""
    root = Path(__file__).resolve().parent.parent
    for package in ("core", "bot", "tui"):
        compileall.compile_dir(root / package, quiet=1)


def run(rounds: int = ROUNDS) -> dict[str, Any]:
    herald = _herald()
    _compile()
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(Path(tmp) / "bench.db")
        _fill(herald, env)
        times: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(rounds):
            for name, args in COMMANDS.items():
                times[name].append(_wall([herald, *args], env))
        imports = _heaviest_imports(herald, env)
    return {
        "schedules": SCHEDULES,
        "rounds": rounds,
        "median_ms": {name: round(statistics.median(t) * 1000) for name, t in times.items()},
        "list_heaviest_imports_ms": imports,
    }


def main() -> int:
    print(json.dumps(run(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
