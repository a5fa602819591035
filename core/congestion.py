"""When a destination is crowded: how late a message would be sent there.

A destination's rate limit is a token bucket (:mod:`core.ratelimit`); the dispatcher
hands its jobs slots from it in order of rank, then due time. This module replays that
arithmetic over the jobs already planned for one destination, the same slots
:func:`core.ratelimit.allocate` would hand out (its spacing, its burst's tolerance), to
say how late a new message would be sent (:func:`forecast`) and how late each minute of
a day runs (:func:`by_minute`: the console's forecast view).

Pure: no store, no clock. What it cannot see, it does not guess: only jobs already
planned count (each schedule plans its next send), and a provider's own pauses
(``Retry-After``) or an outage come on top.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from core.ratelimit import RateLimit, claim_cap, spacing, tolerance

#: How far before an occurrence planned jobs are read: a backlog older than this has
#: been sent (or is an outage, not a crowd) by the time the occurrence falls due.
LOOKBACK = timedelta(hours=1)
#: The dispatcher's claim horizon by default (HERALD_CLAIM_HORIZON): a destination's
#: claims hold what it sends within it.
CLAIM_HORIZON = 10.0
#: A message expected to wait less than this is not worth a word.
SAY_AFTER = 30.0
#: Occurrences of a new schedule looked at when it is saved.
OCCURRENCES = 3
#: How far ahead those occurrences are looked for (later ones are not yet planned).
HORIZON = timedelta(days=7)

#: How people call a kind's provider in "Slack sends about 1 a second there".
PROVIDERS = {
    "slack": "Slack",
    "discord": "Discord",
    "webhook": "the webhook",
    "email": "email",
    "sms": "SMS",
    "push": "push",
    "ntfy": "ntfy",
    "apprise": "Apprise",
}

#: A planned job: when it is due and its rank (core.preferences.RANK: 0 urgent first).
Planned = tuple[datetime, int]


def _send_times(
    planned: Sequence[Planned],
    limit: RateLimit,
    now: datetime | None = None,
    horizon: float = CLAIM_HORIZON,
) -> list[datetime]:
    """When each of ``planned`` (in due order) is sent from a bucket full before the
    first, as the dispatcher sends them. Its claims take the jobs due by then, the
    highest rank first (urgent, normal, bulk), then the earliest due, and hold at most
    what the destination sends within the claim ``horizon``
    (:func:`core.ratelimit.claim_cap`); the held ones take the slots in the order
    claimed, but an urgent job passes them (:func:`core.ratelimit.allocate_ahead`). So a
    job due while others wait goes after those already held and before the rest of a
    lower rank. Slots are spaced as the dispatcher's are (:func:`core.ratelimit.spacing`,
    the burst's tolerance); none is before its job's due time nor before ``now`` (jobs
    still waiting are not sent in the past). Left out: bulk's share of claims."""
    interval = spacing(limit)
    tol = tolerance(limit)
    cap = claim_cap(limit, horizon)
    sent: list[datetime | None] = [None] * len(planned)
    waiting: list[tuple[int, datetime, int]] = []
    held: deque[int] = deque()
    urgent_held = 0  # urgent ones among the held (looked for only when there are)
    tat: datetime | None = None
    clock = now
    i = 0
    while i < len(planned) or waiting or held:
        # the bucket's next slot, not before the last send (nor now)
        free = None if tat is None else tat - tol
        slot = free if clock is None else clock if free is None else max(free, clock)
        if not waiting and not held and (slot is None or planned[i][0] > slot):
            slot = planned[i][0]  # idle until the next one falls due
        assert slot is not None  # a job waits only after a send, which set the bucket
        while i < len(planned) and planned[i][0] <= slot:
            heapq.heappush(waiting, (planned[i][1], planned[i][0], i))
            i += 1
        while waiting and len(held) < cap:
            rank, _, j = heapq.heappop(waiting)
            held.append(j)
            urgent_held += rank <= 0
        if urgent_held:
            chosen = next(j for j in held if planned[j][1] <= 0)
            held.remove(chosen)
            urgent_held -= 1
        elif waiting and waiting[0][0] <= 0:
            chosen = heapq.heappop(waiting)[2]
        else:
            chosen = held.popleft()
        sent[chosen] = slot
        tat = (slot if tat is None or tat < slot else tat) + interval
        clock = slot
    assert all(at is not None for at in sent)  # every job is sent once
    return cast(list[datetime], sent)


def sending_order(planned: Iterable[Planned]) -> list[Planned]:
    """``planned`` by due time, and among those due together urgent first."""
    return sorted(planned, key=lambda p: (p[0], p[1]))


def lateness(
    planned: Iterable[Planned],
    due: datetime,
    rank: int,
    limit: RateLimit,
    now: datetime | None = None,
    horizon: float = CLAIM_HORIZON,
) -> float:
    """Seconds after ``due`` a message of ``rank`` due then would be sent among the
    ``planned`` jobs of its destination (:func:`_send_times`): after those due before
    it still waiting when it falls due, unless it outranks them, and after those of a
    higher rank falling due while it waits; last of those like it due with it. 0.0 for
    an unlimited destination. ``now``: the planned jobs are still waiting then (those
    due before it are a backlog sent from then on, not in the past)."""
    if limit.unlimited:
        return 0.0
    rows = sorted(planned, key=lambda p: (p[0], p[1]))
    at = bisect.bisect_right(rows, (due, rank))  # after every equal one
    rows.insert(at, (due, rank))
    sent = _send_times(rows, limit, now, horizon)
    return max(0.0, (sent[at] - due).total_seconds())


