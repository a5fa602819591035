"""The overview's plots of the last hour: deliveries and failures per minute, and the
p50/p95/p99 of how late tries started, five minutes at a time. Real deliveries are
recorded at known minutes with known lateness (a fixed clock), on SQLite and
PostgreSQL (the tries are read by a query of the store), and the series each plot
received are compared with what those tries make; at 80x24 both plots are on screen."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from textual_plotext import PlotextPlot

from core.actors import ActorRef, Principal
from core.cases import Herald
from core.cases.console import LATE_TRIES, late_hour
from core.clock import ManualClock
from core.store import AttemptRecord, Verdict
from tests.conftest import START
from tests.tui.conftest import ADMIN, MEMBER, run, screen_text, settle
from tui.widgets.plots import HourPlot


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


def at(hh_mm: str, seconds: float = 0) -> datetime:
    hours, minutes = (int(x) for x in hh_mm.split(":"))
    return START.replace(hour=hours, minute=minutes) + timedelta(seconds=seconds)


async def tries(
    herald: Herald,
    clock: ManualClock,
    due: str,
    late_s: list[float],
    *,
    fail: int = 0,
    author: ActorRef = MEMBER,
) -> None:
    """Jobs of ``author`` due at ``due`` (one per lateness), each tried ``late_s``
    seconds after it fell due: the last ``fail`` of them failed for good, the others
    delivered."""
    clock.set(at(due) - timedelta(minutes=1))
    for i in range(len(late_s)):
        await herald.create_schedule(author, to="log:", when="in 1 minute", text=f"m{i}", tz="UTC")
    clock.set(at(due) + timedelta(seconds=max(late_s)))
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=100
    )
    assert [job.due_at for job in jobs] == [at(due)] * len(late_s)
    results = []
    for i, (job, late) in enumerate(zip(jobs, late_s, strict=True)):
        failed = i >= len(late_s) - fail
        started = job.due_at + timedelta(seconds=late)
        attempt = AttemptRecord(
            started_at=started,
            finished_at=started + timedelta(milliseconds=40),
            outcome="permanent" if failed else "ok",
            status_code=410 if failed else 200,
        )
        results.append(Verdict(job, "dead" if failed else "delivered", attempt=attempt))
    await herald.store.finish(results, worker="w1", now=now)


#: The console reads at 13:05:30: the hour's minutes are 12:06 … 13:05, its five-minute
#: slots end at 12:10, 12:15, … 13:05 (-55, -50, … 0 minutes ago).
NOW = "13:05"


async def seed_hour(herald: Herald, clock: ManualClock) -> None:
    await tries(herald, clock, "12:05", [1.0])  # 12:05:01: before the hour, not counted
    await tries(herald, clock, "12:10", [0.1, 0.2, 0.3, 2.0])  # slot -55
    await tries(herald, clock, "12:38", [1.0, 5.0], fail=1)  # started 12:38: slot -25
    await tries(herald, clock, "12:49", [60.0])  # started 12:50:00: slot -15
    await tries(herald, clock, "13:05", [0.5])  # this minute: slot 0
    clock.set(at(NOW, 30))


def per_minute(counts: dict[int, int]) -> list[tuple[int, float]]:
    return [(ago, counts.get(ago, 0)) for ago in range(-59, 1)]


async def test_the_plots_receive_the_hours_counts_and_percentiles(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    await seed_hour(herald, clock)
    app = console(MEMBER)
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        rates = app.screen.query_one("#rates", HourPlot)
        late = app.screen.query_one("#late", HourPlot)
        text = screen_text(app)
    assert rates.series == {
        "delivered": per_minute({-55: 4, -27: 1, -15: 1, 0: 1}),
        "failed": per_minute({-27: 1}),
    }
    # nearest rank: of 4 tries p50 is the 2nd, p95 and p99 the 4th; of 2 the 1st and 2nd
    assert late.series == {
        "p50": [(-55, 0.2), (-25, 1.0), (-15, 60.0), (0, 0.5)],
        "p95": [(-55, 2.0), (-25, 5.0), (-15, 60.0), (0, 0.5)],
        "p99": [(-55, 2.0), (-25, 5.0), (-15, 60.0), (0, 0.5)],
    }
    assert "Deliveries / failures per minute" in text
    assert "Lateness p50 / p95 / p99 (s)" in text
    assert "7 ok · 1 failed in 1h · peak 4/min" in text
    assert "per 5 min · 8 tries" in text
    assert "no deliveries in the last hour" not in text


async def test_an_empty_hour_is_said_not_drawn(console: Any) -> None:
    app = console(ADMIN)
    async with run(app) as pilot:
        await settle(pilot)
        text = screen_text(app)
        plots = [p for p in app.screen.query(PlotextPlot) if p.display]
    assert "no deliveries in the last hour" in text
    assert "no lateness recorded in the last hour" in text
    assert plots == []


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_both_plots_are_on_screen(
    console: Any, herald: Herald, clock: ManualClock, size: tuple[int, int]
) -> None:
    await seed_hour(herald, clock)
    app = console(MEMBER)
    async with run(app, size=size) as pilot:
        await settle(pilot)
        screen = app.screen.region
        for plot in app.screen.query(PlotextPlot):
            region = plot.region
            assert plot.display and region.height >= 4 and region.width >= 30, region
            assert screen.contains_region(region), (region, screen)
        assert len(app.screen.query(PlotextPlot)) == 2
        text = screen_text(app)
    # the rest of the overview stays on the same screen
    for words in ("Due next hour", "Lateness of first tries", "Jobs by state", "Dispatchers"):
        assert words in text


async def test_a_tenants_member_sees_their_tenants_tries_only(
    herald: Herald, clock: ManualClock
) -> None:
    """As the overview's figures: a member of a workspace sees its tries, a Herald-wide
    admin every tenant's."""
    anna = Principal("slack:UANNA", "slack:TA")
    await tries(herald, clock, "12:10", [0.1, 0.2, 0.3, 2.0])  # the local tenant's
    await tries(herald, clock, "12:20", [30.0, 40.0], author=anna)
    clock.set(at(NOW, 30))
    theirs = (await herald.overview(anna, with_late_hour=True)).late_hour
    assert [(s.tries, s.p50, s.p99) for s in theirs.slots] == [(2, 30.0, 40.0)]
    ours = (await herald.overview(MEMBER, with_late_hour=True)).late_hour
    assert [(s.tries, s.p50, s.p99) for s in ours.slots] == [(4, 0.2, 2.0)]
    everyone = (await herald.overview(ADMIN, with_late_hour=True)).late_hour
    assert [s.tries for s in everyone.slots] == [4, 2] and everyone.capped_at is None
    assert (await herald.overview(ADMIN)).late_hour.slots == []  # read only when asked


def test_past_its_cap_the_hour_says_it_read_the_newest_tries_only() -> None:
    minutes = [at("12:06") + timedelta(minutes=i) for i in range(60)]
    newest_first = [("2026-03-02 13:05", 250)] * LATE_TRIES
    hour = late_hour(minutes, newest_first)
    assert hour.capped_at == LATE_TRIES and hour.tries == LATE_TRIES
    assert [(s.minute, s.p50, s.p99) for s in hour.slots] == [(at("13:05"), 0.25, 0.25)]
    assert late_hour(minutes, newest_first[:-1]).capped_at is None


async def test_every_tenants_lateness_is_for_herald_wide_actors_only(herald: Herald) -> None:
    """The dispatchers' lateness counts are every tenant's together: a tenant's member
    is not shown them (their own tenant's lateness is the plot's); an admin is."""
    assert (await herald.overview(MEMBER)).lateness == []
    assert [f.window for f in (await herald.overview(ADMIN)).lateness] == ["last hour", "last day"]
