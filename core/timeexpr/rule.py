"""Stored recurrence rules: their RFC 5545 text, read, checked and written back.

A stored rule is a ``DTSTART;TZID=<zone>:<local wall time>`` line followed by one or
more ``RRULE:`` lines (several lines are a union, as cron needs), and optionally
``EXDATE`` and ``RDATE`` lines: the recurrence set of RFC 5545 3.8.5, every RRULE and
RDATE instant less every EXDATE one (COUNT counts RRULE instances, excluded ones too).
They are stored as UTC instants (``EXDATE:19970902T130000Z``), and an ``EXDATE`` of
dates (``EXDATE;VALUE=DATE:20261225``) excludes every occurrence on those local days
(read by core.timeexpr.dates).

This module holds the :class:`Rule`, checks its parts (:func:`split_parts`,
:func:`check_parts`: what dateutil would choke on or guess about is refused), writes it
back (:meth:`Rule.text`) and holds the clock helpers the readers share
(:func:`localize`, :func:`wall_clock`, the elapsed clock of a sub-daily rule). Reading
a rule's whole text (:func:`core.timeexpr.rule_text.parse_rule`) sits above it and
core.timeexpr.dates; turning a rule into instants is core.timeexpr.expand, which says
on which clock each kind of rule runs.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from dateutil.rrule import DAILY, HOURLY, MINUTELY, MONTHLY, WEEKLY, YEARLY

from core.errors import InvalidInput

_Frequency = Literal[0, 1, 2, 3, 4, 5, 6]
FREQUENCIES: dict[str, _Frequency] = {
    "YEARLY": YEARLY,
    "MONTHLY": MONTHLY,
    "WEEKLY": WEEKLY,
    "DAILY": DAILY,
    "HOURLY": HOURLY,
    "MINUTELY": MINUTELY,
}
SUB_DAILY = frozenset({"HOURLY", "MINUTELY"})
DAY_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
MAX_COUNT = 10_000
MIN_YEAR, MAX_YEAR = 1900, 2999
MAX_INTERVAL = 1_000
# Order in which rule parts are written back, so equal rules have equal text.
PART_ORDER = (
    "FREQ", "INTERVAL", "BYMONTH", "BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY",
    "BYHOUR", "BYMINUTE", "BYSECOND", "BYSETPOS", "WKST", "UNTIL", "COUNT",
)  # fmt: skip
_INT_LIST_RANGES = {
    "BYMONTH": (1, 12, False),
    "BYWEEKNO": (1, 53, True),
    "BYYEARDAY": (1, 366, True),
    "BYMONTHDAY": (1, 31, True),
    "BYHOUR": (0, 23, False),
    "BYMINUTE": (0, 59, False),
    "BYSECOND": (0, 59, False),
    "BYSETPOS": (1, 366, True),
}
BYDAY_RE = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")
_STAMP_RE = re.compile(r"^(\d{8})(?:T(\d{6})(Z?))?$")


def bad_rule(what: str) -> InvalidInput:
    """The InvalidInput for a rule text that cannot be used."""
    return InvalidInput(
        f"Could not use the rule: {what}. A rule looks like "
        '"RRULE:FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0".'
    )


def localize(wall: datetime, zi: ZoneInfo) -> datetime:
    """The UTC instant of naive local ``wall`` in ``zi`` under RFC 5545 rules.

    ``fold=0`` is exactly RFC 5545: inside a gap the offset before the gap applies
    (02:30 reads as 03:30 after spring-forward); an ambiguous time is its first
    occurrence.
    """
    return wall.replace(tzinfo=zi, fold=0).astimezone(UTC)


def wall_clock(instant: datetime, zi: ZoneInfo) -> datetime:
    """The naive local wall-clock reading of ``instant`` in ``zi``."""
    return instant.astimezone(zi).replace(tzinfo=None, fold=0)


def format_stamp(value: datetime) -> str:
    """``YYYYMMDDTHHMMSS`` of a naive datetime."""
    return f"{value:%Y%m%dT%H%M%S}"


def parse_stamp(text: str, what: str) -> tuple[datetime, bool, bool]:
    """Read an RFC 5545 DATE or DATE-TIME: (value, is_utc, has_time)."""
    m = _STAMP_RE.match(text.upper())
    if not m:
        raise bad_rule(f"{what} {text!r} is not a date like 20260401T090000")
    day, clock, zulu = m.groups()
    try:
        value = datetime.strptime(day + (clock or "000000"), "%Y%m%d%H%M%S")
    except ValueError:
        raise bad_rule(f"{what} {text!r} is not a real date and time") from None
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise bad_rule(f"{what} {text!r} is outside the years {MIN_YEAR}-{MAX_YEAR}")
    return value, bool(zulu), clock is not None


@dataclass(frozen=True)
class Rule:
    """A parsed recurrence: zone, local DTSTART, one or more RRULE part maps, and the
    EXDATE instants (``exdates``) and local days (``exdays``) and RDATE instants."""

    tzid: str
    dtstart: datetime  # naive, local wall clock of ``tzid``
    lines: tuple[dict[str, str], ...] = field(default=())
    exdates: frozenset[datetime] = field(default=frozenset())  # aware UTC
    exdays: frozenset[date] = field(default=frozenset())  # local days of ``tzid``
    rdates: tuple[datetime, ...] = field(default=())  # aware UTC, sorted

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tzid)

    def text(self) -> str:
        """The rule as stored: DTSTART line, one RRULE line per part map, then the
        EXDATE and RDATE lines (sorted, so equal rules have equal text)."""
        out = [f"DTSTART;TZID={self.tzid}:{format_stamp(self.dtstart)}"]
        for parts in self.lines:
            ordered = [k for k in PART_ORDER if k in parts]
            out.append("RRULE:" + ";".join(f"{k}={parts[k]}" for k in ordered))
        if self.exdates:
            out.append("EXDATE:" + ",".join(_utc_stamp(i) for i in sorted(self.exdates)))
        if self.exdays:
            out.append("EXDATE;VALUE=DATE:" + ",".join(f"{d:%Y%m%d}" for d in sorted(self.exdays)))
        if self.rdates:
            out.append("RDATE:" + ",".join(_utc_stamp(i) for i in self.rdates))
        return "\n".join(out)

    def excludes(self, instant: datetime) -> bool:
        """Whether an EXDATE removes ``instant`` (aware UTC) from the recurrence set."""
        if instant in self.exdates:
            return True
        return bool(self.exdays) and instant.astimezone(self.zone).date() in self.exdays

    def until(self, parts: dict[str, str]) -> datetime | None:
        """The UNTIL of one line as an aware UTC instant (a DATE means its whole day)."""
        raw = parts.get("UNTIL")
        if raw is None:
            return None
        value, is_utc, has_time = parse_stamp(raw, "UNTIL")
        if is_utc:
            return value.replace(tzinfo=UTC)
        if not has_time:
            value = value + timedelta(days=1)
            return localize(value, self.zone) - timedelta(seconds=1)
        return localize(value, self.zone)


def _utc_stamp(instant: datetime) -> str:
    return format_stamp(instant.astimezone(UTC).replace(tzinfo=None)) + "Z"


def split_parts(body: str) -> dict[str, str]:
    """``FREQ=DAILY;INTERVAL=2`` as a dict, keys upper-case; checks every part."""
    parts: dict[str, str] = {}
    for chunk in body.strip().strip(";").split(";"):
        key, sep, value = chunk.partition("=")
        key, value = key.strip().upper(), value.strip().upper()
        if not sep or not value:
            raise bad_rule(f"{chunk!r} is not a NAME=VALUE part")
        if key not in PART_ORDER:
            raise bad_rule(f"the part {key} is not one Herald understands")
        if key in parts:
            raise bad_rule(f"{key} is given twice")
        parts[key] = value
    check_parts(parts)
    return parts


def _int(value: str, what: str) -> int:
    if not re.fullmatch(r"[+-]?\d{1,6}", value):
        raise bad_rule(f"{what}={value} is not a whole number")
    return int(value)


def check_parts(parts: dict[str, str]) -> None:
    """Refuse anything dateutil would choke on, loop forever over, or guess about."""
    freq = parts.get("FREQ")
    if freq is None:
        raise bad_rule("FREQ is missing")
    if freq == "SECONDLY":
        raise bad_rule("Herald schedules to the minute, so FREQ=SECONDLY is not supported")
    if freq not in FREQUENCIES:
        raise bad_rule(f"FREQ={freq} is not one of {', '.join(FREQUENCIES)}")
    interval = _int(parts.get("INTERVAL", "1"), "INTERVAL")
    if not 1 <= interval <= MAX_INTERVAL:
        raise bad_rule(f"INTERVAL={interval} must be a positive whole number")
    if "COUNT" in parts:
        count = _int(parts["COUNT"], "COUNT")
        if not 1 <= count <= MAX_COUNT:
            raise bad_rule(f"COUNT={count} must be between 1 and {MAX_COUNT}")
        if "UNTIL" in parts:
            raise bad_rule("COUNT and UNTIL cannot both be given")
    if "UNTIL" in parts:
        parse_stamp(parts["UNTIL"], "UNTIL")
    for key, (low, high, signed) in _INT_LIST_RANGES.items():
        if key in parts:
            for item in parts[key].split(","):
                n = _int(item, key)
                ok = low <= abs(n) <= high if signed else low <= n <= high
                if not ok or (signed and n == 0):
                    raise bad_rule(f"{key} value {item} is out of range")
    if "BYDAY" in parts:
        for item in parts["BYDAY"].split(","):
            m = BYDAY_RE.match(item)
            if not m:
                raise bad_rule(f"BYDAY value {item} is not a day like MO or 1MO")
            if m.group(1) is not None:
                n = int(m.group(1))
                if freq not in ("MONTHLY", "YEARLY") or "BYWEEKNO" in parts:
                    raise bad_rule(f"BYDAY={item} needs FREQ=MONTHLY or FREQ=YEARLY")
                # the nth weekday of a month when a yearly rule names months (RFC 5545)
                in_months = freq == "MONTHLY" or "BYMONTH" in parts
                if n == 0 or abs(n) > (5 if in_months else 53):
                    raise bad_rule(f"BYDAY value {item} is out of range")
    # RFC 5545's own limits (3.3.10), plus BYSETPOS only where a period holds several
    # days: elsewhere these parts make dateutil crawl day by day for decades.
    misplaced = {
        "BYWEEKNO": freq != "YEARLY",
        "BYYEARDAY": freq in ("DAILY", "WEEKLY", "MONTHLY"),
        "BYMONTHDAY": freq == "WEEKLY",
        "BYSETPOS": freq not in ("WEEKLY", "MONTHLY", "YEARLY"),
    }
    for key, wrong in misplaced.items():
        if wrong and key in parts:
            raise bad_rule(f"{key} cannot be used with FREQ={freq}")
    if "WKST" in parts and parts["WKST"] not in DAY_CODES:
        raise bad_rule(f"WKST={parts['WKST']} is not a day like MO")
    if "BYMONTHDAY" in parts:
        months = [int(v) for v in parts.get("BYMONTH", "1,2,3,4,5,6,7,8,9,10,11,12").split(",")]
        longest = max(calendar.monthrange(2024, m)[1] for m in months)  # 2024: leap year
        if all(abs(int(v)) > longest for v in parts["BYMONTHDAY"].split(",")):
            raise bad_rule("no month in the rule has such a day, so it never happens")


def explicit_defaults(parts: dict[str, str], dtstart: datetime) -> dict[str, str]:
    """The part map with the day fields dateutil would take from DTSTART written out.

    After this the rule means the same thing whatever day of its period DTSTART is
    moved to, which is what lets us restart a rule by whole periods.
    """
    day_parts = ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY")
    if any(k in parts for k in day_parts):
        return parts
    out = dict(parts)
    if parts["FREQ"] == "YEARLY":
        out.setdefault("BYMONTH", str(dtstart.month))
        out["BYMONTHDAY"] = str(dtstart.day)
    elif parts["FREQ"] == "MONTHLY":
        out["BYMONTHDAY"] = str(dtstart.day)
    elif parts["FREQ"] == "WEEKLY":
        out["BYDAY"] = DAY_CODES[dtstart.weekday()]
    return out


def step_of(parts: dict[str, str]) -> timedelta:
    """The elapsed step of a sub-daily line (INTERVAL hours or minutes)."""
    unit = timedelta(hours=1) if parts["FREQ"] == "HOURLY" else timedelta(minutes=1)
    return unit * int(parts.get("INTERVAL", "1"))


def exact_start(instant: datetime, zi: ZoneInfo, step: timedelta) -> tuple[datetime, datetime]:
    """A local DTSTART for a sub-daily grid through ``instant``: (wall, its instant).

    It is ``instant`` itself unless that falls in the second pass of a repeated
    fall-back hour, which a local time cannot name; then it is the latest grid
    point before it that a local time names exactly.
    """
    point = instant
    for _ in range(10_000):
        wall = wall_clock(point, zi)
        if localize(wall, zi) == point:
            return wall, point
        point -= step
    raise bad_rule("no start time can be written for it")  # pragma: no cover


def elapsed_offset(rule: Rule) -> timedelta:
    """The fixed UTC offset on which a sub-daily rule runs: the zone's at DTSTART."""
    return rule.dtstart.replace(tzinfo=rule.zone, fold=0).utcoffset() or timedelta(0)


def with_start(rule: Rule, dtstart: datetime, extra_count: int = 0) -> Rule:
    """The same rule restarted at ``dtstart`` (day defaults of the old start kept).

    ``extra_count`` is added to any COUNT, for a start moved back over occurrences.
    """
    lines = []
    for parts in rule.lines:
        moved = explicit_defaults(parts, rule.dtstart)
        if "COUNT" in moved and extra_count:
            moved = {**moved, "COUNT": str(int(moved["COUNT"]) + extra_count)}
        lines.append(moved)
    return replace(rule, dtstart=dtstart, lines=tuple(lines))
