"""- · Forecast: the next 24 hours of every rate-limited destination with something
planned, the most crowded first (:meth:`core.cases.Herald.forecast_day`, the
dispatcher's own slot arithmetic): its limit, the messages due, its worst minute and
how late that minute's last message is expected. Below, the highlighted destination
minute by minute; a minute whose last message would wait half a minute or more
(:data:`core.congestion.SAY_AFTER`) is marked crowded.

``s`` spreads a crowded minute (the one under the cursor below, else the destination's
worst): its schedules each move one slot after the one before, the first staying, so
that each is sent when due (:meth:`core.cases.Herald.spread`; operators and admins).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Header, Input, Static

from core.actors import Actor
from core.cases import unavailable
from core.congestion import SAY_AFTER, Minute, duration_words
from core.ratelimit import RateLimit, spacing
from tui.screens.base import ConsoleScreen, footer, screen_keys
from tui.widgets.table import Col, PageTable

#: How far ahead the screen looks.
HOURS = 24

#: The destinations, and how they give way at 80 columns: the destination keeps 16.
DAY_COLUMNS = (
    Col("destination", 60, keep=10, least=16, flex=True),
    Col("limit", 16, keep=8),
    Col("due", 7, keep=9),
    Col("worst minute", 12, keep=7),
    Col("late", 10, keep=6),
)
#: The highlighted destination's minutes.
MINUTE_COLUMNS = (
    Col("minute", 12, keep=9),
    Col("due", 7, keep=8),
    Col("expected lateness", 17, keep=7),
    Col("", 9, keep=6),
)


class DestinationDay(Protocol):
    """A destination's next hours, as :meth:`core.cases.Herald.forecast_day` reads them
    (its ``DestinationDay``, which core.cases does not export)."""

    @property
    def destination(self) -> str: ...
    @property
    def limit(self) -> RateLimit: ...
    @property
    def minutes(self) -> list[Minute]: ...
    @property
    def due(self) -> int: ...
    @property
    def worst(self) -> Minute | None: ...


#: This screen's rules, as core's use cases refuse them (core.cases.channel_view): the
#: role note says them in advance. core.cases.console's table of rules is asked first.
RULES = {
    "forecast.view": "Only operators and admins see the forecast of every destination.",
    "schedule.spread": "Only operators and admins spread a destination's crowded minute.",
}


def why_not(actor: Actor, rule: str) -> str | None:
    """Why ``actor`` may not ``rule`` (a sentence), else None: core's table of rules
    (:func:`core.cases.unavailable`), and where it has no entry for this screen's rules
    the use cases' own test (operators and admins), with their sentence."""
    said = unavailable(actor, rule)
    if said is not None or actor.sees_everything:
        return said
    return RULES.get(rule)


def limit_words(limit: RateLimit) -> str:
    """ "1/s burst 3", "30/min burst 5", "10/s" (a burst of one is pacing alone)."""
    rate = limit.rate
    if rate >= 1:
        pace = f"{round(rate, 3):g}/s"
    elif rate * 60 >= 1:
        pace = f"{round(rate * 60, 3):g}/min"
    else:
        pace = f"{round(rate * 3600, 3):g}/h"
    return pace if limit.burst <= 1 else f"{pace} burst {round(limit.burst, 3):g}"


def late_words(seconds: float) -> str:
    """ "≈ 5 min", "≈ 40 s", or "on time" (under half a second: what reads ≈ 0 s)."""
    return "on time" if seconds < 0.5 else duration_words(seconds)


def is_crowded(minute: Minute) -> bool:
    return minute.late >= SAY_AFTER


def minute_key(at: datetime) -> str:
    return at.isoformat()


@dataclass(frozen=True)
class SpreadAnswer:
    """Yes to a spread, ``step`` seconds apart (None: the destination's pace)."""

    step: float | None


