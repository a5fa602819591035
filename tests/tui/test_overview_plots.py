"""The overview's plots of the last hour: deliveries and failures per minute, and the
p50/p95/p99 of how late tries started, five minutes at a time. Real deliveries are
recorded at known minutes with known lateness (a fixed clock), on SQLite and
PostgreSQL (the tries are read by a query of the store), and the series each plot
received are compared with what those tries make; at 80x24 both plots are on screen.
What the overview's use case reads for them (tenants, the cap) is
tests/integration/test_overview_late_hour.py's, on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from textual_plotext import PlotextPlot

from core.cases import Herald
from core.clock import ManualClock
from tests.support.late_tries import seed_hour
from tests.tui.conftest import ADMIN, MEMBER, run, screen_text, settle
from tui.widgets.plots import HourPlot


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


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
