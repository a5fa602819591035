"""Issue 41 in the console: the Forecast screen (``-``) shows the next 24 hours of each
rate-limited destination from core's forecast, marks a crowded minute, and spreads it
(``s``, operators and admins; greyed out for members, who see no forecast).

The crowd is 300 one-off messages due into one Slack channel at 09:00 tomorrow: Slack
sends about one a second there (a slot every 1.07 s, bursts of 3), so the last of them
is expected ≈ 5 min late. Spreading the minute moves each schedule one slot after the
one before: then each is sent when due."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.congestion import SAY_AFTER
from core.errors import PermissionDenied
from core.ratelimit import RateLimit, spacing
from core.store import AuditFilter
from tests.conftest import START
from tests.tui.conftest import (
    ADMIN,
    MEMBER,
    OPERATOR,
    flat,
    notes,
    run,
    screen_text,
    settle,
    table,
)
from tests.tui.test_schedules_screen import help_text
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.screens.forecast import ForecastScreen, SpreadScreen, late_words, limit_words

GENERAL = "slack:C0GENERAL"
HOOK = "webhook:https://hooks.example.com/deploys"
#: 09:00 tomorrow (START is Monday 2 March 2026, 12:00 UTC).
NINE = (START + timedelta(days=1)).replace(hour=9)
SLACK = RateLimit(rate=1.0, burst=3.0)
CROWD = 300


@pytest.fixture
def db_url(request: pytest.FixtureRequest) -> str:
    """SQLite, or the database a test names (``indirect``: PostgreSQL too)."""
    return str(request.getfixturevalue(getattr(request, "param", "sqlite_url")))


async def crowd(herald: Herald, count: int = CROWD) -> list[int]:
    """``count`` messages due into #general at 09:00 tomorrow, two into a webhook at
    noon (not crowded), and an operator. Returns the crowd's schedule ids."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    ids = []
    for i in range(count):
        s, _ = await herald.create_schedule(
            ADMIN, to=GENERAL, when="tomorrow at 9am", text=f"Release note {i}", tz="UTC"
        )
        assert s.id is not None
        ids.append(s.id)
    for text in ("Deploy starts", "Deploy done"):
        await herald.create_schedule(
            OPERATOR, to=HOOK, when="in 30 minutes", text=text, tz="UTC", duplicates="ignore"
        )
    return ids


async def due_times(herald: Herald, ids: list[int]) -> list[Any]:
    out = []
    for sid in ids:
        jobs = [j for j in await herald.store.schedule_jobs(sid) if j.state == "pending"]
        assert len(jobs) == 1, (sid, jobs)
        out.append(jobs[0].due_at.replace(tzinfo=NINE.tzinfo))
    return sorted(out)


def forecast_of(app: Any) -> ForecastScreen:
    screen = app.screen
    assert isinstance(screen, ForecastScreen)
    return screen


def test_words_of_a_limit_and_a_wait() -> None:
    assert limit_words(SLACK) == "1/s burst 3"
    assert limit_words(RateLimit(rate=0.5, burst=5.0)) == "30/min burst 5"
    assert limit_words(RateLimit(rate=10.0, burst=1.0)) == "10/s"
    assert late_words(0.2) == "on time"
    assert late_words(319) == "≈ 5 min"


