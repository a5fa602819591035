"""Event feeds: a reminder before every event; refresh with ETag; moves, cancels, failures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.calendars import CalendarError
from core.cases import Herald
from core.errors import InvalidInput, PermissionDenied
from tests.calendars.conftest import data
from tests.fakes.http import Scripted
from tests.fakes.ics import ICSServer

ADMIN, ALICE = "local:root-admin", "local:alice"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


async def reminders(herald: Herald, feed_id: int) -> list[tuple[datetime, str, str]]:
    found = await herald.store.feed_reminders(feed_id)  # type: ignore[attr-defined]
    return sorted((s.starts_at, s.state, s.body) for s in found)


async def test_reminders_before_every_event(herald: Herald, ics: ICSServer) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    feed = await herald.add_feed(
        ADMIN,
        calendar=url,
        to="log:",
        before="10m",
        tz="America/New_York",
        template="{event.summary} at {event.start:%H:%M} ({event.location}) {date:%a}",
    )
    active = [r for r in await reminders(herald, feed.id) if r[1] == "active"]
    assert active == [
        (utc(2026, 3, 2, 14, 20), "active", "Team stand-up at 09:30 (Room 4) Mon"),
        (utc(2026, 3, 3, 14, 50), "active", "Design review at 10:00 () Tue"),  # Berlin 16:00
        (utc(2026, 3, 5, 4, 50), "active", "Offsite at 00:00 () Thu"),  # all day, feed zone
        (utc(2026, 3, 7, 15, 50), "active", "Team stand-up at 11:00 (Room 4) Sat"),  # RDATE
        (utc(2026, 3, 9, 17, 50), "active", "Team stand-up (moved) at 14:00 (Room 7) Mon"),
        (utc(2026, 3, 11, 13, 20), "active", "Team stand-up at 09:30 (Room 4) Wed"),  # EDT
        (utc(2026, 3, 16, 13, 20), "active", "Team stand-up at 09:30 (Room 4) Mon"),
        (utc(2026, 3, 18, 13, 20), "active", "Team stand-up at 09:30 (Room 4) Wed"),
        (utc(2026, 3, 23, 13, 20), "active", "Team stand-up at 09:30 (Room 4) Mon"),
        (utc(2026, 3, 25, 13, 20), "active", "Team stand-up at 09:30 (Room 4) Wed"),
    ]  # EXDATE 4 March and the cancelled sync are absent

    # the feed changes: the review is deleted, the 16 March stand-up moves to 10:00
    changed = (
        data("team.ics")
        .replace(
            "BEGIN:VEVENT\nUID:review@example.com",
            "BEGIN:VEVENT\nUID:gone@example.com\nSTATUS:CANCELLED",
        )
        .replace(
            "END:VCALENDAR",
            "BEGIN:VEVENT\nUID:standup-1@example.com\nDTSTAMP:20260101T000000Z\n"
            "RECURRENCE-ID;TZID=America/New_York:20260316T093000\nSUMMARY:Team stand-up\n"
            "LOCATION:Room 4\nDTSTART;TZID=America/New_York:20260316T100000\n"
            "DTEND;TZID=America/New_York:20260316T101500\nEND:VEVENT\nEND:VCALENDAR",
        )
    )
    ics.publish("/team.ics", changed)
    report = await herald.refresh_calendars()
    assert report.changed == [feed.calendar_id]
    assert report.reminders == {"created": 0, "moved": 1, "cancelled": 1}
    rows = await reminders(herald, feed.id)
    assert (utc(2026, 3, 3, 14, 50), "cancelled", "Design review at 10:00 () Tue") in rows
    assert (utc(2026, 3, 16, 13, 50), "active", "Team stand-up at 10:00 (Room 4) Mon") in rows

    # unchanged: revalidated with the ETag, answered 304
    report = await herald.refresh_calendars()
    assert report.unchanged == [feed.calendar_id]
    assert ics.requests[-1].headers["if-none-match"].startswith('"')

    # a failure is recorded and the last good state stays
    ics.script(Scripted(status=500, body="down"), on="/team.ics")
    report = await herald.refresh_calendars()
    assert "HTTP 500" in report.failed[feed.calendar_id]
    [cal] = await herald.store.get_calendars([feed.calendar_id])  # type: ignore[attr-defined]
    assert cal.failures == 1 and "HTTP 500" in cal.last_error and cal.body == changed
    assert await reminders(herald, feed.id) == rows


async def test_feeds_are_for_admins_and_templates_are_checked(
    herald: Herald, ics: ICSServer
) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    with pytest.raises(PermissionDenied):
        await herald.add_feed(ALICE, calendar=url, to="log:")
    with pytest.raises(InvalidInput, match="does not know"):
        await herald.add_feed(ADMIN, calendar=url, to="log:", template="{event.organizer}")
    feed = await herald.add_feed(ADMIN, calendar=url, to="log:", before="1h")
    assert [f.id for f in await herald.list_feeds(ADMIN)] == [feed.id]
    assert await herald.remove_feed(ADMIN, feed.id) == 10
    assert await herald.list_feeds(ADMIN) == []


async def test_a_bad_calendar_is_refused(herald: Herald, ics: ICSServer) -> None:
    url = ics.publish("/bad.ics", "this is not a calendar")
    with pytest.raises(CalendarError, match="not an iCalendar"):
        await herald.add_feed(ADMIN, calendar=url, to="log:")
