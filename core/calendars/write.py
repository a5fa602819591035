"""A member's schedules as an iCalendar file, so Herald's posts show in their calendar.

A recurring schedule becomes one VEVENT with its stored DTSTART (in the schedule's
zone), RRULE lines and the rule's own RDATE values, plus EXDATE for the rule's own
exclusions and for occurrences a skip calendar removes; a one-off
becomes a single VEVENT at its time. Events are instants (no DTEND). The summary is the
message's first line; the description names the schedule and every recipient (secrets
redacted), and when a recipient reads the time in its own zone, its hour there: the
event keeps the schedule's time. Pure: the caller passes the schedules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from core import routing, timeexpr
from core.calendars.read import Blackouts
from core.channels import parse_destination
from core.errors import HeraldError
from core.models import Schedule, ScheduleState

if TYPE_CHECKING:  # imported by the functions that build a calendar
    import icalendar

PRODID = "-//Herald//Scheduled messages//EN"
#: Occurrences examined for skip-calendar EXDATEs.
MAX_EXDATES = 1000
EXPORTED_STATES = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)


def schedule_uid(schedule: Schedule) -> str:
    return f"schedule-{schedule.id}@herald"


def _summary(body: str) -> str:
    line = next((ln.strip() for ln in body.splitlines() if ln.strip()), "(empty message)")
    return line if len(line) <= 80 else line[:79] + "…"


def _destination(raw: str) -> str:
    try:
        return parse_destination(raw).redacted()
    except HeraldError:
        return "(unreadable destination)"


def _description(schedule: Schedule) -> str:
    """The message, then "Herald schedule 7 to #ops, <@U1> or alice@example.com
    (every weekday at 9am)." and, for recipients in their own zone, their hour."""
    recipients = routing.from_json(schedule.recipients, schedule.destination)
    to = ", ".join(routing.describe(r, _destination) for r in recipients)
    text = f"{schedule.body}\n\nHerald schedule {schedule.id} to {to} ({schedule.expression})."
    zoned = [r for r in recipients if r.zone is not None and r.zone != schedule.timezone]
    if zoned:
        hour = _wall_time(schedule)
        each = ", ".join(f"{_destination(r.first)} {hour} {r.zone}" for r in zoned)
        text += (
            f"\nIn their own zone: {each}. The event shows the schedule's time"
            f" ({hour} {schedule.timezone})."
        )
    return text


def _wall_time(schedule: Schedule) -> str:
    """The schedule's hour in its zone ("09:00"; "the same hours" for a rule whose
    occurrences fall at several)."""
    zone = ZoneInfo(schedule.timezone)
    if schedule.rrule is None:
        instants = [schedule.starts_at]
    else:
        instants = timeexpr.occurrences(schedule.rrule, count=8) or [schedule.starts_at]
    hours = {f"{i.astimezone(zone):%H:%M}" for i in instants}
    return hours.pop() if len(hours) == 1 else "the same hours"


def schedule_event(schedule: Schedule, *, stamp: datetime) -> icalendar.Event:
    """One schedule as a VEVENT (see the module's description)."""
    import icalendar

    event = icalendar.Event()
    event.add("uid", schedule_uid(schedule))
    event.add("dtstamp", stamp.astimezone(UTC))
    event.add("summary", _summary(schedule.body))
    event.add("description", _description(schedule))
    if schedule.state == ScheduleState.PAUSED.value:
        event.add("status", "TENTATIVE")
    if schedule.rrule is None:
        event.add("dtstart", schedule.starts_at.astimezone(UTC))
        return event
    rule = timeexpr.parse_rule(schedule.rrule)
    zone = ZoneInfo(rule.tzid)
    dtstart = rule.dtstart.replace(tzinfo=zone)
    event.add("dtstart", dtstart)
    for line in schedule.rrule.split():
        if line.upper().startswith("RRULE:"):
            event.add("rrule", icalendar.vRecur.from_ical(line[6:]))
    for instant in rule.rdates:
        event.add("rdate", instant.astimezone(zone))
    for instant in _excluded(schedule, rule, dtstart, zone):
        event.add("exdate", instant.astimezone(zone))
    return event


def _excluded(
    schedule: Schedule, rule: timeexpr.Rule, dtstart: datetime, zone: ZoneInfo
) -> list[datetime]:
    """Instants a calendar reader would show but Herald does not send: DTSTART when it
    is not itself an occurrence (RFC 5545 counts it), the rule's EXDATE values (its
    excluded days as the instants they remove), and skip-calendar hits."""
    assert schedule.rrule is not None
    first = timeexpr.occurrences(schedule.rrule, count=1)
    out: list[datetime] = sorted(rule.exdates)
    if first and first[0] != dtstart.astimezone(UTC) and dtstart.astimezone(UTC) not in out:
        out.append(dtstart)
    if rule.exdays:
        unexcluded = replace(rule, exdays=frozenset())
        out.extend(i for i in timeexpr.take(unexcluded, MAX_EXDATES) if rule.excludes(i))
    skips = Blackouts.from_json(schedule.options.get("skip"))
    if skips:
        for instant in timeexpr.occurrences(schedule.rrule, count=MAX_EXDATES):
            if skips.hit(instant, zone) is not None:
                out.append(instant)
    return out


def export(schedules: Iterable[Schedule], *, now: datetime, name: str = "Herald") -> bytes:
    """An iCalendar file (bytes) of the active and paused ``schedules``."""
    import icalendar

    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("x-wr-calname", name)
    for schedule in schedules:
        if schedule.state in EXPORTED_STATES:
            cal.add_component(schedule_event(schedule, stamp=now))
    cal.add_missing_timezones()
    data: bytes = cal.to_ical()
    return data
