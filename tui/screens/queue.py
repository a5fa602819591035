"""3 · Queue: jobs due now, pending, in flight (lease owner and expiry), retrying.

It opens on the first of those views that has jobs (due now, else pending, else in
flight, else retrying; pending when the queue is empty), never on an empty view while
jobs wait in another. Each job shows its priority (``priority:`` filters by it); a job
held by its recipient's quiet hours shows as held, with the reason, and an operator
may send it now (``s``). ``m`` shows the member a job goes to (else its owner)."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from core.preferences import priority_name
from core.store import QueueRow
from tui.filters import QUEUE_VIEWS, FilterError, queue_filter
from tui.format import CELL, ago, clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer, screen_keys
from tui.screens.detail import DetailScreen
from tui.screens.member import MemberScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("job", 10, keep=7),
    Col("schedule", 10, keep=3),
    Col("state", 10, keep=6),
    Col("priority", 8, keep=4),
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
    # the footer (80 columns) shows the views and send now; the screen keys, the
    # filter (its bar names itself) and the member are in the keys panel (?)
    BINDINGS = [
        Binding("d", "view('due')", "Due", id="queue-due"),
        Binding("p", "view('pending')", "Pending", id="queue-pending"),
        Binding("i", "view('in_flight')", "In flight", id="queue-in-flight"),
        Binding("r", "view('retrying')", "Retrying", id="queue-retrying"),
        Binding(
            "s",
            "send_now",
            "Send now",
            id="queue-send-now",
            tooltip="a held job, at once despite quiet hours (operators, admins)",
        ),
        Binding(
            "m",
            "member",
            "Member",
            id="queue-member",
            show=False,
            tooltip="whom the job goes to: their preferences and quiet hours",
        ),
        Binding("slash", "focus_filter", "Filter", id="filter", show=False),
        *screen_keys(show=False),
        *PAGING,
    ]
    # greyed out for members (core decides, and audits an attempt anyway)
    GATED = {"send_now": "job.send_now"}

    def __init__(self) -> None:
        super().__init__()
        #: The view shown: none ("") until the first read has chosen one (or a key
        #: has), which looks for a view with jobs.
        self.view = ""
        self.rows: dict[str, QueueRow] = {}
        #: The priorities shown (None: every one) and the filter text that chose them.
        self.priorities: tuple[str, ...] | None = None
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="views")
        yield FilterBar("/ filter: priority:urgent|normal|bulk", id="filter")
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        if self.view:
            return self.view, await self.herald.queue_page(
                self.principal,
                self.view,
                after=self.pages[-1],
                limit=PAGE,
                priorities=self.priorities,
            )
        for view in QUEUE_VIEWS:  # the first view with jobs
            rows = await self.herald.queue_page(
                self.principal, view, limit=PAGE, priorities=self.priorities
            )
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
                        "held" if r.held else r.state,
                        priority_name(r.priority),
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
        status = f"{QUEUE_VIEWS[self.view]} · {self.page_note(len(rows), PAGE)}"
        if self.filter_text:
            status += f" · filter: {self.filter_text}"
        self.query_one("#status", Static).update(status)
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
        if r.held:  # the reason says until when and whose quiet hours
            send = "" if self.why_not("send_now") else " s sends it now."
            lines.append(f"{r.last_error}{send}")
        elif r.last_error:
            lines.append(f"Last error: {r.last_error}")
        to = self.destination(r.destination, r.owner)
        state = "held" if r.held else r.state
        lines.append(
            f"Job {r.job_id} of schedule {r.schedule_id} · {state} · "
            f"{priority_name(r.priority)} · due {stamp(r.due_at, self.zone)} · {tries}{lease} "
            f"· {r.owner} → {to} · {r.tenant}"
        )
        return "\n".join(lines)

    def current(self) -> QueueRow | None:
        key = self.table.cursor_key()
        return None if key is None else self.rows.get(key)

    # --- filter -----------------------------------------------------------------------

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        try:
            self.priorities = queue_filter(event.value)
        except FilterError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.filter_text = event.value.strip()
        self.first_page()
        self.table.focus()
        self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterBar).focus()

    # --- actions ----------------------------------------------------------------------

    def action_send_now(self) -> None:
        """Send the held job under the cursor at once (after a yes)."""
        r = self.current()
        if r is None:
            return
        if not r.held:
            self.notify(
                f"Job {r.job_id} is not held ({r.state}): only a job held by quiet hours "
                "can be sent now.",
                title="Send now",
                severity="warning",
            )
            return
        job_id = r.job_id

        async def send() -> str:
            return await self.herald.send_now(self.principal, job_id)

        self.confirm(f"Send job {job_id} now, despite the hold?\n{r.last_error}", send)

    def action_member(self) -> None:
        """The member the job under the cursor goes to (a channel's: its owner)."""
        r = self.current()
        if r is None:
            return
        member = self.herald.person_of(r.destination) or r.owner
        self.app.push_screen(MemberScreen(member))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(job_id=int(event.row_key.value)))
