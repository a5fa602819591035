"""A schedule, job or attempt in detail: content, rule in words, next occurrences and a
timeline of everything that happened to it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Header, Static

from core import until_done
from core.cases import RecipientState, Timeline
from core.models import Job, Schedule, ScheduleState
from core.preferences import HELD
from core.views import shown_text
from tui.format import CELL, clip, span, stamp
from tui.screens.base import ConsoleScreen, footer
from tui.widgets.table import Col, PageTable

#: The timeline's columns, and how they give way at 80 columns.
COLUMNS = (
    Col("when", 14, keep=9),
    Col("what", 12, keep=8),
    Col("job", 10, keep=5),
    Col("detail", CELL, keep=6, least=20, flex=True),
)


def hold_of(job: Job | None) -> str | None:
    """The reason a waiting job is held by quiet hours ("Held until 08:00 …"), or None."""
    if job is None or job.state not in ("pending", "retrying"):
        return None
    return job.last_error if (job.last_error or "").startswith(HELD) else None


class DetailScreen(ConsoleScreen):
    FOCUS = "#timeline"
    BINDINGS = [
        Binding("escape,backspace", "back", "Back", id="detail-back"),
        Binding("a", "whole_schedule", "Whole schedule", id="detail-schedule"),
        Binding("h", "archived", "Archived history", id="detail-archived"),
    ]

    def __init__(
        self,
        *,
        schedule_id: int | None = None,
        job_id: int | None = None,
        attempt_id: int | None = None,
    ) -> None:
        super().__init__()
        self.schedule_id = schedule_id
        self.job_id = job_id
        self.attempt_id = attempt_id
        #: The history moved to the archive is on the timeline too ("h" toggles it).
        self.archived = False
        self.events: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="detail"):
            with VerticalScroll(id="content"):  # a long text scrolls (Tab, then arrows)
                yield Static("Reading…", id="content-text")
            yield PageTable(*COLUMNS, id="timeline")
            yield Static("", id="event-detail")
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#timeline", PageTable).border_title = "Timeline"
        super().on_mount()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "whole_schedule":
            return self.job_id is not None or self.attempt_id is not None
        return True

    async def fetch(self) -> Any:
        return await self.herald.timeline(
            self.principal,
            schedule_id=self.schedule_id,
            job_id=self.job_id,
            attempt_id=self.attempt_id,
            archived=self.archived,
        )

    def show(self, data: Any) -> None:
        t: Timeline = data
        s = t.schedule
        zone = s.timezone
        self.schedule_id = s.id
        focus = next((j for j in t.jobs if j.id == t.focus_job), None)
        subject = f"Schedule {s.id}"
        if focus is not None:
            step = f" ({until_done.step_label(focus.ladder)})" if focus.ladder else ""
            subject = f"Job {focus.id}{step} of schedule {s.id}"
        self.title = subject
        table = self.query_one("#timeline", PageTable)
        table.border_title = "Timeline with archived history" if self.archived else "Timeline"
        upcoming = ", ".join(stamp(u, zone, seconds=False) for u in t.upcoming) or "none"
        lines = [
            f"[b]{subject}[/] · {s.shown_state} · version {s.version} · owner {escape(s.owner)}",
            *self.recipient_lines(t),
            f"When [i]{escape(s.expression)}[/] → {escape(t.description)}",
            *self.ladder_lines(s, focus),
            f"Next {upcoming}",
            f"Text {escape(shown_text(s))}",
        ]
        self.query_one("#content-text", Static).update("\n".join(lines))
        events = t.events
        self.events = {str(i): e for i, e in enumerate(events)}
        rows = [
            (
                str(i),
                (
                    stamp(e.at, zone),
                    f"{e.kind} (archived)" if e.archived else e.kind,
                    "" if e.job_id is None else str(e.job_id),
                    clip(f"{e.text}{' — ' + e.detail if e.detail else ''}", CELL),
                ),
            )
            for i, e in enumerate(events)
        ]
        self.query_one("#timeline", PageTable).show(rows)

    def ladder_lines(self, s: Schedule, focus: Job | None) -> list[str]:
        """What waits on people: approval before anything is sent, the ladder of a
        schedule sent until done, and who marked the job shown done."""
        lines = []
        if s.state == ScheduleState.AWAITING.value:
            lines.append(
                "[b]Awaiting approval[/]: nothing is sent until an approver approves it "
                "(Approvals, key 0)"
            )
        rule = until_done.of_options(s.options)
        if rule is not None:
            lines.append(f"Sent {escape(until_done.describe(rule))}")
        if focus is not None and focus.done_by is not None:
            at = stamp(focus.done_at, s.timezone, seconds=False)
            lines.append(f"Done by {escape(focus.done_by)} at {at}")
        return lines

    def recipient_lines(self, t: Timeline) -> list[str]:
        """Where it goes: "To #ops · zone UTC" for one plain recipient; else a line
        saying how they fared and one line per recipient (its chain, its zone, its
        latest job's state)."""
        s = t.schedule
        if len(t.recipients) == 1 and t.recipients[0].recipient.plain:
            lines = [f"To {escape(self.destination(s.destination, s.owner))} · zone {s.timezone}"]
            reason = hold_of(t.recipients[0].job)
            return [*lines, escape(reason)] if reason else lines
        count = len(t.recipients)
        head = f"To {count} recipient{'s' if count != 1 else ''} · zone {s.timezone}"
        if t.fared:
            head += f" · {escape(t.fared)}"
        return [head, *(f"  {escape(self.recipient_line(s, r))}" for r in t.recipients)]

    def recipient_line(self, s: Schedule, state: RecipientState) -> str:
        """``<@U1> or alice@example.com · Europe/Berlin time · retrying at step 2``."""
        r, job = state.recipient, state.job
        parts = [" or ".join(self.destination(d, s.owner) for d in r.to)]
        if r.zone is not None:
            parts.append(f"{r.zone} time")
        if r.timeout is not None:
            parts.append(f"{span(timedelta(seconds=r.timeout))} a step")
        if job is None:
            parts.append("no job yet")
        else:
            at = f" at step {job.step + 1}" if job.step else ""
            reason = hold_of(job)
            state = f"held: {reason}" if reason else job.state
            parts.append(f"{state}{at} (job {job.id})")
        return " · ".join(parts)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        e = self.events.get(str(event.row_key.value))
        if e is not None:
            body = f"{e.text}\n{e.detail}" if e.detail else e.text
            self.query_one("#event-detail", Static).update(escape(body))

    def action_back(self) -> None:
        self.dismiss()

    def action_archived(self) -> None:
        """Put the archived history on the timeline, or take it off."""
        self.archived = not self.archived
        self.reload()

    def action_whole_schedule(self) -> None:
        self.job_id = self.attempt_id = None
        self.refresh_bindings()
        self.reload()
