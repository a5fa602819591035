"""iCalendar sources: fetch them, and plan schedules that skip their events.

Pure except :func:`fetch` (ETag / Last-Modified revalidation, through the network guard
and within :class:`core.calendar_fetch.FetchLimits`). Parsing and expanding a
calendar's text lives in :mod:`core.ics_read` and runs in a worker process
(:class:`core.calendar_worker.CalendarReader`). Every error a person can cause is a
:class:`CalendarError` whose message says what is wrong with which source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from itertools import islice
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from core.errors import HeraldError, InvalidInput
from core.ics_read import MAX_INSTANCES
from core.ics_read import Blackouts as Blackouts  # known from here, too
from core.ics_read import CalendarError as CalendarError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from core import timeexpr
    from core.calendar_fetch import FetchLimits
    from core.models import Schedule
    from core.netguard import Guard


def parse(text: str | bytes, source: str = "the calendar") -> None:
    """The check :func:`fetch` gives a body: it must begin as iCalendar text does
    (``BEGIN:VCALENDAR``); CalendarError if not. Reading it in full is
    :func:`core.ics_read.parse`, in a calendar worker only, under its deadline: parsing
    5 MB of events takes 13-16 s, which neither the event loop nor a thread beside it
    (holding the GIL, impossible to stop) may spend."""
    head = text[:64].decode(errors="replace") if isinstance(text, bytes) else text[:64]
    if not head.lstrip("\ufeff \t\r\n").upper().startswith("BEGIN:VCALENDAR"):
        raise CalendarError(f"{source} is not an iCalendar file (no BEGIN:VCALENDAR).")


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
    import asyncio

    from core import calendar_fetch  # imports httpx: only where a calendar is fetched
    from core.netguard import Guard  # (and asyncio, ssl: not for `herald when`)

    try:
        answer = await calendar_fetch.get(
            url, headers, guard=guard or Guard(), limits=limits or calendar_fetch.FetchLimits()
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
    order (the first :data:`~core.ics_read.MAX_INSTANCES` of them). A one-off (``rule``
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
