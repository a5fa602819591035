"""Per-destination rate limits: which limit a destination has, how send slots are
handed out, and pauses a provider asks for (Retry-After).

A destination's limit is a token bucket (``rate`` per second, bursts of ``burst``),
kept as a GCRA "theoretical arrival time" (``tat``): the moment the bucket is full
again. The store keeps one ``tat`` per destination in the database, so every
dispatcher sharing it takes its slots from the same bucket (:func:`allocate` is the
arithmetic; ``RateBucketQueries.reserve_slots`` the transaction).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from core.errors import ConfigError

#: How late after its slot a send may start (the dispatcher takes a fresh slot for a
#: later one). Slots are spaced so that even sends this late keep every window within
#: the limit (:func:`spacing`).
LATENESS = 0.05
#: How much two requests' journeys to the provider may differ (the network, the
#: provider's own scheduling): the provider counts arrivals, not the moments sends
#: start, so slots leave room for this too (:func:`spacing`).
TRANSIT = 0.02


@dataclass(frozen=True)
class RateLimit:
    """A token bucket: ``rate`` sends per second on average, bursts up to ``burst``."""

    rate: float
    burst: float

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0


#: No limit: a channel's default when its provider documents none.
UNLIMITED = RateLimit(0, 0)

_SPEC = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|m|min|minute)\s*(?::\s*(\d+))?\s*$")


def parse_rate(text: str) -> RateLimit:
    """``200/s``, ``30/min`` or ``200/s:50`` (bursts of 50) as a limit. Without a
    burst, sends are paced evenly: no second ever sees more than the rate.
    ConfigError if unreadable."""
    match = _SPEC.match(text)
    if match is None:
        # not echoed: a mistyped pair may put part of a secret URL here
        raise ConfigError("A rate limit reads like 200/s, 30/min or 200/s:400 (PREFIX=RATE).")
    amount, unit, burst = match.groups()
    rate = float(amount) / (60.0 if unit.startswith("m") else 1.0)
    if rate <= 0 or rate > 100_000:
        raise ConfigError("A rate limit is between 0 and 100000/s.")
    chosen = float(burst) if burst is not None else 1.0
    if chosen < 1 or chosen > 1_000_000:
        raise ConfigError("A burst is between 1 and 1000000.")
    return RateLimit(rate=rate, burst=chosen)


@dataclass(frozen=True)
class RateLimits:
    """Limits by destination prefix (the longest matching prefix wins); a destination
    no prefix matches has its channel's default (its provider's documented limit)."""

    prefixes: tuple[tuple[str, RateLimit], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> RateLimits:
        """``PREFIX=RATE`` pairs, comma-separated, e.g.
        ``webhook:https://hooks.internal/=200/s,slack:C0ALERTS=1/s:10``."""
        pairs = []
        for part in (text or "").split(","):
            if not part.strip():
                continue
            prefix, sep, spec = part.strip().rpartition("=")
            if not sep or not prefix:
                # the text is not echoed: a webhook URL prefix may hold a secret
                raise ConfigError(
                    "HERALD_RATE_LIMITS takes PREFIX=RATE pairs, comma-separated, e.g. "
                    "webhook:https://hooks.internal/=200/s."
                )
            pairs.append((prefix, parse_rate(spec)))
        return cls(tuple(sorted(pairs, key=lambda p: -len(p[0]))))

    def for_destination(self, destination: str, default: RateLimit) -> RateLimit:
        for prefix, limit in self.prefixes:
            if destination.startswith(prefix):
                return limit
        return default


@functools.lru_cache(maxsize=1024)  # every send asks (Pacer.take): one sum per limit
def spacing(limit: RateLimit) -> timedelta:
    """The time between two slots of a bucket: the limit's interval, plus room for a
    send that starts up to LATENESS after its slot and arrives up to TRANSIT later
    than another. 100/s is then one slot every 10.7 ms, so that a late send and the
    next one's on-time send never put 101 in any one-second window, at the dispatcher
    or at the provider; 30/min one every 2.07 s (two sends never closer than 2 s)."""
    room = LATENESS + TRANSIT
    seconds = (1.0 + room) / limit.rate if limit.rate >= 1 else 1.0 / limit.rate + room
    # rounded up to the microsecond: a slot a hair early adds up over a window
    return timedelta(microseconds=math.ceil(round(seconds * 1_000_000, 3)))


@functools.lru_cache(maxsize=1024)
def tolerance(limit: RateLimit) -> timedelta:
    """How far ahead of a bucket's ``tat`` a send may go: its burst less one, in
    intervals (GCRA's tolerance)."""
    return spacing(limit) * (max(limit.burst, 1.0) - 1.0)


