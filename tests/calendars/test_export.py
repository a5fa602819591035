"""Export: a member's schedules as .ics, and the round trip through icalendar."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import icalendar
import pytest
import recurring_ical_events

from core import timeexpr
from core.calendars import export
from core.models import Schedule, ScheduleState

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _schedule(sid: int, when: str, tz: str, body: str = "Post the agenda") -> Schedule:
    reading = timeexpr.parse_when(when, tz=tz, now=NOW)
    return Schedule(
        id=sid,
        owner="local:alice",
        destination="webhook:https://hooks.example.com/secret-token",
        body=body,
        expression=when,
        timezone=tz,
        rrule=reading.rule,
        starts_at=reading.first,
        next_run_at=reading.first,
        created_at=NOW,
        updated_at=NOW,
    )


CASES = [
    ("every weekday at 9am", "Europe/Berlin"),  # crosses the 29 March DST change
    ("every monday and thursday at 17:30", "America/New_York"),  # crosses 8 March
    ("every day at 2:30am", "Europe/Berlin"),  # a time inside the spring-forward gap
    ("0 */6 * * *", "Australia/Sydney"),  # cron, crosses 5 April (DST ends)
    ("every month on the 31st at 10am", "Asia/Tokyo"),
    ("every 2 weeks on friday at 16:00 for 6 times", "Europe/London"),
    ("every day at 8am until 2026-04-15", "America/Los_Angeles"),
    # a rule pasted with its own exclusions (a date-time and a whole day) and an extra date
    (
        "RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0 EXDATE;TZID=Europe/Berlin:20260304T090000 "
        "EXDATE;VALUE=DATE:20260310 RDATE;TZID=Europe/Berlin:20260304T170000",
        "Europe/Berlin",
    ),
    (
        "DTSTART;TZID=America/New_York:19970902T090000 "
        "EXDATE;TZID=America/New_York:19970902T090000 RRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
        "UTC",
    ),
]


def _read_back(data: bytes, end: datetime) -> dict[str, list[datetime]]:
    cal = icalendar.Calendar.from_ical(data)
    out: dict[str, list[datetime]] = {}
    for event in recurring_ical_events.of(cal).between(NOW, end):
        out.setdefault(str(event["UID"]), []).append(event["DTSTART"].dt.astimezone(UTC))
    return out


@pytest.mark.parametrize(("when", "tz"), CASES)
def test_round_trip_gives_the_occurrences_herald_computes(when: str, tz: str) -> None:
    schedule = _schedule(1, when, tz)
    end = NOW + timedelta(days=120)
    assert schedule.rrule is not None
    expected = [t for t in timeexpr.occurrences(schedule.rrule, count=1000, after=NOW) if t < end]
    got = _read_back(export([schedule], now=NOW), end)
    assert sorted(got["schedule-1@herald"]) == expected
    assert expected  # the case says something


def test_one_offs_states_and_redaction() -> None:
    once = _schedule(2, "2026-03-10 09:15", "Europe/Paris", body="Ship it\nsecond line")
    gone = _schedule(3, "every day at 9am", "UTC")
    gone.state = ScheduleState.CANCELLED.value
    paused = _schedule(4, "every day at 9am", "UTC")
    paused.state = ScheduleState.PAUSED.value
    data = export([once, gone, paused], now=NOW)
    assert b"secret-token" not in data
    cal = icalendar.Calendar.from_ical(data)
    events = {str(e["UID"]): e for e in cal.walk("VEVENT")}
    assert set(events) == {"schedule-2@herald", "schedule-4@herald"}
    assert str(events["schedule-2@herald"]["SUMMARY"]) == "Ship it"
    assert events["schedule-2@herald"]["DTSTART"].dt == datetime(2026, 3, 10, 8, 15, tzinfo=UTC)
    assert str(events["schedule-4@herald"]["STATUS"]) == "TENTATIVE"
    assert {c["TZID"] for c in cal.walk("VTIMEZONE")} == set()  # only UTC used here


def test_zones_are_embedded() -> None:
    data = export([_schedule(5, "every weekday at 9am", "Europe/Berlin")], now=NOW)
    cal = icalendar.Calendar.from_ical(data)
    assert [str(c["TZID"]) for c in cal.walk("VTIMEZONE")] == ["Europe/Berlin"]
