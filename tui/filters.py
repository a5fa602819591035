"""The filter bars' little language: free words plus ``key:value`` terms.

``standup owner:local:bob to:slack: state:active,paused`` — a value may hold colons
(only the first one splits), quotes keep spaces (``"two words"``). Each screen knows
its own keys; an unknown key or a bad value raises :class:`FilterError`.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from core.cases import parse_shift
from core.errors import HeraldError
from core.models import STATE_FILTERS
from core.store import AttemptFilter, AuditFilter, DeadFilter, ScheduleFilter

OUTCOMES = ("ok", "retry", "permanent")
#: The priorities a ``priority:`` term names (core.preferences: urgent before normal
#: before bulk).
PRIORITIES = ("urgent", "normal", "bulk")


class FilterError(ValueError):
    """The filter text cannot be read; the message says why."""


def terms(text: str, keys: tuple[str, ...]) -> tuple[dict[str, str], str]:
    """``(key terms, free words)`` of ``text``; FilterError for an unknown key."""
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.split()
    found: dict[str, str] = {}
    words = []
    for part in parts:
        key, sep, value = part.partition(":")
        if sep and key in keys:
            found[key] = value
        elif sep and key.isalpha() and key.islower() and value:
            known = ", ".join(f"{k}:" for k in keys)
            raise FilterError(f"Unknown filter {key}: — use words or {known}")
        else:
            words.append(part)
    return found, " ".join(words)


def priorities(value: str) -> tuple[str, ...]:
    """``urgent,normal`` → ``("urgent", "normal")``; FilterError names the choices."""
    chosen = tuple(dict.fromkeys(p.strip().lower() for p in value.split(",") if p.strip()))
    bad = [p for p in chosen if p not in PRIORITIES]
    if bad or not chosen:
        raise FilterError(f"Unknown priority {(bad or [value])[0]!r}: use {'|'.join(PRIORITIES)}")
    return chosen


def queue_filter(text: str) -> tuple[str, ...] | None:
    """The Queue screen's filter: the priorities it shows (None: every one)."""
    found, words = terms(text, ("priority",))
    if words:
        raise FilterError("Filter the queue with priority:urgent|normal|bulk")
    return priorities(found["priority"]) if "priority" in found else None


def schedule_filter(text: str) -> ScheduleFilter:
    found, words = terms(text, ("owner", "to", "state", "tenant", "priority"))
    states = None
    if "state" in found:
        states = tuple(s for s in found["state"].split(",") if s)
        valid = set(STATE_FILTERS)
        bad = [s for s in states if s not in valid]
        if bad:
            raise FilterError(f"Unknown state {bad[0]!r}: use {', '.join(sorted(valid))}")
    return ScheduleFilter(
        owner=found.get("owner") or None,
        tenant=found.get("tenant") or None,
        states=states or None,
        destination=found.get("to") or None,
        text=words or None,
        priorities=priorities(found["priority"]) if "priority" in found else None,
    )


def _when(value: str, now: datetime) -> datetime:
    try:
        return now - parse_shift(value, now)
    except HeraldError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise FilterError(f"{value!r} is not a time: use 30m, 2h, 1d or 2026-03-02T10:00") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _number(key: str, value: str) -> int:
    if not value.isdigit():
        raise FilterError(f"{key}: needs a number, not {value!r}")
    return int(value)


def attempt_filter(text: str, now: datetime) -> AttemptFilter:
    found, words = terms(text, ("outcome", "to", "schedule", "job", "since", "until", "tenant"))
    if words:
        raise FilterError(
            "Filter the log with outcome:, to:, schedule:, job:, since:, until:, tenant:"
        )
    outcome = found.get("outcome") or None
    if outcome is not None and outcome not in OUTCOMES:
        raise FilterError(f"Unknown outcome {outcome!r}: use {', '.join(OUTCOMES)}")
    return AttemptFilter(
        outcome=outcome,
        destination=found.get("to") or None,
        schedule_id=_number("schedule", found["schedule"]) if "schedule" in found else None,
        job_id=_number("job", found["job"]) if "job" in found else None,
        since=_when(found["since"], now) if "since" in found else None,
        until=_when(found["until"], now) if "until" in found else None,
        tenant=found.get("tenant") or None,
    )


def dead_filter(text: str, reason: str | None) -> DeadFilter:
    found, words = terms(text, ("to", "requested", "tenant"))
    if words:
        raise FilterError("Filter dead letters with to:, requested:yes|no and tenant:")
    requested = None
    if "requested" in found:
        requested = found["requested"].lower() in ("yes", "y", "true", "1")
    return DeadFilter(
        reason=reason,
        destination=found.get("to") or None,
        requested=requested,
        tenant=found.get("tenant") or None,
    )


def audit_filter(text: str) -> AuditFilter:
    found, words = terms(text, ("actor", "action", "object", "tenant", "via"))
    if words:
        raise FilterError(
            "Filter the audit log with actor:, action:, object:TYPE[:ID], tenant:, via:SURFACE"
        )
    object_type, _, object_id = found.get("object", "").partition(":")
    return AuditFilter(
        actor=found.get("actor") or None,
        surface=found.get("via", "").lower() or None,
        tenant=found.get("tenant") or None,
        action=found.get("action") or None,
        object_type=object_type or None,
        object_id=object_id or None,
    )


#: Queue views and how the console names them.
QUEUE_VIEWS = {
    "due": "Due now",
    "pending": "Pending",
    "in_flight": "In flight",
    "retrying": "Retrying",
}
