"""Durations: the one grammar of an amount of time, and the words for one.

What people write (``10m``, ``90 seconds``, ``1h30m``, ``an hour and a half``,
``1 week, 2 days``, ``half an hour``, ``-15 minutes``) is read here for every reader
of a duration: a one-off's ``in <duration>`` (:mod:`core.timeexpr.once`), a
recurrence's interval (``every 2 hours``, ``every other week``:
:mod:`core.timeexpr.every`), a feed's lead time (``core.cases.calendars.parse_before``),
the console's shift (``core.cases.console.parse_shift``) and Slack's ``before N unit``.
Each caller keeps its own sentence when the text is refused and its own range. The
words for one serve the same readers, the description of a recurrence's step and the
snooze buttons' labels (``core.reminders``).

- :data:`UNITS`: every spelling of a unit and the unit it names.
- :func:`unit_re`: the spellings of some units, as a regex alternative.
- :func:`read_amounts`: the amounts of a normalised text (``1h30m`` is two), or None.
- :func:`split_amounts`: amounts as calendar steps (whole days, weeks, months, years:
  they follow the wall clock) and elapsed time (seconds, minutes, hours, and halves).
- :func:`parse_duration`: a text as one signed :class:`~datetime.timedelta`.
- :func:`describe_duration`: a duration in words, exact (``1 hour``, ``90 seconds``),
  short (``15 min``, ``1 h``) or rough (``45s``, ``12 min``, ``1.5 h``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateutil.relativedelta import relativedelta

from core.errors import InvalidInput
from core.timeexpr.words import NUMBER_RE, normalise, number

#: Every spelling of a unit, and the unit it names (a keyword of timedelta or
#: relativedelta).
UNITS = {
    "s": "seconds", "sec": "seconds", "secs": "seconds", "second": "seconds", "seconds": "seconds",
    "m": "minutes", "min": "minutes", "mins": "minutes", "minute": "minutes", "minutes": "minutes",
    "h": "hours", "hr": "hours", "hrs": "hours", "hour": "hours", "hours": "hours",
    "d": "days", "day": "days", "days": "days",
    "w": "weeks", "wk": "weeks", "wks": "weeks", "week": "weeks", "weeks": "weeks",
    "month": "months", "months": "months", "year": "years", "years": "years",
}  # fmt: skip


def unit_re(*units: str) -> str:
    """Every spelling of ``units`` (values of :data:`UNITS`: ``"minutes"``, ``"hours"``,
    …) as a regex alternative, longest first: ``"minutes|minute|mins|min|m"``."""
    return "|".join(sorted((w for w, u in UNITS.items() if u in units), key=len, reverse=True))


_UNIT_RE = unit_re(*set(UNITS.values()))
_AMOUNT = re.compile(rf"(?P<n>[+-]?(?:{NUMBER_RE})|half an?)\s?(?P<u>{_UNIT_RE})(?![a-z])")
# "an hour and a half", "2 and a half hours": the half is of the unit named
_AND_A_HALF = re.compile(
    rf"(?P<n>{NUMBER_RE}) (?:(?P<u>{_UNIT_RE}) and a half|and a half (?P<v>{_UNIT_RE}))(?![a-z])"
)
_ELAPSED = ("seconds", "minutes", "hours")
_CALENDAR: dict[str, Callable[[int], relativedelta]] = {
    "days": lambda n: relativedelta(days=n),
    "weeks": lambda n: relativedelta(weeks=n),
    "months": lambda n: relativedelta(months=n),
    "years": lambda n: relativedelta(years=n),
}
_DIGITS = re.compile(r"\d+")
#: Where months and years count from when no ``now`` is given.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Amount:
    """One amount of a duration: ``count`` (an int, or 0.5 for "half a …") of
    ``unit`` (a value of :data:`UNITS`); ``negative`` when written with a minus."""

    count: int | float
    unit: str
    negative: bool = False


def _halves(spec: str) -> str:
    """``an hour and a half`` as ``an hour and half an hour`` (and ``2 and a half
    hours`` as ``2 hours and half an hours``), which :data:`_AMOUNT` reads."""

    def spelled(m: re.Match[str]) -> str:
        unit = m["u"] or m["v"]
        return f"{m['n']} {unit} and half an {unit}"

    return _AND_A_HALF.sub(spelled, spec)


def read_amounts(words: str) -> list[Amount] | None:
    """The amounts of ``words`` (normalised: lower case, single spaces), in order, or
    None when the text is not amounts alone. Amounts may be glued (``1h30m``) or
    separated by spaces, commas or "and"; a count is digits or a number word, or
    "half a(n)". Signs are read, not judged: the caller refuses what it must."""
    spec = _halves(words)
    pieces = re.split(r",\s*|\s+and\s+|\s+", spec)
    joined = " ".join(p for p in pieces if p)
    found = list(_AMOUNT.finditer(joined))
    if not found or _AMOUNT.sub("", joined).strip(" ,") != "":
        return None
    amounts = []
    for a in found:
        raw = a["n"]
        count = 0.5 if raw.startswith("half") else number(raw.lstrip("+-"))
        if count is None:
            return None
        amounts.append(Amount(count, UNITS[a["u"]], raw.startswith("-")))
    return amounts


def split_amounts(amounts: list[Amount]) -> tuple[relativedelta, timedelta]:
    """The calendar steps (whole days, weeks, months and years: they follow the wall
    clock) and the elapsed time (seconds, minutes, hours, and any half) of
    ``amounts``, their signs ignored. Raises OverflowError when too large."""
    elapsed = timedelta(0)
    calendar_step = relativedelta()
    for a in amounts:
        n, unit = a.count, a.unit
        if unit in _ELAPSED:
            elapsed += timedelta(**{unit: n})
        elif isinstance(n, int):
            calendar_step += _CALENDAR[unit](n)
        else:
            elapsed += timedelta(days=n * (7 if unit == "weeks" else 1))  # half a day, a week
    return calendar_step, elapsed


def parse_duration(text: str, *, now: datetime | None = None, bare: str | None = None) -> timedelta:
    """``text`` as a signed duration: ``90s``, ``10 min``, ``1h30m``, ``1 hour 30
    minutes``, ``an hour and a half``, ``half a day``, ``1 week, 2 days``,
    ``-15 minutes``, ``+2h``. One leading sign applies to the whole.

    Days and weeks are 24 h and 7 × 24 h; months and years count from ``now`` (aware;
    default :data:`EPOCH`), in UTC. A bare number is read in ``bare`` (a unit of
    :data:`UNITS`, e.g. ``"m"``) when given, else refused. Zero is a duration; ranges
    are the caller's. Raises InvalidInput when ``text`` is not a duration.
    """
    words = normalise(_DIGITS.sub(lambda m: str(int(m[0])), text or ""))
    sign = -1 if words.startswith("-") else 1
    amount = words[1:].strip() if words[:1] in ("-", "+") else words
    if bare is not None and amount.isdigit():
        amount = f"{amount} {bare}"
    amounts = read_amounts(amount) if amount else None
    if amounts is None or any(a.negative for a in amounts):
        raise InvalidInput(f"{text!r} is not a duration: write e.g. 10m, 1h30m or 2 days.")
    reference = now or EPOCH
    try:
        calendar_step, elapsed = split_amounts(amounts)
        moved = reference.astimezone(UTC) + calendar_step + elapsed
    except (OverflowError, ValueError):
        raise InvalidInput(f"{text!r} is too long a duration.") from None
    return sign * (moved - reference)


_SHORT = {"day": "d", "hour": "h", "minute": "min", "second": "s"}
_SIZES = ((86400, "day"), (3600, "hour"), (60, "minute"))


def describe_duration(
    value: float | timedelta, *, rough: bool = False, short: bool = False, within: str = "day"
) -> str:
    """``value`` (seconds, or a timedelta) in words.

    Exact (the default): the largest unit up to ``within`` (``"day"``, ``"hour"`` or
    ``"minute"``) that divides it, ``10 minutes``, ``1 hour``, ``2 days``, ``90
    seconds`` (within hours, a day is ``24 hours``). ``short``: the same with the
    unit abbreviated, ``15 min``, ``1 h``, ``2 d``, ``90 s`` (a button's label).
    Rough, for notices (its sign dropped): ``45s`` under 90 seconds, ``12 min`` under
    90 minutes, else hours to a tenth, ``1.5 h``.
    """
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if rough:
        seconds = abs(seconds)
        if seconds < 90:
            return f"{seconds:.0f}s"
        if seconds < 90 * 60:
            return f"{seconds / 60:.0f} min"
        return f"{seconds / 3600:.1f} h"
    if isinstance(value, timedelta) and seconds == int(seconds):
        seconds = int(seconds)
    largest = next(i for i, (_, unit) in enumerate(_SIZES) if unit == within)
    count, unit = seconds, "second"
    for size, name in _SIZES[largest:]:
        if seconds >= size and seconds % size == 0:
            count, unit = seconds // size, name
            break
    if short:
        return f"{count} {_SHORT[unit]}"
    return f"{count} {unit}{'s' if count != 1 else ''}"
