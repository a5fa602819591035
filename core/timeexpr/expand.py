"""Stored rules expanded: a :class:`core.timeexpr.rule.Rule` in, aware UTC instants out.

dateutil.rrule does the calendar work; this module only decides on which clock it
runs, keeps its walk on a meter and turns its results into instants:

* Daily and coarser rules (DAILY, WEEKLY, MONTHLY, YEARLY) run on the **local wall
  clock**: dateutil expands naive local times, and each one becomes an instant with
  zoneinfo's ``fold=0``. That is RFC 5545's rule: a time inside a spring-forward gap
  is read with the UTC offset before the gap (so 02:30 becomes 03:30), an ambiguous
  fall-back time is its first occurrence. "Every day at 09:00" stays at 09:00.
* Sub-daily rules (HOURLY, MINUTELY) run on the **elapsed-time timeline**: dateutil
  expands them on a fixed-offset clock, the zone's UTC offset at DTSTART, so the
  steps are exact elapsed intervals and "every hour" never fires twice at one instant
  nor skips an hour when the zone changes offset. The rule is aligned to the local
  clock through DTSTART (":00" stays ":00" across whole-hour DST shifts). The price:
  any BYHOUR/BYDAY/... filter of a sub-daily rule is read on that fixed-offset clock.
* UNTIL is an instant (UTC) and is applied here, after the wall-clock mapping. Rules
  with no COUNT are restarted near the requested point (by whole periods, so their
  meaning does not change) so that asking for the next occurrence of a rule that
  started years ago stays cheap.

Every walk is charged to a :class:`core.timeexpr.metered.Meter` (one reading of a
rule shares one): past its budget the rule is refused as too costly to expand
(:func:`too_costly`), and a line no day can ever match is found on a small meter of
its own (:func:`line_never_happens`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from itertools import chain, islice

from dateutil.relativedelta import relativedelta
from dateutil.rrule import weekday

from core.errors import InvalidInput
from core.timeexpr.metered import (
    BUDGET,
    PER_OCCURRENCE,
    Exhausted,
    Meter,
    MeteredRule,
    PastWindow,
)
from core.timeexpr.rule import (
    BYDAY_RE,
    DAY_CODES,
    FREQUENCIES,
    MAX_YEAR,
    MIN_YEAR,
    SUB_DAILY,
    Rule,
    bad_rule,
    elapsed_offset,
    explicit_defaults,
    localize,
    wall_clock,
)

_MAX_UTC_OFFSET = timedelta(hours=26)  # more than any zone's offset from UTC
_WINDOW_YEARS = 60  # a rule with no occurrence in this long has ended
_LAST = datetime(MAX_YEAR + _WINDOW_YEARS, 1, 1)  # nothing is searched after this


def _rrule(
    parts: dict[str, str], dtstart: datetime, until: datetime, meter: Meter | None = None
) -> MeteredRule:
    """dateutil's rrule for one part map on a naive clock, up to ``until``, no COUNT,
    its walk charged to ``meter`` and stopped after ``until``'s day."""

    if meter is not None:
        meter.charge(BUILD_COST)
    parts = _as_yearly(parts)

    def ints(key: str) -> list[int] | None:
        return [int(v) for v in parts[key].split(",")] if key in parts else None

    days: list[weekday] | None = None
    if "BYDAY" in parts:
        days = []
        for item in parts["BYDAY"].split(","):
            m = BYDAY_RE.match(item)
            assert m is not None  # checked by check_parts
            day = weekday(DAY_CODES.index(m.group(2)))
            days.append(day(int(m.group(1))) if m.group(1) else day)
    try:
        return _build(parts, days, ints, dtstart, until, meter)
    except ValueError as exc:  # e.g. "Invalid rrule byxxx generates an empty set."
        raise bad_rule(f"it can never happen ({exc})") from exc


