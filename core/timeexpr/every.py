"""Recurring phrases: "every weekday at 9am", "every other friday at 16:00", ...

A phrase becomes a draft :class:`Rule` whose DTSTART is an anchor (today, or the
given start, at the requested time); :mod:`core.timeexpr` then moves DTSTART to the
first occurrence after "now", so the stored rule starts where it first fires and
nothing of "now" but the day leaks into it.

Grammar: ``every <what> [at <times>] [starting <when>] [until <day> | for N times]``
where <what> is a day, N days, weekday(s), weekend, a weekday list, (N) week(s) on
<days>, (N) month(s) on the <Nth|last day|first monday>, <first monday> of the
month, (N) year(s) on <month day>, end of month, N minutes, N hours. Adjectives work
too: "daily at 9am", "hourly", "mondays at 10:00"; the time may come first ("at 9am on
weekdays"). A sub-daily step may be held to a window of the day, every day or on some
days: "every hour between 9 and 17 on weekdays" fires at 09:00, 10:00, ... 17:00 on the
wall clock (a daily or weekly rule with those times, so a DST change does not move it).

A recurrence without a time of day fires at the default time (09:00 unless the caller
gives another; :class:`Draft` says it was taken, so the read-back can say so); one
without a day (every week, every month) takes the day from its start and is refused
when no start is given.

What /remind users type is read too, and the read-back says how:

* "on the 15th of every month" is "every month on the 15th";
* "every 2nd tuesday" (or "every second tuesday") is every other Tuesday, INTERVAL=2,
  as /remind reads it; "every second tuesday of the month" is BYDAY=2TU. The read-back
  of the first names the second, so the person sees which was meant;
* "every fortnight on friday" is every other week ("every fortnight" alone needs a day,
  like "every week");
* a part of the day is a time: "every night at 11pm", "every morning" (09:00),
  "every weekday evening" (18:00), "every night at 11" (23:00);
* "twice a day" is 09:00 and 17:00 ("twice a day at 8am and 8pm" chooses);
* "every quarter" (or "quarterly") is the first day of January, April, July and
  October ("every quarter on the 15th" chooses the day);
* "until friday" typed on a Friday whose occurrences are over is next Friday.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from core.timeexpr.durations import read_amounts, split_amounts, unit_re
from core.timeexpr.once import read_day, read_moment
from core.timeexpr.rule import (
    DAY_CODES,
    MAX_COUNT,
    MAX_YEAR,
    Rule,
    check_parts,
    exact_start,
    format_stamp,
    localize,
    step_of,
)
from core.timeexpr.rule import wall_clock as wall_of
from core.timeexpr.words import (
    CLOCK_RE,
    NUMBER_RE,
    ORDINAL_RE,
    PART_OF_DAY_RE,
    WEEKDAY_RE,
    WEEKDAYS,
    clock,
    clock_list,
    in_part_of_day,
    month_day,
    number,
    ordinal,
    part_of_day_note,
    refuse,
    weekday_list,
)

_DAYS_LIST_RE = rf"(?:{WEEKDAY_RE})(?:(?:,\s*|\s+and\s+|\s*&\s*|\s+)(?:{WEEKDAY_RE}))*"
# an interval: "2", "two", "other", and "2nd" or "second" as /remind reads them
_NTH_RE = r"\d{1,3}(?:st|nd|rd|th)|second|third|fourth|fifth|sixth"
_N = rf"(?:(?P<n>{_NTH_RE}|[+-]?(?:{NUMBER_RE})|other) )?"
_ADJECTIVES = {"daily": "day", "hourly": "hour", "weekly": "week", "monthly": "month",
               "yearly": "year", "annually": "year", "fortnightly": "other week",
               "quarterly": "quarter", "nightly": "night"}  # fmt: skip
# "every 2nd tuesday": which a person may have meant as "of the month"
_NTH_WEEKDAY = re.compile(rf"^(?P<n>{_NTH_RE}) (?P<days>{_DAYS_LIST_RE})$")
_FORTNIGHTS = re.compile(rf"^{_N}fortnights?(?P<rest>(?: on .+)?)$")
_QUARTERS = re.compile(r"^quarters?(?: on (?:the )?(?P<spec>.+))?$")
#: The first months of the quarters.
_QUARTER_MONTHS = "1,4,7,10"
# "on the 15th of every month", "the last friday of each month"
_OF_EVERY_MONTH = re.compile(r"^(?:on )?(?=(?:the )?\S+(?: \S+)? of (?:every|each) month\b)")
# "night at 11pm", "weekday mornings", "monday evening at 7"
_PART_OF_DAY = re.compile(
    rf"^(?:(?P<what>.+?) )?(?P<part>{PART_OF_DAY_RE})s?(?: (?:at|@) (?P<at>.+))?$"
)
# "twice a day", "twice daily", "2 times a day"; "twice a week" names no days
_TIMES_A = re.compile(
    r"^(?:(?P<n>once|twice|\d+ times|two times|three times) (?:a|per|each) (?P<unit>day|week|month)"
    r"|(?P<twice_daily>twice daily))(?P<rest>(?:\b.*)?)$"
)
#: What "twice a day" means when no times are given.
TWICE_A_DAY = (time(9, 0), time(17, 0))
_CLAUSE = re.compile(
    r",? \b(until|till|through|starting on|starting at|starting from|starting|beginning"
    r"|from|for)\b "
)
_COUNT = re.compile(rf"^(?P<n>[+-]?(?:{NUMBER_RE})) (?:times?|occurrences?)$")
_TRAILING_COUNT = re.compile(rf",? (?:for )?(?P<n>[+-]?(?:{NUMBER_RE})) (?:times?|occurrences?)$")
_PLURAL_DAYS = re.compile(
    r"^(?:on )?(weekdays|weekends|(?:mon|tues|wednes|thurs|fri|satur|sun)days)\b"
)
# the unit of an interval, spelled as any duration (core/timeexpr/durations.py)
_SUB_DAILY_UNITS = unit_re("minutes", "hours")
# "half an hour" is a duration too; "half hour" and "quarter hour" are steps of their own
_SUB_DAILY = re.compile(
    rf"^{_N}(?P<u>{_SUB_DAILY_UNITS})$|^(?P<half>half an? hour)$|^(?P<half_hour>half hour)$"
    rf"|^(?P<quarter>quarter (?:of an )?hour)$"
)
_DAYS = re.compile(rf"^{_N}(?P<u>{unit_re('days')})$")
_WORKDAYS = re.compile(r"^(?:week ?days?|work ?days?|working days?|business days?)$")
_WEEKEND = re.compile(r"^weekends?(?: days?)?$")
_WEEKS = re.compile(rf"^{_N}(?P<u>{unit_re('weeks')})(?: on (?P<days>{_DAYS_LIST_RE}))?$")
_WEEKDAYS = re.compile(rf"^{_N}(?P<days>{_DAYS_LIST_RE})$")
_MONTHS = re.compile(rf"^{_N}(?P<u>{unit_re('months')})(?: on (?:the )?(?P<spec>.+))?$")
_OF_MONTH = re.compile(r"^(?:the )?(?P<spec>.+?) of (?:the|every|each) month$")
_YEARS = re.compile(rf"^{_N}(?P<u>{unit_re('years')})(?: on (?P<date>.+))?$")
_NTH_DAY = re.compile(r"^(?:the )?(?P<spec>\d{1,2}(?:st|nd|rd|th)(?: day)?|last day)$")
_MONTH_END = re.compile(r"^(?:the )?end of (?:the |each |every )?month$")
_CLOCKS_RE = rf"{CLOCK_RE}(?:(?:,\s*|\s+and\s+|\s*&\s*){CLOCK_RE})*"
# "at 9am on weekdays", "9:30 every monday": the times, then the rest of a phrase
_LEADING_TIMES = re.compile(rf"^(?P<at>at )?(?P<times>{_CLOCKS_RE}),? (?:on )?(?P<rest>.+)$")
# "hour between 9 and 17 on weekdays", "30 minutes on mondays between 9:00 and 12:00"
_STEP_RE = (
    rf"(?:(?:{NUMBER_RE}|other) )?(?:{_SUB_DAILY_UNITS})"
    r"|half an? hour|half hour|quarter (?:of an )?hour"
)
_WINDOW = re.compile(
    rf"^(?P<step>{_STEP_RE})(?: (?:on |every |each )?(?P<before>.+?))?"
    rf" between (?P<a>{CLOCK_RE}) and (?P<b>{CLOCK_RE})(?: (?:on |every |each )?(?P<after>.+))?$"
)


@dataclass(frozen=True)
class Draft:
    """A recurrence read from a phrase: the rule, whether DTSTART may move, and
    whether the default time of day was taken (the phrase named none)."""

    rule: Rule
    move_start: bool
    defaulted: bool = False
    #: what the read-back adds about how the phrase was read ("'night' is 20:00")
    note: str | None = None
    #: the same phrase read with "until <weekday>" a week later: what it means when
    #: that weekday is today and nothing more happens today
    later: Draft | None = None


def _times_count(raw: str, text: str) -> int:
    """The N of "for N times": a positive whole number; refuses zero and negatives."""
    n = number(raw.lstrip("+-"))
    if n is None or raw.startswith("-") or n < 1:
        raise refuse(
            text,
            'the number of times must be a positive whole number, for example "every day at '
            '9am for 5 times"',
        )
    return n


#: The frequency of a rule stepping by each unit of :data:`durations.UNITS`.
_FREQ = {"minutes": "MINUTELY", "hours": "HOURLY", "days": "DAILY", "weeks": "WEEKLY",
         "months": "MONTHLY", "years": "YEARLY"}  # fmt: skip


def _interval(raw: str | None, unit: str, text: str) -> dict[str, str]:
    """FREQ and INTERVAL of ``<raw> <unit>`` ("2 hours", "other week", "hour"), read
    as a duration (:func:`durations.read_amounts`); the count a positive whole number
    ("other" is 2, none is 1) up to 1000."""
    count = "1" if raw is None else "2" if raw == "other" else raw
    if re.fullmatch(_NTH_RE, count):
        nth = ordinal(count) or {"sixth": 6}.get(count)
        if nth is None or nth < 2:
            raise refuse(
                text,
                'for the first one of each month say "every first monday of the month"; '
                'for every week, "every monday"',
            )
        count = str(nth)
    amounts = read_amounts(f"{count} {unit}")
    if amounts is None or len(amounts) != 1:
        raise refuse(text)
    [amount] = amounts
    if amount.negative or not isinstance(amount.count, int) or amount.count < 1:
        raise refuse(
            text, 'the interval must be a positive whole number, for example "every 2 hours"'
        )
    if amount.count > 1000:
        raise refuse(text, "that interval is too long")
    return {"FREQ": _FREQ[amount.unit], "INTERVAL": str(amount.count)}


def _half_hour(spelled: str) -> dict[str, str]:
    """A step of half an hour, read as a duration: every 30 minutes."""
    amounts = read_amounts(spelled)
    assert amounts is not None  # _SUB_DAILY matched "half a(n) hour"
    minutes = int(split_amounts(amounts)[1].total_seconds()) // 60
    return {"FREQ": "MINUTELY", "INTERVAL": str(minutes)}


def _month_spec(spec: str, text: str) -> dict[str, str]:
    """``15th``, ``1st and 15th``, ``last day``, ``first monday`` as RRULE parts."""
    items = [w for w in re.split(r",\s*|\s+and\s+|\s*&\s*", spec) if w]
    last = re.fullmatch(rf"({ORDINAL_RE}) ({WEEKDAY_RE})", items[-1]) if items else None
    if last:  # "2nd and 4th tuesday": the weekday belongs to every ordinal
        items = [f"{w} {last.group(2)}" if ordinal(w) is not None else w for w in items]
    month_days: list[int] = []
    week_days: list[str] = []
    for item in items:
        m = re.fullmatch(rf"({ORDINAL_RE})(?: (day|{WEEKDAY_RE}))?", item)
        nth = ordinal(m.group(1)) if m else None
        if m is None or nth is None:
            raise refuse(
                spec,
                'name the day of the month, e.g. "the 15th", "the last day" or "the first monday"',
            )
        kind = m.group(2)
        if kind in (None, "day"):
            if nth == 0 or abs(nth) > 31:
                raise refuse(spec, "a month has days 1 to 31")
            month_days.append(nth)
        else:
            if not 1 <= abs(nth) <= 5:
                raise refuse(
                    spec, "a weekday comes at most five times a month (first to fifth, or last)"
                )
            week_days.append(f"{nth}{DAY_CODES[WEEKDAYS[kind]]}")
    if month_days and week_days:
        raise refuse(text, "mix either days of the month or weekdays, not both")
    if month_days:
        return {"BYMONTHDAY": ",".join(str(d) for d in sorted(set(month_days)))}
    return {"BYDAY": ",".join(dict.fromkeys(week_days))}


def _what(core: str, text: str) -> tuple[dict[str, str], bool]:
    """RRULE parts for the <what> of a phrase, and whether it needs a day from the start."""
    m = _SUB_DAILY.match(core)
    if m:
        if m["half"]:
            return _half_hour(m["half"]), False
        if m["half_hour"] or m["quarter"]:
            return {"FREQ": "MINUTELY", "INTERVAL": "30" if m["half_hour"] else "15"}, False
        return _interval(m["n"], m["u"], text), False
    if m := _DAYS.match(core):
        return _interval(m["n"], m["u"], text), False
    if m := _FORTNIGHTS.match(core):
        weeks = int(_interval(m["n"], "weeks", text).get("INTERVAL", "1")) * 2
        return _what(f"{weeks} weeks{m['rest']}", text)
    if m := _QUARTERS.match(core):
        day = _month_spec(m["spec"], text) if m["spec"] else {"BYMONTHDAY": "1"}
        return {"FREQ": "MONTHLY", "BYMONTH": _QUARTER_MONTHS, **day}, False
    if _WORKDAYS.match(core):
        return {"FREQ": "WEEKLY", "BYDAY": "MO,TU,WE,TH,FR"}, False
    if _WEEKEND.match(core):
        return {"FREQ": "WEEKLY", "BYDAY": "SA,SU"}, False
    m = _WEEKS.match(core) or _WEEKDAYS.match(core)
    if m:
        parts = _interval(m["n"], m.groupdict().get("u") or "weeks", text)
        days = weekday_list(m["days"]) if m["days"] else None
        if days:
            parts["BYDAY"] = ",".join(DAY_CODES[d] for d in days)
        return parts, days is None
    if m := _MONTHS.match(core):
        parts = _interval(m["n"], m["u"], text)
        if m["spec"]:
            parts.update(_month_spec(m["spec"], text))
        return parts, not m["spec"]
    if _MONTH_END.match(core):
        return {"FREQ": "MONTHLY", "BYMONTHDAY": "-1"}, False
    if m := _OF_MONTH.match(core) or _NTH_DAY.match(core):
        return {"FREQ": "MONTHLY", **_month_spec(m["spec"], text)}, False
    if m := _YEARS.match(core):
        parts = _interval(m["n"], m["u"], text)
        if not m["date"]:
            return parts, True
        return {**parts, **_year_day(m["date"])}, False
    if month_day(core) is not None:  # "every june 5"
        return {"FREQ": "YEARLY", **_year_day(core)}, False
    raise refuse(text)


def _year_day(text: str) -> dict[str, str]:
    found = month_day(text)
    if found is None or found[2] is not None:
        raise refuse(
            text, 'name a day of the year without a year, e.g. "every year on june 5 at 9am"'
        )
    return {"BYMONTH": str(found[0]), "BYMONTHDAY": str(found[1])}


def _split_clauses(body: str, text: str) -> tuple[str, dict[str, str]]:
    """``day at 9am until june 30`` -> (``day at 9am``, {"until": "june 30"})."""
    clauses: dict[str, str] = {}
    m = _TRAILING_COUNT.search(body)
    if m:
        clauses["count"] = m["n"]
        body = body[: m.start()]
    pieces = _CLAUSE.split(body)
    core = pieces[0]
    for keyword, value in zip(pieces[1::2], pieces[2::2], strict=True):
        kind = {"until": "until", "till": "until", "through": "until", "for": "count"}.get(
            keyword, "start"
        )
        if kind in clauses:
            raise refuse(text, f'say "{keyword}" only once')
        if kind == "count":
            c = _COUNT.match(value)
            if not c:
                raise refuse(f"for {value}", 'say how many times, for example "for 5 times"')
            value = c["n"]
        clauses[kind] = value
    if "count" in clauses and "until" in clauses:
        raise refuse(text, 'give either "until <day>" or "for N times", not both')
    return core, clauses


def _times(core: str) -> tuple[str, list[time] | None]:
    """Split the clock times off the end of the <what> part."""
    m = re.fullmatch(r"(?P<what>.+?) (?:at|@) (?P<at>.+)", core)
    if m:
        times = clock_list(m["at"])
        if times is None:
            raise refuse(m["at"], 'that is not a clock time (try "9am", "17:30" or "9am and 5pm")')
        return m["what"], times
    m = re.fullmatch(rf"(?P<what>.+?),? (?P<at>{CLOCK_RE})", core)
    if m and not m["at"].isdigit():
        found = clock(m["at"])
        if found is not None:
            return m["what"], [found]
    return core, None


def _leading_times(text: str) -> tuple[str, list[time] | None]:
    """``at 9am on weekdays`` as (``weekdays``, [09:00]) when the rest is a recurring
    phrase; else the text as it is and None."""
    m = _LEADING_TIMES.match(text)
    if m is None or (m["at"] is None and m["times"].isdigit()):
        return text, None
    if _normalise(m["rest"]) is None:
        return text, None
    times = clock_list(m["times"])
    return (m["rest"], times) if times is not None else (text, None)


def _normalise(text: str) -> str | None:
    """The phrase starting with "every ", or None if it is not a recurrence."""
    if m := _OF_EVERY_MONTH.match(text):
        return "every " + text[m.end() :]
    first, _, rest = text.partition(" ")
    if first == "each":
        return "every " + rest
    if first in _ADJECTIVES:
        return f"every {_ADJECTIVES[first]} {rest}".rstrip()
    m = _PLURAL_DAYS.match(text)
    if m:
        return "every " + text[m.start(1) :]
    return text if first == "every" else None


def _time_lines(
    parts: dict[str, str], times: list[time], *, window: bool = False
) -> list[dict[str, str]]:
    """One RRULE line per group of times sharing minutes and seconds; the steps of a
    window as one line per group of hours sharing their minutes (a few lines, however
    many steps)."""
    if len(times) == 1 and not window:
        return [parts]
    if window:
        by_hour: dict[int, list[int]] = {}
        for t in times:
            by_hour.setdefault(t.hour, []).append(t.minute)
        hours_of: dict[tuple[int, ...], list[int]] = {}
        for hour, minutes in by_hour.items():
            hours_of.setdefault(tuple(minutes), []).append(hour)
        second = str(times[0].second)  # the steps are whole minutes apart
        return [
            {**parts, "BYHOUR": _join(hours), "BYMINUTE": _join(minutes), "BYSECOND": second}
            for minutes, hours in hours_of.items()
        ]
    groups: dict[tuple[int, int], list[int]] = {}
    for t in times:
        groups.setdefault((t.minute, t.second), []).append(t.hour)
    return [
        {**parts, "BYHOUR": _join(hours), "BYMINUTE": str(mi), "BYSECOND": str(se)}
        for (mi, se), hours in groups.items()
    ]


def _join(values: list[int] | tuple[int, ...]) -> str:
    return ",".join(map(str, values))


def _window(core: str, text: str) -> tuple[dict[str, str], list[time]] | None:
    """``hour between 9 and 17 on weekdays`` as the parts of its days and the times
    of its steps in the window, both ends included; None if it has no window."""
    m = _WINDOW.match(core)
    if m is None or (m["before"] and m["after"]):
        return None
    step = step_of(_what(m["step"], text)[0])
    days = m["before"] or m["after"]
    parts, needs_day = _what(days, text) if days else ({"FREQ": "DAILY"}, False)
    if needs_day or parts["FREQ"] in ("HOURLY", "MINUTELY"):
        raise refuse(
            text, 'name the days of the window, e.g. "every hour between 9 and 17 on weekdays"'
        )
    first, last = clock(m["a"]), clock(m["b"])
    assert first is not None and last is not None  # both matched CLOCK_RE
    if last <= first:
        raise refuse(text, 'the window must end after it starts, e.g. "between 9 and 17"')
    times, point = [], datetime.combine(date.min, first)
    while point.date() == date.min and point.time() <= last:
        times.append(point.time())
        point += step
    return parts, times


def parse_every(
    text: str, tz: str, zi: ZoneInfo, now: datetime, default_time: time = time(9, 0)
) -> Draft | None:
    """A recurrence draft for ``text``, or None if it is not a recurring phrase.

    A phrase that names no time of day (nor a start with one) fires at ``default_time``.
    """
    said, (text, implied) = text, _times_a(text)
    rest, leading = _leading_times(text)
    phrase = _normalise(rest)
    if phrase is None:
        return None
    core, clauses = _split_clauses(phrase.removeprefix("every").strip(), text)
    window = _window(core, text)
    times: list[time] | None
    notes: list[str] = []
    if window is not None:
        if leading is not None:
            raise refuse(text, 'give either a window or times, e.g. "every hour between 9 and 17"')
        (parts, times), needs_day = window, False
    else:
        part = _part_of_day(core, text)
        if part is not None:
            what, times, spoken = part
            if spoken is not None:
                notes.append(spoken)
        else:
            what, times = _times(core)
        if leading is not None:
            if times is not None:
                raise refuse(text, 'give the time once, e.g. "every weekday at 9am"')
            times = leading
        parts, needs_day = _what(what, text)
        notes.extend(_how_read(what))
    if implied is not None:
        if times is None:
            times = list(implied)
            shown = " and ".join(f"{t:%H:%M}" for t in implied)
            notes.append(f"twice a day is {shown}; add 'at …' to change it")
        elif len(times) != len(implied):
            raise refuse(said, 'twice a day takes two times, e.g. "twice a day at 8am and 8pm"')
    sub_daily = parts["FREQ"] in ("HOURLY", "MINUTELY")
    if sub_daily and times:
        raise refuse(
            text, 'give the first time with "starting", e.g. "every 2 hours starting at 9:15"'
        )

    local_today = wall_of(now, zi).date()
    start_day: date | None = None
    start_time: time | None = None
    if "start" in clauses:
        moment = read_moment(clauses["start"], zi, now)
        if isinstance(moment, datetime):
            if moment <= now:
                raise refuse(clauses["start"], "that start is in the past")
            local = wall_of(moment, zi)
            start_day, start_time = local.date(), local.time()
        else:
            start_day, start_time = moment
            if start_day < local_today:
                raise refuse(clauses["start"], "that start is in the past")
        if times and start_time is not None and start_time not in times:
            raise refuse(text, 'give the time once, e.g. "every day at 9am starting june 5"')
    if needs_day and start_day is None:
        if "fortnight" in text:
            raise refuse(text, 'say which day, e.g. "every fortnight on friday"')
        raise refuse(
            text, 'say which day, e.g. "every week on monday" or "every month on the 15th"'
        )

    defaulted = not sub_daily and not times and start_time is None
    if sub_daily:
        dtstart = _sub_daily_start(parts, zi, now, start_day, start_time)
        lines = [parts]
    else:
        times = times or [start_time or default_time]
        dtstart = datetime.combine(start_day or local_today, times[0])
        lines = _time_lines(parts, times, window=window is not None)
    if "count" in clauses:
        count = _times_count(clauses["count"], text)
        if count > MAX_COUNT:
            raise refuse(text, f"Herald repeats a message at most {MAX_COUNT} times")
        lines = [{**p, "COUNT": str(count)} for p in lines]
    later: Draft | None = None
    if "until" in clauses:
        bare = lines
        lines = [{**p, "UNTIL": _until(clauses["until"], zi, now)} for p in bare]
        if _is_today(clauses["until"], zi, now):
            week_on = [{**p, "UNTIL": _until(clauses["until"], zi, now, weeks=1)} for p in bare]
            later = _draft(tz, dtstart, week_on, defaulted, notes)
    return _draft(tz, dtstart, lines, defaulted, notes, later)


def _draft(
    tz: str,
    dtstart: datetime,
    lines: list[dict[str, str]],
    defaulted: bool,
    notes: list[str],
    later: Draft | None = None,
) -> Draft:
    for p in lines:
        check_parts(p)
    lines = [{k: v for k, v in p.items() if (k, v) != ("INTERVAL", "1")} for p in lines]
    note = "; ".join(notes) or None
    rule = Rule(tz, dtstart, tuple(lines))
    return Draft(rule, move_start=True, defaulted=defaulted, note=note, later=later)


def _times_a(text: str) -> tuple[str, tuple[time, ...] | None]:
    """Read "twice a day …" as ("every day …", the times it stands for); "once a day" as
    "every day"; "twice a week" refused (which days?). Else the text and None."""
    m = _TIMES_A.match(text)
    if m is None:
        return text, None
    rest = m["rest"]
    if m["twice_daily"] or (m["n"] == "twice" and m["unit"] == "day"):
        return "every day" + rest, TWICE_A_DAY
    if m["n"] == "once":
        return f"every {m['unit']}{rest}", None
    raise refuse(
        text,
        'say at what times or on which days, e.g. "every day at 9am and 5pm" or '
        '"every monday and thursday at 9am"',
    )


def _part_of_day(core: str, text: str) -> tuple[str, list[time], str | None] | None:
    """Read "night at 11pm", "weekday mornings", "monday evening at 7" as (the days, the
    times, what the read-back says of a time the part stood for); else None."""
    m = _PART_OF_DAY.match(core)
    if m is None:
        return None
    what, part = m["what"] or "day", m["part"]
    if m["at"] is None:
        at = in_part_of_day(part, None)
        return what, [at], part_of_day_note(part, at)
    clocks = [w for w in re.split(r",\s*|\s+and\s+|\s*&\s*", m["at"]) if w]
    return what, sorted({in_part_of_day(part, c) for c in clocks}), None


def _how_read(what: str) -> list[str]:
    """What the read-back says of a phrase that could mean two things."""
    m = _NTH_WEEKDAY.match(what)
    if m is None:
        return []
    nth = ordinal(m["n"]) or 6
    days = m["days"]
    if nth > 5 or weekday_list(days) is None:
        return []
    wanted = ("second", "third", "fourth", "fifth")[nth - 2]
    month = f"'every {wanted} {days} of the month'"
    return [f"for the {wanted} {days.title()} of each month, say {month}"]


def _is_today(text: str, zi: ZoneInfo, now: datetime) -> bool:
    """Whether "until <text>" names a weekday that is today ("until friday" on a Friday)."""
    today = wall_of(now, zi).date()
    day = read_day(text, today)
    return day is not None and day.weekday == today.weekday() and not day.strictly_next


def _sub_daily_start(
    parts: dict[str, str], zi: ZoneInfo, now: datetime, day: date | None, at: time | None
) -> datetime:
    """DTSTART of an hourly/minutely rule: the given start, else the clock grid.

    Without a start the grid is aligned to local midnight on today's clock ("every
    hour" at :00, "every 30 minutes" at :00 and :30) and DTSTART is its first point
    after now.
    """
    if day is not None:
        return datetime.combine(day, at or time(0, 0))
    step = step_of(parts)
    local = wall_of(now, zi)
    offset = now.astimezone(zi).utcoffset() or timedelta(0)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    first_fixed = midnight + step * ((local - midnight) // step + 1)
    return exact_start((first_fixed - offset).replace(tzinfo=UTC), zi, step)[0]


def _until(text: str, zi: ZoneInfo, now: datetime, weeks: int = 0) -> str:
    """The UNTIL stamp (UTC) for "until <day>": the end of that whole local day
    (``weeks`` later: "until friday" on a Friday whose occurrences are over)."""
    moment = read_moment(text, zi, now)
    if isinstance(moment, datetime):
        instant = moment  # "until friday 17:00": that very instant
    elif moment[0].year > MAX_YEAR:  # (and 9999-12-31 has no next day to end on)
        raise refuse(text, f"Herald schedules up to the year {MAX_YEAR}")
    else:
        next_day = datetime.combine(moment[0] + timedelta(days=1 + 7 * weeks), time(0))
        instant = localize(next_day, zi) - timedelta(seconds=1)
    return format_stamp(instant.replace(tzinfo=None)) + "Z"
