"""7 · Calendars, driven by the Pilot: each calendar's refresh state, what uses it and
how many reminders wait; failing ones (since when, the error without secrets) stand
out and can be listed alone; members see their own; snapshots at 80x24 and 120x40."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.cases import Herald
from core.clock import ManualClock
from tests.fakes.http import Scripted
from tests.fakes.ics import ICSServer
from tests.support.calendars import data
from tests.tui.conftest import (
    ADMIN,
    CALENDAR_SECRET,
    MEMBER,
    OPERATOR,
    flat,
    run,
    screen_text,
    seed_calendars,
    settle,
    table,
)
from tests.tui.test_snapshots import SNAPSHOTS, compare


async def test_a_failing_calendar_stands_out_without_its_secrets(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = await seed_calendars(herald, clock)
    waiting = len(
        [s for s in await herald.store.feed_reminders(ids["feed"]) if s.state == "active"]
    )
    app = console(ADMIN, mode="calendars")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert table(app).keys == [str(ids["team"]), str(ids["holidays"]), str(ids["upload"])]
        text = flat(screen_text(app))
        assert "3 calendars · 1 failing" in text
        assert "failing ×3" in text and "30m ago" in text  # failing since the first failure
        assert "https://calendar.example.com/…" in text and "file:holidays.ics" in text
        # the highlighted (first) calendar in full
        assert "Failing for 30m (3 tries in a row" in text
        assert "Last error: Fetching https://calendar.example.com/… answered HTTP 503." in text
        assert f"feed {ids['feed']} → slack:C0TEAM (10m before, {waiting} waiting)" in text
        assert CALENDAR_SECRET not in text and "private" not in text
        await pilot.press("down")  # bob's skip calendar
        await settle(pilot)
        text = flat(screen_text(app))
        assert "Refreshes work · last success 03-02 12:45:00" in text
        assert "Used by: 1 schedule skips its dates" in text
        await pilot.press("f")
        await settle(pilot)
        assert table(app).keys == [str(ids["team"])]
        assert "1 failing" in flat(screen_text(app))
        await pilot.press("a")
        await settle(pilot)
        assert len(table(app).keys) == 3


async def test_members_see_their_own_calendars(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = await seed_calendars(herald, clock)
    app = console(MEMBER, mode="calendars")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert table(app).keys == [str(ids["holidays"])]
        text = flat(screen_text(app))
        assert "1 calendar · none failing" in text
        assert "Members see their own schedules only." in text


async def test_a_calendar_that_fails_after_a_good_fetch_keeps_its_reminders(
    console: Any, herald: Herald, clock: ManualClock, ics: ICSServer
) -> None:
    url = ics.publish("/team.ics", data("team.ics")) + f"?token={CALENDAR_SECRET}"
    feed = await herald.add_feed(ADMIN, calendar=url, to="log:")
    assert (await herald.refresh_calendars()).unchanged == [feed.calendar_id]
    before = await herald.store.feed_reminders(feed.id)
    waiting = len([s for s in before if s.state == "active"])
    clock.advance(900)
    ics.script(Scripted(status=500, body="down"))
    assert feed.calendar_id in (await herald.refresh_calendars()).failed
    assert await herald.store.feed_reminders(feed.id) == before
    app = console(ADMIN, mode="calendars")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = flat(screen_text(app))
        assert "failing ×1" in text and "answered HTTP 500." in text
        assert f"(10m before, {waiting} waiting)" in text and waiting > 0
        assert CALENDAR_SECRET not in text and "team.ics" not in text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_snapshot(
    console: Any, herald: Herald, clock: ManualClock, tmp_path: Path, size: tuple[int, int]
) -> None:
    await seed_calendars(herald, clock)
    app = console(OPERATOR, mode="calendars")
    async with run(app, size=size) as pilot:
        await settle(pilot)
        svg = app.save_screenshot("calendars.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / f"calendars-{size[0]}x{size[1]}.txt", size[0])
