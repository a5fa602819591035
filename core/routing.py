"""Where one schedule goes: its recipients, each a destination or a chain of them tried
in order (a fallback), and whose hour each one's occurrence is read in.

A schedule stores its recipients as a JSON list (``schedule.recipients``), each
``{"id": 3, "to": ["slack:@U123", "email:alice@example.com"], "zone": "Europe/Berlin",
"timeout": 600}``: ``id`` is the recipient's number in its schedule (never reused, the
jobs' ``recipient`` column), ``to`` the chain (one destination for a plain recipient),
``zone`` the recipient's own zone when the schedule reads its time in each recipient's
zone (None: the schedule's), ``timeout`` the most seconds one step of the chain is
tried before the next (None: a step is left only when it failed for good).

Each occurrence gives one job per recipient (``job.recipient``); a job carries its
current step's destination (``job.destination``; None: the schedule's own, the first
step of recipient 0) and, for anything but a plain recipient in the schedule's zone, its
route (``job.route``, the recipient's JSON) so the dispatcher can fall back or plan the
next occurrence without reading the schedule. Pure functions; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

#: How many recipients a member's schedule may have; admins and operators: ADMIN_CAP.
MEMBER_CAP = 50
ADMIN_CAP = 500
#: How many steps one recipient's chain may have.
MAX_STEPS = 5
#: A step's time limit, at least and at most (seconds).
MIN_STEP_TIMEOUT = 60
MAX_STEP_TIMEOUT = 7 * 86400


@dataclass(frozen=True)
class Recipient:
    """One recipient of a schedule: its chain of destinations, tried in order."""

    id: int
    to: tuple[str, ...]
    #: The zone its occurrences are read in (None: the schedule's).
    zone: str | None = None
    #: Seconds one step is tried before the next (None: until it fails for good).
    timeout: int | None = None

    @property
    def first(self) -> str:
        return self.to[0]

    @property
    def plain(self) -> bool:
        """One destination, in the schedule's zone: its jobs need no route."""
        return len(self.to) == 1 and self.zone is None and self.timeout is None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "to": list(self.to)}
        if self.zone is not None:
            out["zone"] = self.zone
        if self.timeout is not None:
            out["timeout"] = self.timeout
        return out

    def route(self) -> str | None:
        """What a job of this recipient carries (``job.route``): None for a plain one."""
        return None if self.plain else json.dumps(self.as_json(), separators=(",", ":"))


@dataclass(frozen=True)
class Wanted:
    """A recipient as a request names it, before it has a number."""

    to: tuple[str, ...]
    zone: str | None = None
    timeout: int | None = None
    #: Read the time in this recipient's own zone (resolved to ``zone`` when saved).
    their_time: bool = False


def from_json(value: Any, destination: str | None = None) -> list[Recipient]:
    """A schedule's stored recipients; an empty or missing list reads as one recipient,
    its ``destination`` (a row older than routing)."""
    items = value if isinstance(value, list) else []
    found = [
        _recipient(item, i)
        for i, item in enumerate(items)
        if isinstance(item, dict) and item.get("to")
    ]
    if not found and destination:
        return [Recipient(0, (destination,))]
    return found


def to_json(recipients: list[Recipient]) -> list[dict[str, Any]]:
    return [r.as_json() for r in recipients]


@lru_cache(maxsize=4096)
def parse_route(text: str) -> Recipient:
    """A job's route (its recipient's JSON), read once per distinct text."""
    return _recipient(json.loads(text), 0)


def _recipient(item: dict[str, Any], position: int) -> Recipient:
    """One stored recipient (its number defaults to its ``position``)."""
    return Recipient(
        id=int(item.get("id", position)),
        to=tuple(str(d) for d in item.get("to") or ()),
        zone=item.get("zone"),
        timeout=item.get("timeout"),
    )


def numbered(
    wanted: Sequence[Recipient | Wanted], kept: Sequence[Recipient] = ()
) -> list[Recipient]:
    """Number new recipients after those ``kept`` (an edit keeps the numbers of the
    recipients it keeps, so their jobs stay theirs): a recipient equal to a kept one
    (same chain, zone and timeout) keeps its number, the others get numbers never used
    in the schedule before."""
    by_shape = {(r.to, r.zone, r.timeout): r for r in kept}
    used = max((r.id for r in kept), default=-1)
    out: list[Recipient] = []
    for item in wanted:
        same = by_shape.pop((item.to, item.zone, item.timeout), None)
        if same is not None:
            out.append(same)
            continue
        used += 1
        out.append(Recipient(used, item.to, item.zone, item.timeout))
    # recipient 0's jobs may leave their destination to the schedule's (its first
    # recipient's first step): a recipient 0 no longer first is numbered anew
    for i, r in enumerate(out):
        if i > 0 and r.id == 0:
            used += 1
            out[i] = Recipient(used, r.to, r.zone, r.timeout)
    return out


def due_for(occurrence: datetime, schedule_zone: str, zone: str | None) -> datetime:
    """When a recipient reading times in ``zone`` gets the ``occurrence`` (UTC) of a rule
    read in ``schedule_zone``: the same wall time (date and hour) in its own zone. A
    wall time that does not exist there (a spring-forward gap) is sent at the same
    instant the zone's offset before the change gives (the clock reads an hour later);
    an ambiguous one (autumn) at its first reading."""
    if zone is None or zone == schedule_zone:
        return occurrence
    wall = occurrence.astimezone(_zone(schedule_zone)).replace(tzinfo=None)
    return wall.replace(tzinfo=_zone(zone), fold=0).astimezone(UTC)


@lru_cache(maxsize=256)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def next_step(route: Recipient | None, step: int) -> str | None:
    """The destination after ``step`` in the chain, or None at its end."""
    if route is None or step + 1 >= len(route.to):
        return None
    return route.to[step + 1]


def step_key(key: str, step: int) -> str:
    """The idempotency key a step sends with: the job's for the first step, then one
    per step (a fallback to the same provider is a new message, not a repeat)."""
    return key if step == 0 else f"{key}.{step}"


def first_step(schedule_destination: str, recipient: Recipient) -> str | None:
    """What a job of ``recipient`` stores as its destination: None when it is the
    schedule's own (``schedule.destination``, recipient 0's first step)."""
    own = recipient.id == 0 and recipient.first == schedule_destination
    return None if own else recipient.first


def describe(recipient: Recipient, shown: Callable[[str], str] = str) -> str:
    """A recipient in words: ``#ops``, ``@alice or alice@example.com``; ``shown`` turns
    one destination into text (a redacting or naming function)."""
    text = " or ".join(shown(d) for d in recipient.to)
    if recipient.zone is not None:
        text += f" ({recipient.zone} time)"
    return text
