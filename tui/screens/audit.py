"""6 · Audit log: who did what, when, from which surface."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from core.models import Audit
from core.store import AuditFilter
from tui.filters import FilterError, audit_filter
from tui.format import CELL, clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer
from tui.screens.detail import DetailScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns.
COLUMNS = (
    Col("when", 14, keep=9),
    Col("actor", 30, keep=7, least=12),
    Col("via", 7, keep=6),
    Col("action", 30, keep=8, least=14),
    Col("object", 30, keep=5, least=10),
    Col("details", CELL, keep=2, least=20, flex=True),
    Col("tenant", 24, keep=1),
)


def details(row: Audit) -> str:
    return ", ".join(f"{k}={v}" for k, v in (row.details or {}).items())


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
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

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
                        r.actor,
                        surface(r),
                        r.action,
                        f"{r.object_type} {r.object_id}".strip(),
                        clip(details(r), CELL),
                        r.tenant,
                    ),
                )
                for r in rows
            ]
        )
        self.last_keyset = rows[-1].id if len(rows) >= PAGE else None
        self.update_pane()
        self.query_one("#status", Static).update(self.page_note(len(rows), PAGE))
        self.update_role_note()

    def describe(self, key: str) -> str:
        r = self.rows.get(key)
        if r is None:
            return ""
        what = f"{r.object_type} {r.object_id}".strip()
        about = f"{stamp(r.at, self.zone)} · {r.actor} via {surface(r)} · {r.action} · {what}"
        return f"{details(r) or '(no details)'}\n{about} · {r.tenant}"

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
