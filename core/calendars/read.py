"""Reading iCalendar text: parse it, expand its events, read them as blackout dates.

Pure and CPU-bound, and the input comes from members (any URL or file): Herald runs
these functions only inside a calendar worker process (:mod:`core.calendars.worker`),
never on an event loop. This module imports nothing of Herald but :mod:`core.errors`
(and the package's lazy face), so a worker starts in a tenth of a second.

Recurring events are expanded lazily by recurring-ical-events (which applies EXDATE,
RDATE and moved or cancelled instances, RECURRENCE-ID) and the count of occurrences is
checked while iterating: a runaway rule (``FREQ=SECONDLY``) is refused after ``limit``
occurrences, not after the library has built them all.

How times are read (RFC 5545 §3.3.4, §3.3.5): a time with a zone (``Z`` or ``TZID``) is
that instant; a *floating* time (neither) and an all-day date are read in the zone the
calendar is expanded in, which is the zone of the schedule (or feed) using it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

from core.errors import HeraldError

if TYPE_CHECKING:  # icalendar is imported where a calendar is read (a worker process)
    import icalendar

#: How far ahead events and blackout dates are read.
HORIZON = timedelta(days=400)
#: The most occurrences read from one calendar in one window (a runaway RRULE is
#: refused there); ``HERALD_CALENDAR_MAX_OCCURRENCES`` overrides it.
MAX_INSTANCES = 10_000
#: How far past the end of a window iteration goes before it stops (occurrences come in
#: start order, but a floating time's instant depends on the zone).
_SLACK = timedelta(days=2)


class CalendarError(HeraldError):
    """A calendar could not be fetched or read; the message names the source."""


def parse(text: str | bytes, source: str = "the calendar") -> icalendar.Calendar:
    """Read iCalendar text; CalendarError when it is not a calendar."""
    import icalendar

    try:
        cal = icalendar.Calendar.from_ical(text)
    except (ValueError, IndexError, KeyError) as exc:
        raise CalendarError(f"{source} is not an iCalendar file: {exc}") from exc
    if not isinstance(cal, icalendar.Calendar) or cal.name != "VCALENDAR":
        raise CalendarError(f"{source} is not an iCalendar file (no VCALENDAR).")
    return cal


def calendar_name(cal: icalendar.Calendar) -> str:
    """The calendar's display name (X-WR-CALNAME), or empty."""
    return str(cal.get("X-WR-CALNAME", ""))[:200]


@dataclass(frozen=True)
class EventInstance:
    """One occurrence of an event. ``start``/``end`` are aware UTC; for an all-day
    event they are local midnight in the zone it was expanded in, and ``day`` is set."""

    uid: str
    #: The instance's original start (RECURRENCE-ID) as ISO text; identifies it even
    #: when it is moved.
    occurrence: str
    summary: str
    location: str
    description: str
    start: datetime
    end: datetime
    day: date | None = None
    cancelled: bool = False

    @property
    def key(self) -> str:
        return f"{self.uid}/{self.occurrence}"

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "occurrence": self.occurrence,
            "summary": self.summary,
            "location": self.location,
            "description": self.description,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "day": None if self.day is None else self.day.isoformat(),
            "cancelled": self.cancelled,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventInstance:
        day = data.get("day")
        return cls(
            uid=str(data["uid"]),
            occurrence=str(data["occurrence"]),
            summary=str(data["summary"]),
            location=str(data["location"]),
            description=str(data["description"]),
            start=datetime.fromisoformat(data["start"]),
            end=datetime.fromisoformat(data["end"]),
            day=None if day is None else date.fromisoformat(day),
            cancelled=bool(data["cancelled"]),
        )


def _instant(value: date | datetime, zone: ZoneInfo) -> datetime:
    """A DTSTART/DTEND value as aware UTC: floating times and dates in ``zone``."""
    if isinstance(value, datetime):
        local = value if value.tzinfo is not None else value.replace(tzinfo=zone)
        return local.astimezone(UTC)
    return datetime.combine(value, time(0), zone).astimezone(UTC)


