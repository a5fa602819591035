"""A dispatcher hears at once that another process scheduled something: PostgreSQL by
LISTEN/NOTIFY, SQLite by watching the file's data_version (a message due within a
second of being scheduled by the CLI would otherwise wait for the next sweep)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings
from core.store import Store
from core.store.base import SQLITE_WATCH_SECONDS


async def test_another_process_scheduling_wakes_the_dispatcher(
    store: Store, db_url: str, settings: Settings
) -> None:
    heard = asyncio.Event()
    listening = asyncio.create_task(store.listen_due(heard.set))
    try:
        # both call once when they start listening, for anything missed before
        await asyncio.wait_for(heard.wait(), timeout=10)
        heard.clear()
        other = await Store.open(db_url)  # another process's connection
        try:
            cli = Herald(other, settings, ManualClock(datetime.now(UTC)))
            await cli.create_schedule("local:alice", to="log:", when="in 1 second", text="hi")
            said = time.perf_counter()
            await asyncio.wait_for(heard.wait(), timeout=10)
            waited = time.perf_counter() - said
        finally:
            await other.close()
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
    # heard within a look of the watcher (with room for a busy machine), not a sweep
    assert waited < SQLITE_WATCH_SECONDS + 1.0
