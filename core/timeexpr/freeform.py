"""Last resort for one-off dates Herald's own grammar does not know, via dateparser.

dateparser reads much more English than our grammar ("April 1st, 2026 8:00 AM",
"friday afternoon", "12:00 on 1 may") but it guesses where Herald must not: it
fills a missing time from "now", reads 04/05 month-first, and maps zone
abbreviations (CST is three different zones) to one offset. So its answer is taken
when the text names a time of day, or a day (which then takes the default time of
day, as Herald's own readers do); a week or a month ("next week") is refused, and so
are all-numeric day/month dates and zone abbreviations other than UTC/GMT. It is
imported lazily (slow to load) and asked only after every exact reader failed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from core.timeexpr.rule import localize, wall_clock
from core.timeexpr.words import refuse

_AMBIGUOUS = re.compile(
    r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/\d{2,4})?|\b(\d{1,2})\.(\d{1,2})\.\d{2,4}\b"
)
_WORDY = re.compile(r"[a-z]{3}|\d/\d")
_MAX_LENGTH = 80
_UTC_NAMES = frozenset({"UTC", "GMT", "Z"})


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence the deprecation warnings dateparser itself raises on newer Pythons
    (datetime.utcnow and friends): they are dateparser's to fix, not Herald's, and
    tests run with warnings as errors. Nothing else is silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"dateparser\b")
        yield


def _dateparser() -> tuple[Any, Any]:
    with _quiet():
        from dateparser.date import DateDataParser
        from dateparser.timezone_parser import (
            pop_tz_offset_from_string,
        )
    return DateDataParser, pop_tz_offset_from_string


def parse_freeform(
    text: str, zi: ZoneInfo, now: datetime, default_time: time = time(9, 0)
) -> tuple[datetime, bool] | None:
    """The instant dateparser reads in ``text`` (aware UTC), and whether it took
    ``default_time`` because the text named a day but no time; or None.

    Raises InvalidInput when the text names a week or a month but no day, a numeric
    date whose day and month could be swapped, or a zone abbreviation.
    """
    if len(text) > _MAX_LENGTH or not text.isascii():
        return None
    for m in _AMBIGUOUS.finditer(text):
        first, second = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if int(first) <= 12 and int(second) <= 12 and first != second:
            raise refuse(
                m.group(0),
                "the day and the month could be either way round; write the month as a word "
                '("5 april") or use 2026-04-05',
            )
    if not _WORDY.search(text):
        return None  # every phrase dateparser could add to ours has an English word
    date_data_parser, pop_zone = _dateparser()
    try:
        stripped, named = pop_zone(text)
        in_utc = named is not None and named.tzname(None).upper() in _UTC_NAMES
        if named is not None and not in_utc:
            raise refuse(
                text,
                f"the zone {named.tzname(None)} is ambiguous; Herald reads times in your "
                'zone, or write an offset such as "2026-04-01T17:00-05:00"',
            )
        base = now.astimezone(UTC).replace(tzinfo=None) if in_utc else wall_clock(now, zi)
        parser = date_data_parser(
            languages=["en"],
            settings={
                "PREFER_DATES_FROM": "future",
                "RELATIVE_BASE": base,
                "RETURN_TIME_AS_PERIOD": True,
                "PARSERS": ["relative-time", "absolute-time"],
                "RETURN_AS_TIMEZONE_AWARE": False,
            },
        )
        with _quiet():
            data = parser.get_date_data(stripped if in_utc else text)
    except (ValueError, OverflowError, TypeError, KeyError, IndexError, AttributeError):
        # dateparser raises assorted internal errors on odd input; treat as unread.
        return None
    value: datetime | None = data.date_obj
    if value is None:
        return None
    if data.period == "day":
        wall = datetime.combine(value.date(), default_time)
    elif data.period != "time":
        raise refuse(text, 'name one day, for example "next monday" or "march 12"')
    else:
        wall = value.replace(tzinfo=None)
    instant = wall.replace(tzinfo=UTC) if in_utc else localize(wall, zi)
    return instant, data.period == "day"
