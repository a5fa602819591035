"""2 · Schedules: filter, act on one, on a selection, or on everything matching."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from core import until_done, verbs, views
from core.cases import SCHEDULE_BULK, parse_shift
from core.errors import HeraldError
from core.models import Schedule, ScheduleState
from core.store import ScheduleFilter
from tui.filters import FilterError, schedule_filter
from tui.format import CELL, ago, clip, span, stamp
from tui.screens.base import PAGE, PAGING, ConsoleScreen, footer, screen_keys, verb_gates
from tui.screens.detail import DetailScreen
from tui.screens.form import ScheduleFormScreen
from tui.screens.member import MemberScreen
from tui.screens.prompt import PromptScreen
from tui.widgets.filter_bar import FilterBar
from tui.widgets.table import Col, PageTable

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("id", 10, keep=7),
    Col("state", 17, keep=9),  # "awaiting approval" whole
    Col("next run", 9, keep=8),
    Col("when", 24, keep=7, least=10),  # the rule in words ("once" beside a next run)
    Col("owner", 24, keep=4, least=8),
    # the first recipient, and how many more ("+2"), which a cut never takes away
    Col("recipients", 30, keep=6, least=12, tail=True),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("tenant", 24, keep=1),
)
#: The console's verbs on schedules (core/verbs.py: those it offers with a key), by name.
ACTIONS = {
    v.name: v
    for v in verbs.offered(verbs.CONSOLE)
    if v.key and v.takes in ("schedule_id+version", "schedule_filter")
}
#: Those the use case also takes on a selection or everything matching (their capitals).
BULK = tuple(name for name in ACTIONS if name in SCHEDULE_BULK)
#: Verbs with an action of their own: a form (edit), a question naming the occurrence
#: (skip); the others act through ``bulk``.
OWN_ACTION = ("edit", "skip")
#: The verbs the footer shows at 80 columns (with space Select, n New, ? Keys and q
#: Quit); the rest (shift, send now, the capitals) are in the keys panel (?) and the command
#: palette, and ``/`` is named by the filter bar itself.
FOOTER = ("edit", "pause", "resume", "skip", "cancel")
VERBS = {name: v.label for name, v in ACTIONS.items()}
DONE = {name: v.done or v.label for name, v in ACTIONS.items()}


def _bindings() -> list[Binding]:
    """Each verb's key on a row or a selection, and its capital on everything matching
    where the use case acts in bulk."""
    one = [
        Binding(
            v.key,
            name if name in OWN_ACTION else f"bulk('{name}')",
            v.label,
            id=f"schedule-{name}",
            show=name in FOOTER,
        )
        for name, v in ACTIONS.items()
    ]
    every = [
        Binding(
            ACTIONS[name].key.upper(),
            f"bulk_all('{name}')",
            f"{ACTIONS[name].label} all matching",
            id=f"schedule-{name}-all",
            show=False,
        )
        for name in BULK
    ]
    return [*one, *every]


def _verb_of(action: str) -> verbs.Verb | None:
    """The verb of an action: ``edit``, ``skip``, ``bulk('pause')``, ``bulk_all('pause')``."""
    for prefix in ("bulk('", "bulk_all('"):
        if action.startswith(prefix):
            return ACTIONS.get(action.removeprefix(prefix).removesuffix("')"))
    return ACTIONS.get(action)


class SchedulesScreen(ConsoleScreen):
    TITLE = "Schedules"
    FOCUS = "#table"
    NOTES = ("view.everyone", "schedule.others")
    # the footer (80 columns) shows new and the actions on a row or a selection; the
    # rest are in the keys panel (?) and the command palette
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="filter", show=False),
        Binding("n", "new", "New", id="schedule-new"),
        *_bindings(),
        Binding(
            "m",
            "member",
            "Member",
            id="schedule-member",
            show=False,
            tooltip="the owner's preferences and quiet hours",
        ),
        *screen_keys(show=False),
        *PAGING,
    ]
    # greyed out for a role the table's ``who`` leaves out (core decides, and audits)
    GATED = verb_gates(BINDINGS, _verb_of)

    def __init__(self) -> None:
        super().__init__()
        self.filter = ScheduleFilter()
        self.filter_text = ""
        self.rows: dict[str, Schedule] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield FilterBar(
            "/ filter: words owner:ID to:DEST state:active,paused priority:urgent tenant:ID",
            id="filter",
        )
        yield PageTable(*COLUMNS, selectable=True, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        return await self.herald.schedules_page(
            self.principal, self.filter, before_id=self.pages[-1], limit=PAGE
        )

    def show(self, data: Any) -> None:
        schedules: list[Schedule] = data
        now = self.herald.clock.now()
        self.rows = {str(s.id): s for s in schedules}
        self.table.show(
            [
                (
                    str(s.id),
                    (
                        str(s.id),
                        s.shown_state,
                        ago(s.next_run_at, now),
                        views.when_column(s),
                        s.owner,
                        self.recipients_cell(s),
                        clip(views.shown_text(s), CELL),
                        s.tenant,
                    ),
                )
                for s in schedules
            ]
        )
        self.last_keyset = schedules[-1].id if len(schedules) >= PAGE else None
        self.update_pane()
        self.update_status()
        self.update_role_note()

    def describe(self, key: str) -> str:
        s = self.rows.get(key)
        if s is None:
            return ""
        when = stamp(s.next_run_at, self.zone, seconds=False)
        urgency = "" if s.priority == "normal" else f" · {s.priority}"
        about = f"Schedule {s.id} · {s.shown_state}{urgency} · next {when} · {s.owner} → "
        lines = [views.shown_text(s), f"{about}{self.recipients(s)} · {s.tenant}"]
        rule = until_done.of_options(s.options)
        if rule is not None:
            lines.append(f"Sent {until_done.describe(rule)}")
        if s.state == ScheduleState.AWAITING.value:
            lines.append("Nothing is sent until an approver approves it (Approvals, key 0).")
        return "\n".join(lines)

    def recipients(self, s: Schedule) -> str:
        """Every recipient, as the console's member may see them (a chain's steps
        joined by "or")."""
        return views.recipients_text(s, full=views.sees_destination(self.actor, s.owner))

    def recipients_cell(self, s: Schedule) -> str:
        """The list's cell: the first recipient's first destination, and "+2" for two
        more recipients (a chain shows as its first step)."""
        recipients = views.recipients_of(s)
        first = self.destination(recipients[0].first if recipients else s.destination, s.owner)
        return first if len(recipients) < 2 else f"{first} +{len(recipients) - 1}"

    def update_status(self) -> None:
        parts = [self.page_note(len(self.rows), PAGE)]
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
            self.filter = schedule_filter(event.value)
        except FilterError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.filter_text = event.value.strip()
        self.first_page()
        self.table.focus()
        self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", FilterBar).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None:
            self.app.push_screen(DetailScreen(schedule_id=int(key)))

    def current(self) -> Schedule | None:
        key = self.table.cursor_key()
        return None if key is None else self.rows.get(key)

    # --- one schedule ----------------------------------------------------------------

    def action_new(self) -> None:
        self.app.push_screen(ScheduleFormScreen(None), lambda _: self.reload())

    def action_edit(self) -> None:
        schedule = self.current()
        if schedule is not None:
            self.app.push_screen(ScheduleFormScreen(schedule), lambda _: self.reload())

    def action_member(self) -> None:
        schedule = self.current()
        if schedule is not None:
            self.app.push_screen(MemberScreen(schedule.owner))

    def action_skip(self) -> None:
        schedule = self.current()
        if schedule is None or schedule.id is None:
            return
        sid, version = schedule.id, schedule.version

        async def skip() -> str:
            await verbs.perform(self.herald, "skip", self.principal, sid, expected_version=version)
            return f"{verbs.verb('skip').done} schedule {sid}."

        when = ago(schedule.next_run_at, self._now())
        self.confirm(f"Skip the next occurrence ({when}) of schedule {sid}?", skip)

    def _now(self) -> Any:
        return self.herald.clock.now()

    # --- selection, cursor row or everything matching --------------------------------

    def action_bulk(self, action: str) -> None:
        """On the selected rows, or else the row under the cursor."""
        ids = tuple(sorted(int(k) for k in self.table.selected))
        if ids and action not in BULK:  # send now: one schedule at a time
            self.notify(
                f"{VERBS[action]} acts on one schedule, the one under the cursor: "
                "unselect the rows first (escape).",
                title=VERBS[action],
                severity="warning",
            )
            return
        if ids:
            self._plan(action, ScheduleFilter(ids=ids), "selected")
            return
        schedule = self.current()
        if schedule is None or schedule.id is None:
            return
        if action == "shift":
            self._plan(action, ScheduleFilter(ids=(schedule.id,)), "")
            return
        sid, version = schedule.id, schedule.version

        async def one() -> str:
            done = await verbs.perform(
                self.herald, action, self.principal, sid, expected_version=version
            )
            if action == "resume":
                upcoming = ago(done.next_run_at, self._now())
                return f"{DONE[action]} schedule {sid}; next run {upcoming}."
            if action == "send-now":  # which occurrence goes, and that the next ones stay
                said = "; ".join(views.save_notes(done)) or "sending now"
                return f"Schedule {sid}: {said}."
            return f"{DONE[action]} schedule {sid}."

        text = clip(schedule.body, 40)
        if action in ("pause", "resume"):
            self.act(one)
        elif action == "cancel":
            self.confirm(f"Cancel schedule {sid} ({text})? Its waiting jobs are cancelled.", one)
        elif action == "send-now":
            when = ago(schedule.next_run_at, self._now())
            later = "" if schedule.rrule is None else "; the later ones stay as planned"
            self.confirm(
                f"Send schedule {sid} ({text}) now? Its next occurrence ({when}) goes at "
                f"once{later}.",
                one,
            )
        else:
            self.confirm(f"{VERBS[action]} schedule {sid} ({text})?", one)

    def action_bulk_all(self, action: str) -> None:
        self._plan(action, self.filter, "matching " + (self.filter_text or "no filter (all)"))

    def _plan(self, action: str, target: ScheduleFilter, scope: str) -> None:
        if action == "shift":

            def asked(answer: str | None) -> None:
                if answer:
                    try:
                        by = parse_shift(answer, self._now())
                    except HeraldError as exc:
                        self.notify(str(exc), title="Shift", severity="error")
                        return
                    self._confirm_bulk(action, target, scope, by)

            prompt = PromptScreen(
                "Shift the next run by how long? (a minus sign moves it earlier)",
                "e.g. 2 hours, 90m, 1h30m, 1 day, -15 minutes",
            )
            self.app.push_screen(prompt, asked)
        else:
            self._confirm_bulk(action, target, scope, None)

    @work(group="action", exit_on_error=False)
    async def _confirm_bulk(self, action: str, target: ScheduleFilter, scope: str, by: Any) -> None:
        try:
            plan = await self.herald.plan_schedules_bulk(self.principal, action, target)
        except HeraldError as exc:
            self.notify(str(exc), title="Refused", severity="error")
            return
        what = f"{VERBS[action]} {plan.count} schedule{'s' if plan.count != 1 else ''}"
        if by is not None:
            what += f" by {span(by)}"
        question = " ".join(part for part in (what, scope) if part) + "?"
        if plan.note:
            question += f"\n{plan.note}."
        if plan.count == 0:
            self.notify(question.replace("?", ": nothing to do."), title=VERBS[action])
            return

        self.confirm(question, lambda: self._bulk(action, target, by, plan.count))

    async def _bulk(self, action: str, target: ScheduleFilter, by: Any, planned: int) -> str:
        count = await self.herald.bulk_schedules(self.principal, action, target, shift=by)
        self.table.action_clear_selection()
        done = f"{DONE[action]} {count} schedule{'s' if count != 1 else ''}."
        if action == "resume" and count < planned:
            done += (
                f" {planned - count} stayed paused: their time passed or their rule ended"
                " (edit them), or they changed meanwhile."
            )
        return done
