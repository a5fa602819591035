"""Calendar fixtures: a local .ics server and the sample calendars (the store and use
cases come from tests/conftest.py: calendars are part of them)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.ics import ICSServer

DATA = Path(__file__).parent / "data"


@pytest.fixture
async def ics() -> AsyncIterator[ICSServer]:
    async with ICSServer() as server:
        yield server


def data(name: str) -> str:
    return (DATA / name).read_text()