@dataclass(frozen=True)
class Forecast:
    """What a message due at ``at`` into ``destination`` would meet there."""

    destination: str
    at: datetime
    #: Messages due there within a minute of ``at``, this one included.
    due_together: int
    #: Messages planned there in the hour before ``at`` and up to it, this one included.
    crowd: int
    #: Seconds it would be sent after ``at``.
    late: float
    limit: RateLimit

    @property
    def worth_saying(self) -> bool:
        return self.late >= SAY_AFTER


def forecast(
    destination: str,
    planned: Iterable[Planned],
    at: datetime,
    rank: int,
    limit: RateLimit,
    now: datetime | None = None,
    horizon: float = CLAIM_HORIZON,
) -> Forecast:
    """How late a message of ``rank`` due ``at`` into ``destination`` would be, among
    the ``planned`` jobs there (those due from ``at - LOOKBACK`` to ``at + LOOKBACK``
    count; still waiting at ``now``, when given: see :func:`lateness`)."""
    rows = [p for p in planned if at - LOOKBACK <= p[0] <= at + LOOKBACK]
    before = [p for p in rows if p[0] <= at]
    together = sum(1 for p in before if abs((p[0] - at).total_seconds()) < 60)
    return Forecast(
        destination,
        at,
        due_together=together + 1,
        crowd=len(before) + 1,
        late=lateness(rows, at, rank, limit, now, horizon),
        limit=limit,
    )


def rate_words(kind: str, limit: RateLimit) -> str:
    """ "Slack sends about 1 a second there", "the webhook takes about 10 a second"."""
    who = PROVIDERS.get(kind, kind)
    per_second = limit.rate  # the limit as configured, not its slots' spacing
    if per_second >= 0.95:
        pace = f"about {round(per_second):,} a second"
    elif per_second * 60 >= 0.95:
        pace = f"about {round(per_second * 60):,} a minute"
    else:
        pace = f"about {round(per_second * 3600):,} an hour"
    verb = "sends" if kind in ("slack", "discord", "email", "sms", "push") else "takes"
    return f"{who} {verb} {pace} there"


def duration_words(seconds: float) -> str:
    """ "≈ 40 s", "≈ 5 min", "≈ 1 h 5 min"."""
    whole = round(seconds)
    if whole < 60:
        return f"≈ {whole} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"≈ {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"≈ {hours} h {rest} min" if rest else f"≈ {hours} h"


def words(f: Forecast, where: str, when: str) -> str:
    """ "312 messages are due into #general at 09:00; Slack sends about 1 a second
    there: this one ≈ 5 min late" (``where`` and ``when`` as the reader reads them)."""
    kind = f.destination.partition(":")[0]
    count = f.due_together if f.due_together > 1 else f.crowd
    span = f"at {when}" if f.due_together > 1 else f"in the hour up to {when}"
    noun = "message is" if count == 1 else "messages are"
    return (
        f"{count:,} {noun} due into {where} {span}; {rate_words(kind, f.limit)}: "
        f"this one {duration_words(f.late)} late"
    )


@dataclass(frozen=True)
class Minute:
    """One minute of a destination's day: how many are due in it, and how late the
    last of them is expected to be sent."""

    at: datetime
    due: int
    late: float


def by_minute(
    planned: Iterable[Planned],
    limit: RateLimit,
    start: datetime,
    minutes: int,
    *,
    now: datetime | None = None,
    horizon: float = CLAIM_HORIZON,
) -> list[Minute]:
    """Each minute from ``start`` (``minutes`` of them) in which something is due or a
    backlog is still being sent: its count and the expected lateness of its last
    message, from every ``planned`` job in sending order (jobs due before ``start``
    make the backlog it begins with; with ``now``, jobs still waiting then, none sent
    before it). Minutes with nothing due and no backlog are left out."""
    order = sending_order(planned)
    if not order or limit.unlimited:
        return []
    sent = _send_times(order, limit, now, horizon)
    end = start + timedelta(minutes=minutes)
    out: dict[datetime, tuple[int, float]] = {}
    for (due, _), at in zip(order, sent, strict=True):
        if due >= end or at < start:
            continue
        minute = max(due, start).replace(second=0, microsecond=0)
        count, worst = out.get(minute, (0, 0.0))
        counted = 1 if due >= start else 0
        out[minute] = (count + counted, max(worst, (at - due).total_seconds()))
    return [Minute(m, c, late) for m, (c, late) in sorted(out.items())]


def crowded(minutes: Sequence[Minute], over: float = SAY_AFTER) -> list[Minute]:
    """The minutes whose last message is expected at least ``over`` seconds late."""
    return [m for m in minutes if m.late >= over]


def spread_offsets(count: int, limit: RateLimit) -> list[float]:
    """Seconds to move each of ``count`` schedules due in one crowded minute so that
    they fall due one slot apart (the first stays): what the console's "spread" does.
    Every message is then sent when due, instead of queueing for its slot."""
    step = spacing(limit).total_seconds() if not limit.unlimited else 0.0
    return [round(i * step, 3) for i in range(count)]
