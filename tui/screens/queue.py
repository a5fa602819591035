"""3 · Queue: jobs due now, pending, in flight (lease owner and expiry), retrying.

It opens on the first of those views that has jobs (due now, else pending, else in
flight, else retrying; pending when the queue is empty), never on an empty view while
jobs wait in another."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from core.store import QueueRow
from tui.filters import QUEUE_VIEWS
from tui.format import CELL, ago, clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer
from tui.screens.detail import DetailScreen
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("job", 10, keep=7),
    Col("schedule", 10, keep=3),
    Col("state", 10, keep=6),
    Col("due", 8, keep=9),
    Col("tries", 5, keep=2),
    Col("lease", 40, keep=4, least=12),
    Col("owner", 24, keep=3, least=8),
    Col("to", 30, keep=5, least=12),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("last error", 60, keep=5, least=12),
    Col("tenant", 24, keep=1),
)
_KEYS = {"due": "d", "pending": "p", "in_flight": "i", "retrying": "r"}


class QueueScreen(ConsoleScreen):
    TITLE = "Queue"
    NOTES = ("view.everyone",)
    VIEWS = {view: (_KEYS[view], label) for view, label in QUEUE_VIEWS.items()}
    FOCUS = "#table"
    BINDINGS = [
        Binding("d", "view('due')", "Due", id="queue-due"),
        Binding("p", "view('pending')", "Pending", id="queue-pending"),
        Binding("i", "view('in_flight')", "In flight", id="queue-in-flight"),
        Binding("r", "view('retrying')", "Retrying", id="queue-retrying"),
        *PAGING,
    ]

    def __init__(self) -> None:
        super().__init__()
        #: The view shown: none ("") until the first read has chosen one (or a key
        #: has), which looks for a view with jobs.
        self.view = ""
        self.rows: dict[str, QueueRow] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="views")
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        if self.view:
            return self.view, await self.herald.queue_page(
                self.principal, self.view, after=self.pages[-1], limit=PAGE
            )
        for view in QUEUE_VIEWS:  # the first view with jobs
            rows = await self.herald.queue_page(self.principal, view, limit=PAGE)
            if rows:
                return view, rows
        return "pending", []

    def show(self, data: Any) -> None:
        view, rows = data
        if view != self.view:
            if self.view:  # read before a key chose another view: its read follows
                return
            self.view = view
            self._draw_views()
        now = self.herald.clock.now()
        self.rows = {str(r.job_id): r for r in rows}
        self.table.show(
            [
                (
                    str(r.job_id),
                    (
                        str(r.job_id),
                        str(r.schedule_id),
                        r.state,
                        ago(r.due_at, now),
                        str(r.attempts),
                        f"{r.lease_owner} {ago(r.lease_expires_at, now)}" if r.lease_owner else "",
                        r.owner,
                        self.destination(r.destination, r.owner),
                        clip(r.body, CELL),
                        clip(r.last_error, CELL),
                        r.tenant,
                    ),
                )
                for r in rows
            ]
        )
        self.update_pane()
        last = rows[-1] if len(rows) >= PAGE else None
        if last is None:
            self.last_keyset = None
        else:
            key = last.lease_expires_at if self.view == "in_flight" else last.due_at
            self.last_keyset = (key, last.job_id)
        self.query_one("#status", Static).update(
            f"{QUEUE_VIEWS[self.view]} · {self.page_note(len(rows), PAGE)}"
        )
        self.update_role_note()

    def describe(self, key: str) -> str:
        r = self.rows.get(key)
        if r is None:
            return ""
        now = self.herald.clock.now()
        tries = f"{r.attempts} tr{'ies' if r.attempts != 1 else 'y'}"
        lease = (
            f" · leased by {r.lease_owner} {ago(r.lease_expires_at, now)}" if r.lease_owner else ""
        )
        lines = [r.body]
        if r.last_error:
            lines.append(f"Last error: {r.last_error}")
        to = self.destination(r.destination, r.owner)
        lines.append(
            f"Job {r.job_id} of schedule {r.schedule_id} · {r.state} · due "
            f"{stamp(r.due_at, self.zone)} · {tries}{lease} · {r.owner} → {to} · {r.tenant}"
        )
        return "\n".join(lines)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(job_id=int(event.row_key.value)))
