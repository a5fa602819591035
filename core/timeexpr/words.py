"""The small vocabulary of time expressions: clock times, days, months, numbers.

Every reader here takes normalised text (lower case, single spaces) and returns a
value, returns None when the text is not of its kind, or raises InvalidInput when the
text is of its kind but impossible ("25:00", "february 30").
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta

from core.errors import InvalidInput

EXAMPLES = '"every day at 9am", "tomorrow at 14:00" or "2026-04-01 08:00"'

WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS: dict[str, int] = {}
for _i, _name in enumerate(WEEKDAY_NAMES):
    _low = _name.lower()
    WEEKDAYS.update({_low: _i, _low + "s": _i, _low[:3]: _i})
WEEKDAYS.update({"tues": 1, "weds": 2, "thur": 3, "thurs": 3})
MONTHS: dict[str, int] = {}
for _i, _name in enumerate(MONTH_NAMES, start=1):
    MONTHS.update({_name.lower(): _i, _name.lower()[:3]: _i})
MONTHS["sept"] = 9

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20, "thirty": 30, "forty-five": 45, "sixty": 60,
}  # fmt: skip
ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1,
    "second-to-last": -2, "second to last": -2,
}  # fmt: skip

WEEKDAY_RE = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
NUMBER_RE = r"\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
ORDINAL_RE = r"\d{1,2}(?:st|nd|rd|th)?|" + "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
#: What "eod" ("end of day") means, and "tonight" without a time.
END_OF_DAY = time(17, 0)
TONIGHT = time(20, 0)
# A clock time: 9, 9am, 9 pm, 9:30, 09:30:15, 9.30pm, 17h, 17h30, noon, midnight, eod.
CLOCK_RE = (
    r"(?:noon|midday|midnight|eod|end of (?:the )?day|\d{1,2}h(?:\d{2})?(?![a-z\d])"
    r"|\d{1,2}(?:[:.]\d{1,2}(?::\d{1,2})?)?\s?(?:am|pm|a\.m\.?|p\.m\.?)?)"
)
_CLOCK_FULL = re.compile(
    r"^(?P<h>\d{1,2})(?:[:.](?P<m>\d{1,2})(?::(?P<s>\d{1,2}))?)?\s?(?P<ap>am|pm|a\.m\.?|p\.m\.?)?$"
)
#: The 24-hour clock with an "h", as much of Europe writes it: 17h, 17h30.
_CLOCK_H = re.compile(r"^(?P<h>\d{1,2})h(?P<m>\d{2})?$")
#: A part of the day said instead of a time ("tomorrow morning", "every night"), and
#: the time it stands for (the read-back shows it).
PARTS_OF_DAY = {
    "morning": time(9, 0), "afternoon": time(14, 0), "evening": time(18, 0), "night": time(20, 0),
}  # fmt: skip
PART_OF_DAY_RE = "|".join(PARTS_OF_DAY)
_ISO_DAY = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_MONTH_FIRST = re.compile(
    rf"^(?P<mon>{MONTH_RE})\.? (?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<y>\d{{4}}))?$"
)
_DAY_FIRST = re.compile(
    rf"^(?:the )?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? (?P<mon>{MONTH_RE})\.?"
    r"(?:,? (?P<y>\d{4}))?$"
)


class Unread(InvalidInput):
    """Text of no kind Herald knows (as opposed to a known kind that is impossible,
    such as "25:00"): the refusal a suggestion may replace."""


def refuse(part: str, hint: str = "") -> InvalidInput:
    """The standard refusal: what was not understood, and what works (without a
    ``hint``: examples, and the refusal is an :class:`Unread`)."""
    if not hint:
        return Unread(f'Could not read "{part}": try {EXAMPLES}.')
    return InvalidInput(f'Could not read "{part}": {hint}.')


def normalise(text: str) -> str:
    """Lower case, single spaces, no trailing full stop."""
    return " ".join(text.lower().split()).rstrip(".!").strip()


def number(word: str) -> int | None:
    """``12`` or ``twelve`` as an int; None if it is neither."""
    if word.isdigit() and word.isascii():
        return int(word)
    return NUMBER_WORDS.get(word)


def ordinal(word: str) -> int | None:
    """``3rd``, ``third``, ``last`` as 3, 3, -1; None if it is none of those."""
    if word in ORDINAL_WORDS:
        return ORDINAL_WORDS[word]
    m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th)?", word)
    return int(m.group(1)) if m and m.group(1).isascii() else None


def ordinal_text(n: int) -> str:
    """1 -> 1st, 22 -> 22nd, 13 -> 13th."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def clock(text: str) -> time | None:
    """A clock time, or None if ``text`` does not look like one.

    A bare hour ("9") is read on the 24-hour clock. Raises InvalidInput for
    impossible times such as 25:00, 9:75 or 13pm.
    """
    if text in ("noon", "midday"):
        return time(12, 0)
    if text in ("eod", "end of day", "end of the day"):
        return END_OF_DAY
    if text == "midnight":
        return time(0, 0)
    if (h := _CLOCK_H.match(text)) and text.isascii():
        text = f"{h['h']}:{h['m'] or '00'}"
    m = _CLOCK_FULL.match(text)
    if not m or not m.group("h").isascii():
        return None
    hour, minute = int(m.group("h")), int(m.group("m") or 0)
    second = int(m.group("s") or 0)
    ap = (m.group("ap") or "").replace(".", "")
    if m.group("m") is not None and len(m.group("m")) != 2:
        return None
    if ap:
        if not 1 <= hour <= 12:
            raise refuse(text, 'with am/pm the hour goes from 1 to 12 (try "5pm" or "17:00")')
        hour = hour % 12 + (12 if ap == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise refuse(
            text,
            "that is not a clock time: hours go from 0 to 23 and minutes from 0 to 59 "
            '(try "17:30" or "5pm")',
        )
    return time(hour, minute, second)


def in_part_of_day(part: str, text: str | None) -> time:
    """The time of ``text`` said in a part of the day ("night at 11" is 23:00, "evening
    at 7" 19:00, "night at 1" 01:00), or the part's own time when ``text`` is None."""
    if text is None:
        return PARTS_OF_DAY[part]
    found = clock(text)
    if found is None:
        raise refuse(text, 'that is not a clock time (try "9am", "17:30" or "9am and 5pm")')
    plain = text[0].isdigit() and not re.search(r"[ap]\.?m", text)
    low = 5 if part == "night" else 1
    if plain and part != "morning" and low <= found.hour <= 11:
        return found.replace(hour=found.hour + 12)
    return found


def part_of_day_note(part: str, at: time) -> str:
    """What the read-back says of the time a part of the day stood for."""
    return f"'{part}' is {at:%H:%M}; add 'at …' to change it"


def make_date(year: int | None, month: int, day: int, text: str) -> date:
    """``date(year, month, day)`` or a refusal naming the impossible date.

    With no year, any year will do (so february 29 passes); 2024 is returned then.
    """
    if not 1 <= month <= 12:
        raise refuse(text, f"there is no month {month}")
    if year is not None and not 1 <= year <= 9999:
        raise refuse(text, f"there is no year {year} on Herald's calendar")
    last = calendar.monthrange(year or 2024, month)[1]  # 2024: a leap year
    if not 1 <= day <= last:
        month_name = MONTH_NAMES[month - 1] + (f" {year}" if year else "")
        raise refuse(text, f"{month_name} has no day {day} (it has {last} days)")
    return date(year or 2024, month, day)


def month_day(text: str) -> tuple[int, int, int | None] | None:
    """``june 5``, ``5th of june``, ``june 5, 2027`` as (month, day, year or None)."""
    m = _MONTH_FIRST.match(text) or _DAY_FIRST.match(text)
    if not m:
        return None
    year = int(m.group("y")) if m.group("y") else None
    month, day = MONTHS[m.group("mon")], int(m.group("d"))
    make_date(year, month, day, text)
    return month, day, year


def day_word(text: str, today: date) -> tuple[date, str] | None:
    """A day as (date, kind) for today/tomorrow/ISO dates; None if not one of those.

    Month names and weekday names are resolved by the caller, which knows the time
    (they roll forward to the next future one).
    """
    if text == "today" or text == "tonight":
        return today, "fixed"
    if text == "tomorrow":
        return today + timedelta(days=1), "fixed"
    if text == "yesterday":  # read, so that it is refused as in the past
        return today - timedelta(days=1), "fixed"
    if text in ("the day after tomorrow", "day after tomorrow"):
        return today + timedelta(days=2), "fixed"
    m = _ISO_DAY.match(text)
    if m and text.isascii():
        y, mo, d = (int(g) for g in m.groups())
        return make_date(y, mo, d, text), "fixed"
    return None


def weekday_list(text: str) -> list[int] | None:
    """``monday and wednesday``, ``mon, wed, fri`` as weekday numbers (Monday = 0)."""
    items = [w for w in re.split(r",\s*|\s+and\s+|\s*&\s*|\s+", text) if w]
    if not items or not all(w in WEEKDAYS for w in items):
        return None
    days = sorted({WEEKDAYS[w] for w in items})
    return days


def clock_list(text: str) -> list[time] | None:
    """``9am and 5pm``, ``9:00, 13:00 and 17:00`` as times; None if not all clocks."""
    items = [w for w in re.split(r",\s*|\s+and\s+|\s*&\s*", text) if w]
    times = [clock(w) for w in items]
    if not items or any(t is None for t in times):
        return None
    return sorted({t for t in times if t is not None})


def format_clock(value: time | datetime) -> str:
    """``09:00`` (``09:00:30`` when there are seconds)."""
    return f"{value:%H:%M:%S}" if value.second else f"{value:%H:%M}"


def format_day(value: date | datetime) -> str:
    """``Mon 30 Mar 2026``, independent of the process locale."""
    return (
        f"{WEEKDAY_NAMES[value.weekday()][:3]} {value.day} "
        f"{MONTH_NAMES[value.month - 1][:3]} {value.year}"
    )
