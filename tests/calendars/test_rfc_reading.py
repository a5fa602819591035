"""Skip calendars read as RFC 5545 says: a floating time (no ``Z``, no ``TZID``) is the
schedule's own local time (§3.3.5); an all-day event skips every occurrence on its
dates in the schedule's zone; a timed event skips only the occurrences inside it."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.models import JobState
from tests.calendars.conftest import data

ALICE = "local:alice"

RFC = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Herald tests//RFC 5545 reading//EN
BEGIN:VEVENT
UID:floating@example.org
DTSTAMP:20260101T000000Z
SUMMARY:Floating workshop
DTSTART:20260406T083000
DTEND:20260406T093000
END:VEVENT
BEGIN:VEVENT
UID:days-off@example.org
DTSTAMP:20260101T000000Z
SUMMARY:Team days off
DTSTART;VALUE=DATE:20260414
DTEND;VALUE=DATE:20260416
END:VEVENT
BEGIN:VEVENT
UID:offsite@example.org
DTSTAMP:20260101T000000Z
SUMMARY:Spring offsite
DTSTART;VALUE=DATE:20260328
DTEND;VALUE=DATE:20260331
END:VEVENT
BEGIN:VEVENT
UID:board@example.org
DTSTAMP:20260101T000000Z
SUMMARY:Board meeting
DTSTART;TZID=Europe/Berlin:20260409T100000
DTEND;TZID=Europe/Berlin:20260409T110000
END:VEVENT
END:VCALENDAR
"""

OFFSITE = {date(2026, 3, d): "Spring offsite" for d in (28, 29, 30)}  # across the DST change
DAYS_OFF = {date(2026, 4, d): "Team days off" for d in (14, 15)}  # DTEND's date is not off


async def skipped(herald: Herald, sid: int, zone: str) -> dict[date, str]:
    """The schedule's skipped occurrences in March and April: local date → event."""
    tz = ZoneInfo(zone)
    return {
        j.occurrence_at.astimezone(tz).date(): (j.last_error or "").removeprefix("Skipped: ")
        for j in await herald.store.schedule_jobs(sid)
        if j.state == JobState.SKIPPED and j.occurrence_at < datetime(2026, 5, 1, tzinfo=UTC)
    }


@pytest.mark.parametrize(
    ("when", "zone", "expected"),
    [
        pytest.param(
            "every day at 9:00",
            "Europe/Berlin",
            {**OFFSITE, date(2026, 4, 6): "Floating workshop", **DAYS_OFF},
            id="berlin-9",
        ),
        # the same floating 08:30-09:30 is New York's 08:30-09:30 for a New York schedule
        pytest.param(
            "every day at 9:00",
            "America/New_York",
            {**OFFSITE, date(2026, 4, 6): "Floating workshop", **DAYS_OFF},
            id="new-york-9",
        ),
        # a timed event skips what is inside it: 10:30 on the board's day, not 9:00 or 11:00
        pytest.param(
            "every day at 10:30",
            "Europe/Berlin",
            {**OFFSITE, date(2026, 4, 9): "Board meeting", **DAYS_OFF},
            id="berlin-10:30",
        ),
        pytest.param("every day at 11:00", "Europe/Berlin", {**OFFSITE, **DAYS_OFF}, id="11:00"),
        # all-day dates are the schedule's own dates, however far its zone is from UTC
        pytest.param("every day at 23:30", "Pacific/Auckland", {**OFFSITE, **DAYS_OFF}, id="nz"),
        pytest.param("every day at 0:15", "America/Los_Angeles", {**OFFSITE, **DAYS_OFF}, id="la"),
    ],
)
async def test_a_skip_calendar_reads_times_as_rfc_5545_says(
    herald: Herald, clock: ManualClock, when: str, zone: str, expected: dict[date, str]
) -> None:
    clock.set(datetime(2026, 3, 20, 12, tzinfo=UTC))
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when=when, text="x", tz=zone, skip_files={"rfc.ics": RFC}
    )
    assert await skipped(herald, s.id, zone) == expected


async def test_a_feed_reads_a_floating_time_in_its_own_zone(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 4, 1, tzinfo=UTC))
    feed = await herald.add_feed(
        "local:root-admin",
        calendar="rfc.ics",
        body=RFC,
        to="log:",
        before="30m",
        tz="America/New_York",
        template="{event.summary} {event.start:%H:%M}",
    )
    found = await herald.store.feed_reminders(feed.id)  # type: ignore[attr-defined]
    at = {s.body: s.starts_at for s in found}
    # 08:30 New York (EDT, UTC-4) less 30 minutes
    assert at["Floating workshop 08:30"] == datetime(2026, 4, 6, 12, tzinfo=UTC)
    assert at["Board meeting 04:00"] == datetime(2026, 4, 9, 7, 30, tzinfo=UTC)  # Berlin 10:00


async def test_the_holiday_calendar_still_reads_as_before(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 4, 1, 12, tzinfo=UTC))
    s, _ = await herald.create_schedule(
        ALICE,
        to="log:",
        when="every weekday at 9am",
        text="x",
        tz="Asia/Tokyo",
        skip_files={"holidays.ics": data("holidays.ics")},
    )
    days = await skipped(herald, s.id, "Asia/Tokyo")
    assert days == {date(2026, 4, 3): "Good Friday", date(2026, 4, 6): "Easter Monday"}
