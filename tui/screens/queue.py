"""3 · Queue: jobs due now, pending, in flight (lease owner and expiry), retrying."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from core.store.console import QueueRow
from tui.filters import QUEUE_VIEWS
from tui.format import ago, clip, dest
from tui.screens.base import PAGE, PAGING, ConsoleScreen
from tui.screens.detail import DetailScreen
from tui.widgets.table import PageTable

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
        self.view = "due"

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="views")
        yield PageTable(
            "job",
            "schedule",
            "state",
            "due",
            "tries",
            "lease",
            "owner",
            "to",
            "last error",
            "tenant",
            id="table",
        )
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield Footer()

    async def fetch(self) -> Any:
        return await self.herald.queue_page(
            self.principal, self.view, after=self.pages[-1], limit=PAGE
        )

    def show(self, data: Any) -> None:
        rows: list[QueueRow] = data
        now = self.herald.clock.now()
        table = self.query_one("#table", PageTable)
        table.show(
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
                        clip(r.owner, 16),
                        clip(dest(r.destination), 22),
                        clip(r.last_error, 40),
                        clip(r.tenant, 24),
                    ),
                )
                for r in rows
            ]
        )
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

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(job_id=int(event.row_key.value)))