#: What building one dateutil rule costs, in candidates (core.timeexpr.metered).
BUILD_COST = 250
#: What each time dateutil yields costs on its way out (its instant in the zone, the
#: ordering of lines and of a gap's wall times, EXDATE).
YIELD_COST = 20


def _as_yearly(parts: dict[str, str]) -> dict[str, str]:
    """A daily rule with day parts and no interval as the yearly rule it equals
    (every day its parts allow): dateutil's yearly walk checks a day for a sixteenth
    of what its daily walk costs, which a rare day ("29 February, a Monday") needs."""
    if parts["FREQ"] != "DAILY" or parts.get("INTERVAL", "1") != "1":
        return parts
    if not any(k in parts for k in _SUB_DAILY_DAYS):
        return parts
    yearly = {**parts, "FREQ": "YEARLY"}
    yearly.setdefault("BYDAY", _ALL_DAYS)  # else dateutil takes DTSTART's day of the month
    return yearly


def _build(
    parts: dict[str, str],
    days: list[weekday] | None,
    ints: Callable[[str], list[int] | None],
    dtstart: datetime,
    until: datetime,
    meter: Meter | None,
) -> MeteredRule:
    return MeteredRule(
        FREQUENCIES[parts["FREQ"]],
        meter=meter,
        stop=until.date(),
        dtstart=dtstart,
        interval=int(parts.get("INTERVAL", "1")),
        wkst=DAY_CODES.index(parts.get("WKST", "MO")),
        until=until,
        bysetpos=ints("BYSETPOS"),
        bymonth=ints("BYMONTH"),
        bymonthday=ints("BYMONTHDAY"),
        byyearday=ints("BYYEARDAY"),
        byweekno=ints("BYWEEKNO"),
        byweekday=days,
        byhour=ints("BYHOUR"),
        byminute=ints("BYMINUTE"),
        bysecond=ints("BYSECOND"),
        cache=False,
    )


def _expand(
    parts: dict[str, str], dtstart: datetime, start: datetime, end: datetime, meter: Meter
) -> Iterator[datetime]:
    """The naive times of one part map from ``start`` (DTSTART, or DTSTART moved on by
    whole periods) up to ``end``, with COUNT applied, charged to ``meter``.

    dateutil loops silently through periods that match nothing (to the year 9999,
    whatever its UNTIL), so it is run on a meter (core.timeexpr.metered) in windows of
    60 years, each restarted by whole periods and stopped past its end; a window
    without a single occurrence ends the rule. COUNT is applied here, not by
    dateutil, so that counted rules are bounded the same way (dateutil refuses COUNT
    with UNTIL). Raises Exhausted once the meter's budget is spent.
    """
    remaining = int(parts["COUNT"]) if "COUNT" in parts else None
    end = min(end, _LAST)
    last: datetime | None = None
    while start <= end:
        window = min(end, start + relativedelta(years=_WINDOW_YEARS))
        fresh = False
        for value in _window(parts, dtstart, start, window, meter):
            meter.charge(YIELD_COST)
            if last is not None and value <= last:
                continue  # already given by the previous window
            fresh, last = True, value
            yield value
            if remaining is not None:
                remaining -= 1
                if remaining == 0:
                    return
        if not fresh or window >= end:
            return
        start = _restart(parts, dtstart, window)


def _window(
    parts: dict[str, str], dtstart: datetime, start: datetime, window: datetime, meter: Meter
) -> Iterator[datetime]:
    """dateutil's times of one part map from ``start`` up to ``window``.

    An hourly or minutely rule with day parts is walked only over the days they
    allow (found by a yearly walk, which checks a day for a fraction of what
    dateutil's clock-by-clock walk through a day that does not match costs): "every
    minute on 29 February" looks at the days of four years, not at their minutes.
    """
    if parts["FREQ"] not in SUB_DAILY or not any(k in parts for k in _SUB_DAILY_DAYS):
        yield from _walk(_rrule(parts, start, window, meter))
        return
    for first, last in _day_runs(parts, start.date(), window.date(), meter):
        begin = max(start, _restart(parts, dtstart, datetime.combine(first, time())))
        yield from _walk(_rrule(parts, begin, min(window, datetime.combine(last, time.max)), meter))


