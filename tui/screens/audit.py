"""6 · Audit log: who did what, when, from which surface."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Input, Static

from core.models import Audit
from core.store.console import AuditFilter
from tui.filters import FilterError, audit_filter
from tui.format import clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen
from tui.screens.detail import DetailScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import PageTable


def surface(row: Audit) -> str:
    """Where an action came from, as its entry point said (``-``: it did not say)."""
    return row.surface or "-"


class AuditScreen(ConsoleScreen):
    TITLE = "Audit log"
    FOCUS = "#table"
    NOTES = ("view.everyone",)
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="filter"),
        *PAGING,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = AuditFilter()
        self.rows: dict[str, Audit] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield FilterBar(
            "/ filter: actor:ID action:PREFIX object:TYPE[:ID] via:SURFACE tenant:ID", id="filter"
        )
        yield PageTable("when", "actor", "via", "action", "object", "details", "tenant", id="table")
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield Footer()

    async def fetch(self) -> Any:
        return await self.herald.audit_log(
            self.principal, self.filter, before_id=self.pages[-1], limit=PAGE
        )

    def show(self, data: Any) -> None:
        rows: list[Audit] = data
        self.rows = {str(r.id): r for r in rows}
        self.query_one("#table", PageTable).show(
            [
                (
                    str(r.id),
                    (
                        stamp(r.at, self.zone),
                        clip(r.actor, 18),
                        surface(r),
                        r.action,
                        f"{r.object_type} {r.object_id}".strip(),
                        clip(", ".join(f"{k}={v}" for k, v in (r.details or {}).items()), 60),
                        clip(r.tenant, 24),
                    ),
                )
                for r in rows
            ]
        )
        self.last_keyset = rows[-1].id if len(rows) >= PAGE else None
        self.query_one("#status", Static).update(self.page_note(len(rows), PAGE))
        self.update_role_note()

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        try:
            self.filter = audit_filter(event.value)
        except FilterError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.first_page()
        self.query_one("#table", PageTable).focus()
        self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterBar).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self.rows.get(str(event.row_key.value))
        if row is None or not row.object_id.isdigit():
            return
        if row.object_type == "schedule":
            self.app.push_screen(DetailScreen(schedule_id=int(row.object_id)))
        elif row.object_type == "job":
            self.app.push_screen(DetailScreen(job_id=int(row.object_id)))
