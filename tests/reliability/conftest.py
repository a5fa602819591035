"""Reliability runs: a short version in `make test`, the full one with
``HERALD_RELIABILITY=full`` (`make reliability`), which also prints a summary table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FULL = os.environ.get("HERALD_RELIABILITY", "").lower() == "full"
ROWS: list[tuple[str, str, str]] = []


def size(short: int, full: int) -> int:
    return full if FULL else short


def report(scenario: str, work: str, result: str) -> None:
    """Add a row to the summary printed at the end of the run."""
    ROWS.append((scenario, work, result))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ROWS:
        return
    lines = ["| scenario | work | result |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in ROWS]
    table = "\n".join(lines)
    terminalreporter.write_sep("=", "reliability summary")
    terminalreporter.write_line(table)
    if FULL:
        out = Path(__file__).resolve().parents[2] / "bench" / "RELIABILITY.md"
        out.write_text("# Reliability results (`make reliability`)\n\n" + table + "\n")