@pytest.mark.full(
    "the console spreading a crowded minute on PostgreSQL; the default run spreads it on SQLite",
    backend="postgres",
)
@pytest.mark.parametrize("db_url", ["sqlite_url", "pg_url"], indirect=True)
async def test_a_crowded_minute_is_marked_and_spread(
    console: Any, herald: Herald, clock: ManualClock, db_url: str
) -> None:
    ids = await crowd(herald)
    assert await due_times(herald, ids) == [NINE] * CROWD
    app = console(OPERATOR, mode="overview")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("minus")  # the Forecast screen's key
        await settle(pilot)
        screen = forecast_of(app)
        # the crowded channel first, its limit, its messages, its worst minute
        assert table(app).keys == [GENERAL, HOOK]
        general = screen.days[GENERAL]
        assert general.due == CROWD
        assert general.worst is not None and general.worst.at == NINE
        assert general.worst.late == pytest.approx((CROWD - 3) * 1.07, rel=0.02)
        text = flat(screen_text(app))
        assert "slack:C0GENERAL 1/s burst 3 300 Tue 09:00 ≈ 5 min" in text
        assert "webhook:" in text and "10/s burst 10 2 Mon 12:30 on time" in text
        # its minutes below: 09:00, crowded, 300 due, the last of them ≈ 5 min late
        minutes = table(app, "#minutes")
        rows = [[str(c) for c in minutes.get_row_at(i)] for i in range(minutes.row_count)]
        assert rows == [["Tue 09:00", "300", "≈ 5 min", "crowded"]]
        assert "1 crowded minute · s spreads one" in text

        # spread the crowded minute under the cursor, at the destination's pace
        await pilot.press("tab")  # to the minutes
        assert table(app, "#minutes").has_focus
        await pilot.press("s")
        await settle(pilot)
        ask = app.screen
        assert isinstance(ask, SpreadScreen)
        assert "Spread the 300 messages due into slack:C0GENERAL at Tue 09:00?" in flat(
            ask.question
        )
        assert "(empty: 1.07, the destination's pace)" in ask.question
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ForecastScreen)
        assert (
            "Done: Spread the schedules due into slack:C0GENERAL at Tue 09:00: "
            "moved 299 schedules, 1.07 s apart." in notes(app)
        )
        # each one slot after the one before, the first where it was
        times = await due_times(herald, ids)
        step = spacing(SLACK).total_seconds()
        assert times[0] == NINE
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)]
        assert gaps == pytest.approx([step] * (CROWD - 1), abs=0.002)
        # and the screen read again: nothing crowded, each sent when due
        general = screen.days[GENERAL]
        assert general.due == CROWD and general.worst is not None
        assert general.worst.late < SAY_AFTER
        assert [m.at.minute for m in general.minutes] == [0, 1, 2, 3, 4, 5]
        text = flat(screen_text(app))
        assert "crowded" not in text.replace("0 crowded minutes", "")
        assert "0 crowded minutes" in text
    spreads = await herald.audit_log(ADMIN, AuditFilter(action="schedule.spread"), limit=500)
    assert len(spreads) == CROWD - 1 and {a.actor for a in spreads} == {OPERATOR}


async def test_a_step_of_your_own_and_a_calm_minute(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = await crowd(herald, 40)
    app = console(ADMIN, mode="forecast")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        # on the webhook's row: its worst minute is on time, nothing to spread
        await pilot.press("down")
        await settle(pilot)
        assert table(app).cursor_key() == HOOK
        assert [str(table(app, "#minutes").get_row_at(0)[0])] == ["Mon 12:30"]
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, ForecastScreen)
        assert notes(app)[-1] == (
            f"Spread: Nothing to spread: {HOOK} at Mon 12:30 is not crowded "
            "(its last message waits under 30 s)."  # an admin sees a webhook's path
        )
        # the channel's worst minute (the destinations list has the focus), 2 s apart
        await pilot.press("up", "s")
        await settle(pilot)
        assert isinstance(app.screen, SpreadScreen)
        await pilot.press("x", "enter")  # not a number: said, and asked again
        await settle(pilot)
        assert "Write the seconds between two schedules as a number" in screen_text(app)
        await pilot.press("backspace", *"2", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ForecastScreen)
        assert notes(app)[-1].endswith("moved 39 schedules, 2 s apart.")
    times = await due_times(herald, ids)
    assert times == [NINE + timedelta(seconds=2 * i) for i in range(40)]


async def test_a_member_sees_no_forecast_and_cannot_spread(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = await crowd(herald, 40)
    app = console(MEMBER, mode="forecast")
    async with run(app) as pilot:
        await settle(pilot)
        screen = forecast_of(app)
        text = flat(screen_text(app))
        assert "Only operators and admins see the forecast of every destination." in text
        assert "Only operators and admins spread a destination's crowded minute." in text
        assert table(app).row_count == 0
        # the key is greyed out, with its reason; pressing it does nothing
        assert screen.check_action("spread", ()) is None
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, ForecastScreen)
        # the keys panel names the screen's key and the spread (greyed out)
        await pilot.press("question_mark")
        await settle(pilot)
        keys = help_text(app)
        assert "s Spread minute" in keys and "- Forecast" in keys
    # the member's screen never asked core for the forecast (a refusal is audited)
    assert await herald.audit_log(ADMIN, AuditFilter(action="forecast.view")) == []
    # core refuses a member's spread anyway (and audits it): nothing moved
    with pytest.raises(PermissionDenied, match="Only operators and admins spread"):
        await herald.spread(MEMBER, GENERAL, NINE)
    assert await due_times(herald, ids) == [NINE] * 40


async def test_forecast_snapshot(
    console: Any, herald: Herald, clock: ManualClock, tmp_path: Path
) -> None:
    await crowd(herald)
    app = console(OPERATOR, mode="forecast")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        svg = app.save_screenshot("forecast.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / "forecast-80x24.txt", 80)
