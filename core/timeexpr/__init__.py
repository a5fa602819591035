"""Time expressions: a person's text in, one instant or a recurrence out.

Pure: no I/O, no wall clock. ``now`` and the zone are arguments.

Readers are tried in this order, the first that recognises the text wins:

1. RFC 5545 text (``RRULE:FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0``, optional
   ``DTSTART``, ``EXDATE`` and ``RDATE`` lines), 2. five-field cron (``0 9 * * 1-5``, see
   core.timeexpr.cron),
3. recurring phrases (``every weekday at 9am``, core.timeexpr.every),
4. one-off phrases and ISO-8601 (``in 5 minutes``, ``tomorrow at noon``,
   core.timeexpr.once), 5. dateparser for other English dates (core.timeexpr.freeform).

A recurrence is stored as RFC 5545 text with its zone in DTSTART
(``DTSTART;TZID=Europe/Berlin:20260330T090000`` + ``RRULE:...``). DTSTART is the
first occurrence unless the person wrote one (or, for an hourly rule whose first
occurrence falls in a repeated fall-back hour, one step before it), and every
occurrence, the first included, is computed from that stored text by
core.timeexpr.expand (see there for the clock each kind of rule runs on), so the preview,
the description and the dispatcher all read one meaning. Local times follow RFC
5545 (and zoneinfo's ``fold=0``): a time in a spring-forward gap is read with the
offset before the gap, an ambiguous fall-back time is its first occurrence.

A rule or day that names no time of day ("every weekday", "tomorrow", "jan 4") takes
the default time (``default_time``, 09:00 unless the caller gives the tenant's), and the
:class:`When` says so (``default_time``, ``read_back``), so the person is told; so does
a phrase read in one of two ways ("every 2nd tuesday", "twice a day": ``note``).

A zone at the end of a phrase is read (``every sunday at 6pm PST``, ``tomorrow 9am
Europe/Berlin``, ``at 5pm berlin time``; :func:`core.zones.zone_at_end`): the time is
in that zone, and the read-back names it. A time in the past is refused as such ("that
is in the past"), even "yesterday at 9".

Every error is :class:`core.errors.InvalidInput` with a sentence naming what was
not understood and an example that works, or, when the words were nearly ones Herald
knows, the phrase they almost were ("Did you mean 'every friday at 9am'?",
core.timeexpr.suggest).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from itertools import takewhile
from zoneinfo import ZoneInfo

from core.errors import InvalidInput
from core.timeexpr.cron import cron_lines
from core.timeexpr.dates import with_dates
from core.timeexpr.describe import describe_rule
from core.timeexpr.durations import UNITS as DURATION_UNITS
from core.timeexpr.durations import describe_duration, parse_duration
from core.timeexpr.every import Draft, parse_every
from core.timeexpr.expand import check_happens, instants, rule_pairs, take
from core.timeexpr.freeform import parse_freeform
from core.timeexpr.metered import Meter
from core.timeexpr.once import Moment, parse_once
from core.timeexpr.rule import (
    MAX_YEAR,
    SUB_DAILY,
    Rule,
    elapsed_offset,
    exact_start,
    localize,
    step_of,
    wall_clock,
    with_start,
)
from core.timeexpr.rule_text import parse_rule, read_lines
from core.timeexpr.suggest import suggestion, vocabulary
from core.timeexpr.words import (
    MONTHS,
    ORDINAL_RE,
    WEEKDAY_RE,
    WEEKDAYS,
    clock,
    format_clock,
    format_day,
    normalise,
    ordinal_text,
    refuse,
)
from core.zones import zone, zone_at_end

# The package's one public face: modules outside core/timeexpr/ import
# ``from core import timeexpr`` and use these names (an import contract in
# pyproject.toml keeps them out of the sub-modules).
__all__ = [
    "describe_once",
    "DEFAULT_TIME",
    "DEFAULT_TIME_NOTE",
    "DURATION_UNITS",
    "MONTHS",
    "Meter",
    "WEEKDAYS",
    "Rule",
    "When",
    "clock",
    "describe",
    "describe_duration",
    "format_clock",
    "format_day",
    "iter_occurrences",
    "next_occurrence",
    "occurrences",
    "ordinal_text",
    "parse_duration",
    "parse_rule",
    "parse_when",
    "read_back_notes",
    "take",
    "took_default_time",
    "vocabulary",
    "warm_up",
    "zone",
]

_MAX_LENGTH = 300
#: The time of day of a rule or day that names none (Slack's /remind takes 9 am too).
DEFAULT_TIME = time(9, 0)
#: What a read-back adds when the default time was taken.
DEFAULT_TIME_NOTE = "add 'at …' to change it"


@dataclass(frozen=True)
class When:
    """How Herald reads one expression.

    ``first`` is the first occurrence (aware UTC, after the ``now`` it was read at).
    ``rule`` is the RFC 5545 text (``DTSTART;TZID=...`` line plus ``RRULE:`` lines)
    for a recurrence, else None. ``default_time`` is the time of day Herald chose
    because the text named none ("every weekday"), else None. ``note`` is what the
    read-back adds about how the text was read ("'night' is 20:00", "PST is read as
    America/Los_Angeles"), else None.
    """

    expression: str
    timezone: str
    first: datetime
    rule: str | None
    description: str
    default_time: time | None = None
    note: str | None = None

    @property
    def recurring(self) -> bool:
        return self.rule is not None

    @property
    def read_back(self) -> str:
        """The description, telling the person when the time of day was Herald's
        choice: "every weekday at 09:00 (UTC) — add 'at …' to change it"."""
        return " — ".join([self.description, *self.notes])

    @property
    def notes(self) -> tuple[str, ...]:
        """What the read-back adds to the description, in one sentence's parts."""
        said = [DEFAULT_TIME_NOTE] if self.default_time is not None else []
        said += [self.note] if self.note else []
        return ("; ".join(said),) if said else ()

    def occurrences(self, count: int = 5, after: datetime | None = None) -> list[datetime]:
        """The next ``count`` occurrences strictly after ``after`` (default: from the first)."""
        since = _utc(after)
        if self.rule is None:
            return [self.first] if count > 0 and (since is None or self.first > since) else []
        return occurrences(
            self.rule, count=count, after=self.first - _TICK if since is None else since
        )


_TICK = timedelta(microseconds=1)


def parse_when(text: str, *, tz: str, now: datetime, default_time: time = DEFAULT_TIME) -> When:
    """Read ``text`` written in zone ``tz`` at instant ``now``; a rule or day that
    names no time of day fires at ``default_time``.

    Raises InvalidInput with a sentence saying what was not understood (with the
    phrase it almost was, when its words were nearly Herald's), or when the time is
    not in the future (for a recurrence: when it never fires again).
    """
    zi, now, raw = _checked(text, tz, now)
    words = normalise(raw)
    try:
        return _read(raw, words, zi, now, default_time)
    except InvalidInput as refused:
        better = suggestion(words, refused, lambda w: _read(w, w, zi, now, default_time))
        if better is None:
            raise
        if isinstance(better, InvalidInput):  # "febuary 30": why "february 30" is not
            raise better from refused
        raise InvalidInput(f"Could not read \"{raw}\". Did you mean '{better}'?") from refused


def took_default_time(text: str, *, tz: str, at: datetime) -> bool:
    """Whether ``text``, read in ``tz`` at ``at``, named no time of day and so took the
    default one: what a read-back of a stored schedule tells its author. False when
    it cannot be read there."""
    try:
        zi, now, raw = _checked(text, tz, at)
        return _read(raw, normalise(raw), zi, now, DEFAULT_TIME).default_time is not None
    except InvalidInput:
        return False


def read_back_notes(
    text: str, *, tz: str, at: datetime, default_time: time = DEFAULT_TIME
) -> tuple[str, ...]:
    """What :attr:`When.read_back` adds to the description of ``text`` read in ``tz``
    at ``at`` (the default time taken, a zone or a part of the day as read): what the
    read-back of a stored schedule tells its author. Empty when it cannot be read."""
    try:
        zi, now, raw = _checked(text, tz, at)
        return _read(raw, normalise(raw), zi, now, default_time).notes
    except InvalidInput:
        return ()


def _checked(text: str, tz: str, now: datetime) -> tuple[ZoneInfo, datetime, str]:
    """The zone, ``now`` in UTC and the stripped text, or the refusal of one of them."""
    zi = zone(tz)
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise InvalidInput("Herald needs the current time with its zone to read a time.")
    raw = text.strip() if isinstance(text, str) else ""
    if not raw:
        raise InvalidInput('The time is empty: say when, for example "tomorrow at 9am".')
    if len(raw) > _MAX_LENGTH:
        raise refuse(raw[:40] + "...", "that is too long for a time; keep it to one phrase")
    return zi, now.astimezone(UTC), raw


def _read(raw: str, words: str, zi: ZoneInfo, now: datetime, default_time: time) -> When:
    """The readers in turn (see the module's docstring); the first that knows the
    text answers. A zone at the end of the text is read first: the rest is read in it."""
    if words.startswith(("rrule:", "dtstart", "exdate", "rdate")):
        return _recurring(raw, _rule_input(raw, zi, now), now, default_time)
    found = zone_at_end(raw, vocabulary())
    if found is None:
        return _read_in(raw, words, zi, now, default_time)
    rest, named, said = found
    when = _read_in(rest, normalise(rest), named, now, default_time)
    notes = "; ".join(n for n in (when.note, said) if n) or None
    return replace(when, expression=raw, note=notes)


def _read_in(raw: str, words: str, zi: ZoneInfo, now: datetime, default_time: time) -> When:
    lines = cron_lines(words)
    if lines is not None:
        anchor = datetime.combine(wall_clock(now, zi).date(), time(0))
        cron = Draft(Rule(zi.key, anchor, tuple(lines)), move_start=True)
        return _recurring(raw, cron, now, default_time)
    draft = parse_every(words, zi.key, zi, now, default_time)
    if draft is not None:
        return _recurring(raw, draft, now, default_time)
    moment = parse_once(words, zi, now, default_time)
    if moment is None:
        moment = _day_of_month(words, zi, now, default_time)
    if moment is None:
        found = parse_freeform(words, zi, now, default_time)
        if found is None:
            raise refuse(raw)
        moment = Moment(*found)
    return _once(raw, zi, moment, now, default_time)


#: "the last friday of the month at 5pm", "first monday of next month": one day of a month,
#: once (with "every" in front it is the monthly rule).
_DAY_OF_MONTH = re.compile(
    rf"^(?:on\s+)?(?:the\s+)?(?P<nth>{ORDINAL_RE})\s+(?P<day>{WEEKDAY_RE}|day)\s+of\s+"
    rf"(?P<which>the|this|next)\s+month\b(?P<rest>.*)$"
)


def _day_of_month(words: str, zi: ZoneInfo, now: datetime, default_time: time) -> Moment | None:
    """The one-off "the last friday of the month" (this month's, or next month's when
    this month's has passed; "of next month": next month's), read as the first send of
    the monthly rule "every last friday of the month", on its budget; the read-back
    says how to make it monthly. None when the words are not of that shape."""
    found = _DAY_OF_MONTH.match(words)
    if found is None:
        return None
    nth, day, which, rest = found.group("nth", "day", "which", "rest")
    monthly = f"every {nth} {day} of the month{rest}"
    draft = parse_every(monthly, zi.key, zi, now, default_time)
    if draft is None:
        return None
    after = now
    if which == "next":
        local = wall_clock(now, zi)
        start = (local.replace(day=28) + timedelta(days=4)).replace(day=1)  # next month's 1st
        after = localize(datetime.combine(start.date(), time(0)), zi) - timedelta(microseconds=1)
    meter = Meter()
    rule = parse_rule(_settle(draft, now, monthly, meter).text())
    first = take(rule, 1, after, meter)
    if not first:
        raise _never(words)
    if which == "this" and wall_clock(first[0], zi).month != wall_clock(now, zi).month:
        raise refuse(words, "that day of this month has passed; say 'of next month'")
    note = f"for every month, say '{monthly.strip()}'"
    return Moment(first[0], draft.defaulted, "; ".join(n for n in (draft.note, note) if n))


def _once(raw: str, zi: ZoneInfo, moment: Moment, now: datetime, default_time: time) -> When:
    instant = moment.instant
    local = instant.astimezone(zi)
    shown = f"{format_day(local)} {format_clock(local)}"
    if instant <= now:
        if moment.defaulted and local.date() == wall_clock(now, zi).date():
            raise refuse(
                raw,
                f"the default time, {format_clock(default_time)}, has passed today; "
                f'say at what time, for example "{raw} at 5pm"',
            )
        raise InvalidInput(
            f'"{raw}" is {shown} {zi.key}: that is in the past; pick a time in the future.'
        )
    if local.year > MAX_YEAR:
        raise refuse(raw, f"Herald schedules up to the year {MAX_YEAR}")
    chosen = default_time if moment.defaulted else None
    description = describe_once(instant, zi.key)
    return When(raw, zi.key, instant, None, description, chosen, moment.note)


def describe_once(instant: datetime, zone: str) -> str:
    """A one-off's time in words, in its own zone: ``once, Mon 30 Mar 2026 09:00
    (Europe/Berlin)`` (every surface says a schedule's time with this or :func:`describe`)."""
    local = instant.astimezone(ZoneInfo(zone))
    return f"once, {format_day(local)} {format_clock(local)} ({zone})"


def _rule_input(raw: str, zi: ZoneInfo, now: datetime) -> Draft:
    """RFC 5545 text typed by a person. Without DTSTART the rule starts today at
    00:00 local (so no minute or second of "now" leaks in) and is moved to its first
    occurrence; a floating DTSTART (or EXDATE, RDATE) is in the person's zone."""
    tzid, dtstart, lines, date_lines = read_lines(raw)
    check_happens(
        lines, datetime.combine(wall_clock(now, zi).date(), time(0)) if dtstart is None else dtstart
    )
    if dtstart is None:
        anchor = datetime.combine(wall_clock(now, zi).date(), time(0))
        rule = with_dates(Rule(zi.key, anchor, tuple(lines)), date_lines)
        return Draft(rule, move_start=True)
    rule = with_dates(Rule(tzid or zi.key, dtstart, tuple(lines)), date_lines)
    return Draft(rule, move_start=False)


class _Never(InvalidInput):
    """A recurrence with no occurrence after now."""


def _never(raw: str) -> InvalidInput:
    return _Never(
        f'"{raw}" never happens after now (check its end date or count); '
        'for example "every day at 9am until 2026-12-31".'
    )


def _settle(draft: Draft, now: datetime, raw: str, meter: Meter) -> Rule:
    """The rule as stored: DTSTART moved to the first occurrence after ``now`` when
    the person did not choose a start, with any COUNT counted from there."""
    rule = draft.rule
    if not draft.move_start:
        return rule
    on_wall = all(p["FREQ"] not in SUB_DAILY for p in rule.lines)
    # The first day is the first that matches with no interval, so "every other
    # friday" starts on the coming friday rather than where dateutil's periods,
    # counted from today, would put it. COUNT is applied from that first one.
    dropped = ("COUNT", "INTERVAL") if on_wall else ("COUNT",)
    counted = [{k: v for k, v in p.items() if k not in dropped} for p in rule.lines]
    # the RRULE lines alone: DTSTART moves to their first instance (EXDATE and RDATE
    # values keep their own instants, and COUNT counts RRULE instances, RFC 5545)
    probe = Rule(rule.tzid, rule.dtstart, tuple(counted))
    found = next(rule_pairs(probe, now, meter), None)
    if found is None:
        if rule.rdates:
            return rule  # only RDATE values are left: DTSTART stays as it is
        raise _never(raw)
    instant, reading = found
    if on_wall:
        return with_start(rule, reading)  # the wall time asked for, even inside a gap
    if len(rule.lines) > 1:
        return rule  # mixed clocks: keep the start as written
    start, point = exact_start(instant, rule.zone, step_of(rule.lines[0]))
    if elapsed_offset(with_start(rule, start)) != elapsed_offset(rule):
        # A sub-daily rule is read on the UTC offset of its DTSTART; moving DTSTART
        # across an offset change would move its BY parts too. Keep it.
        start, point = rule.dtstart, localize(rule.dtstart, rule.zone)
    if point == instant:
        return with_start(rule, start)
    # DTSTART stays before the first occurrence (in the past, or one grid point back
    # when the first falls in the repeated fall-back hour, which no local time names):
    # occurrences before the first are not counted against "for N times".
    before = takewhile(
        lambda pair: pair[0] < instant, rule_pairs(with_start(probe, start), meter=meter)
    )
    return with_start(rule, start, extra_count=sum(1 for _ in before))


def _recurring(raw: str, draft: Draft, now: datetime, default_time: time) -> When:
    """The When of a recurrence; its reading shares one budget (core.timeexpr.metered),
    past which it is refused as too costly. "until friday" typed on a Friday whose
    occurrences are over is read as next Friday (``draft.later``), on the same budget."""
    meter = Meter()
    try:
        return _recurring_on(raw, draft, now, default_time, meter)
    except _Never:
        if draft.later is None:
            raise
        return _recurring_on(raw, draft.later, now, default_time, meter)


def _recurring_on(raw: str, draft: Draft, now: datetime, default_time: time, meter: Meter) -> When:
    rule = _settle(draft, now, raw, meter)
    text = rule.text()
    stored = parse_rule(text)  # everything below reads the stored text
    first = take(stored, 1, now, meter)
    if not first:
        raise _never(raw)
    chosen = default_time if draft.defaulted else None
    described = describe_rule(stored)
    return When(raw, stored.tzid, first[0], text, described, chosen, draft.note)


def _stored(rule: str) -> Rule:
    if not isinstance(rule, str) or not rule.strip():
        raise InvalidInput("The stored rule is empty.")
    return parse_rule(rule)


def _utc(after: datetime | None) -> datetime | None:
    """``after`` as aware UTC; a naive value is taken as UTC, which is how Herald
    stores every time (some database drivers hand them back without a zone)."""
    if after is None:
        return None
    if not isinstance(after, datetime):
        raise InvalidInput("Occurrences are asked for after a datetime.")
    return after.replace(tzinfo=UTC) if after.utcoffset() is None else after.astimezone(UTC)


def occurrences(rule: str, *, count: int, after: datetime | None = None) -> list[datetime]:
    """Occurrences (aware UTC) of a stored RFC 5545 rule strictly after ``after``.

    ``after`` None means from DTSTART, inclusive; a naive ``after`` is read as UTC.
    Raises InvalidInput for a rule text that cannot be read.
    """
    return take(_stored(rule), count, _utc(after))


def iter_occurrences(
    rule: str, after: datetime | None = None, *, meter: Meter | None = None
) -> Iterator[datetime]:
    """Occurrences (aware UTC) of a stored rule strictly after ``after``, one at a time,
    for a caller that does not know how many it will look at (skipping dates).

    All of them share one ``meter`` (a fresh :class:`Meter` when None), which each
    occurrence asked for raises by what :func:`occurrences` gives one: finding the
    ``n``-th costs at most what ``occurrences(rule, count=n)`` may. Raises InvalidInput
    for a rule text that cannot be read (at once), and, while iterating, for a rule too
    costly to expand once that budget is spent.
    """
    return instants(_stored(rule), _utc(after), Meter() if meter is None else meter)


def next_occurrence(rule: str, after: datetime) -> datetime | None:
    """The first occurrence of a stored rule strictly after ``after``, or None when it has ended."""
    found = occurrences(rule, count=1, after=after)
    return found[0] if found else None


def describe(rule: str) -> str:
    """Plain words for a stored rule, e.g. "every weekday at 09:00 (Europe/Berlin)"."""
    return describe_rule(_stored(rule))


def warm_up() -> None:
    """Load what the first reading would otherwise load (dateparser's data, ~0.1 s,
    and rapidfuzz for the first suggestion).

    Optional; a service may call it once at start-up so no person waits for it.
    """
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for text in (
        "every day at 9am",
        "friday at 5 in the afternoon",
        "April 1st, 2030 8:00 AM",
        "tomorow at 9am",  # a suggestion: loads rapidfuzz
    ):
        try:
            parse_when(text, tz="UTC", now=now)
        except InvalidInput:
            pass
