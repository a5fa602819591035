"""7 · Calendars: every calendar source (skip calendars and event feeds), whether its
refreshes work, since when one fails and why, and what uses it. URLs show their host
only (core redacts them)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Static

from core.store import CalendarPage, CalendarRow
from tui.format import CELL, ago, clip, span, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer
from tui.widgets.table import Col, PageTable


def uses(row: CalendarRow) -> str:
    """What reads the calendar: ``feed`` (reminders), ``skip`` (dates to skip), both."""
    found = [name for name, used in (("feed", row.feeds), ("skip", row.skipping)) if used]
    return "+".join(found) or "-"


def status(row: CalendarRow) -> Text:
    """``ok``, ``failing ×N`` (N refreshes in a row), or ``file`` (an upload)."""
    if not row.is_url:
        return Text("file")
    if row.failing:
        return Text(f"failing ×{row.failures}", style="bold red")
    return Text("ok")


def describe(row: CalendarRow, now: datetime, zone: str) -> str:
    """The highlighted calendar in full: what it is, its refresh state, its last error,
    and its feeds with their waiting reminders."""
    lines = [f"Calendar {row.id} · {row.name or '(no name)'} · {row.source} · {row.owner}"]
    if not row.is_url:
        lines.append(f"Uploaded {stamp(row.fetched_at, zone)}; never refreshed.")
    elif row.failing:
        since = ago(row.error_at, now).replace(" ago", "")
        tries = f"{row.failures} tr{'ies' if row.failures != 1 else 'y'} in a row"
        lines.append(
            f"Failing for {since} ({tries}) · last success {stamp(row.fetched_at, zone)} · "
            f"last try {stamp(row.checked_at, zone)} · its last good copy stays in use"
        )
        lines.append(f"Last error: {row.last_error}")
    else:
        lines.append(
            f"Refreshes work · last success {stamp(row.fetched_at, zone)}"
            f" · last try {stamp(row.checked_at, zone)}"
        )
    used = [
        f"feed {f.feed_id} → {f.destination} ({span(timedelta(seconds=f.before_s))} before, "
        f"{f.pending} waiting)"
        for f in row.feeds
    ]
    if row.skipping:
        which = "1 schedule skips" if row.skipping == 1 else f"{row.skipping} schedules skip"
        used.append(f"{which} its dates")
    lines.append("Used by: " + ("; ".join(used) if used else "nothing"))
    return "\n".join(lines)


#: The columns, and how they give way at 80 columns.
COLUMNS = (
    Col("id", 10, keep=8),
    Col("name", 30, keep=7, least=10),
    Col("state", 12, keep=9),
    Col("failing since", 13, keep=6),
    Col("last ok", 8, keep=3),
    Col("uses", 9, keep=2),
    Col("waiting", 7, keep=1),
    Col("source", 40, keep=5, least=12),
    Col("last error", CELL, keep=4, least=20, flex=True),
)


class CalendarsScreen(ConsoleScreen):
    TITLE = "Calendars"
    NOTES = ("view.everyone",)
    VIEWS = {"all": ("a", "All"), "failing": ("f", "Failing")}
    FOCUS = "#table"
    BINDINGS = [
        Binding("a", "view('all')", "All", id="calendars-all"),
        Binding("f", "view('failing')", "Failing", id="calendars-failing"),
        *PAGING,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view = "all"
        self.rows: dict[str, CalendarRow] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="views")
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        return await self.herald.calendars_page(
            self.principal,
            failing_only=self.view == "failing",
            after_id=self.pages[-1],
            limit=PAGE,
        )

    def show(self, data: Any) -> None:
        page: CalendarPage = data
        now = self.herald.clock.now()
        self.rows = {str(r.id): r for r in page.rows}
        table = self.query_one("#table", PageTable)
        table.show(
            [
                (
                    str(r.id),
                    (
                        str(r.id),
                        r.name,
                        status(r),
                        ago(r.error_at, now) if r.failing else "",
                        ago(r.fetched_at, now) if r.is_url else "",
                        uses(r),
                        str(r.pending) if r.feeds else "",
                        r.source,
                        clip(r.last_error, CELL),
                    ),
                )
                for r in page.rows
            ]
        )
        self.last_keyset = page.rows[-1].id if len(page.rows) >= PAGE else None
        failing = f"{page.failing} failing" if page.failing else "none failing"
        self.query_one("#status", Static).update(
            f"{page.calendars} calendar{'s' if page.calendars != 1 else ''} · {failing} · "
            + self.page_note(len(page.rows), PAGE)
        )
        self.update_pane()
        self.update_role_note()

    def describe(self, key: str) -> str:
        row = self.rows.get(key)
        return "" if row is None else describe(row, self.herald.clock.now(), self.zone)
