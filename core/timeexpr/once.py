"""One-off times: "in 5 minutes", "tomorrow at 9am", "monday 9:30", ISO-8601.

The grammar is small and exact; anything it does not know returns None so the
caller can try the next reader (recurrences, cron, and last dateparser).

Conventions (each is visible in the description Herald echoes back):
* "in N seconds/minutes/hours" is elapsed time; "in N days/weeks/months" keeps the
  local clock reading (so "in 1 day" across a DST change is still the same hour).
* A bare clock time already past today means tomorrow. A bare weekday ("monday
  9:30") is today if that time is still ahead, else the coming one; "next monday"
  is never today. A month and day without a year is the next one to come.
* "tonight" alone is 20:00 today; "eod" (end of day) is 17:00, today if that is still
  ahead, else tomorrow; "end of month" is the last day of this month (of the next once
  this one's has passed).
* A day without a time ("tomorrow", "monday", "jan 4", "end of month") takes the
  default time of day (09:00 unless the caller gives another), and :class:`Moment`
  says so, so the read-back can. A part of the day stands for a time: "tomorrow
  morning" is 09:00, "afternoon" 14:00, "evening" 18:00, "night" 20:00 (with a time,
  "tomorrow night at 11" is 23:00).
* "yesterday" is read, so that it is refused as in the past rather than not understood.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from typing import NamedTuple
from zoneinfo import ZoneInfo

from core.timeexpr.durations import read_amounts, split_amounts
from core.timeexpr.rule import MAX_YEAR, localize, wall_clock
from core.timeexpr.words import (
    CLOCK_RE,
    MONTH_RE,
    PART_OF_DAY_RE,
    TONIGHT,
    WEEKDAY_RE,
    WEEKDAYS,
    clock,
    day_word,
    in_part_of_day,
    make_date,
    month_day,
    part_of_day_note,
    refuse,
)

_RELATIVE = re.compile(rf"^(?:in (?P<a>.+?)|(?P<b>.+?) from now)(?: at (?P<clock>{CLOCK_RE}))?$")
_ISO = re.compile(
    r"^(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})[t ](?P<h>\d{1,2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2})(?:[.,]\d+)?)?\s?(?P<z>z|utc|[+-]\d{2}(?::?\d{2})?)?$"
)
_MONTH_END = ("end of month", "end of the month", "eom")
DAY_RE = (
    rf"(?:today|tonight|tomorrow|yesterday|end of (?:the )?month|eom|(?:the )?day after tomorrow"
    rf"|\d{{4}}-\d{{1,2}}-\d{{1,2}}"
    rf"|(?:(?:next|this|coming) )?(?:{WEEKDAY_RE})"
    rf"|(?:{MONTH_RE})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?"
    rf"|(?:the )?\d{{1,2}}(?:st|nd|rd|th)?(?: of)? (?:{MONTH_RE})\.?(?:,? \d{{4}})?)"
)
_DAY_THEN_CLOCK = re.compile(rf"^(?:on )?(?P<day>{DAY_RE}),? (?:at )?(?P<clock>{CLOCK_RE})$")
_CLOCK_THEN_DAY = re.compile(rf"^(?:at )?(?P<clock>{CLOCK_RE}),? (?:on )?(?P<day>{DAY_RE})$")
_CLOCK_ONLY = re.compile(rf"^(?P<at>at )?(?P<clock>{CLOCK_RE})$")
_DAY_ONLY = re.compile(rf"^(?:on )?(?P<day>{DAY_RE})$")
# "tomorrow morning", "monday evening at 7", "this afternoon", "friday in the evening"
_PART_OF_DAY = re.compile(
    rf"^(?:(?:on )?(?P<day>{DAY_RE}) |(?P<this>this ))(?:in the )?(?P<part>{PART_OF_DAY_RE})"
    rf"(?:,? at (?P<clock>{CLOCK_RE}))?$"
)


@dataclass(frozen=True)
class Day:
    """A named day, resolved against "now" only once the time is known."""

    text: str
    fixed: date | None = None  # today, tomorrow, 2026-04-01, june 5 2027
    weekday: int | None = None  # monday / next monday
    strictly_next: bool = False  # "next monday" is never today
    month_day: tuple[int, int] | None = None  # june 5 (the next one to come)
    month_end: bool = False  # end of month: its last day (the next one to come)

    def resolve(self, today: date, ahead: bool) -> date:
        """The date meant. ``ahead``: whether the time is still ahead on ``today``."""
        if self.fixed is not None:
            return self.fixed
        if self.month_end:
            last = today.replace(day=calendar.monthrange(today.year, today.month)[1])
            if last > today or ahead:
                return last
            following = last + timedelta(days=1)
            return following.replace(day=calendar.monthrange(following.year, following.month)[1])
        if self.weekday is not None:
            days = (self.weekday - today.weekday()) % 7
            if days == 0 and (self.strictly_next or not ahead):
                days = 7
            return today + timedelta(days=days)
        assert self.month_day is not None
        month, day = self.month_day
        for year in range(today.year, today.year + 9):  # february 29 comes within 8 years
            try:
                found = date(year, month, day)
            except ValueError:
                continue
            if found > today or (found == today and ahead):
                return found
        raise refuse(self.text)  # pragma: no cover - every valid month day recurs


def read_day(text: str, today: date) -> Day | None:
    """A day phrase ("tomorrow", "next friday", "june 5", "2026-04-01") or None."""
    text = text.removeprefix("on ")
    if text in _MONTH_END:
        return Day(text, month_end=True)
    fixed = day_word(text, today)
    if fixed is not None:
        return Day(text, fixed=fixed[0])
    m = re.fullmatch(rf"(?:(next|this|coming) )?({WEEKDAY_RE})", text)
    if m:
        return Day(text, weekday=WEEKDAYS[m.group(2)], strictly_next=m.group(1) == "next")
    found = month_day(text)
    if found is not None:
        month, day, year = found
        if year is not None:
            return Day(text, fixed=make_date(year, month, day, text))
        return Day(text, month_day=(month, day))
    return None


def at_local(day: date, clock_time: time, zi: ZoneInfo) -> datetime:
    """The instant of a local date and clock time (RFC 5545 gap/fold rules)."""
    return localize(datetime.combine(day, clock_time), zi)


def _on_day(day: Day, clock_time: time, zi: ZoneInfo, now: datetime) -> datetime:
    local_now = wall_clock(now, zi)
    ahead = at_local(local_now.date(), clock_time, zi) > now
    return at_local(day.resolve(local_now.date(), ahead), clock_time, zi)


def _iso(m: re.Match[str], text: str, zi: ZoneInfo) -> datetime:
    day = make_date(int(m["y"]), int(m["mo"]), int(m["d"]), text)
    hour, minute, second = int(m["h"]), int(m["mi"]), int(m["s"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise refuse(
            text, "that is not a clock time: hours go from 0 to 23 and minutes from 0 to 59"
        )
    wall = datetime.combine(day, time(hour, minute, second))
    z = m["z"]
    if z is None:
        return localize(wall, zi)
    if z in ("z", "utc"):
        return wall.replace(tzinfo=UTC)
    digits = z[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise refuse(text, f"the UTC offset {z} does not exist")
    sign = -1 if z[0] == "-" else 1
    offset = timezone(sign * timedelta(hours=hours, minutes=minutes))
    return wall.replace(tzinfo=offset).astimezone(UTC)


def _relative(m: re.Match[str], text: str, zi: ZoneInfo, now: datetime) -> datetime | None:
    amounts = read_amounts(m["a"] or m["b"])
    if amounts is None:
        return None
    for a in amounts:
        if a.negative or a.count <= 0:
            raise refuse(text, 'the amount must be a positive number, for example "in 5 minutes"')
        if a.count > 1_000_000:
            raise refuse(text, "that is too far ahead")
    calendar_step, elapsed = split_amounts(amounts)
    try:
        local = wall_clock(now, zi) + calendar_step
        if local.year > MAX_YEAR:
            raise refuse(text, "that is too far ahead")
        if m["clock"]:
            if elapsed or not calendar_step:
                raise refuse(text, 'a time of day goes with days, as in "in 3 days at 9am"')
            clock_time = clock(m["clock"])
            assert clock_time is not None
            return at_local(local.date(), clock_time, zi)
        base = localize(local, zi) if calendar_step else now
        return base + elapsed
    except (OverflowError, ValueError):
        raise refuse(text, "that is too far ahead") from None


class Moment(NamedTuple):
    """A one-off instant (aware UTC); whether the default time of day was taken for it
    because the phrase named a day but no time ("tomorrow", "end of month"); and what
    the read-back adds about a time Herald chose otherwise ("morning is 09:00")."""

    instant: datetime
    defaulted: bool = False
    note: str | None = None


def parse_once(
    text: str, zi: ZoneInfo, now: datetime, default_time: time = time(9, 0)
) -> Moment | None:
    """The instant a one-off phrase names, or None if it is not one.

    Raises InvalidInput when the phrase is recognisable but impossible. A day without a
    time takes ``default_time`` ("tonight" is 20:00). Does not check that the instant
    is in the future.
    """
    found = _parse_once(text, zi, now)
    if found is not None:
        return Moment(found)
    part = _part_of_day(text, zi, now)
    if part is not None:
        return part
    m = _DAY_ONLY.match(text)
    day = read_day(m["day"], wall_clock(now, zi).date()) if m else None
    if m is None or day is None:
        return None
    if day.text == "tonight":
        return Moment(_on_day(day, TONIGHT, zi, now))
    return Moment(_on_day(day, default_time, zi, now), defaulted=True)


def _part_of_day(text: str, zi: ZoneInfo, now: datetime) -> Moment | None:
    """Read "tomorrow morning" (09:00), "friday evening at 7" (19:00), "this afternoon"."""
    m = _PART_OF_DAY.match(text)
    if m is None:
        return None
    local_today = wall_clock(now, zi).date()
    day = Day("today", fixed=local_today) if m["this"] else read_day(m["day"], local_today)
    if day is None or day.text == "tonight":
        return None
    part = m["part"]
    at = in_part_of_day(part, m["clock"])
    note = None if m["clock"] else part_of_day_note(part, at)
    return Moment(_on_day(day, at, zi, now), note=note)


def _parse_once(text: str, zi: ZoneInfo, now: datetime) -> datetime | None:
    m = _ISO.match(text)
    if m and text.isascii():
        return _iso(m, text, zi)
    m = _RELATIVE.match(text)
    if m:
        return _relative(m, text, zi, now)
    m = _CLOCK_ONLY.match(text)
    # a bare "9" or "2h" may be a duration: a clock time only after "at"
    if m and (m["at"] or not (text.isdigit() or text.endswith("h"))):
        clock_time = clock(m["clock"])
        if clock_time is not None:
            return _today_or_tomorrow(clock_time, zi, now)
    for pattern in (_DAY_THEN_CLOCK, _CLOCK_THEN_DAY):
        m = pattern.match(text)
        if m:
            local_today = wall_clock(now, zi).date()
            day = read_day(m["day"], local_today)
            clock_time = clock(m["clock"])
            if day is not None and clock_time is not None:
                if day.text == "tonight" and 1 <= clock_time.hour < 12 and "a" not in m["clock"]:
                    clock_time = clock_time.replace(hour=clock_time.hour + 12)  # "tonight at 8"
                return _on_day(day, clock_time, zi, now)
    return None


def _today_or_tomorrow(clock_time: time, zi: ZoneInfo, now: datetime) -> datetime:
    today = wall_clock(now, zi).date()
    first = at_local(today, clock_time, zi)
    return first if first > now else at_local(today + timedelta(days=1), clock_time, zi)


def read_moment(text: str, zi: ZoneInfo, now: datetime) -> tuple[date, time | None] | datetime:
    """A "starting ..." or "until ..." bound: an exact instant, or a local day with an
    optional clock time (``(date, None)`` for "june 30" or "friday")."""
    local_today = wall_clock(now, zi).date()
    day = read_day(text, local_today)
    if day is not None:
        return day.resolve(local_today, ahead=True), None
    found = parse_once(text, zi, now)
    if found is None:
        raise refuse(text, 'write a day such as "june 30", "friday" or "2026-06-30"')
    return found.instant
