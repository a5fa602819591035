"""Issue 33: ``GET /v1/when`` previews a time exactly as ``POST /v1/schedules`` saves it
for the same member (their zone, the default time, the calendars to skip) and says
which zone and where it came from; in process, on SQLite and PostgreSQL."""

from __future__ import annotations

from core.cases import Herald
from tests.api.test_api_hostile import served, token
from tests.fakes.ics import ICSServer
from tests.support.calendars import data
from tests.support.calendars import ics as ics  # noqa: F401 - the .ics server fixture

BERLINER = "local:berliner"


async def test_the_preview_is_what_a_member_with_a_zone_saves(herald: Herald) -> None:
    await herald.set_timezone(BERLINER, "Europe/Berlin")
    async with served(herald) as client:
        headers = await token(herald, BERLINER)
        r = await client.get("/v1/when", params={"when": "every weekday"}, headers=headers)
        assert r.status == 200, await r.text()
        shown = await r.json()
        assert (shown["timezone"], shown["zone_source"]) == ("Europe/Berlin", "member")
        assert shown["description"] == "every weekday at 09:00 (Europe/Berlin)"
        # the clock is Monday 2 March 2026 12:00 UTC: Tuesday 09:00 CET is 08:00 UTC
        assert shown["occurrences"][0] == "2026-03-03T08:00:00Z"
        body = {"to": "log:", "when": "every weekday", "text": "stand-up"}
        made = await client.post("/v1/schedules", json=body, headers=headers)
        assert made.status == 201, await made.text()
        saved = await made.json()
        assert saved["timezone"] == shown["timezone"] and saved["rule"] == shown["rule"]
        assert saved["next_run_at"] == shown["occurrences"][0]
        given = await client.get(
            "/v1/when", params={"when": "every weekday", "tz": "UTC"}, headers=headers
        )
        read = await given.json()
        assert (read["timezone"], read["zone_source"]) == ("UTC", "given")


async def test_the_preview_skips_what_the_calendar_skips(herald: Herald, ics: ICSServer) -> None:
    await herald.set_timezone(BERLINER, "Europe/Berlin")
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    when = f"every april 3 at 9am except holidays from {url}"
    async with served(herald) as client:
        headers = await token(herald, BERLINER)
        r = await client.get("/v1/when", params={"when": when, "count": 1}, headers=headers)
        assert r.status == 200, await r.text()
        shown = await r.json()
        assert shown["skip_calendars"] == [url]
        assert shown["skipped"] == [{"at": "2026-04-03T07:00:00Z", "event": "Good Friday"}]
        assert shown["occurrences"] == ["2027-04-03T07:00:00Z"]
        made = await client.post(
            "/v1/schedules", json={"to": "log:", "when": when, "text": "x"}, headers=headers
        )
        assert made.status == 201, await made.text()
        assert (await made.json())["next_run_at"] == shown["occurrences"][0]
