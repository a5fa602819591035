"""1 · Overview: the queue at a glance, refreshed live, with the system's health: the
dispatchers and the email and SMS providers. Two plots show the last hour: deliveries
and failures per minute, and how late tries started (p50, p95 and p99 of each five
minutes); at 80x24 they keep seven rows, and the dispatchers' table gives up its bottom
border and both tables their sideways scroll bars for them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.widgets import DataTable, Header, Static

from core.cases import Overview
from core.models import JobState
from tui.format import ago, stamp
from tui.screens.base import ConsoleScreen, footer
from tui.widgets.overview import Figure
from tui.widgets.plots import HourPlot, Point

STATES = [s.value for s in JobState]
#: Always listed; any other state only when some job is in it.
ALWAYS = ("pending", "claimed", "retrying", "delivered", "dead")


class OverviewScreen(ConsoleScreen):
    TITLE = "Overview"
    #: The plots' rows (tui/herald.tcss): seven under 26 rows, nine to 31, then twelve.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (26, "-medium"), (32, "-tall")]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="overview"):
            with Grid(id="figures"):
                yield Figure("Due next hour", id="due")
                yield Figure("First-try success", id="first-try")
                yield Figure("Oldest overdue", id="overdue")
                yield Figure("Dead letters", id="dead")
            with Horizontal(id="plots"):
                yield HourPlot(
                    "[$success]Deliveries[/] / [$error]failures[/] per minute",
                    {"delivered": "success", "failed": "error"},
                    empty="no deliveries in the last hour",
                    id="rates",
                )
                yield HourPlot(
                    "Lateness [$success]p50[/] / [$warning]p95[/] / [$error]p99[/] (s)",
                    {"p50": "success", "p95": "warning", "p99": "error"},
                    empty="no lateness recorded in the last hour",
                    id="late",
                )
            yield Static("", id="lateness")
            with Horizontal(id="bottom"):
                yield Static("", id="counts")
                with Vertical(id="health"):
                    yield DataTable(id="workers", cursor_type="row", zebra_stripes=True)
                    yield DataTable(id="providers", cursor_type="row", zebra_stripes=True)
        yield footer()

    def on_mount(self) -> None:
        workers = self.query_one("#workers", DataTable)
        workers.border_title = "Dispatchers"
        workers.add_columns("worker", "host", "pid", "heartbeat")
        providers = self.query_one("#providers", DataTable)
        providers.border_title = "Providers"
        providers.add_columns("provider", "health", "sends", "changed")
        self.query_one("#counts", Static).border_title = "Jobs by state"
        self.query_one("#lateness", Static).border_title = "Lateness of first tries, all tenants"
        super().on_mount()

    async def fetch(self) -> Any:
        return await self.herald.overview(self.principal, with_late_hour=True)

    def show(self, data: Any) -> None:
        o: Overview = data
        f = o.figures
        self.query_one("#due", Figure).set(f"{f.due_next_hour:,}")
        rate = o.first_try_rate
        self.query_one("#first-try", Figure).set(
            "-" if rate is None else f"{rate:.1%} of {f.finished_last_hour:,}"
        )
        overdue = "none"
        if f.oldest_overdue is not None:
            job_id, due = f.oldest_overdue
            overdue = f"job {job_id}, {ago(due, o.now).replace(' ago', '')} late"
        self.query_one("#overdue", Figure).set(overdue)
        self.query_one("#dead", Figure).set(f"{f.dead:,} · {f.dead_requested:,} to decide")
        self.show_plots(o)
        self.query_one("#lateness", Static).update(
            "\n".join(x.line() for x in o.lateness)
            or "every tenant's together: operators and admins see it (yours is plotted above)"
        )
        shown = [s for s in STATES if s in ALWAYS or o.counts.get(s, 0)]
        shown += sorted(s for s in o.counts if s not in STATES)
        width = max(len(s) for s in shown)
        lines = [f"{s:<{width}} {o.counts.get(s, 0):>12,}" for s in shown]
        self.query_one("#counts", Static).update("\n".join(lines))
        table = self.query_one("#workers", DataTable)
        table.clear()
        for w in f.workers:
            beat = "stopped" if w.stopped_at is not None else ago(w.heartbeat_at, o.now)
            table.add_row(w.id, w.host, str(w.pid), beat, key=w.id)
        if not f.workers:
            table.add_row("no dispatcher has reported", "", "", "")
        self.show_providers(o)
        # who you are stays in the header (the app's subtitle), beside the moment read
        self.sub_title = f"{self.app.sub_title} · as of {stamp(o.now, self.zone)}"

    def show_plots(self, o: Overview) -> None:
        """The last hour's deliveries and failures per minute, and its lateness per five
        minutes, each point at its last minute's minutes ago."""
        last = o.figures.per_minute[-1][0]

        def ago_(minute: datetime) -> int:
            return round((minute - last).total_seconds() / 60)

        per_minute = o.figures.per_minute
        ok = sum(n for _, n, _ in per_minute)
        bad = sum(n for _, _, n in per_minute)
        peak = max((a + b for _, a, b in per_minute), default=0)
        rates: dict[str, list[Point]] = {
            "delivered": [(ago_(m), n) for m, n, _ in per_minute],
            "failed": [(ago_(m), n) for m, _, n in per_minute],
        }
        self.query_one("#rates", HourPlot).show(
            rates,
            step=1,
            blank=ok + bad == 0,
            whole=True,
            note=f"{ok:,} ok · {bad:,} failed in 1h · peak {peak:,}/min",
        )
        hour = o.late_hour
        late: dict[str, list[Point]] = {
            name: [(ago_(s.minute), getattr(s, name)) for s in hour.slots]
            for name in ("p50", "p95", "p99")
        }
        capped = "" if hour.capped_at is None else f" · the newest {hour.capped_at:,}"
        self.query_one("#late", HourPlot).show(
            late,
            step=hour.slot_minutes,
            blank=not hour.slots,
            whole=False,
            note=f"per {hour.slot_minutes} min · {hour.tries:,} tries{capped}",
        )

    def show_providers(self, o: Overview) -> None:
        """Each provider: "SendGrid · down until 09:05 (503 …) · email 1st · 2m ago"."""
        table = self.query_one("#providers", DataTable)
        table.clear()
        for p in o.providers:
            changed = "-" if p.changed_at is None else ago(p.changed_at, o.now)
            table.add_row(p.label, p.health(self.zone), p.serves, changed, key=p.name)
