"""Export of a schedule with several recipients (issue 35): the event names every one,
a chain as its steps, and a recipient reading the time in its own zone gets its hour
said while the event keeps the schedule's time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

from core import timeexpr
from core.calendars import export
from core.models import Schedule

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SECRET = "secret-token"
RECIPIENTS = [
    {"id": 0, "to": ["slack:C0OPS"]},
    {"id": 1, "to": ["slack:@U1", "email:alice@example.com"], "zone": "Europe/Berlin"},
    {"id": 2, "to": [f"webhook:https://hooks.example.com/{SECRET}"]},
]


def _schedule(when: str, recipients: list[dict[str, object]]) -> Schedule:
    reading = timeexpr.parse_when(when, tz="America/New_York", now=NOW)
    return Schedule(
        id=7,
        owner="local:alice",
        destination="slack:C0OPS",
        recipients=recipients,
        body="Stand-up",
        expression=when,
        timezone="America/New_York",
        rrule=reading.rule,
        starts_at=reading.first,
        next_run_at=reading.first,
        created_at=NOW,
        updated_at=NOW,
    )


def _event(data: bytes) -> icalendar.Event:
    [event] = icalendar.Calendar.from_ical(data).walk("VEVENT")
    return event


def test_the_description_names_every_recipient_and_each_ones_hour() -> None:
    data = export([_schedule("every weekday at 9am", RECIPIENTS)], now=NOW)
    assert SECRET.encode() not in data
    text = str(_event(data)["DESCRIPTION"])
    assert text.startswith("Stand-up\n\nHerald schedule 7 to ")
    to = text.split(" to ", 1)[1]
    # in order, the chain as its steps, the webhook redacted to its host
    assert to.index("C0OPS") < to.index("U1") < to.index("alice@example.com")
    assert to.index("alice@example.com") < to.index("hooks.example.com")
    assert " or " in to and "(every weekday at 9am)." in to
    assert "In their own zone: " in text and "09:00 Europe/Berlin" in text
    assert "The event shows the schedule's time (09:00 America/New_York)." in text


def test_the_event_keeps_the_schedules_occurrences() -> None:
    """Berlin's recipient gets 09:00 Berlin, but the event stays at 09:00 New York,
    across both zones' DST changes (8 March in New York, 29 March in Berlin)."""
    schedule = _schedule("every weekday at 9am", RECIPIENTS)
    plain = _schedule("every weekday at 9am", RECIPIENTS[:1])
    end = NOW + timedelta(days=40)
    got = []
    for s in (schedule, plain):
        cal = icalendar.Calendar.from_ical(export([s], now=NOW))
        got.append(
            [
                e["DTSTART"].dt.astimezone(UTC)
                for e in recurring_ical_events.of(cal).between(NOW, end)
            ]
        )
    assert got[0] == got[1] and len(got[0]) > 20
    assert {t.astimezone(ZoneInfo("America/New_York")).hour for t in got[0]} == {9}


def test_one_recipient_reads_as_before() -> None:
    text = str(_event(export([_schedule("in 2 hours", [])], now=NOW))["DESCRIPTION"])
    assert "Herald schedule 7 to " in text and "C0OPS" in text
    assert "own zone" not in text and " or " not in text
