"""Drain mode's arithmetic: how long it waits for what is left, and what a run did and
left waiting, in numbers and sentences."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from core.dispatcher.verdicts import duration
from core.store import Backlog


@dataclass
class DrainSummary:
    """What a drain run did, by final state, and what it left waiting and why."""

    outcomes: Counter[str] = field(default_factory=Counter)
    waiting: int = 0
    #: Why jobs were left: one sentence per reason (empty when nothing was left).
    left: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        keys = ("delivered", "retrying", "dead", "expired")
        return {**{k: self.outcomes.get(k, 0) for k in keys}, "waiting": self.waiting}


def waiting(counts: Mapping[str, int]) -> int:
    """How many jobs wait to be sent, of the jobs by state."""
    return sum(counts.get(s, 0) for s in ("pending", "retrying", "claimed"))


def left_reasons(backlog: Backlog, now: datetime, window: float) -> list[str]:
    """Why a drain of ``window`` seconds left jobs, in sentences."""
    reasons = []
    if backlog.due_later:
        when = ""
        if backlog.next_due_at is not None:
            when = f" (the next in {duration((backlog.next_due_at - now).total_seconds())})"
        reasons.append(f"{backlog.due_later} due after the {duration(window)} drain timeout{when}.")
    if backlog.held_elsewhere:
        when = ""
        if backlog.next_lease_end is not None:
            ends = (backlog.next_lease_end - now).total_seconds()
            when = f", the first lease ending in {duration(ends)}"
        reasons.append(f"{backlog.held_elsewhere} held by another dispatcher{when}.")
    return reasons


def drain_wait(
    backlog: Backlog, now: datetime, deadline: datetime, sweep_seconds: float
) -> float | None:
    """Seconds a drain sleeps before it looks again: until the next job falls due or a
    lease another dispatcher holds ends (a dead dispatcher may be found dead sooner,
    at the next sweep); None when that is after ``deadline`` or nothing is left."""
    at = min(
        (t for t in (backlog.next_due_at, backlog.next_lease_end) if t is not None),
        default=None,
    )
    if at is None or at > deadline:
        return None
    if backlog.held_elsewhere:
        at = min(at, now + timedelta(seconds=sweep_seconds))
    return max(0.0, (at - now).total_seconds())
