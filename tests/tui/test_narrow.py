"""The console at 80×24: on every screen the message text keeps at least 30 characters
(lower-priority columns shrink, then hide), the detail pane shows the highlighted row
in full, and the footer shows the keys that matter most, each whole."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Footer

from core.cases import Herald
from core.clock import ManualClock
from tests.tui.conftest import ADMIN, FAILING, OPERATOR, deliver, run, screen_text, settle
from tui.widgets.table import Col, PageTable, fit

LONG = (
    "Quarterly planning starts in the big room at ten; bring the roadmap drafts, "
    "last quarter's numbers and one question you want answered"
)
SIZE = (80, 24)

#: What each screen's footer must show whole at 80 columns.
FOOTERS = {
    "overview": ["1234567890 Screens", "? Keys", "q Quit"],
    "schedules": [
        "space Select",
        "n New",
        "e Edit",
        "p Pause",
        "u Resume",
        "k Skip next",
        "c Cancel",
        "? Keys",
        "q Quit",
    ],
    "queue": ["d Due", "p Pending", "i In flight", "r Retrying", "? Keys", "q Quit"],
    "deliveries": ["/ Filter", "f Follow", "1234567890 Screens", "? Keys", "q Quit"],
    "dead": [
        "space Select",
        "/ Filter",
        "r Retry",
        "a Approve",
        "x Reject",
        "d Discard",
        "? Keys",
        "q Quit",
    ],
    "audit": ["/ Filter", "1234567890 Screens", "? Keys", "q Quit"],
    "calendars": ["a All", "f Failing", "1234567890 Screens", "? Keys", "q Quit"],
    "awaiting": ["d Mark done", "1234567890 Screens", "? Keys", "q Quit"],
    "approvals": [
        "space Select",
        "a Approve",
        "x Reject",
        "h Decided too",
        "? Keys",
        "q Quit",
    ],
    "templates": [
        "n New",
        "e Edit",
        "d Remove",
        "s Sample data",
        "1234567890 Screens",
        "? Keys",
        "q Quit",
    ],
}


@pytest.fixture
async def long_text(herald: Herald, clock: ManualClock, seeded: dict[str, Any]) -> dict[str, Any]:
    """The long message three ways: a dead letter (with its failed attempt), a pending
    job, and a schedule; among the seeded rows."""
    dead, _ = await herald.create_schedule(
        OPERATOR, to=FAILING, when="in 1 minute", text=LONG, tz="UTC"
    )
    clock.advance(61)
    await deliver(herald, clock, fail=True, error="HTTP 410 Gone")
    waiting, _ = await herald.create_schedule(
        OPERATOR, to="webhook:https://hooks.example.com/x", when="in 2 hours", text=LONG, tz="UTC"
    )
    return {"dead": dead.id, "waiting": waiting.id}


def footer_line(app: Any) -> str:
    return screen_text(app).splitlines()[-1]


def pane_text(app: Any) -> str:
    """The detail pane's lines, borders off, as one line of words."""
    pane = app.screen.query_one("#pane")
    top, bottom = pane.region.y + 1, pane.region.bottom - 1
    lines = screen_text(app).splitlines()[top:bottom]
    return " ".join(" ".join(line.strip("│ ").split()) for line in lines)


def assert_footer_fits(app: Any, mode: str) -> None:
    line = footer_line(app)
    for label in FOOTERS[mode]:
        assert label in line, (mode, label, line)
    footer = app.screen.query_one(Footer)
    for key in footer.query("FooterKey"):
        assert key.region.right <= SIZE[0], (mode, key.key, key.region)


@pytest.mark.parametrize("mode", ["schedules", "queue", "deliveries", "dead"])
async def test_a_long_message_keeps_30_characters_and_the_pane_shows_it_all(
    console: Any, long_text: dict[str, Any], mode: str
) -> None:
    app = console(ADMIN, mode=mode)
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        if mode == "queue":
            await pilot.press("p")  # pending: the job not due yet
            await settle(pilot)
        table = app.screen.query_one("#table", PageTable)
        shown = [line for line in screen_text(app).splitlines() if LONG[:30] in line]
        assert shown, f"{mode}: the text is cut short:\n{screen_text(app)}"
        assert "text" in table.shown_columns
        row = next(i for i, line in enumerate(screen_text(app).splitlines()) if line in shown)
        table.move_cursor(row=row - table.region.y - 1)
        await settle(pilot)
        assert " ".join(LONG.split()) in pane_text(app)
        assert_footer_fits(app, mode)


@pytest.mark.parametrize(
    "mode", ["overview", "audit", "calendars", "templates", "awaiting", "approvals"]
)
async def test_the_other_screens_footers_fit(
    console: Any, seeded: dict[str, Any], mode: str
) -> None:
    app = console(ADMIN, mode=mode)
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        assert_footer_fits(app, mode)


async def test_lower_priority_columns_give_way_first(
    console: Any, long_text: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#table", PageTable)
        assert {"owner", "tenant"} <= set(table.shown_columns)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        # the rule in words keeps its room longer than the destination (in the pane)
        assert table.shown_columns == ["id", "state", "next run", "when", "text"]
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        assert "text" in table.shown_columns and "recipients" not in table.shown_columns


def test_fit_shrinks_then_hides_by_priority() -> None:
    columns = [
        Col("id", 10, keep=5),
        Col("owner", 20, keep=2, least=8),
        Col("text", 500, keep=9, least=30, flex=True),
        Col("tenant", 20, keep=1),
    ]
    natural = [3, 16, 120, 12]
    assert fit(columns, natural, 300, 2) == natural  # room for everything
    # owner shrinks, tenant hides, the text takes the rest
    assert fit(columns, natural, 60, 2) == [3, 8, 43, None]
    # then owner hides too; the text never goes below its least
    assert fit(columns, natural, 40, 2) == [3, None, 33, None]
    assert fit(columns, natural, 20, 2) == [None, None, 30, None]
    # a short text takes only what it needs; the others get their room back first
    assert fit(columns, [3, 16, 12, 12], 60, 2) == [3, 16, 12, 12]