def allocate(
    tat: datetime | None,
    now: datetime,
    count: int,
    limit: RateLimit,
    window: float,
    *,
    start: datetime | None = None,
) -> tuple[list[datetime], datetime]:
    """Slots for up to ``count`` sends from a bucket whose theoretical arrival time is
    ``tat`` (None: a full bucket), none before ``start`` (default now: a job claimed
    ahead of its time has no use for a slot before it is due) and each no later than
    ``window`` seconds from now. Returns the slots, in order, and the bucket's new
    ``tat``."""
    interval = spacing(limit)
    tol = tolerance(limit)
    horizon = now + timedelta(seconds=window)
    first = now if start is None or start < now else start
    current = first if tat is None or tat < first else tat
    slots = []
    for _ in range(count):
        slot = current - tol
        slot = first if slot < first else slot
        if slot > horizon:
            break
        slots.append(slot)
        current += interval
    return slots, current


def allocate_ahead(
    tat: datetime | None,
    lane: datetime | None,
    now: datetime,
    count: int,
    limit: RateLimit,
    window: float,
    *,
    start: datetime | None = None,
) -> tuple[list[datetime], datetime, datetime | None, int]:
    """Slots for up to ``count`` urgent sends, ahead of the slots a bucket at ``tat``
    has handed out already: each takes the bucket's own next slot when that is no
    later, else the next slot of the bucket's urgent lane (``lane``: its own
    theoretical arrival time, None: free), paced at the limit among urgent sends, and
    pushes the bucket back one interval, so every slot handed out after it is that
    much later. Returns the slots, the bucket's new ``tat``, the lane's, and how many
    of the slots went ahead (the rest were the bucket's own).

    What a destination then sees: over any window, no more sends than the bucket
    allows (its burst over the rate), plus the urgent sends that went ahead of slots
    handed out before them, at most one per urgent job and only within the slots
    already handed out (the claim horizon): over a longer window, the rate holds. In
    one dispatcher its pacer (:class:`Pacer`) spaces the sends themselves, so the
    slots after an urgent one wait for it (or take fresh ones) and the destination
    sees no more than it does without priorities."""
    interval = spacing(limit)
    tol = tolerance(limit)
    horizon = now + timedelta(seconds=window)
    first = now if start is None or start < now else start
    current = first if tat is None or tat < first else tat
    slots = []
    passed = 0
    for _ in range(count):
        own = current - tol
        own = first if own < first else own
        ahead = first if lane is None or lane < first else lane
        passing = ahead < own
        slot = ahead if passing else own
        if slot > horizon:
            break
        slots.append(slot)
        current += interval
        if passing:
            lane = ahead + interval
            passed += 1
    return slots, current, lane, passed


def claim_cap(limit: RateLimit, horizon: float) -> int:
    """The most jobs of one destination with ``limit`` that may be claimed at once, by
    every dispatcher together: what it sends within ``horizon`` seconds at its pace
    (a slot every :func:`spacing`), at least one; never more than rate × horizon.
    10/s and a 10 s horizon: 93 (a slot every 10.7 ms); 30/min: 4; 1/min: 1.

    A burst is not added: while a destination is kept busy its bucket has none left,
    and jobs held beyond what fits in the slot window would only be handed back."""
    return max(1, int(horizon / spacing(limit).total_seconds()))


@dataclass(frozen=True)
class ClaimCaps:
    """What a claim may take of each rate-limited destination (see :func:`claim_cap`),
    as the claim statement reads it: ``(prefix, cap, step)`` entries in the order
    :meth:`RateLimits.for_destination` tries them (the configured prefixes, longest
    first, then each channel's ``kind:`` for its default limit; the first match wins;
    a destination none matches has no limit and no cap). ``step`` is a slot's
    :func:`spacing` in seconds: a job over the cap is due again when its slot is a
    horizon away, ``step`` later for each place further back, rounded up to a
    ``quantum`` (a tenth of the horizon) so that those put off come due together, a
    claim's worth at a time, not one claim per slot (``QueueQueries.claim_due``)."""

    entries: tuple[tuple[str, int, float], ...] = ()
    #: A tenth of the horizon, in microseconds.
    quantum_us: int = 1_000_000
    #: The entries as JSON (SQLite's claim reads them with json_each), made once.
    as_json: str = field(default="[]", compare=False)

    @classmethod
    def of(cls, limits: RateLimits, defaults: Mapping[str, RateLimit], horizon: float) -> ClaimCaps:
        """The caps of the configured ``limits`` and the channels' ``defaults`` (by
        kind) within ``horizon`` seconds."""
        found: list[tuple[str, RateLimit]] = list(limits.prefixes)
        found += [(f"{kind}:", limit) for kind, limit in sorted(defaults.items())]
        entries = tuple(
            (prefix, claim_cap(limit, horizon), spacing(limit).total_seconds())
            for prefix, limit in found
            if not limit.unlimited
        )
        quantum = max(1, round(horizon * 100_000))
        return cls(entries, quantum, json.dumps([list(e) for e in entries]))

    @functools.cached_property
    def columns(self) -> dict[str, list[str] | list[int] | list[float]]:
        """The entries as three lists (PostgreSQL's claim reads them as arrays), made
        on the first claim rather than on every one."""
        return {
            "prefixes": [prefix for prefix, _, _ in self.entries],
            "caps": [cap for _, cap, _ in self.entries],
            "steps": [step for _, _, step in self.entries],
        }

    def __bool__(self) -> bool:
        return bool(self.entries)

    def for_destination(self, destination: str) -> int | None:
        """The cap of ``destination`` (None: no limit), as the claim statement finds it."""
        for prefix, cap, _ in self.entries:
            if destination.startswith(prefix):
                return cap
        return None


