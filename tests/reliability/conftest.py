"""Reliability runs: a short version in `make test`, the full one with
``HERALD_RELIABILITY=full`` (`make reliability`), which also writes the summary table
(printed by tests/conftest.py) to bench/RELIABILITY.md."""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

FULL = os.environ.get("HERALD_RELIABILITY", "").lower() == "full"
ROWS: list[tuple[str, str, str]] = []
ROW_KEY = "reliability-row"


def size(short: int, full: int) -> int:
    return full if FULL else short


def report(scenario: str, work: str, result: str) -> None:
    """Add a row to the summary printed at the end of the run."""
    ROWS.append((scenario, work, result))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The rows ride on the test's report to the process that prints the summary
    (tests/conftest.py), which under pytest-xdist is not the one that ran the test."""
    rep = yield
    if call.when == "teardown" and ROWS:
        rep.user_properties.extend((ROW_KEY, row) for row in ROWS)
        ROWS.clear()
    return rep
