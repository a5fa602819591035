"""0 · Approvals: requests of every kind waiting for a second person (a member's message
held before it is sent, a dead letter's retry), the oldest first; ``a`` approves and
``x`` rejects (saying why) the highlighted one or a selection. ``h`` shows the decided
ones too (approved, rejected, expired, withdrawn)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from core import approvals, verbs
from core.models import ApprovalKind, ApprovalState
from core.store import ApprovalRow
from tui.format import CELL, ago, clip, stamp
from tui.screens.base import ConsoleScreen, footer, screen_keys, verb_gates
from tui.screens.detail import DetailScreen
from tui.screens.prompt import PromptScreen
from tui.widgets.table import Col, PageTable

#: The most requests the screen lists.
LIMIT = 200

#: The columns of the pending requests, and how they give way at 80 columns: the text
#: keeps at least 30.
PENDING_COLUMNS = (
    Col("id", 8, keep=9),
    Col("kind", 7, keep=8),
    Col("asked by", 24, keep=5, least=8),
    Col("asked", 8, keep=6),
    Col("expires", 8, keep=7),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("to", 30, keep=4, least=12),
    Col("why", 60, keep=2, least=12),
    Col("tenant", 24, keep=1),
)
#: With the decided ones: their state where the expiry was, and who decided.
ALL_COLUMNS = (
    *PENDING_COLUMNS[:4],
    Col("state", 9, keep=7),
    PENDING_COLUMNS[5],
    Col("decided by", 24, keep=3, least=8),
    *PENDING_COLUMNS[6:],
)
#: A kind in the list, and in full (the pane, the questions).
KIND_CELL = {ApprovalKind.SEND.value: "message", ApprovalKind.RETRY.value: "retry"}
KIND_WORDS = {
    ApprovalKind.SEND.value: "held message",
    ApprovalKind.RETRY.value: "dead-letter retry",
}
#: The decisions (core/verbs.py: approve, reject), by name.
ACTIONS = {v.name: v for v in verbs.offered(verbs.CONSOLE, verbs.APPROVAL_VERBS)}


def _verb_of(action: str) -> verbs.Verb | None:
    """The verb of an action: ``decide('approve')`` is approve."""
    if action.startswith("decide('"):
        return ACTIONS.get(action.removeprefix("decide('").removesuffix("')"))
    return None


#: Each decision's key on the highlighted request or a selection.
DECISIONS = [
    Binding(v.key, f"decide('{v.name}')", v.label, id=f"{v.name}-request") for v in ACTIONS.values()
]


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


class ApprovalsScreen(ConsoleScreen):
    TITLE = "Approvals"
    FOCUS = "#table"
    VIEWS = {"pending": ("p", "Pending"), "all": ("h", "With decided")}
    BINDINGS = [
        *DECISIONS,
        Binding("p", "view('pending')", "Pending", id="approvals-pending", show=False),
        Binding(
            "h",
            "view('all')",
            "Decided too",
            id="approvals-all",
            tooltip="Requests already approved, rejected, expired or withdrawn, with why",
        ),
        *screen_keys(show=False),
    ]
    # greyed out for a role the table's ``who`` leaves out (core decides, and audits)
    GATED = verb_gates(DECISIONS, _verb_of)

    def __init__(self) -> None:
        super().__init__()
        self.view = "pending"
        self.rows: dict[str, ApprovalRow] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="views")
        yield PageTable(*PENDING_COLUMNS, selectable=True, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    def why_not(self, action: str) -> str | None:
        """The table's rule (admins), except for the members ``HERALD_APPROVERS`` names:
        they decide held messages (core refuses them a retry, with its sentence)."""
        if action in self.GATED and approvals.is_approver(self.actor, self.console.settings):
            return None
        return super().why_not(action)

    async def fetch(self) -> Any:
        state = ApprovalState.PENDING.value if self.view == "pending" else None
        return await self.herald.approvals(self.principal, state=state, limit=LIMIT)

    def show(self, data: Any) -> None:
        rows: list[ApprovalRow] = data
        self.rows = {str(r.id): r for r in rows}
        pending = self.view == "pending"
        self.table.use_columns(PENDING_COLUMNS if pending else ALL_COLUMNS)
        self.table.show([(str(r.id), self.cells(r, pending=pending)) for r in rows])
        self.update_pane()
        self.update_status()
        self.update_role_note()

    def cells(self, r: ApprovalRow, *, pending: bool) -> tuple[str, ...]:
        """A request's row: its expiry while pending, else its state and who decided."""
        now = self.herald.clock.now()
        head = (str(r.id), KIND_CELL.get(r.kind, r.kind), r.requested_by, ago(r.requested_at, now))
        to = "-" if r.destination is None else self.destination(r.destination, r.owner)
        tail = (to, clip(r.why, CELL), r.tenant)
        if pending:
            return (*head, ago(r.expires_at, now), clip(r.body, CELL), *tail)
        return (*head, r.state, clip(r.body, CELL), r.decided_by or "-", *tail)

    def describe(self, key: str) -> str:
        r = self.rows.get(key)
        if r is None:
            return ""
        kind = KIND_WORDS.get(r.kind, r.kind)
        asked = stamp(r.requested_at, self.zone, seconds=False)
        about = f"Request {r.id} · {kind} · {r.state} · asked by {r.requested_by} {asked}"
        if r.why:
            about += f" · why: {r.why}"
        where = []
        if r.destination is not None:
            where.append(f"to {self.destination(r.destination, r.owner)}")
        if r.kind == ApprovalKind.SEND.value and r.expression:
            where.append(f"when {r.expression}")
        if r.state == ApprovalState.PENDING.value and r.expires_at is not None:
            where.append(f"expires {stamp(r.expires_at, self.zone, seconds=False)}")
        if r.schedule_id is not None:
            where.append(f"schedule {r.schedule_id}")
        if r.job_id is not None:
            where.append(f"job {r.job_id}")
        lines = [r.body or "(no text)", " · ".join([about, *where, r.tenant])]
        if r.decided_by is not None or r.reason:
            by = f" by {r.decided_by}" if r.decided_by else ""
            at = f" {stamp(r.decided_at, self.zone, seconds=False)}" if r.decided_at else ""
            lines.append(f"{r.state.capitalize()}{by}{at}" + (f": {r.reason}" if r.reason else ""))
        return "\n".join(lines)

    def update_status(self) -> None:
        parts = [plural(len(self.rows), "request")]
        if len(self.rows) >= LIMIT:
            parts.append(f"the {LIMIT} oldest")
        if self.table.selected:
            parts.append(f"{len(self.table.selected)} selected")
        parts.append("enter: its schedule")
        self.query_one("#status", Static).update(" · ".join(parts))

    def on_page_table_selection_changed(self, _: PageTable.SelectionChanged) -> None:
        self.update_status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self.rows.get(str(event.row_key.value))
        if row is None:
            return
        if row.kind == ApprovalKind.RETRY.value and row.job_id is not None:
            self.app.push_screen(DetailScreen(job_id=row.job_id))
        elif row.schedule_id is not None:
            self.app.push_screen(DetailScreen(schedule_id=row.schedule_id))

    # --- decisions --------------------------------------------------------------------

    def action_decide(self, action: str) -> None:
        """Approve or reject the selected requests, or else the highlighted one: one is
        decided at once, several once confirmed; a rejection asks why first."""
        ids = sorted(int(k) for k in self.table.selected)
        if not ids:
            key = self.table.cursor_key()
            if key is None:
                return
            ids = [int(key)]
        what = plural(len(ids), "request")
        if len(ids) == 1:
            row = self.rows.get(str(ids[0]))
            if row is not None:
                kind = KIND_WORDS.get(row.kind, row.kind)
                what = f"request {row.id} ({kind}: {clip(row.body, 40)})"
        verb = ACTIONS[action]
        if "reason" in verb.options:
            self._ask_reason(f"{verb.label} {what}?", ids)
        elif len(ids) == 1:
            self.act(self._call(action, ids))
        else:
            self.confirm(f"{verb.label} {what}?", self._call(action, ids))

    def _ask_reason(self, question: str, ids: list[int]) -> None:
        """A rejection says why: whoever asked reads it. (Without the role, core
        refuses and audits the attempt; no reason is asked for first.)"""
        if self.why_not("decide('reject')"):
            self.act(self._call("reject", ids))
            return

        def answered(reason: str | None) -> None:
            if reason:
                self.act(self._call("reject", ids, reason=reason))

        prompt = PromptScreen(
            f"{question}\nSay why: whoever asked reads it.",
            "e.g. not for the whole company; post it in #team instead",
            required="A reason is needed: it is all whoever asked will read. Esc cancels.",
        )
        self.app.push_screen(prompt, answered)

    def _call(self, action: str, ids: list[int], *, reason: str | None = None) -> Any:
        verb = ACTIONS[action]
        options = {} if reason is None else {"reason": reason}

        async def run() -> str:
            decided = await verbs.perform(self.herald, verb, self.principal, ids, **options)
            self.table.action_clear_selection()
            return f"{verb.done} {plural(decided.count, 'request')}."

        return run
