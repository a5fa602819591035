"""9 · Awaiting done: messages sent until done that nobody marked done yet, the oldest
first, with how long people took to acknowledge over the last week; ``d`` marks one
done (its nags and escalations stop, its message reads "Done by …")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from core.cases import AckFigures
from core.store import Awaiting
from tui.format import CELL, ago, clip, span, stamp
from tui.screens.base import ConsoleScreen, footer
from tui.screens.detail import DetailScreen
from tui.widgets.table import Col, PageTable

#: The most messages the screen lists (the oldest: they have waited longest).
LIMIT = 200

#: The columns, and how they give way at 80 columns: the text keeps at least 30.
COLUMNS = (
    Col("job", 10, keep=7),
    Col("waiting", 8, keep=9),  # how long ago it was delivered
    Col("nags", 4, keep=8),
    Col("left", 4, keep=6),  # its steps still waiting
    Col("to", 30, keep=5, least=12),
    Col("text", CELL, keep=10, least=30, flex=True),
    Col("delivered", 14, keep=3),
    Col("schedule", 8, keep=4),
    Col("owner", 24, keep=2, least=8),
    Col("tenant", 24, keep=1),
)


def took(seconds: float | None) -> str:
    """A time to acknowledge as a person says it: ``40s``, ``16m``, ``1h 2m`` (whole
    minutes from a minute on); ``-`` when nothing was acknowledged."""
    if seconds is None:
        return "-"
    return span(timedelta(seconds=round(seconds) if seconds < 60 else round(seconds / 60) * 60))


def figures_line(figures: AckFigures, waiting: int) -> str:
    """The header line: how many wait, and how long people took over the last week."""
    if not figures.count:
        return f"{waiting:,} awaiting done · none marked done in 7 days"
    return (
        f"{waiting:,} awaiting done · time to acknowledge (7 days, {figures.count:,} done): "
        f"p50 {took(figures.p50)} · p95 {took(figures.p95)}"
    )


class AwaitingDoneScreen(ConsoleScreen):
    TITLE = "Awaiting done"
    FOCUS = "#table"
    # members see their own messages (and may mark them done: they sent them)
    NOTES = ("view.everyone",)
    BINDINGS = [
        Binding(
            "d",
            "mark_done",
            "Mark done",
            id="mark-done",
            tooltip="Its nags and escalations stop; its message reads “Done by …”",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, Awaiting] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="ack", classes="figures-line")
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        rows = await self.herald.awaiting_done(self.principal, limit=LIMIT)
        return rows, await self.herald.ack_figures(self.principal)

    def show(self, data: Any) -> None:
        rows: list[Awaiting]
        rows, figures = data
        now = self.herald.clock.now()
        self.rows = {str(r.job_id): r for r in rows}
        self.table.show(
            [
                (
                    str(r.job_id),
                    (
                        str(r.job_id),
                        ago(r.delivered_at, now).removesuffix(" ago"),
                        str(r.nags_sent),
                        str(r.steps_waiting),
                        self.destination(r.destination, r.owner),
                        clip(r.body, CELL),
                        stamp(r.delivered_at, self.zone, seconds=False)[5:],
                        str(r.schedule_id),
                        r.owner,
                        r.tenant,
                    ),
                )
                for r in rows
            ]
        )
        self.query_one("#ack", Static).update(figures_line(figures, len(rows)))
        shown = f"{len(rows)} message{'s' if len(rows) != 1 else ''}"
        if len(rows) >= LIMIT:
            shown += f" · the {LIMIT} oldest"
        self.query_one("#status", Static).update(shown + " · enter: timeline")
        self.update_pane()
        self.update_role_note()

    def describe(self, key: str) -> str:
        r = self.rows.get(key)
        if r is None:
            return ""
        delivered = stamp(r.delivered_at, self.zone, seconds=False)
        waited = ago(r.delivered_at, self.herald.clock.now())
        nags = f"{r.nags_sent} nag{'s' if r.nags_sent != 1 else ''} sent"
        return (
            f"{r.body}\nMessage {r.job_id} of schedule {r.schedule_id} · delivered {delivered}"
            f" ({waited}) · {nags}, {r.steps_waiting} step{'s' if r.steps_waiting != 1 else ''}"
            f" waiting · {r.owner} → {self.destination(r.destination, r.owner)} · {r.tenant}"
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(DetailScreen(job_id=int(event.row_key.value)))

    def action_mark_done(self) -> None:
        """Mark the highlighted message done, once asked (its ladder stops for good)."""
        key = self.table.cursor_key()
        row = None if key is None else self.rows.get(key)
        if row is None:
            return
        job_id = row.job_id

        async def mark() -> str:
            done = await self.herald.mark_done(self.principal, job_id)
            at = stamp(done.at, self.zone, seconds=False)
            if done.already:
                return f"Message {job_id}: already done by {done.by} at {at}."
            stopped = f"{done.stopped} waiting step{'s' if done.stopped != 1 else ''}"
            return f"Marked message {job_id} done at {at}; stopped {stopped}."

        waiting = row.steps_waiting
        self.confirm(
            f"Mark message {job_id} ({clip(row.body, 40)}) done?\n"
            f"Its {waiting} waiting nag{'s' if waiting != 1 else ''} and escalations stop, "
            "and its message reads “Done by …”.",
            mark,
        )
