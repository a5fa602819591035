"""5 · Dead letters: grouped by reason; retry or request a retry, approve or reject
requests, discard; on a selection or on everything matching."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from core import verbs
from core.errors import HeraldError
from core.store import DeadFilter, DeadGroup, DeadLetter
from tui.filters import FilterError, dead_filter
from tui.format import CELL, ago, clip, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer, screen_keys, verb_gates
from tui.screens.detail import DetailScreen
from tui.screens.prompt import PromptScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("job", 10, keep=7),
    Col("died", 8, keep=8),
    Col("owner", 24, keep=3, least=8),
    Col("to", 30, keep=5, least=12),
    Col("tries", 5, keep=2),
    Col("retry", 40, keep=4, least=12),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("error", 60, keep=6, least=12),
    Col("tenant", 24, keep=1),
)
#: The actions on dead letters (core/verbs.py, those the console offers): retry,
#: approve, reject, discard, by name.
ACTIONS = {v.name: v for v in verbs.offered(verbs.CONSOLE, verbs.DEAD_VERBS)}
NAMES = {name: v.label for name, v in ACTIONS.items()}
#: How a notice starts, by what the use case says happened ("retried", "requested", …).
DONE = {v.past: v.done for v in ACTIONS.values()} | {"requested": "Requested a retry of"}


def _bindings() -> list[Binding]:
    """Each action's key on a row or a selection (in the footer) and its capital on
    everything matching (in the keys panel and the command palette)."""
    one = [
        Binding(v.key, f"act('{v.name}')", v.label, id=f"{v.name}-dead-letter")
        for v in ACTIONS.values()
    ]
    every = [
        Binding(
            v.key.upper(),
            f"act_all('{v.name}')",
            f"{v.label} all matching",
            id=f"{v.name}-all-dead-letters",
            show=False,
        )
        for v in ACTIONS.values()
    ]
    return [*one, Binding("g", "focus_groups", "Reasons", id="dead-groups", show=False), *every]


def _verb_of(action: str) -> verbs.Verb | None:
    """The verb of an action: ``act('discard')`` and ``act_all('discard')`` are discard."""
    for prefix in ("act('", "act_all('"):
        if action.startswith(prefix):
            return ACTIONS.get(action.removeprefix(prefix).removesuffix("')"))
    return None


class DeadLettersScreen(ConsoleScreen):
    TITLE = "Dead letters"
    FOCUS = "#table"
    NOTES = ("view.everyone",)
    # the footer (80 columns) shows the filter and the decisions on a row or a selection;
    # the rest are in the keys panel (?) and the command palette
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="filter"),
        *_bindings(),
        *screen_keys(show=False),
        *PAGING,
    ]
    # greyed out for a role the table's ``who`` leaves out (core decides, and audits)
    GATED = verb_gates(BINDINGS, _verb_of)

    def __init__(self) -> None:
        super().__init__()
        self.filter = DeadFilter()
        self.filter_text = ""
        self.reason: str | None = None
        self.groups: list[DeadGroup] = []
        self.groups_stale = True
        self.rows: dict[str, DeadLetter] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield OptionList(id="groups")
        yield FilterBar("/ filter: to:DEST requested:yes|no tenant:ID", id="filter")
        yield PageTable(*COLUMNS, selectable=True, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#groups", OptionList).border_title = "Reasons"
        super().on_mount()

    def scope(self) -> DeadFilter:
        return replace(self.filter, reason=self.reason)

    def reload(self) -> None:
        self.groups_stale = True
        super().reload()

    def reload_page(self) -> None:
        """Read the letters only (a reason was picked: the groups did not change)."""
        super().reload()

    async def fetch(self) -> Any:
        groups = self.groups
        if self.groups_stale:
            groups = await self.herald.dead_groups(self.principal, self.filter)
        page = await self.herald.dead_page(
            self.principal, self.scope(), before=self.pages[-1], limit=PAGE
        )
        return groups, page

    def show(self, data: Any) -> None:
        groups, letters = data
        self._show_groups(groups)
        self.groups_stale = False
        now = self.herald.clock.now()
        self.rows = {str(d.job_id): d for d in letters}
        self.table.show(
            [
                (
                    str(d.job_id),
                    (
                        str(d.job_id),
                        ago(d.finished_at, now),
                        d.owner,
                        self.destination(d.destination, d.owner),
                        str(d.attempts),
                        clip(d.retry_note, CELL),
                        clip(d.body, CELL),
                        clip(d.last_error, CELL),
                        d.tenant,
                    ),
                )
                for d in letters
            ]
        )
        last = letters[-1] if len(letters) >= PAGE else None
        self.last_keyset = None if last is None else (last.finished_at, last.job_id)
        self.update_pane()
        self.update_status()
        self.update_role_note()

    def describe(self, key: str) -> str:
        d = self.rows.get(key)
        if d is None:
            return ""
        tries = f"{d.attempts} tr{'ies' if d.attempts != 1 else 'y'}"
        died = stamp(d.finished_at, self.zone, seconds=False)
        lines = [d.body, f"Error: {d.last_error or '(none)'}"]
        if d.retry_note:
            lines.append(f"Retry {d.retry_note}")
        lines.append(
            f"Job {d.job_id} of schedule {d.schedule_id} · died {died} after {tries} · "
            f"{d.owner} → {self.destination(d.destination, d.owner)} · {d.tenant}"
        )
        return "\n".join(lines)

    def _show_groups(self, groups: list[DeadGroup]) -> None:
        if groups == self.groups:
            return
        self.groups = groups
        options = self.query_one("#groups", OptionList)
        total = sum(g.count for g in groups)
        asked = sum(g.requested for g in groups)
        options.clear_options()
        options.add_option(Option(f"All reasons · {total:,} ({asked:,} asked)", id="all"))
        for i, g in enumerate(groups):
            label = f"{g.count:>6,} ({g.requested:,} asked) {clip(g.reason or '(no error)', 90)}"
            options.add_option(Option(label, id=f"g{i}"))
        reasons = [g.reason for g in groups]
        index = reasons.index(self.reason) + 1 if self.reason in reasons else 0
        with options.prevent(OptionList.OptionHighlighted):
            options.highlighted = index

    @on(OptionList.OptionHighlighted, "#groups")
    def pick_group(self, event: OptionList.OptionHighlighted) -> None:
        option_id = event.option.id or "all"
        reason = None if option_id == "all" else self.groups[int(option_id[1:])].reason
        if reason != self.reason:
            self.reason = reason
            self.first_page()
            self.reload_page()

    def update_status(self) -> None:
        parts = [self.page_note(len(self.rows), PAGE)]
        if self.reason is not None:
            parts.append(f"reason: {clip(self.reason, 30)}")
        if self.table.selected:
            parts.append(f"{len(self.table.selected)} selected")
        if self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        self.query_one("#status", Static).update(" · ".join(parts))

    def on_page_table_selection_changed(self, _: PageTable.SelectionChanged) -> None:
        self.update_status()

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        try:
            self.filter = dead_filter(event.value, None)
        except FilterError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.filter_text = event.value.strip()
        self.first_page()
        self.table.focus()
        self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterBar).focus()

    def action_focus_groups(self) -> None:
        self.query_one("#groups", OptionList).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(job_id=int(event.row_key.value)))

    # --- actions ----------------------------------------------------------------------

    def attempt(self, action: str, *, every: bool = False) -> None:
        """Run ``action`` past the role gate: core decides (and audits a refusal)."""
        if every:
            self.action_act_all(action)
        else:
            self.action_act(action)

    def action_act(self, action: str) -> None:
        """On the selected rows, or else the row under the cursor."""
        ids = sorted(int(k) for k in self.table.selected)
        if not ids:
            key = self.table.cursor_key()
            if key is None:
                return
            ids = [int(key)]
        count = f"{len(ids)} dead letter{'s' if len(ids) != 1 else ''}"
        if "reason" in ACTIONS[action].options:  # a rejection says why
            self._ask_reason(f"Reject the retry request of {count}?", ids=ids)
        elif len(ids) == 1 and action != "discard":
            self.act(self._call(action, ids=ids))
        else:
            self.confirm(f"{NAMES[action]} {count}?", self._call(action, ids=ids))

    def action_act_all(self, action: str) -> None:
        self._confirm_all(action)

    @work(group="action", exit_on_error=False)
    async def _confirm_all(self, action: str) -> None:
        scope = self.scope()
        if action in ("approve", "reject"):
            scope = replace(scope, requested=True)
        try:
            count = await self.herald.count_dead(self.principal, scope)
        except HeraldError as exc:
            self.notify(str(exc), title="Refused", severity="error")
            return
        what = f"{NAMES[action]} all {count:,} dead letter{'s' if count != 1 else ''} matching"
        where = [f"reason {clip(self.reason, 40)!r}"] if self.reason is not None else []
        where += [self.filter_text] if self.filter_text else []
        question = f"{what} {' · '.join(where) or 'no filter (all)'}?"
        if action == "reject":
            self._ask_reason(question, f=self.scope())
        else:
            self.confirm(question, self._call(action, f=self.scope()))

    def _ask_reason(
        self, question: str, *, ids: list[int] | None = None, f: DeadFilter | None = None
    ) -> None:
        """A rejection says why: whoever asked reads it. (Without the role, core
        refuses and audits the attempt; no reason is asked for first.)"""
        if self.why_not("act('reject')"):
            self.act(self._call("reject", ids=ids, f=f))
            return

        def answered(reason: str | None) -> None:
            if reason:
                self.act(self._call("reject", ids=ids, f=f, reason=reason))

        prompt = PromptScreen(
            f"{question}\nSay why: whoever asked reads it with their dead letters.",
            "e.g. the channel is archived; schedule it to another one",
            required="A reason is needed: it is all whoever asked will read. Esc cancels.",
        )
        self.app.push_screen(prompt, answered)

    def _call(
        self,
        action: str,
        *,
        ids: list[int] | None = None,
        f: DeadFilter | None = None,
        reason: str | None = None,
    ) -> Any:
        async def run() -> str:
            verb, count = await self.herald.dead_letter_action(
                self.principal, action, ids=ids, f=f, reason=reason
            )
            self.table.action_clear_selection()
            return f"{DONE.get(verb, verb)} {count} dead letter{'s' if count != 1 else ''}."

        return run
