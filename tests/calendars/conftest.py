"""Calendar fixtures: the store and use cases with the calendar mixins, a local .ics server.

Until the mixins are in ``Store``'s and ``Herald``'s bases, these compose them here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.clock import ManualClock
from core.feeds import FeedCases
from core.settings import Settings
from core.store import Store
from core.store.calendars import CalendarQueries
from core.usecases import Herald
from tests.fakes.ics import ICSServer

DATA = Path(__file__).parent / "data"


class CalStore(Store, CalendarQueries):
    pass


class CalHerald(Herald, FeedCases):
    pass


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    from core import db

    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    s = await CalStore.open(db_url)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def herald(store: Store, settings: Settings, clock: ManualClock) -> CalHerald:
    return CalHerald(store, settings, clock)


@pytest.fixture
async def ics() -> AsyncIterator[ICSServer]:
    async with ICSServer() as server:
        yield server


def data(name: str) -> str:
    return (DATA / name).read_text()