class SpreadScreen(ModalScreen[SpreadAnswer | None]):
    """The question before a spread, with the step in seconds (empty: the pace)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="spread-cancel")]

    def __init__(self, question: str, pace: float) -> None:
        super().__init__()
        self.question = question
        self.pace = pace

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, id="question", markup=False)
            yield Input(
                placeholder=f"seconds apart (empty: {self.pace:g}, the destination's pace)",
                id="step",
            )
            yield Static("", id="hint", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Spread (enter)", id="yes", variant="error")
                yield Button("Cancel (esc)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#step", Input).focus()

    @on(Input.Submitted, "#step")
    @on(Button.Pressed, "#yes")
    def answer_yes(self, event: Input.Submitted | Button.Pressed) -> None:
        event.stop()
        text = self.query_one("#step", Input).value.strip()
        if not text:
            self.dismiss(SpreadAnswer(None))
            return
        try:
            step = float(text.removesuffix("s").strip())
        except ValueError:
            self.query_one("#hint", Static).update(
                f"Write the seconds between two schedules as a number, e.g. 2 or 1.5 "
                f"(empty: {self.pace:g}, the destination's pace)."
            )
            return
        self.dismiss(SpreadAnswer(step))

    @on(Button.Pressed, "#no")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ForecastScreen(ConsoleScreen):
    TITLE = "Forecast"
    FOCUS = "#table"
    BINDINGS = [
        Binding(
            "s",
            "spread",
            "Spread minute",
            id="forecast-spread",
            tooltip="a crowded minute's schedules, one slot apart (operators, admins)",
        ),
        *screen_keys(show=False),
    ]
    # greyed out for members (core decides, and audits an attempt anyway)
    GATED = {"spread": "schedule.spread"}

    def __init__(self) -> None:
        super().__init__()
        #: The destinations read, by destination (the table's keys).
        self.days: dict[str, DestinationDay] = {}
        #: When the forecast was read (its first minute).
        self.read_at: datetime | None = None
        #: The destination whose minutes are drawn below.
        self.drawn: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield PageTable(*DAY_COLUMNS, id="table")
        yield PageTable(*MINUTE_COLUMNS, id="minutes")
        yield Static("", id="status", classes="status")
        yield Static("", classes="role-note")
        yield footer()

    def on_mount(self) -> None:
        self.table.border_title = f"Destinations · next {HOURS} h"
        self.minutes.border_title = "Minutes"
        super().on_mount()

    @property
    def minutes(self) -> PageTable:
        return self.query_one("#minutes", PageTable)

    # --- roles --------------------------------------------------------------------------

    def why_not(self, action: str) -> str | None:
        rule = self.GATED.get(action)
        return None if rule is None else why_not(self.actor, rule)

    def role_note(self) -> str:
        reasons = sorted({r for a in self.GATED if (r := self.why_not(a))})
        return " ".join([f"You are {self.actor_id} ({self.actor.role.value}).", *reasons])

    # --- data ---------------------------------------------------------------------------

    async def _read(self) -> tuple[Actor, Any]:
        """The member read again; the forecast only for whom core shows it (a member's
        read would be refused and audited every refresh)."""
        actor = await self.herald.actor(self.principal)
        if why_not(actor, "forecast.view") is not None:
            return actor, None
        now = self.herald.clock.now()
        return actor, (now, await self.herald.forecast_day(self.principal, hours=HOURS))

    def show(self, data: Any) -> None:
        status = self.query_one("#status", Static)
        if data is None:
            self.days, self.read_at = {}, None
            self.table.show([])
            self.show_minutes()
            status.update(why_not(self.actor, "forecast.view") or "")
            self.update_role_note()
            return
        self.read_at, days = data
        self.days = {d.destination: d for d in days}
        self.table.show([(d.destination, self.day_cells(d)) for d in days])
        self.show_minutes()
        crowded = sum(1 for d in days for m in d.minutes if is_crowded(m))
        parts = [
            f"from {self.clock_words(self.read_at)} ({self.zone})",
            f"{len(days)} destination{'s' if len(days) != 1 else ''}",
            f"{crowded} crowded minute{'s' if crowded != 1 else ''}",
        ]
        if crowded and self.why_not("spread") is None:
            parts.append("s spreads one")
        status.update(" · ".join(parts))
        self.update_role_note()

    def day_cells(self, d: DestinationDay) -> tuple[Any, ...]:
        worst = d.worst
        late: Text | str = "-"
        if worst is not None:
            late = Text(late_words(worst.late), style="bold red" if is_crowded(worst) else "")
        return (
            self.destination(d.destination, None),
            limit_words(d.limit),
            f"{d.due:,}",
            "-" if worst is None else self.clock_words(worst.at),
            late,
        )

    def clock_words(self, at: datetime) -> str:
        """``Tue 09:00`` in the member's zone (the day says which of the next 24 h)."""
        return at.astimezone(ZoneInfo(self.zone)).strftime("%a %H:%M")

    def day(self) -> DestinationDay | None:
        """The highlighted destination."""
        key = self.table.cursor_key()
        return None if key is None else self.days.get(key)

    def show_minutes(self) -> None:
        """The highlighted destination's minutes (the cursor kept on the same minute
        when it is the same destination read again)."""
        d = self.day()
        rows = []
        if d is not None:
            rows = [
                (
                    minute_key(m.at),
                    (
                        self.clock_words(m.at),
                        f"{m.due:,}",
                        late_words(m.late),
                        Text("crowded", style="bold red") if is_crowded(m) else "",
                    ),
                )
                for m in d.minutes
            ]
        same = d is not None and d.destination == self.drawn
        if same:
            with self.minutes.refreshing():
                self.minutes.show(rows)
        else:
            self.minutes.show(rows)
            self.minutes.move_cursor(row=0, animate=False)
        self.drawn = None if d is None else d.destination
        self.minutes.border_title = (
            "Minutes"
            if d is None
            else f"{self.destination(d.destination, None)} · minute by minute"
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "table" and self.table.cursor_key() != self.drawn:
            self.show_minutes()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "table":
            self.minutes.focus()

    # --- spreading a crowded minute ----------------------------------------------------

    def chosen_minute(self, d: DestinationDay) -> Minute | None:
        """The minute under the cursor below when the minutes have the focus, else the
        destination's worst."""
        if self.minutes.has_focus:
            key = self.minutes.cursor_key()
            return next((m for m in d.minutes if minute_key(m.at) == key), None)
        return d.worst

    def action_spread(self) -> None:
        """Ask, then spread the chosen crowded minute of the highlighted destination."""
        d = self.day()
        if d is None:
            why = self.why_not("spread")
            said = why or "No rate-limited destination has anything planned."
            self.notify(said, title="Spread", severity="error" if why else "information")
            return
        minute = self.chosen_minute(d)
        where = self.destination(d.destination, None)
        if minute is None or not is_crowded(minute):
            at = "" if minute is None else f" at {self.clock_words(minute.at)}"
            self.notify(
                f"Nothing to spread: {where}{at} is not crowded (its last message waits "
                f"under {SAY_AFTER:g} s).",
                title="Spread",
                severity="warning",
            )
            return
        pace = round(spacing(d.limit).total_seconds(), 3)
        when = self.clock_words(minute.at)
        messages = f"{minute.due:,} message{'s' if minute.due != 1 else ''}"
        question = (
            f"Spread the {messages} due into {where} at {when}? Their schedules each move "
            f"one slot after the one before (the first stays), so each is sent when due "
            f"instead of the last {late_words(minute.late)} late.\n"
            f"Seconds between two (empty: {pace:g}, the destination's pace):"
        )
        destination, at = d.destination, minute.at

        def answered(answer: SpreadAnswer | None) -> None:
            if answer is None:
                return

            async def spread() -> str:
                moved = await self.herald.spread(self.principal, destination, at, step=answer.step)
                if not moved:
                    return f"Nothing moved: no active schedule is due into {where} at {when}."
                apart = answer.step if answer.step is not None else pace
                count = f"{len(moved):,} schedule{'s' if len(moved) != 1 else ''}"
                return (
                    f"Spread the schedules due into {where} at {when}: moved {count}, "
                    f"{apart:g} s apart."
                )

            self.act(spread)

        self.app.push_screen(SpreadScreen(question, pace), answered)
