"""iCalendar test helpers shared by the calendar, Slack and Discord tests: the sample
calendars (tests/calendars/data) and a local .ics server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.ics import ICSServer

DATA = Path(__file__).parents[1] / "calendars" / "data"


@pytest.fixture
async def ics() -> AsyncIterator[ICSServer]:
    """A local server of .ics files with ETag and Last-Modified."""
    async with ICSServer() as server:
        yield server


def data(name: str) -> str:
    """A sample calendar's text: ``holidays.ics`` (Good Friday and Easter Monday 2026,
    Labour Day every 1 May, a Christmas break) or ``team.ics``."""
    return (DATA / name).read_text()