def _text(component: Any, name: str) -> str:
    value = component.get(name)
    return "" if value is None else str(value)


def instances(
    cal: icalendar.Calendar,
    start: datetime,
    end: datetime,
    zone: ZoneInfo,
    *,
    limit: int = MAX_INSTANCES,
    source: str = "The calendar",
) -> list[EventInstance]:
    """The events between ``start`` and ``end`` (aware), recurring ones expanded, in
    start order. Floating times and all-day dates are read in ``zone``. Cancelled
    instances (STATUS:CANCELLED) are included with ``cancelled`` set. CalendarError
    when the events cannot be read, or when more than ``limit`` occurrences fall in
    the window (counted as they come, so a runaway rule costs ``limit`` of them)."""
    import recurring_ical_events

    found: list[EventInstance] = []
    stop = end + _SLACK
    _precount(cal, start, end, zone, limit, source)
    try:
        query = recurring_ical_events.of(cal, skip_bad_series=True)
        for event in query.after(start.astimezone(zone)):
            instance = _instance(event, zone)
            if instance.start >= stop:
                break
            if instance.start >= end:
                continue
            if len(found) >= limit:
                raise _too_many(source, limit, start, end)
            found.append(instance)
    except (ValueError, TypeError, OverflowError, recurring_ical_events.InvalidCalendar) as exc:
        raise CalendarError(f"The events of {source} cannot be read: {exc}") from exc
    found.sort(key=lambda e: (e.start, e.uid))
    return found


def _too_many(source: str, limit: int, start: datetime, end: datetime) -> CalendarError:
    days = max(1, round((end - start) / timedelta(days=1)))
    return CalendarError(
        f"{source} has more than {limit:,} event occurrences in the {days:,} days Herald "
        f"reads, and Herald reads at most {limit:,} (HERALD_CALENDAR_MAX_OCCURRENCES); "
        "it was not used."
    )


def _precount(
    cal: icalendar.Calendar, start: datetime, end: datetime, zone: ZoneInfo, limit: int, source: str
) -> None:
    """Refuse a calendar whose RRULEs alone make more than ``limit`` occurrences in the
    window, counting them one at a time with dateutil's lazy iterator: recurring-ical-
    events builds each search window's occurrences whole (20 ``FREQ=SECONDLY`` events
    are 1.7 million in its first one-day window), so its own count would come too late.
    EXDATEs are not subtracted here but tolerated (a calendar is refused only when it is
    surely over); a rule dateutil cannot read is left to recurring-ical-events."""
    total = tolerance = 0
    for component in cal.walk("VEVENT"):
        rules, first = component.get("RRULE"), component.get("DTSTART")
        if rules is None or first is None:
            continue
        begin = first.dt
        if not isinstance(begin, datetime):
            begin = datetime.combine(begin, time(0))
        low, high = start.astimezone(zone), end.astimezone(zone)
        if begin.tzinfo is None:
            low, high = low.replace(tzinfo=None), high.replace(tzinfo=None)
        tolerance += sum(len(x.dts) for x in _listed(component.get("EXDATE")))
        for rule in _listed(rules):
            try:
                recurrence = rrulestr(rule.to_ical().decode(), dtstart=begin)
                for instant in recurrence.xafter(low, inc=True):
                    if instant >= high:
                        break
                    total += 1
                    if total > limit + tolerance:
                        raise _too_many(source, limit, start, end)
            except (ValueError, TypeError, OverflowError):
                continue


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _instance(event: Any, zone: ZoneInfo) -> EventInstance:
    begin = event["DTSTART"].dt
    if "DTEND" in event:
        finish = event["DTEND"].dt
    elif "DURATION" in event:
        finish = begin + event["DURATION"].dt
    else:  # RFC 5545 §3.6.1: a date lasts one day, a date-time no time at all
        finish = begin + (timedelta(days=1) if not isinstance(begin, datetime) else timedelta())
    rid = event.get("RECURRENCE-ID")
    original = rid.dt if rid is not None else begin
    return EventInstance(
        uid=_text(event, "UID") or f"anonymous-{_instant(begin, zone).isoformat()}",
        occurrence=_instant(original, zone).isoformat(),
        summary=_text(event, "SUMMARY"),
        location=_text(event, "LOCATION"),
        description=_text(event, "DESCRIPTION"),
        start=_instant(begin, zone),
        end=_instant(finish, zone),
        day=None if isinstance(begin, datetime) else begin,
        cancelled=_text(event, "STATUS").upper() == "CANCELLED",
    )


