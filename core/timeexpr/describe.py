"""Plain words for a stored rule: "every weekday at 09:00 (Europe/Berlin)".

The words are built from the rule text alone, so a schedule listed next year reads
the same as when it was made. Anything this module has no words for is shown as its
RRULE text, which is exact if not pretty.
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, timedelta
from itertools import product

from core.timeexpr.durations import describe_duration
from core.timeexpr.rule import DAY_CODES, Rule, wall_clock
from core.timeexpr.words import (
    MONTH_NAMES,
    WEEKDAY_NAMES,
    format_clock,
    format_day,
    ordinal_text,
)

_COMMON = {"FREQ", "INTERVAL", "UNTIL", "COUNT", "WKST", "BYSECOND"}
_HANDLED = {
    "DAILY": _COMMON | {"BYHOUR", "BYMINUTE", "BYMONTH", "BYDAY"},
    "WEEKLY": _COMMON | {"BYHOUR", "BYMINUTE", "BYMONTH", "BYDAY"},
    "MONTHLY": _COMMON | {"BYHOUR", "BYMINUTE", "BYMONTH", "BYMONTHDAY", "BYDAY", "BYSETPOS"},
    "YEARLY": _COMMON | {"BYHOUR", "BYMINUTE", "BYMONTH", "BYMONTHDAY"},
    "HOURLY": _COMMON | {"BYMINUTE"},
    "MINUTELY": _COMMON,
}
_TIMES = "_TIMES"  # merged clock times of several lines, see _merged
_ORDINAL_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}


def and_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _ints(parts: dict[str, str], key: str, default: int) -> list[int]:
    return sorted(int(v) for v in parts[key].split(",")) if key in parts else [default]


def _span(values: list[int]) -> str:
    """``9-17`` for a run, else ``0, 15, 30 and 45``."""
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return and_list([str(v) for v in values])


def _times(rule: Rule, parts: dict[str, str]) -> str:
    """The clock part, with its leading separator: " at 09:00 and 17:30"."""
    start = rule.dtstart
    if _TIMES in parts:
        listed = [tuple(int(x) for x in t.split(":")) for t in parts[_TIMES].split(",")]
        clocks = sorted(start.replace(hour=h, minute=m, second=s) for h, m, s in listed)
        if len(clocks) <= 6:
            return " at " + and_list([format_clock(c) for c in clocks])
        return _run(clocks) or " at " + and_list([format_clock(c) for c in clocks])
    hours = _ints(parts, "BYHOUR", start.hour)
    minutes = _ints(parts, "BYMINUTE", start.minute)
    seconds = _ints(parts, "BYSECOND", start.second)
    clocks = [
        start.replace(hour=h, minute=m, second=s) for h, m, s in product(hours, minutes, seconds)
    ]
    if len(clocks) <= 6:
        return " at " + and_list([format_clock(c) for c in clocks])
    return _run(clocks) or f" at minute {_span(minutes)} of hours {_span(hours)}"


def _run(clocks: list[datetime]) -> str | None:
    """``, every 15 minutes from 09:00 to 17:45`` for evenly spaced clock times (on
    whole minutes); None otherwise."""
    steps = {b - a for a, b in zip(clocks, clocks[1:], strict=False)}
    if len(steps) != 1 or any(c.second for c in clocks):
        return None
    every = _every_step(steps.pop(), "hour")
    return f", {every} from {format_clock(clocks[0])} to {format_clock(clocks[-1])}"


def _every_step(step: timedelta, within: str) -> str:
    """``every minute``, ``every 15 minutes``, ``every 2 hours``: a step of whole
    minutes in the words of a duration (:func:`describe_duration`), in units up to
    ``within``."""
    words = describe_duration(timedelta(minutes=step // timedelta(minutes=1)), within=within)
    return "every " + words.removeprefix("1 ")


def _day_codes(parts: dict[str, str], rule: Rule) -> list[str] | None:
    """Plain BYDAY codes (no ordinals), or the DTSTART weekday; None if ordinals."""
    if "BYDAY" not in parts:
        return [DAY_CODES[rule.dtstart.weekday()]]
    codes = parts["BYDAY"].split(",")
    return codes if all(c in DAY_CODES for c in codes) else None


def _day_names(codes: list[str]) -> str:
    chosen = set(codes)
    if chosen == set(DAY_CODES):
        return "day"
    if chosen == set(DAY_CODES[:5]):
        return "weekday"
    if chosen == set(DAY_CODES[5:]):
        return "weekend day"
    return and_list(
        [WEEKDAY_NAMES[DAY_CODES.index(c)] for c in sorted(chosen, key=DAY_CODES.index)]
    )


def _every(n: int, one: str, many: str) -> str:
    return f"every {one}" if n == 1 else f"every other {one}" if n == 2 else f"every {n} {many}"


def _month_day(value: int) -> str:
    if value == -1:
        return "the last day"
    if value < 0:
        return f"the {ordinal_text(-value)}-to-last day"
    return f"the {ordinal_text(value)}"


def _monthly(parts: dict[str, str], rule: Rule, n: int) -> str | None:
    every = _every(n, "month", "months")
    if "BYDAY" in parts and "BYMONTHDAY" not in parts:
        pos = parts.get("BYSETPOS")
        picked: dict[str, list[str]] = {}  # weekday -> ordinals, "first and third Monday"
        for code in parts["BYDAY"].split(","):
            digits, day = code[:-2], code[-2:]
            nth = int(digits) if digits else (int(pos) if pos and "," not in pos else None)
            if nth not in _ORDINAL_WORDS or (digits and pos):
                return None
            name = WEEKDAY_NAMES[DAY_CODES.index(day)]
            picked.setdefault(name, []).append(_ORDINAL_WORDS[nth])
        days = [f"{and_list(nths)} {name}" for name, nths in picked.items()]
        month = "month" if n == 1 else f"{'other' if n == 2 else ordinal_text(n)} month"
        if n == 1:
            return f"every {and_list(days)} of the month"
        return f"the {and_list(days)} of every {month}"
    if "BYDAY" in parts or "BYSETPOS" in parts:
        return None
    month_days = _ints(parts, "BYMONTHDAY", rule.dtstart.day)
    return f"{every} on {and_list([_month_day(d) for d in month_days])}"


def _line(rule: Rule, parts: dict[str, str]) -> str:
    freq, n = parts["FREQ"], int(parts.get("INTERVAL", "1"))
    if set(parts) - _HANDLED[freq] - {_TIMES}:
        return f"by the rule {_rule_text(parts)}"
    text: str | None
    months = ""
    if "BYMONTH" in parts and freq != "YEARLY":
        months = " in " + and_list([MONTH_NAMES[m - 1] for m in _ints(parts, "BYMONTH", 1)])
    if freq == "MINUTELY":
        aligned = 60 % n == 0 and rule.dtstart.minute % n == 0
        text = _every_step(timedelta(minutes=n), "minute")
        if not aligned:
            text += f" from {format_clock(rule.dtstart)}"
        return text + months
    if freq == "HOURLY":
        minutes = _ints(parts, "BYMINUTE", rule.dtstart.minute)
        step = minutes[1] - minutes[0] if len(minutes) > 1 else 60
        if n == 1 and minutes == list(range(0, 60, step)) and 60 % step == 0:
            if step == 60:
                return "every hour at :00" + months
            return _every_step(timedelta(minutes=step), "minute") + months
        marks = and_list([f":{m:02d}" for m in minutes])
        text = _every_step(timedelta(hours=n), "hour") + f" at {marks}"
        if n > 1:
            text += f" from {format_clock(rule.dtstart)}"
        return text + months
    if freq in ("DAILY", "WEEKLY"):
        codes = _day_codes(parts, rule)
        if codes is None or (freq == "DAILY" and "BYDAY" in parts and n > 1):
            return f"by the rule {_rule_text(parts)}"
        if freq == "DAILY" and "BYDAY" not in parts:
            text = _every(n, "day", "days")
        elif n > 2:
            text = f"every {n} weeks on {_day_names(codes)}"
        else:
            text = _every(n, _day_names(codes), "")
    elif freq == "MONTHLY" and months and n == 1 and "BYMONTHDAY" in parts and "BYDAY" not in parts:
        days = [_month_day(d).removeprefix("the ") for d in _ints(parts, "BYMONTHDAY", 1)]
        text, months = f"every {and_list(days)} of{months.removeprefix(' in')}", ""
    elif freq == "MONTHLY":
        text = _monthly(parts, rule, n)
    else:
        day = _ints(parts, "BYMONTHDAY", rule.dtstart.day)
        month = _ints(parts, "BYMONTH", rule.dtstart.month)
        if len(day) != 1 or len(month) != 1 or day[0] < 1:
            text = None
        else:
            text = f"{_every(n, 'year', 'years')} on {day[0]} {MONTH_NAMES[month[0] - 1]}"
    if text is None:
        return f"by the rule {_rule_text(parts)}"
    text = f"{text}{months}{_times(rule, parts)}"
    if freq in ("MONTHLY", "YEARLY") and "BYMONTHDAY" in parts:
        text += _skipping(parts, yearly=freq == "YEARLY" or "BYMONTH" in parts)
    if n > 1:
        text += f", starting {format_day(rule.dtstart)}"
    return text


def _skipping(parts: dict[str, str], yearly: bool) -> str:
    """A note when a chosen day is missing from some chosen month (the 31st, 29 Feb)."""
    months = _ints(parts, "BYMONTH", 1) if "BYMONTH" in parts else list(range(1, 13))
    shortest = min(calendar.monthrange(2023, m)[1] for m in months)  # 2023: no leap day
    if all(abs(d) <= shortest for d in _ints(parts, "BYMONTHDAY", 1)):
        return ""
    return ", skipping years without that day" if yearly else ", skipping months without that day"


def _bounds(rule: Rule, parts: dict[str, str]) -> str:
    if "COUNT" in parts:
        count = int(parts["COUNT"])
        return ", once only" if count == 1 else f", {count} times"
    until = rule.until(parts)
    if until is None:
        return ""
    local = wall_clock(until, rule.zone)
    if (local + timedelta(seconds=1)).time() == local.min.time():
        return f", until {format_day(local)}"
    return f", until {format_day(local)} {format_clock(local)}"


def _rule_text(parts: dict[str, str]) -> str:
    skip = ("UNTIL", "COUNT", _TIMES)
    return ";".join(f"{k}={v}" for k, v in parts.items() if k not in skip)


def _merged(rule: Rule) -> list[dict[str, str]]:
    """Lines that differ only in their clock times, as one line listing every time
    ("every day at 09:00 and 17:30"); other lines as they are."""
    clock_keys = ("BYHOUR", "BYMINUTE", "BYSECOND")
    groups: dict[tuple[tuple[str, str], ...], list[dict[str, str]]] = {}
    for parts in rule.lines:
        key = tuple(sorted((k, v) for k, v in parts.items() if k not in clock_keys))
        groups.setdefault(key, []).append(parts)
    merged = []
    for lines in groups.values():
        if len(lines) == 1:
            merged.append(lines[0])
            continue
        times = sorted(
            {
                (h, m, sec)
                for p in lines
                for h, m, sec in product(
                    _ints(p, "BYHOUR", rule.dtstart.hour),
                    _ints(p, "BYMINUTE", rule.dtstart.minute),
                    _ints(p, "BYSECOND", rule.dtstart.second),
                )
            }
        )
        merged.append({**lines[0], _TIMES: ",".join(f"{h}:{m}:{sec}" for h, m, sec in times)})
    return merged


def _dates(rule: Rule) -> str:
    """``; also on Fri 13 Mar 1998 09:00; not on Wed 25 Dec 2026``: RDATE and EXDATE
    values (a count past three)."""

    def listed(instants: list[datetime], days: list[date]) -> str:
        if len(instants) + len(days) > 3:
            return f"{len(instants) + len(days)} dates"
        words = [
            f"{format_day(wall_clock(i, rule.zone))} {format_clock(wall_clock(i, rule.zone))}"
            for i in instants
        ]
        return ", ".join(words + [format_day(d) for d in days])

    out = ""
    if rule.rdates:
        out += f"; also on {listed(list(rule.rdates), [])}"
    if rule.exdates or rule.exdays:
        out += f"; not on {listed(sorted(rule.exdates), sorted(rule.exdays))}"
    return out


def describe_rule(rule: Rule) -> str:
    """Plain words for every RRULE line of ``rule`` (and its RDATE and EXDATE values),
    then its zone in parentheses."""
    lines = [_line(rule, parts) + _bounds(rule, parts) for parts in _merged(rule)]
    return f"{'; and '.join(lines)}{_dates(rule)} ({rule.tzid})"