_SUB_DAILY_DAYS = ("BYMONTH", "BYYEARDAY", "BYMONTHDAY", "BYDAY")
_ALL_DAYS = ",".join(DAY_CODES)
_LONGEST_RUN = 64  # days walked at once: a rule matching every day is not looked ahead of


def _day_runs(
    parts: dict[str, str], first: date, last: date, meter: Meter
) -> Iterator[tuple[date, date]]:
    """The runs of consecutive days from ``first`` to ``last`` that a sub-daily rule's
    day parts allow, as (first day, last day), at most :data:`_LONGEST_RUN` days each."""
    days = {k: v for k, v in parts.items() if k in (*_SUB_DAILY_DAYS, "WKST")}
    days.setdefault("BYDAY", _ALL_DAYS)  # else dateutil takes DTSTART's day of the month
    finder = _rrule(
        {"FREQ": "YEARLY", **days},
        datetime(first.year, 1, 1),
        datetime.combine(last, time()),
        meter,
    )
    run: tuple[date, date] | None = None
    for found in _walk(finder):
        day = found.date()
        if day < first:
            continue
        if (
            run is not None
            and day == run[1] + timedelta(days=1)
            and (day - run[0]).days < _LONGEST_RUN
        ):
            run = (run[0], day)
            continue
        if run is not None:
            yield run
        run = (day, day)
    if run is not None:
        yield run


def _walk(rule: MeteredRule) -> Iterator[datetime]:
    """dateutil's times of ``rule`` up to the end of its window.

    A rule that stops matching partway through (an interval and BYHOUR that
    dateutil finds incompatible only while walking) ends there.
    """
    try:
        yield from rule
    except (PastWindow, ValueError):
        return


