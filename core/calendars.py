"""iCalendar sources: fetch, parse, expand into events, and read as blackout dates.

Pure except :func:`fetch` (ETag / Last-Modified revalidation, through the network guard
and within :class:`core.calendar_fetch.FetchLimits`).
Recurring events are expanded by recurring-ical-events, which applies EXDATE, RDATE and
moved or cancelled instances (RECURRENCE-ID). Every error a person can cause is a
:class:`CalendarError` whose message says what is wrong with which source.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

from core import calendar_fetch
from core.calendar_fetch import FetchLimits
from core.errors import HeraldError, InvalidInput
from core.models import Schedule, ScheduleState
from core.netguard import Guard

#: How far ahead events and blackout dates are read.
HORIZON = timedelta(days=400)
#: The most instances read from one source (a runaway RRULE is cut there).
MAX_INSTANCES = 5000


class CalendarError(HeraldError):
    """A calendar could not be fetched or read; the message names the source."""


# --- parsing ------------------------------------------------------------------------------


def parse(text: str | bytes, source: str = "the calendar") -> icalendar.Calendar:
    """Read iCalendar text; CalendarError when it is not a calendar."""
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

    @property
    def all_day(self) -> bool:
        return self.day is not None


def _instant(value: date | datetime, zone: ZoneInfo) -> datetime:
    if isinstance(value, datetime):
        local = value if value.tzinfo is not None else value.replace(tzinfo=zone)
        return local.astimezone(UTC)
    return datetime.combine(value, time(0), zone).astimezone(UTC)


def _text(component: Any, name: str) -> str:
    value = component.get(name)
    return "" if value is None else str(value)


def instances(
    cal: icalendar.Calendar, start: datetime, end: datetime, zone: ZoneInfo
) -> list[EventInstance]:
    """The events between ``start`` and ``end`` (aware), recurring ones expanded, in
    start order. Floating times and all-day dates are read in ``zone``. Cancelled
    instances (STATUS:CANCELLED) are included with ``cancelled`` set."""
    try:
        query = recurring_ical_events.of(cal, skip_bad_series=True)
        found: list[EventInstance] = []
        for event in query.between(start, end):
            if len(found) >= MAX_INSTANCES:
                break
            found.append(_instance(event, zone))
    except (ValueError, TypeError, recurring_ical_events.InvalidCalendar) as exc:
        raise CalendarError(f"The calendar's events cannot be read: {exc}") from exc
    found.sort(key=lambda e: (e.start, e.uid))
    return found


def _instance(event: Any, zone: ZoneInfo) -> EventInstance:
    begin = event["DTSTART"].dt
    if "DTEND" in event:
        finish = event["DTEND"].dt
    elif "DURATION" in event:
        finish = begin + event["DURATION"].dt
    else:
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
    """Dates and times to skip. ``days`` are all-day events (local dates, read in the
    schedule's own zone: a holiday is the same date everywhere); ``spans`` are timed
    events ([start, end) in UTC)."""

    days: dict[date, str] = field(default_factory=dict)
    spans: list[tuple[datetime, datetime, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.days or self.spans)

    def hit(self, instant: datetime, zone: ZoneInfo) -> str | None:
        """The name of the blackout ``instant`` falls in, or None."""
        name = self.days.get(instant.astimezone(zone).date())
        if name is not None:
            return name
        for begin, end, label in self.spans:
            if begin <= instant < end:
                return label
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "days": {d.isoformat(): name for d, name in sorted(self.days.items())},
            "spans": [[b.isoformat(), e.isoformat(), n] for b, e, n in self.spans],
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
    calendars: Iterable[icalendar.Calendar], start: datetime, end: datetime | None = None
) -> Blackouts:
    """The blackout dates and times of ``calendars`` from ``start`` to ``end`` (default
    :data:`HORIZON` later). Cancelled events are no blackout."""
    until = end or start + HORIZON
    out = Blackouts()
    for cal in calendars:
        # all-day events are read on UTC dates here and mapped back to their own dates
        for event in instances(cal, start - timedelta(days=2), until, ZoneInfo("UTC")):
            if event.cancelled:
                continue
            name = event.summary or "calendar event"
            if event.day is not None:
                days = max(1, (event.end - event.start).days)
                for n in range(days):
                    out.days.setdefault(event.day + timedelta(days=n), name)
            elif event.end > event.start:
                out.spans.append((event.start, event.end, name))
    out.spans.sort()
    return out


# --- fetching ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """A fetch's answer: ``body`` None when the server said 304 Not Modified."""

    body: str | None
    etag: str | None
    last_modified: str | None


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "webcal://"))


