"""How late sends start: the buckets they are counted in, the per-minute counts a
dispatcher keeps for the console (written to the ``lateness`` table with its sweep,
never per send), and percentiles read from bucketed counts.

A percentile from buckets is only known up to its bucket: :func:`quantile` returns the
bucket's upper bound and :func:`said` writes it as such ("≤ 2 s", "> 1 h"), never as an
exact figure the counts do not hold."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

#: Upper bounds, in seconds, of the buckets a try's lateness is counted in (the
#: Prometheus histogram ``herald_delivery_lateness_seconds`` and the console's
#: per-minute counts); a last bucket holds what is later than the last bound. Minutes
#: are covered (a catch-up after an outage) as finely as seconds are.
LATENESS_BUCKETS = (
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
)  # fmt: skip
#: A minute's counts of first tries: one per bucket (the last: later than the last
#: bound), then those marked delayed (later than ``HERALD_LATE_AFTER``, whatever bucket
#: they are in).
WIDTH = len(LATENESS_BUCKETS) + 2
DELAYED = WIDTH - 1
#: The console's windows: what each is called, and how far back it reaches.
WINDOWS = (("last hour", timedelta(hours=1)), ("last day", timedelta(days=1)))
#: Minutes a dispatcher keeps counting after it last counted in them: a send that
#: started then may finish this late (its counts are rewritten whole on every flush).
KEPT_MINUTES = 120


class LateMinutes:
    """This dispatcher's counts of first tries per UTC minute (minutes since the epoch),
    added to from the event loop only: one bisect and one or two increments per try.
    The minutes counted in since the last :meth:`take` are its dirty ones. Retries are
    not counted: the histogram ``herald_delivery_lateness_seconds`` (the alert's) counts
    first tries only, and the console says the same figures."""

    __slots__ = ("_counts", "_dirty")

    def __init__(self) -> None:
        self._counts: dict[int, list[int]] = {}
        self._dirty: set[int] = set()

    def add(self, minute: int, late: float, delayed: bool) -> None:
        """Count a first try that started in ``minute``, ``late`` seconds after it fell
        due, and whether it was delayed."""
        counts = self._counts.get(minute)
        if counts is None:
            counts = self._counts[minute] = [0] * WIDTH
        counts[bisect_left(LATENESS_BUCKETS, late)] += 1  # first bound >= late
        if delayed:
            counts[DELAYED] += 1
        self._dirty.add(minute)

    def take(self) -> dict[datetime, list[int]]:
        """The whole counts of every minute counted in since the last call, to write
        (copies), and minutes too old to be counted in again forgotten."""
        taken = {datetime.fromtimestamp(m * 60, UTC): list(self._counts[m]) for m in self._dirty}
        if self._dirty:
            oldest = max(self._dirty) - KEPT_MINUTES
            for minute in [m for m in self._counts if m < oldest]:
                del self._counts[minute]
        self._dirty.clear()
        return taken

    def put_back(self, taken: dict[datetime, list[int]]) -> None:
        """Minutes whose write failed: written again with the next :meth:`take` (their
        counts kept again if that take forgot them as too old)."""
        for at, counts in taken.items():
            minute = int(at.timestamp()) // 60
            self._counts.setdefault(minute, list(counts))
            self._dirty.add(minute)


def summed(rows: Sequence[Sequence[int]]) -> list[int]:
    """Counts of several minutes (or dispatchers) added up, bucket by bucket (a row of
    another length, written by another version, is left out)."""
    total = [0] * WIDTH
    for row in rows:
        if len(row) == WIDTH:
            total = [a + b for a, b in zip(total, row, strict=True)]
    return total


def quantile(counts: Sequence[int], q: float) -> float | None:
    """The upper bound of the bucket holding the ``q`` quantile (0 < q ≤ 1) of the
    tries counted in ``counts`` (of :data:`WIDTH`); ``math.inf`` when it is in the last
    bucket; None when nothing was counted."""
    buckets = counts[: len(LATENESS_BUCKETS) + 1]
    total = sum(buckets)
    if total == 0:
        return None
    rank, seen = math.ceil(q * total), 0
    for i, n in enumerate(buckets):
        seen += n
        if seen >= rank:
            return LATENESS_BUCKETS[i] if i < len(LATENESS_BUCKETS) else math.inf
    return math.inf  # pragma: no cover - seen reaches total


def seconds_said(seconds: float) -> str:
    """A bucket bound as people say it: ``5 ms``, ``2 s``, ``5 min``, ``1 h``."""
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    if seconds < 60:
        return f"{seconds:g} s"
    if seconds < 3600:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:g} h"


def said(bound: float | None) -> str:
    """A percentile as its bucket allows: ``≤ 2 s``, ``> 1 h``, or ``-`` (no tries)."""
    if bound is None:
        return "-"
    if math.isinf(bound):
        return f"> {seconds_said(LATENESS_BUCKETS[-1])}"
    return f"≤ {seconds_said(bound)}"


@dataclass(frozen=True)
class LatenessFigures:
    """How late first tries started over a window, every dispatcher's counted (retries
    are not: they start when their backoff ends)."""

    window: str
    sends: int
    #: Those marked delayed (later than ``HERALD_LATE_AFTER``).
    delayed: int
    p50: float | None
    p95: float | None
    p99: float | None

    @classmethod
    def of(cls, window: str, counts: Sequence[int]) -> LatenessFigures:
        return cls(
            window,
            sum(counts[: len(LATENESS_BUCKETS) + 1]),
            counts[DELAYED],
            quantile(counts, 0.5),
            quantile(counts, 0.95),
            quantile(counts, 0.99),
        )

    def line(self) -> str:
        """``last hour  p50 ≤ 1 s  p95 ≤ 5 min  p99 ≤ 10 min  12 of 3,400 delayed``."""
        if self.sends == 0:
            return f"{self.window:<9}  no first tries counted"
        return (
            f"{self.window:<9}  p50 {said(self.p50)}  p95 {said(self.p95)}  "
            f"p99 {said(self.p99)}  {self.delayed:,} of {self.sends:,} delayed"
        )


def late_for(seconds: float) -> str:
    """How a delayed try is said in a timeline: ``delayed 4 min``, ``delayed 90 s``."""
    if seconds < 120:
        return f"delayed {round(seconds)} s"
    if seconds < 7200:
        return f"delayed {round(seconds / 60)} min"
    return f"delayed {round(seconds / 3600)} h"