def _restart(parts: dict[str, str], dtstart: datetime, target: datetime) -> datetime:
    """The latest start <= ``target`` a whole number of periods after ``dtstart``.

    Day parts must be explicit (see explicit_defaults) for this to keep the meaning.
    """
    if target <= dtstart:
        return dtstart
    freq, n = parts["FREQ"], int(parts.get("INTERVAL", "1"))
    if freq in ("HOURLY", "MINUTELY"):
        step = timedelta(hours=n) if freq == "HOURLY" else timedelta(minutes=n)
        return dtstart + step * ((target - dtstart) // step)
    if freq in ("DAILY", "WEEKLY"):
        step_days = n if freq == "DAILY" else 7 * n
        k = (target.date() - dtstart.date()).days // step_days
        return dtstart + timedelta(days=k * step_days)
    months = (target.year - dtstart.year) * 12 + target.month - dtstart.month - 1
    step_months = n if freq == "MONTHLY" else 12 * n
    k = max(months, 0) // step_months
    if k == 0:
        return dtstart
    base = dtstart.replace(day=1) if freq == "MONTHLY" else dtstart.replace(month=1, day=1)
    return base + relativedelta(months=k * step_months)


Pair = tuple[datetime, datetime]  # (aware UTC instant, naive reading on the rule's clock)


def _line_pairs(
    rule: Rule, parts: dict[str, str], after: datetime | None, meter: Meter
) -> Iterator[Pair]:
    """Sorted, distinct instants of one RRULE line, from near ``after`` on."""
    until = rule.until(parts)
    parts = explicit_defaults(parts, rule.dtstart)
    if parts["FREQ"] in SUB_DAILY:
        return _elapsed_pairs(rule, parts, after, until, meter)
    return _wall_pairs(rule, parts, after, until, meter)


def _end(until: datetime | None, offset: timedelta) -> datetime:
    """The last naive time worth expanding: UNTIL on the rule's clock, or the limit."""
    return _LAST if until is None else min(_LAST, until.replace(tzinfo=None) + offset)


#: Above every instant: the floor that releases all held-back instants.
_RELEASE_ALL = datetime.max.replace(tzinfo=UTC)


def _wall_pairs(
    rule: Rule, parts: dict[str, str], after: datetime | None, until: datetime | None, meter: Meter
) -> Iterator[Pair]:
    zi = rule.zone
    start = rule.dtstart
    if after is not None and "COUNT" not in parts:  # COUNT counts from DTSTART
        start = _restart(parts, rule.dtstart, wall_clock(after, zi) - timedelta(days=2))
    # A wall time in a gap maps later than the wall times just after it, so hold
    # instants back until no later wall time can map below them.
    pending: list[Pair] = []
    last: datetime | None = None
    walls = _expand(parts, rule.dtstart, start, _end(until, _MAX_UTC_OFFSET), meter)
    for wall in chain(walls, [None]):
        if wall is None:  # the walk is over: release everything held back
            floor = _RELEASE_ALL
        else:
            heapq.heappush(pending, (localize(wall, zi), wall))
            floor = wall.replace(tzinfo=UTC) - _MAX_UTC_OFFSET
        while pending and pending[0][0] < floor:
            pair = heapq.heappop(pending)
            if until is not None and pair[0] > until:
                return
            if pair[0] != last:
                last = pair[0]
                yield pair


def _elapsed_pairs(
    rule: Rule, parts: dict[str, str], after: datetime | None, until: datetime | None, meter: Meter
) -> Iterator[Pair]:
    offset = elapsed_offset(rule)
    # On the fixed-offset clock DTSTART reads exactly as written (localize used
    # that very offset), so dateutil can run on DTSTART unchanged.
    start = rule.dtstart
    if after is not None and "COUNT" not in parts:  # COUNT counts from DTSTART
        start = _restart(parts, rule.dtstart, after.replace(tzinfo=None) + offset)
    for fixed in _expand(parts, rule.dtstart, start, _end(until, offset), meter):
        instant = (fixed - offset).replace(tzinfo=UTC)
        if until is not None and instant > until:
            return
        yield instant, fixed


def rule_pairs(
    rule: Rule, after: datetime | None = None, meter: Meter | None = None
) -> Iterator[Pair]:
    """(instant, clock reading) of ``rule`` strictly after ``after``, in order.

    ``after`` None means from DTSTART on. Distinct instants only: two wall times
    that name one instant (a gap, two RRULE lines, an RDATE) fire once. EXDATE
    instants and days are left out.

    The walk is charged to ``meter`` (a fresh one with the whole budget when None).
    When its budget is spent, the lines that provably never happen are left out and
    the rest carry on once more on the meter renewed; when none can be left out,
    InvalidInput says the rule is too costly to expand (:func:`too_costly`).
    """
    meter = Meter() if meter is None else meter
    try:
        yield from _pairs(rule, after, meter)
    except Exhausted:
        raise too_costly() from None


def _pairs(rule: Rule, after: datetime | None, meter: Meter) -> Iterator[Pair]:
    """:func:`rule_pairs` on ``meter``, leaving out the RRULE lines that provably never
    happen once the budget is spent (the rest carry on with the budget renewed)."""
    last = after
    try:
        for pair in _metered_pairs(rule, after, meter):
            last = pair[0]
            yield pair
    except Exhausted:
        live = tuple(parts for parts in rule.lines if not line_never_happens(parts, rule.dtstart))
        if len(live) == len(rule.lines):
            raise
        meter.renew()
        yield from _metered_pairs(replace(rule, lines=live), last, meter)


def too_costly() -> InvalidInput:
    """The refusal of a rule whose next occurrence costs more than the budget."""
    return InvalidInput(
        "This rule is too costly to expand: finding its next occurrence would check more "
        f"than {BUDGET:,} candidate times; make it simpler or its days less rare."
    )


# 28 years hold every kind of year (leap or not, starting on each weekday, after
# each kind of year), so every kind of month and week: a day pattern that matches
# nothing in them matches nothing ever.
_REFERENCE_START, _REFERENCE_END = datetime(2001, 1, 1), datetime(2029, 1, 7)
_DAY_PARTS = ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY")


def line_never_happens(parts: dict[str, str], dtstart: datetime) -> bool:
    """Whether no day can ever match the day parts of one RRULE line (its interval and
    time of day aside), found by walking the reference years on a small meter.

    False when it cannot tell: a rule that matches days may still never happen for
    its interval or times of day.
    """
    parts = explicit_defaults(parts, dtstart)
    if not any(k in parts for k in _DAY_PARTS):
        return False
    freq = parts["FREQ"]
    kept = ["BYMONTH", *_DAY_PARTS, "WKST"]
    if "BYSETPOS" in parts:  # it picks among a period's days and times: keep both
        kept += ["BYSETPOS", "BYHOUR", "BYMINUTE", "BYSECOND"]
    else:  # plain day filters read the same in a yearly walk, the cheapest
        freq = freq if freq in ("YEARLY", "MONTHLY") else "YEARLY"
    probe = {"FREQ": freq, **{k: v for k, v in parts.items() if k in kept}}
    try:
        walked = _walk(_rrule(probe, _REFERENCE_START, _REFERENCE_END, Meter(_PROBE_BUDGET)))
        return next(walked, None) is None
    except (InvalidInput, Exhausted):
        return False


_PROBE_BUDGET = 4 * 28 * 366  # a weekly walk with BYSETPOS over the reference years


def check_happens(lines: list[dict[str, str]], dtstart: datetime) -> None:
    """Refuse a rule with a line no day can ever match (:func:`line_never_happens`)."""
    for parts in lines:
        if line_never_happens(parts, dtstart):
            raise bad_rule("no day matches all of its BY parts together, so it never happens")


def _metered_pairs(rule: Rule, after: datetime | None, meter: Meter) -> Iterator[Pair]:
    if after is not None:
        after = after.astimezone(UTC)
        if after.year >= _LAST.year:
            return
        if after.year < MIN_YEAR:
            after = None  # every rule starts after 1900
    streams = [_line_pairs(rule, parts, after, meter) for parts in rule.lines]
    if rule.rdates:
        zi = rule.zone
        streams.append(iter([(instant, wall_clock(instant, zi)) for instant in rule.rdates]))
    last: datetime | None = None
    for pair in heapq.merge(*streams):
        if pair[0] == last or (after is not None and pair[0] <= after):
            continue
        last = pair[0]
        if (rule.exdates or rule.exdays) and rule.excludes(pair[0]):
            continue
        yield pair


def take(
    rule: Rule, count: int, after: datetime | None = None, meter: Meter | None = None
) -> list[datetime]:
    """The first ``count`` instants of ``rule`` strictly after ``after`` (see
    :func:`rule_pairs` for the meter and what it raises). Without a meter, the budget
    is :data:`~core.timeexpr.metered.BUDGET` and more for each instant asked for."""
    if count <= 0:
        return []
    if meter is None:
        meter = Meter(BUDGET + count * PER_OCCURRENCE)
    return [instant for instant, _ in islice(rule_pairs(rule, after, meter), count)]


def instants(rule: Rule, after: datetime | None, meter: Meter) -> Iterator[datetime]:
    """The instants of ``rule`` strictly after ``after``, one at a time, on one meter:
    :func:`take` for a caller that does not know how many it will look at. Asking for
    each instant grants the meter :data:`~core.timeexpr.metered.PER_OCCURRENCE` more,
    so finding the ``n``-th has what ``take(rule, n, after)`` has on a fresh
    ``Meter()``: the budget and ``n`` times that. Raises InvalidInput once it is spent
    (:func:`too_costly`)."""
    pairs = rule_pairs(rule, after, meter)
    while True:
        meter.grant(PER_OCCURRENCE)
        found = next(pairs, None)
        if found is None:
            return
        yield found[0]
