"""dateutil's rrule on a meter: every candidate it examines is counted, and it stops.

dateutil.rrule walks the calendar period by period (a year, a month, a week, a day,
or one step of an hourly or minutely rule) and checks every day of each period
against the rule's BY parts. Two things make that unbounded on its own:

* a period where nothing matches yields nothing, and dateutil checks UNTIL only on
  what it yields, so a rule that never happens is walked to the year 9999 whatever
  UNTIL says (``FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1`` held the event loop ~68 s);
* a rule that does happen can still be rare enough to cost seconds per occurrence.

:class:`MeteredRule` is dateutil's own rrule with a metered bookkeeper: each period
dateutil starts is charged to a :class:`Meter` (the days it checks, more for a
BYSETPOS, and the clock's steps of an hourly or minutely rule: :func:`period_cost`),
and the walk stops with :class:`PastWindow` once a period starts after the rule's
``stop``, or with :class:`Exhausted` once the meter's budget of candidates is spent. The expansion
(core.timeexpr.expand) also charges each instant dateutil yields. Nothing else of
dateutil is changed: the same code, with the metered bookkeeper in place of its own.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from datetime import date
from typing import Any

import dateutil.rrule as _dateutil_rrule
from dateutil.rrule import HOURLY, MINUTELY, rrule

#: The candidates one reading or expansion of a rule may examine. A candidate is one
#: small step of dateutil's walk (a day checked against the BY parts, or one step of
#: an hourly or minutely rule's clock), 0.1-0.2 microseconds of CPU each, so the
#: budget is 50-100 ms.
BUDGET = 500_000
#: What each further occurrence asked for adds to the budget of one expansion (a dense
#: rule's occurrence costs ~40 candidates): a year of "every 15 minutes" may be listed.
PER_OCCURRENCE = 1_000
#: What starting a period costs beyond its days (dateutil builds a list of the
#: year's days for each one, whatever its length).
PERIOD_COST = 16
#: The steps of an hourly and of a minutely rule's clock in a day, at INTERVAL=1.
_STEPS_A_DAY = {HOURLY: 24, MINUTELY: 24 * 60}


class Exhausted(Exception):  # noqa: N818 (not an error: a signal the expansion turns into one)
    """The meter's budget is spent."""


class PastWindow(Exception):  # noqa: N818
    """dateutil's walk has passed the rule's ``stop``: nothing before it is left."""


class Meter:
    """How many candidates an expansion may still examine. One meter is shared by
    every line of one reading of a rule, and by every occurrence one question about a
    rule looks at (core.calendars.next_allowed passing over skipped dates)."""

    __slots__ = ("budget", "left", "spent")

    def __init__(self, budget: int = BUDGET) -> None:
        self.budget = budget
        self.left = budget
        self.spent = 0

    def charge(self, cost: int) -> None:
        """Spend ``cost`` candidates; raises :class:`Exhausted`, spending nothing, when
        fewer are left (so ``spent`` never passes what was given: the budget, its
        grants and a renewal)."""
        if cost > self.left:
            raise Exhausted
        self.spent += cost
        self.left -= cost

    def grant(self, extra: int) -> None:
        """Raise the budget by ``extra`` candidates (one more occurrence asked for)."""
        self.budget += extra
        self.left += extra

    def renew(self) -> None:
        """Give the whole budget once more (the second pass of an expansion that left
        out the lines that never happen); ``spent`` keeps counting."""
        self.left = self.budget


def period_cost(freq: int, interval: int, days: int, setpos: int, elapsed: int) -> int:
    """What one period of dateutil's walk costs: starting it, the days it checks (times
    the BYSETPOS values, each of which picks through them) and, for an hourly or
    minutely rule, the steps of its clock over the ``elapsed`` days since the last
    period (dateutil steps through the hours and minutes in between one by one,
    looking for the next that BYHOUR and BYMINUTE allow)."""
    steps = -(-elapsed * _STEPS_A_DAY.get(freq, 0) // interval)
    return PERIOD_COST + days * max(1, setpos) + steps


_DaySet = tuple[Iterable[int | None], int, int]  # dateutil's days of a period: all, first, end


class _MeteredInfo(_dateutil_rrule._iterinfo):
    """dateutil's per-walk bookkeeper, charging each period it hands out (no
    ``__slots__`` of its own: dateutil's constructor reads its class's)."""

    def _charged(self, first: date, found: _DaySet) -> _DaySet:
        rule: Any = self.rrule  # a MeteredRule; dateutil's own fields are private
        stop: date | None = getattr(rule, "stop", None)
        if stop is not None and first > stop:
            raise PastWindow
        meter: Meter | None = getattr(rule, "meter", None)
        if meter is not None:
            day = first.toordinal()
            elapsed = day - getattr(self, "last_day", day)
            self.last_day = day
            _, start, end = found
            setpos = len(rule._bysetpos or ())
            meter.charge(period_cost(rule._freq, rule._interval, end - start, setpos, elapsed))
        return found

    def ydayset(self, year: int, month: int, day: int) -> _DaySet:
        return self._charged(date(year, 1, 1), super().ydayset(year, month, day))

    def mdayset(self, year: int, month: int, day: int) -> _DaySet:
        return self._charged(date(year, month, 1), super().mdayset(year, month, day))

    def wdayset(self, year: int, month: int, day: int) -> _DaySet:
        return self._charged(date(year, month, day), super().wdayset(year, month, day))

    def ddayset(self, year: int, month: int, day: int) -> _DaySet:
        return self._charged(date(year, month, day), super().ddayset(year, month, day))


# dateutil's own walk, reading the metered bookkeeper where it reads its own.
_dateutil_walk: types.FunctionType = vars(rrule)["_iter"]
_metered_walk = types.FunctionType(
    _dateutil_walk.__code__,
    {**vars(_dateutil_rrule), "_iterinfo": _MeteredInfo},
    "_iter",
    _dateutil_walk.__defaults__,
    _dateutil_walk.__closure__,
)


class MeteredRule(rrule):
    """A dateutil rrule whose walk is charged to ``meter`` (None: not metered) and
    ends, with :class:`PastWindow`, at the first period that starts after ``stop``."""

    _iter = _metered_walk

    def __init__(
        self, *args: Any, meter: Meter | None = None, stop: date | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.meter = meter
        self.stop = stop
