"""On a generated database (20,000 jobs, 60,000 attempts; 2,000 and 6,000 in the
default run: twenty pages of the console's tables, all a LIMIT needs to show) every
screen asks the store for pages and aggregates, never for a whole table: each SELECT
the console runs has a LIMIT, is an aggregate, or looks rows up by id; every table
shows at most a page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bench.console_bench import ADMIN, build
from core.cases import Herald
from core.clock import SystemClock
from core.settings import load_settings
from core.store import Store
from tests.conftest import FULL
from tests.tui.conftest import run, settle
from tui.app import make_app
from tui.widgets.table import PageTable

PAGE = 100
BOUNDED = re.compile(
    r"\bLIMIT\b|\bcount\(|\bGROUP BY\b|\b(id|job_id|schedule_id) (= \?|IN \(\?)|PRAGMA",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def large_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("large") / "console.db"
    scale = 10 if FULL else 1
    build(str(path), jobs=2_000 * scale, attempts=6_000 * scale)
    return str(path)


async def test_every_screen_reads_pages_not_tables(large_db: str) -> None:
    url = f"sqlite:///{large_db}"
    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_ADMINS=ADMIN, _env_file=None)
    store = await Store.open(url)
    statements: list[str] = []

    @sa.event.listens_for(store._engine.sync_engine, "before_cursor_execute")
    def spy(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(" ".join(statement.split()))

    try:
        app = make_app(
            settings, Herald(store, settings, SystemClock()), ADMIN, refresh_interval=3600
        )
        async with run(app, size=(120, 40)) as pilot:
            await settle(pilot)
            shown = {}
            for key, extra in [
                ("2", ["slash", *"owner:local:user7", "enter"]),
                ("3", ["p"]),
                ("4", ["slash", *"outcome:permanent", "enter"]),
                ("5", ["g", "down"]),
                ("6", []),
                ("7", ["f"]),
            ]:
                await pilot.press(key)
                await settle(pilot)
                rows = len(app.screen.query_one("#table", PageTable).keys)
                await pilot.press(*extra)
                await settle(pilot)
                shown[app.screen.title] = rows
                assert rows <= PAGE
            await pilot.press("4", "enter")  # one attempt's timeline
            await settle(pilot)
    finally:
        await store.close()
    assert shown["Schedules"] == PAGE and shown["Delivery log"] == PAGE  # full pages...
    selects = [s for s in statements if s.upper().startswith(("SELECT", "WITH"))]
    assert len(selects) > 20
    unbounded = [s for s in selects if not BOUNDED.search(s)]
    assert unbounded == []  # ...and never a whole table
    assert any("count(" in s.lower() and "GROUP BY job.state" in s for s in selects)


@pytest.mark.full("the console benchmark's own command line")
async def test_benchmark_command_line_builds_and_measures(tmp_path: Path) -> None:
    from bench.console_bench import _measure

    path = tmp_path / "tiny.db"
    counts = build(str(path), jobs=2_000, attempts=6_000)
    assert counts["jobs"] == 2_000 and 5_000 < counts["attempts"] <= 6_000
    figures = await _measure(f"sqlite:///{path}", repeat=1)
    assert {"first_screen_overview", "filter_schedules_text", "queue_view_pending"} <= set(figures)
    assert all(f["median_ms"] > 0 for f in figures.values())
