"""A member's schedules as a calendar others can subscribe to, at a secret URL served by
the service; rotating the secret closes the old URL."""

from __future__ import annotations

import httpx
import recurring_ical_events
from icalendar import Calendar

from bot.http import Readiness, make_http_app, start_http
from bot.http_guard import HttpLimits
from core.cases import Herald
from core.clock import SystemClock
from core.dispatcher import Dispatcher
from tests.fakes import unused_port
from tests.support.store import audit_trail


async def test_the_calendar_feed_url(herald: Herald) -> None:
    await herald.create_schedule(
        "local:alice", to="log:", when="every weekday at 9am", text="Standup", tz="Europe/Berlin"
    )
    token = await herald.calendar_feed_token("local:alice")
    assert token == await herald.calendar_feed_token("local:alice")  # stable
    dispatcher = Dispatcher(herald.store, {}, clock=SystemClock())
    port = unused_port()
    runner = await start_http(
        make_http_app(Readiness(herald.store, dispatcher), herald),
        "127.0.0.1",
        port,
        HttpLimits.from_settings(herald.settings),
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            answer = await client.get(f"/calendar/{token}.ics")
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/calendar")
            cal = Calendar.from_ical(answer.content)
            events = recurring_ical_events.of(cal).between("20260302", "20260307")
            # the clock says Monday noon: the first standup is Tuesday 09:00, then to Friday
            assert [str(e["SUMMARY"]) for e in events] == ["Standup"] * 4
            assert (await client.get("/calendar/guess.ics")).status_code == 404
            rotated = await herald.calendar_feed_token("local:alice", rotate=True)
            assert rotated != token
            assert (await client.get(f"/calendar/{token}.ics")).status_code == 404
            assert (await client.get(f"/calendar/{rotated}.ics")).status_code == 200
    finally:
        await runner.cleanup()
    trail = await audit_trail(herald.store, "member", "local:alice")
    assert [a.action for a in trail] == ["member.calendar_token", "member.calendar_token"]
