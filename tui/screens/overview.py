"""1 · Overview: the queue at a glance, refreshed live, with the system's health: the
dispatchers and the email and SMS providers."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.widgets import DataTable, Header, Static

from core.cases import Overview
from core.models import JobState
from tui.format import ago, stamp
from tui.screens.base import ConsoleScreen, footer
from tui.widgets.overview import Figure, Rate

STATES = [s.value for s in JobState]
#: Always listed; any other state only when some job is in it.
ALWAYS = ("pending", "claimed", "retrying", "delivered", "dead")


class OverviewScreen(ConsoleScreen):
    TITLE = "Overview"

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="overview"):
            with Grid(id="figures"):
                yield Figure("Due next hour", id="due")
                yield Figure("First-try success", id="first-try")
                yield Figure("Oldest overdue", id="overdue")
                yield Figure("Dead letters", id="dead")
            with Horizontal(id="rates"):
                yield Rate("Deliveries / min", id="delivered")
                yield Rate("Failures / min", id="failed")
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
        return await self.herald.overview(self.principal)

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
        self.query_one("#delivered", Rate).set([ok for _, ok, _ in f.per_minute])
        self.query_one("#failed", Rate).set([bad for _, _, bad in f.per_minute])
        self.query_one("#lateness", Static).update("\n".join(x.line() for x in o.lateness))
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

    def show_providers(self, o: Overview) -> None:
        """Each provider: "SendGrid · down until 09:05 (503 …) · email 1st · 2m ago"."""
        table = self.query_one("#providers", DataTable)
        table.clear()
        for p in o.providers:
            changed = "-" if p.changed_at is None else ago(p.changed_at, o.now)
            table.add_row(p.label, p.health(self.zone), p.serves, changed, key=p.name)
