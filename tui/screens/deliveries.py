"""4 · Delivery log: attempts newest first; filters; follow mode tails new attempts."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from core import views
from core.store import AttemptFilter, AttemptRow
from tui.filters import FilterError, attempt_filter
from tui.format import CELL, clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer
from tui.screens.detail import DetailScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("started", 14, keep=9),
    Col("outcome", 9, keep=8),
    Col("code", 4, keep=5),
    Col("job", 10, keep=4),
    Col("schedule", 10, keep=3),
    Col("to", 30, keep=7, least=12),
    Col("worker", 20, keep=2, least=8),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("error", 60, keep=6, least=12),
)


class DeliveriesScreen(ConsoleScreen):
    TITLE = "Delivery log"
    FOCUS = "#table"
    NOTES = ("view.everyone",)
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="filter"),
        Binding("f", "follow", "Follow", id="log-follow"),
        *PAGING,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = AttemptFilter()
        self.filter_text = ""
        self.follow = False
        self.rows: dict[str, AttemptRow] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield FilterBar(
            "/ filter: outcome:ok|retry|permanent to:DEST schedule:ID since:1h until:ISO",
            id="filter",
        )
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        return await self.herald.delivery_log(
            self.principal, self.filter, before=self.pages[-1], limit=PAGE
        )

    def owner(self) -> str | None:
        """Whose schedules every row shown is of, when one member's (an attempt names
        no owner): a member sees only their own, a filter may name one; else None."""
        return self.filter.owner if self.actor.sees_everything else self.actor.id

    def show(self, data: Any) -> None:
        rows: list[AttemptRow] = data
        self.rows = {str(r.id): r for r in rows}
        self.table.show(
            [
                (
                    str(r.id),
                    (
                        stamp(r.started_at, self.zone),
                        r.outcome,
                        "" if r.status_code is None else str(r.status_code),
                        str(r.job_id),
                        str(r.schedule_id),
                        self.destination(r.destination, self.owner()),
                        r.worker,
                        clip(r.body, CELL),
                        clip(r.error, CELL),
                    ),
                )
                for r in rows
            ]
        )
        if self.follow and rows:
            self.table.move_cursor(row=0, animate=False)
        self.update_pane()
        self.last_keyset = (rows[-1].started_at, rows[-1].id) if len(rows) >= PAGE else None
        parts = [self.page_note(len(rows), PAGE)]
        if self.follow:
            parts.insert(0, "following")
        if self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        self.query_one("#status", Static).update(" · ".join(parts))
        self.update_role_note()

    def describe(self, key: str) -> str:
        r = self.rows.get(key)
        if r is None:
            return ""
        code = "" if r.status_code is None else f" {r.status_code}"
        lines = [r.body]
        if r.error:
            lines.append(f"Error: {r.error}")
        handed = views.handoff(r, self.zone)  # "accepted by Twilio 09:00:01 · delivered …"
        if handed:
            lines.append(handed)
        late = views.delay(r)  # "delayed 4 min"
        if late:
            lines.append(late)
        to = self.destination(r.destination, self.owner())
        lines.append(
            f"Attempt {r.id} · job {r.job_id} of schedule {r.schedule_id} · {r.outcome}{code}"
            f" · {stamp(r.started_at, self.zone)} on {r.worker or '?'} · to {to}"
        )
        return "\n".join(lines)

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        try:
            self.filter = attempt_filter(event.value, self.herald.clock.now())
        except FilterError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.filter_text = event.value.strip()
        self.first_page()
        self.table.focus()
        self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterBar).focus()

    def action_follow(self) -> None:
        """Tail new attempts: back to the first page, the cursor on the newest row."""
        self.follow = not self.follow
        if self.follow:
            self.first_page()
        self.notify("Following new attempts." if self.follow else "Stopped following.")
        self.reload()

    def action_next_page(self) -> None:
        self.follow = False
        super().action_next_page()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(attempt_id=int(event.row_key.value)))