async def fetch(
    url: str,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    guard: Guard | None = None,
    limits: FetchLimits | None = None,
) -> Fetched:
    """GET ``url`` revalidating with If-None-Match / If-Modified-Since, through the
    network ``guard`` (default: internal addresses refused) and within ``limits``
    (:class:`core.calendar_fetch.FetchLimits`: deadline, size, redirects). The body is
    checked to be iCalendar, off the event loop. Raises CalendarError (one sentence,
    never quoting the server) on any failure."""
    if url.startswith("webcal://"):
        url = "https://" + url.removeprefix("webcal://")
    headers = {"Accept": "text/calendar, */*;q=0.5", "User-Agent": "Herald calendar reader"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        answer = await calendar_fetch.get(
            url, headers, guard=guard or Guard(), limits=limits or FetchLimits()
        )
    except calendar_fetch.FetchRefused as exc:
        raise CalendarError(str(exc)) from None
    if answer.status == 304:
        return Fetched(None, etag, last_modified)
    if answer.status != 200:
        raise CalendarError(f"Fetching {url} answered HTTP {answer.status}.")
    text = answer.text()
    await asyncio.to_thread(parse, text, url)
    return Fetched(text, answer.headers.get("etag"), answer.headers.get("last-modified"))


# --- schedules that skip ------------------------------------------------------------------


def next_allowed(
    rule: str, after: datetime, skips: Blackouts, *, limit: int = 1000
) -> tuple[datetime | None, list[tuple[datetime, str]]]:
    """The first occurrence of a stored rule strictly after ``after`` that no blackout
    hits, and the ``(occurrence, event name)`` pairs skipped on the way."""
    from core import timeexpr
    from core.timeexpr_rule import parse_rule

    zone = ZoneInfo(parse_rule(rule).tzid)
    skipped: list[tuple[datetime, str]] = []
    cursor = after
    while len(skipped) < limit:
        upcoming = timeexpr.next_occurrence(rule, cursor)
        if upcoming is None:
            return None, skipped
        name = skips.hit(upcoming, zone)
        if name is None:
            return upcoming, skipped
        skipped.append((upcoming, name))
        cursor = upcoming
    return None, skipped


def skipped_between(
    rule: str | None,
    first: datetime,
    after: datetime,
    until: datetime,
    skips: Blackouts,
    tz: str = "UTC",
) -> list[tuple[datetime, str]]:
    """Occurrences in ``(after, until)`` a blackout hits, with the event's name. A
    one-off (``rule`` None) has the single occurrence ``first``, read in ``tz``."""
    from core import timeexpr
    from core.timeexpr_rule import parse_rule

    if not skips:
        return []
    if rule is None:
        name = skips.hit(first, ZoneInfo(tz)) if after < first < until else None
        return [] if name is None else [(first, name)]
    zone = ZoneInfo(parse_rule(rule).tzid)
    out: list[tuple[datetime, str]] = []
    cursor = after
    for _ in range(MAX_INSTANCES):
        found = timeexpr.occurrences(rule, count=200, after=cursor)
        for instant in found:
            if instant >= until:
                return out
            name = skips.hit(instant, zone)
            if name is not None:
                out.append((instant, name))
        if len(found) < 200:
            return out
        cursor = found[-1]
    return out


# --- "except holidays from <url>" ---------------------------------------------------------

SKIP_EXAMPLE = "every weekday at 9am except holidays from https://example.org/holidays.ics"
_EXCEPT = re.compile(r"\bexcept\b", re.IGNORECASE)
_JOINERS = frozenset({"and", "from", "&", "+"})


def split_skip_phrase(text: str) -> tuple[str, list[str]]:
    """Split ``<when> except <words> from <url> [and|from|, <url>...]`` into the
    when-text and the calendar URLs whose events are dates to skip (the words only name
    them: ``holidays``, ``team days off``). Text without ``except`` comes back as it is,
    with no URL. InvalidInput, with an example, for an ``except`` Herald cannot read."""
    found = _EXCEPT.search(text)
    if found is None:
        return text, []
    when = text[: found.start()].strip().rstrip(",").strip()
    rest = text[found.end() :].replace(",", " ").split()
    if not when:
        raise InvalidInput(f'Say when before "except", e.g. "{SKIP_EXAMPLE}".')
    first = next((i for i, word in enumerate(rest) if is_url(word)), None)
    if first is None:
        said = " ".join(rest)[:80]
        raise InvalidInput(
            f'"except {said}" needs the calendar to read the dates from, as an https:// '
            f'URL of an iCalendar (.ics) file, e.g. "{SKIP_EXAMPLE}".'
        )
    words = [w.lower() for w in rest[:first]]
    if not words or words[-1] != "from":
        raise InvalidInput(f'Put "from" before the calendar\'s URL, e.g. "{SKIP_EXAMPLE}".')
    if "except" in words:
        raise InvalidInput(
            'Herald can only skip the dates of calendars: say "except" once, e.g. '
            f'"{SKIP_EXAMPLE}".'
        )
    urls: list[str] = []
    for word in rest[first:]:
        if is_url(word):
            if word not in urls:
                urls.append(word)
        elif word.lower() not in _JOINERS:
            raise InvalidInput(
                f'Could not read "{word[:60]}" after the calendar URL: "except … from URL" '
                'ends the time (more calendars: "from URL and URL"), e.g. '
                f'"every weekday at 9am until june 30 except holidays from https://…".'
            )
    return when, urls


def skip_preview(
    rule: str, after: datetime, skips: Blackouts, *, count: int = 3, scan: int = 2000
) -> tuple[list[datetime], list[tuple[datetime, str]]]:
    """For showing a schedule that skips: the next ``count`` occurrences of a stored
    rule after ``after`` that no blackout hits, and the next ``count`` it skips (with
    the event's name), looking at most ``scan`` occurrences ahead."""
    from core import timeexpr
    from core.timeexpr_rule import parse_rule

    zone = ZoneInfo(parse_rule(rule).tzid)
    sent: list[datetime] = []
    skipped: list[tuple[datetime, str]] = []
    cursor, seen = after, 0
    chunk = 200 if skips else count
    while seen < scan and (len(sent) < count or (skips and len(skipped) < count)):
        want = min(chunk, scan - seen)
        found = timeexpr.occurrences(rule, count=want, after=cursor)
        for instant in found:
            name = skips.hit(instant, zone)
            if name is None:
                if len(sent) < count:
                    sent.append(instant)
            elif len(skipped) < count:
                skipped.append((instant, name))
        if len(found) < want:
            break
        seen += len(found)
        cursor = found[-1]
    return sent, skipped


def schedule_upcoming(
    schedule: Schedule, count: int = 3
) -> tuple[list[datetime], list[tuple[datetime, str]]]:
    """What a surface shows of a schedule: its next ``count`` sends, and the next
    ``count`` occurrences its skip calendars skip, with the event's name (nothing unless
    it is active). A stored rule that cannot be read shows its planned next send only
    (a listing must not fail over one schedule)."""
    first = schedule.next_run_at
    if schedule.state != ScheduleState.ACTIVE.value or first is None:
        return [], []
    if schedule.rrule is None:
        return [first], []
    skips = Blackouts.from_json(schedule.options.get("skip"))
    try:
        return skip_preview(schedule.rrule, first - timedelta(microseconds=1), skips, count=count)
    except HeraldError:
        return [first], []
