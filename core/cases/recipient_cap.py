"""The cap on messages one author has due to one destination within an hour
(``HERALD_RECIPIENT_HOURLY_CAP``): the arithmetic, pure (no store, no clock).

The sends counted are those **due** in a 60-minute window, not those created in the past
hour: a flood is many messages arriving together, however long ago they were asked
for, and counting by due time also counts the ones already sent in that hour, so a
second batch scheduled as soon as the first went out is refused too. Counted, of the
author's schedules to that destination: every job waiting, being sent, delivered or
dead in the window, and the further occurrences of their active recurring schedules
there. A new schedule is refused when a window holding one of its sends would hold more
than the cap. A recurring schedule is checked over its sends in the coming
:data:`SAMPLE_SPAN` (at most :data:`SAMPLE` of them): rules repeat, so a clash shows
there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from core import timeexpr
from core.errors import InvalidInput

HOUR = timedelta(hours=1)
#: How far ahead a new recurring schedule's sends are looked at, and how many at most.
SAMPLE_SPAN = timedelta(days=7)
SAMPLE = 48
#: The most occurrences of one existing rule counted in one stretch of time, and how
#: many are read at once.
_PER_STRETCH = 5000
_BATCH = 16


@dataclass(frozen=True)
class Crowded:
    """A 60-minute window from ``start`` that would hold more than the cap:
    ``existing`` sends already there and ``adding`` of the request's."""

    start: datetime
    existing: int
    adding: int


def sends_of(first: datetime, rule: str | None, *, after: datetime | None = None) -> list[datetime]:
    """The sends of a schedule to check: a one-off's one; a recurring one's in the
    :data:`SAMPLE_SPAN` from its first (or the first after ``after``)."""
    if rule is None:
        return [first]
    parsed = timeexpr.parse_rule(rule)
    start = first if after is None else after
    found = timeexpr.take(parsed, SAMPLE, start - timedelta(microseconds=1))
    return [t for t in found if t < start + SAMPLE_SPAN] or found[:1]


def stretches(times: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """The time within an hour of ``times``, as disjoint stretches in order."""
    merged: list[tuple[datetime, datetime]] = []
    for t in sorted(times):
        lo, hi = t - HOUR, t + HOUR
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def rule_sends(
    rules: Sequence[tuple[str, datetime | None]], within: Sequence[tuple[datetime, datetime]]
) -> list[datetime]:
    """The occurrences of existing recurring ``rules`` in the ``within`` stretches (in
    order), after each one's next run (whose own job is counted already). A rule that
    cannot be read, or is too costly to expand there, counts nothing (the request is
    not refused for another schedule's rule)."""
    found: list[datetime] = []
    for text, next_run in rules:
        try:
            found.extend(_walk(timeexpr.parse_rule(text), within, next_run))
        except InvalidInput:
            continue
    return found


def _walk(
    rule: timeexpr.Rule, within: Sequence[tuple[datetime, datetime]], next_run: datetime | None
) -> list[datetime]:
    """One rule's occurrences in the stretches, read forward a few at a time (a daily
    rule's first read covers a week of stretches; a rule may go on for years), at most
    :data:`_PER_STRETCH` a stretch."""
    found: list[datetime] = []
    batch: list[datetime] = []
    at, ended = 0, False
    for lo, hi in within:
        after = lo if next_run is None else max(lo, next_run)
        counted = 0
        while counted < _PER_STRETCH:
            while at < len(batch) and batch[at] <= after:
                at += 1
            if at == len(batch):
                if ended:
                    return found
                batch, at = timeexpr.take(rule, _BATCH, after), 0
                ended = len(batch) < _BATCH
                continue
            if batch[at] >= hi:
                break
            after = batch[at]
            found.append(after)
            counted += 1
    return found


def crowded_hour(
    existing: Sequence[datetime], adding: Sequence[datetime], cap: int
) -> Crowded | None:
    """The first 60-minute window holding one of ``adding`` and more than ``cap`` sends
    in all (``existing`` and ``adding``), or None when there is none."""
    every = sorted([*existing, *adding])
    mine = sorted(adding)
    for t in mine:
        # a window [s, s + 1 h) holding t starts at a send in (t - 1 h, t]
        for s in every[bisect_right(every, t - HOUR) : bisect_right(every, t)]:
            held = bisect_left(every, s + HOUR) - bisect_left(every, s)
            if held > cap:
                new = bisect_left(mine, s + HOUR) - bisect_left(mine, s)
                return Crowded(s, held - new, new)
    return None


def refusal(crowded: Crowded, destination: str, cap: int, zone: str) -> str:
    """The sentence that refuses a request crowding ``destination`` (as shown: its
    secrets redacted); times in ``zone``."""
    start = crowded.start.astimezone(timeexpr.zone(zone))
    hour = f"{start:%H:%M} to {start + HOUR:%H:%M} {zone} on {start:%a %d %b %Y}"
    limit = f"the limit is {cap} per hour per recipient"
    if crowded.existing == 0:  # a rule (or an import) crowding the hour by itself
        return (
            f"This would send more than {cap} messages to {destination} within one hour "
            f"({hour}); {limit}. Choose fewer or further apart."
        )
    if crowded.adding == 1:
        return (
            f"You already have {crowded.existing} messages to {destination} due within "
            f"that hour ({hour}); {limit}. Choose another time, or put them in one message."
        )
    return (
        f"That would make {crowded.existing + crowded.adding} messages to {destination} "
        f"due within one hour ({hour}; {crowded.existing} of them already there); "
        f"{limit}. Choose fewer or further apart."
    )
