"""The console shows what is new (issue 33): rows that arrive above the view are marked
("45 new ↑") until they are scrolled into view or ``home`` is pressed, a list whose
cursor is on its first row follows the newest rows, the Queue opens on the view that
has jobs, ``?`` lists the screen's own keys first, and every key a screen binds is in
its footer or its keys panel. At 80×24, through the Pilot."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding

from core.cases import Herald
from core.clock import ManualClock
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, run, screen_text, settle, table
from tests.tui.test_schedules_screen import help_text
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.app import SCREEN_CLASSES
from tui.screens.detail import DetailScreen
from tui.widgets.keys import EVERYWHERE, MOVING, key_sections

SIZE = (80, 24)


def marker(app: Any) -> str:
    """The new-rows marker over the list, or "" when it is hidden."""
    found = app.screen.query("#new-rows")
    if not found or not found.first().display:
        return ""
    return " ".join(screen_text(app).splitlines()[found.first().region.y].split())


def first_shown(app: Any) -> str:
    """The key of the first row in view."""
    t = table(app)
    return t.keys[int(t.scroll_y)]


async def add_audit_rows(herald: Herald, count: int, actor: str = MEMBER) -> None:
    """``count`` new rows of the audit log (each schedule made writes one)."""
    for i in range(count):
        await herald.create_schedule(actor, to="log:", when="in 3 hours", text=f"n{i}", tz="UTC")


@pytest.fixture
async def long_log(herald: Herald, seeded: dict[str, Any]) -> dict[str, Any]:
    """The seeded rows and 30 more (the operator's): more audit rows than the view
    shows at 80×24."""
    await add_audit_rows(herald, 30, OPERATOR)
    return seeded


async def refresh(app: Any, pilot: Any) -> None:
    """One live refresh (the tests' console refreshes hourly: the test drives it)."""
    app.screen.reload()
    await settle(pilot)


async def test_rows_arriving_above_the_view_are_marked_until_seen(
    console: Any, herald: Herald, long_log: dict[str, Any], tmp_path: Path
) -> None:
    app = console(OPERATOR, mode="audit")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down")  # reading the second row: the list must not move
        await settle(pilot)
        reading, top = table(app).cursor_key(), first_shown(app)
        assert marker(app) == ""
        await add_audit_rows(herald, 45)
        await refresh(app, pilot)
        assert marker(app) == "45 new ↑ · home shows them"
        assert table(app).cursor_key() == reading and first_shown(app) == top
        svg = app.save_screenshot("audit-new-rows.svg", path=str(tmp_path))
        compare(Path(svg), SNAPSHOTS / "audit-new-rows-80x24.txt", SIZE[0])
        await add_audit_rows(herald, 2)  # more: the count grows, the view still stays
        await refresh(app, pilot)
        assert marker(app) == "47 new ↑ · home shows them"
        assert table(app).cursor_key() == reading and first_shown(app) == top
        await pilot.press(*["up"] * 11)  # scrolling up shows them, a row at a time
        await settle(pilot)
        assert marker(app) == "37 new ↑ · home shows them"
        await pilot.press("home")
        await settle(pilot)
        assert marker(app) == ""
        newest = str(max(int(key) for key in table(app).keys))
        assert table(app).cursor_key() == newest and table(app).scroll_y == 0
        first_line = screen_text(app).splitlines()[table(app).region.y + 1]
        assert "local:bob" in first_line  # the newest row (bob's) is in view


@pytest.mark.parametrize("mode", ["schedules", "queue", "audit"])
async def test_every_list_marks_what_arrives_above_the_view(
    console: Any, herald: Herald, long_log: dict[str, Any], mode: str
) -> None:
    """Schedules newest first, the queue by due time (sooner ones arrive at the top),
    the audit log newest first: one live refresh, one marker, the same rows in view."""
    app = console(ADMIN, mode=mode)
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        reading, top = table(app).cursor_key(), first_shown(app)
        for i in range(5):
            await herald.create_schedule(
                MEMBER, to="log:", when="in 30 minutes", text=f"soon {i}", tz="UTC"
            )
        await refresh(app, pilot)
        assert marker(app) == "5 new ↑ · home shows them", mode
        assert table(app).cursor_key() == reading and first_shown(app) == top


async def test_scrolling_to_the_top_clears_the_marker(
    console: Any, herald: Herald, long_log: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="audit")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down")
        await add_audit_rows(herald, 3)
        await refresh(app, pilot)
        assert marker(app) == "3 new ↑ · home shows them"
        await pilot.press("up", "up", "up")  # the cursor reaches the view's top, then above
        await settle(pilot)
        assert marker(app) == "2 new ↑ · home shows them"
        table(app).scroll_to(y=0, animate=False, immediate=True)  # the mouse wheel
        await settle(pilot)
        assert marker(app) == ""


async def test_a_list_with_its_cursor_on_the_first_row_follows_the_newest(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="schedules")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        assert table(app).cursor_row == 0
        s, _ = await herald.create_schedule(MEMBER, to="log:", when="in 1 day", text="fresh")
        await refresh(app, pilot)
        assert table(app).cursor_key() == str(s.id) and table(app).scroll_y == 0
        assert marker(app) == ""
        assert "fresh" in screen_text(app)


async def test_a_new_filter_is_a_new_list_not_new_rows(
    console: Any, herald: Herald, long_log: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="audit")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down")
        await add_audit_rows(herald, 5)
        await refresh(app, pilot)
        assert marker(app) == "5 new ↑ · home shows them"
        await pilot.press("slash", *"action:schedule", "enter")
        await settle(pilot)
        assert marker(app) == ""


async def test_the_queue_opens_on_the_view_with_jobs(
    console: Any, herald: Herald, clock: ManualClock, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="queue")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        assert "Pending · page 1 · 2 rows" in screen_text(app)  # nothing is due now
    clock.advance(timedelta(hours=3))  # the release is due: no dispatcher took it
    app = console(ADMIN, mode="queue")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        assert "Due now · page 1 · 1 row" in screen_text(app)
        assert table(app).keys == [str(seeded["release"])]
        await pilot.press("p")
        await settle(pilot)
        assert table(app).keys == [str(seeded["standup"])]


async def test_an_empty_queue_opens_on_pending(console: Any) -> None:
    app = console(ADMIN, mode="queue")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        assert "Pending · page 1 · 0 rows" in screen_text(app)


async def test_the_keys_panel_lists_the_screens_own_keys_first(
    console: Any, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="schedules")
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        keys = help_text(app)
        assert keys.startswith("Schedules / Filter n New e Edit p Pause u Resume k Skip next")
        own, everywhere, moving = (keys.index(t) for t in ("Schedules", EVERYWHERE, MOVING))
        assert own < keys.index("space Select") < everywhere < keys.index("? Keys") < moving
        assert moving < keys.index("↑ Cursor up")
        # and what the panel shows is what is on screen (its first lines, at 80×24)
        panel = app.screen.query_one("KeysPanel")
        right = [line[panel.region.x :] for line in screen_text(app).splitlines()]
        assert [" ".join(line.split()) for line in right[1:4]] == [
            "Schedules",
            "/ Filter",
            "n New",
        ]


def keys_of(bindings: list[Any]) -> list[tuple[str, str]]:
    """Each key of a screen's bindings with its description."""
    return [
        (key.strip(), b.description)
        for b in bindings
        if isinstance(b, Binding)
        for key in b.key.split(",")
    ]


async def open_screen(app: Any, pilot: Any, name: str, seeded: dict[str, Any]) -> None:
    if name == "detail":
        app.push_screen(DetailScreen(schedule_id=seeded["standup"]))
    await settle(pilot)


@pytest.mark.parametrize("name", [*SCREEN_CLASSES, "detail"])
async def test_every_key_of_a_screen_is_in_its_footer_or_keys_panel(
    console: Any, seeded: dict[str, Any], name: str
) -> None:
    app = console(ADMIN, mode="overview" if name == "detail" else name)
    async with run(app, size=SIZE) as pilot:
        await open_screen(app, pilot, name, seeded)
        screen = app.screen
        footer = " ".join(screen_text(app).splitlines()[-1].split())
        await pilot.press("question_mark")
        await settle(pilot)
        panel = {
            (key, row.binding.description)
            for _, rows in key_sections(screen)
            for row in rows
            for key in row.keys
        }
        for key, description in keys_of(type(screen).BINDINGS):
            shown = app.get_key_display(Binding(key, ""))
            in_footer = f"{shown} {description}" in footer
            assert in_footer or (shown, description) in panel, (name, key, description)
        # and the panel, as drawn, names them
        listed = help_text(app)
        for _, description in keys_of(type(screen).BINDINGS):
            assert description in listed, (name, description)


@pytest.mark.parametrize(
    ("mode", "must"),
    [
        ("schedules", ["n New", "e Edit", "p Pause", "u Resume", "k Skip next", "c Cancel"]),
        ("dead", ["r Retry", "a Approve", "x Reject", "d Discard"]),
        ("queue", ["d Due", "p Pending", "i In flight", "r Retrying"]),
    ],
)
async def test_the_footer_shows_the_most_important_keys_within_80_columns(
    console: Any, seeded: dict[str, Any], mode: str, must: list[str]
) -> None:
    app = console(ADMIN, mode=mode)
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert len(footer) <= SIZE[0]
        for label in [*must, "? Keys"]:
            assert label in footer, (mode, label, footer)
