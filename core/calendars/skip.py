"""Schedules that skip a calendar's events: the ``except … from <url>`` phrase, and
the occurrences a schedule sends or skips given its :class:`Blackouts`.

Pure: reading a calendar's text into blackouts happens in a worker process
(:class:`core.calendars.CalendarReader`), fetching one in :func:`core.calendars.fetch`.
Every error a person can cause is an :class:`~core.errors.InvalidInput` whose message
says what is wrong.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from itertools import islice
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from core.calendars.read import MAX_INSTANCES, Blackouts
from core.errors import HeraldError, InvalidInput

if TYPE_CHECKING:
    from collections.abc import Iterator

    from core import timeexpr
    from core.models import Schedule


# --- schedules that skip ------------------------------------------------------------------


def next_allowed(
    rule: str,
    after: datetime,
    skips: Blackouts,
    *,
    limit: int = 1000,
    meter: timeexpr.Meter | None = None,
) -> tuple[datetime | None, list[tuple[datetime, str]]]:
    """The first occurrence of a stored rule strictly after ``after`` that no blackout
    hits, and the ``(occurrence, event name)`` pairs skipped on the way (None when the
    rule ends, or after ``limit`` skipped ones).

    One expansion on one ``meter`` (a fresh one when None) looks at every occurrence:
    the whole answer costs at most what listing that many occurrences may
    (:func:`core.timeexpr.iter_occurrences`), however many are skipped. Raises
    InvalidInput for a rule that cannot be read or is too costly to expand."""
    from core import timeexpr

    zone = ZoneInfo(timeexpr.parse_rule(rule).tzid)
    skipped: list[tuple[datetime, str]] = []
    for upcoming in timeexpr.iter_occurrences(rule, after, meter=meter):
        name = skips.hit(upcoming, zone)
        if name is None:
            return upcoming, skipped
        skipped.append((upcoming, name))
        if len(skipped) >= limit:
            break
    return None, skipped


def skipped_between(
    rule: str | None,
    first: datetime,
    after: datetime,
    until: datetime,
    skips: Blackouts,
    tz: str = "UTC",
    *,
    meter: timeexpr.Meter | None = None,
) -> list[tuple[datetime, str]]:
    """Occurrences in ``(after, until)`` a blackout hits, with the event's name, in
    order (the first :data:`~core.calendars.MAX_INSTANCES` of them). A one-off (``rule``
    None) has the single occurrence ``first``, read in ``tz``.

    Only the rule's occurrences inside blackouts are visited, window by window: a
    schedule every minute has 576,000 occurrences in the coming 400 days, and walking
    them all held the event loop for 18 s. Every window's walk is charged to one
    ``meter`` (a fresh one when None; see :func:`core.timeexpr.iter_occurrences`), so
    many windows cost one budget and an occurrence's share for each occurrence looked
    at. Raises InvalidInput for a rule that cannot be read or is too costly to expand."""
    from core import timeexpr

    if not skips:
        return []
    if rule is None:
        name = skips.hit(first, ZoneInfo(tz)) if after < first < until else None
        return [] if name is None else [(first, name)]
    zone = ZoneInfo(timeexpr.parse_rule(rule).tzid)
    meter = timeexpr.Meter() if meter is None else meter
    out: list[tuple[datetime, str]] = []
    found: Iterator[datetime] | None = None
    pending: datetime | None = None  # the first occurrence not looked at yet
    for begin, end in _windows(skips, zone, after, until):
        if found is None or (pending is not None and pending < begin):
            # the walk restarts at the window rather than pass the occurrences between
            found = timeexpr.iter_occurrences(rule, max(after, begin - _TICK), meter=meter)
            pending = next(found, None)
        while pending is not None and pending < end:
            name = skips.hit(pending, zone)
            if name is not None:
                out.append((pending, name))
                if len(out) >= MAX_INSTANCES:
                    return out
            pending = next(found, None)
        if pending is None:
            break  # the rule has ended
    return out


_TICK = timedelta(microseconds=1)


def _windows(
    skips: Blackouts, zone: ZoneInfo, after: datetime, until: datetime
) -> list[tuple[datetime, datetime]]:
    """The times ``skips`` black out within ``(after, until)``, as sorted, disjoint
    ``[begin, end)`` UTC windows (an all-day date is its local day in ``zone``)."""
    spans = [
        (
            datetime.combine(day, time(0), zone).astimezone(UTC),
            datetime.combine(day + timedelta(days=1), time(0), zone).astimezone(UTC),
        )
        for day in skips.days
    ]
    spans += [(begin, end) for begin, end, _ in skips.spans]
    merged: list[tuple[datetime, datetime]] = []
    for begin, end in sorted(s for s in spans if s[1] > after and s[0] < until):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return [(begin, min(end, until)) for begin, end in merged]


# --- "except holidays from <url>" ---------------------------------------------------------


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://", "webcal://"))


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
    rule: str,
    after: datetime,
    skips: Blackouts,
    *,
    count: int = 3,
    scan: int = 2000,
    meter: timeexpr.Meter | None = None,
) -> tuple[list[datetime], list[tuple[datetime, str]]]:
    """For showing a schedule that skips: the next ``count`` occurrences of a stored
    rule after ``after`` that no blackout hits, and the next ``count`` it skips (with
    the event's name), looking at most ``scan`` occurrences ahead, on one ``meter`` (a
    fresh one when None; see :func:`core.timeexpr.iter_occurrences`). Raises
    InvalidInput for a rule that cannot be read or is too costly to expand."""
    from core import timeexpr

    zone = ZoneInfo(timeexpr.parse_rule(rule).tzid)
    sent: list[datetime] = []
    skipped: list[tuple[datetime, str]] = []
    if count <= 0:
        return sent, skipped
    found = timeexpr.iter_occurrences(rule, after, meter=meter)
    for instant in islice(found, scan):
        name = skips.hit(instant, zone)
        if name is None:
            if len(sent) < count:
                sent.append(instant)
        elif len(skipped) < count:
            skipped.append((instant, name))
        if len(sent) >= count and (not skips or len(skipped) >= count):
            break
    return sent, skipped


def schedule_upcoming(
    schedule: Schedule, count: int = 3
) -> tuple[list[datetime], list[tuple[datetime, str]]]:
    """What a surface shows of a schedule: its next ``count`` sends, and the next
    ``count`` occurrences its skip calendars skip, with the event's name (nothing unless
    it is active). A stored rule that cannot be read shows its planned next send only
    (a listing must not fail over one schedule)."""
    from core.models import ScheduleState  # not at the top: `herald when` needs no tables

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