# --- blackout dates -------------------------------------------------------------------


@dataclass
class Blackouts:
    """What a schedule skips. ``days`` are the dates of all-day events (local dates in
    the schedule's zone: every occurrence on such a date is skipped); ``spans`` are
    timed events, ``[start, end)`` in UTC (an occurrence inside one is skipped, one
    before or after it on the same date is not)."""

    days: dict[date, str] = field(default_factory=dict)
    spans: list[tuple[datetime, datetime, str]] = field(default_factory=list)
    _starts: list[datetime] = field(default_factory=list, init=False, repr=False, compare=False)
    _reach: list[datetime] = field(default_factory=list, init=False, repr=False, compare=False)

    def __bool__(self) -> bool:
        return bool(self.days or self.spans)

    def hit(self, instant: datetime, zone: ZoneInfo) -> str | None:
        """The name of the blackout ``instant`` falls in, or None (the earliest-starting
        timed event when several hold it). A binary search: schedules check every
        occurrence of the coming :data:`HORIZON` against thousands of spans."""
        name = self.days.get(instant.astimezone(zone).date())
        if name is not None:
            return name
        if len(self._starts) != len(self.spans):
            self._index()
        found = None
        i = bisect.bisect_right(self._starts, instant) - 1
        while i >= 0 and self._reach[i] > instant:
            begin, end, label = self.spans[i]
            if begin <= instant < end:
                found = label
            i -= 1
        return found

    def _index(self) -> None:
        """Sort the spans and note, for each, the latest end of it and those before."""
        self.spans.sort()
        self._starts = [begin for begin, _, _ in self.spans]
        self._reach = []
        for _, end, _ in self.spans:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def to_json(self) -> dict[str, Any]:
        return {
            "days": {d.isoformat(): name for d, name in sorted(self.days.items())},
            "spans": [[b.isoformat(), e.isoformat(), n] for b, e, n in sorted(self.spans)],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Blackouts:
        if not data:
            return cls()
        days = {date.fromisoformat(k): str(v) for k, v in dict(data.get("days", {})).items()}
        spans = [
            (datetime.fromisoformat(b), datetime.fromisoformat(e), str(n))
            for b, e, n in data.get("spans", [])
        ]
        return cls(days, spans)


def blackouts(
    calendars: Iterable[icalendar.Calendar],
    start: datetime,
    end: datetime | None = None,
    zone: ZoneInfo | None = None,
    *,
    limit: int = MAX_INSTANCES,
    sources: Iterable[str] = (),
) -> Blackouts:
    """The blackout dates and times of ``calendars`` from ``start`` to ``end`` (default
    :data:`HORIZON` later), read in ``zone`` (the schedule's; default UTC): an all-day
    event blacks out its dates, a timed one the time from its start to its end.
    Cancelled events are no blackout. ``limit`` and ``sources`` (names for messages)
    as in :func:`instances`."""
    zone = zone or ZoneInfo("UTC")
    until = end or start + HORIZON
    names = list(sources)
    out = Blackouts()
    for n, cal in enumerate(calendars):
        source = names[n] if n < len(names) else "The calendar"
        for event in instances(cal, start, until, zone, limit=limit, source=source):
            if event.cancelled:
                continue
            name = event.summary or "calendar event"
            if event.day is not None:
                last = event.end.astimezone(zone).date()  # the day after, as DTEND says
                for k in range(max(1, (last - event.day).days)):
                    out.days.setdefault(event.day + timedelta(days=k), name)
            elif event.end > event.start:
                out.spans.append((event.start, event.end, name))
    out.spans.sort()
    return out