def pause(tat: datetime | None, until: datetime, limit: RateLimit) -> datetime:
    """A bucket's ``tat`` once a provider asked for no sends before ``until``: its
    next slot is then no earlier (a later one already taken stays)."""
    paused = until + tolerance(limit)
    return paused if tat is None or tat < paused else tat


def next_slot(tat: datetime, now: datetime, limit: RateLimit) -> datetime:
    """When a bucket at ``tat`` next has a slot."""
    slot = tat - tolerance(limit)
    return now if slot < now else slot


class Pacer:
    """This process's own pace per destination, kept on the moments its sends really
    start. The shared bucket hands out slots at the limit's pace, but a dispatcher that
    runs late (a stalled loop, a busy machine) would send its late slots together; the
    pacer spaces them as the same limit says, whatever the lateness."""

    def __init__(self) -> None:
        self._tat: dict[str, datetime] = {}
        #: Urgent sends the shared bucket let pass the slots it had handed out (see
        #: :func:`allocate_ahead`), by destination: until when each may go.
        self._ahead: dict[str, list[datetime]] = {}

    def let_pass(self, key: str, until: datetime) -> None:
        """An urgent send to ``key`` took a slot ahead of others already handed out:
        the first send the pace would hold back before ``until`` goes at once, and
        every later one waits one interval more (the sends after it make room)."""
        if len(self._ahead) >= 10_000:
            self._ahead.clear()
        self._ahead.setdefault(key, []).append(until)

    def take(self, key: str, now: datetime, limit: RateLimit) -> float:
        """0.0 when a send to ``key`` may start now (it is counted), else how many
        seconds to wait before asking again.

        It allows one send more than the limit's burst: a send that starts a little
        after its slot (timers are never exact) leaves the next one its own slot,
        instead of pushing every later send back by the same delay, which would slow
        a destination to well under its limit (70/s of 100/s, measured)."""
        interval = spacing(limit)
        tol = tolerance(limit) + interval  # one send more than the bucket's
        tat = self._tat.get(key)
        current = now if tat is None or tat < now else tat
        allowed = current - tol
        if allowed > now and not self._passes(key, now):
            return (allowed - now).total_seconds()
        if len(self._tat) >= 10_000:
            self._tat.clear()
        self._tat[key] = current + interval
        return 0.0

    def _passes(self, key: str, now: datetime) -> bool:
        """Whether a send to ``key`` held back now goes ahead as an urgent one
        (:meth:`let_pass`); the passes that lapsed are forgotten."""
        ahead = self._ahead.get(key)
        if ahead is None:
            return False
        live = [until for until in ahead if until >= now]
        passes = bool(live)
        if passes:
            live.pop(0)
        if live:
            self._ahead[key] = live
        else:
            del self._ahead[key]
        return passes


class Pauses:
    """Destinations a provider asked to leave alone until a time, as this process
    heard it (the store also pushes the shared bucket past that time, so every
    dispatcher waits: ``RateBucketQueries.pause_bucket``)."""

    def __init__(self) -> None:
        self._until: dict[str, datetime] = {}

    def pause(self, key: str, until: datetime) -> bool:
        """Send nothing to ``key`` before ``until`` (the provider said so). True when
        this is news: no pause was in force, or this one ends a second or more later
        (the many 429s of one burst then share their pause once, not once each)."""
        known = self._until.get(key)
        if known is not None and until <= known:
            return False
        self._until[key] = until
        return known is None or until - known >= timedelta(seconds=1)

    def paused_until(self, key: str, now: datetime) -> datetime | None:
        until = self._until.get(key)
        if until is None:
            return None
        if until <= now:
            del self._until[key]
            return None
        return until

    def __len__(self) -> int:
        return len(self._until)
