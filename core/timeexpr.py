"""Time expressions: a person's text in, one instant or a recurrence out.

Pure: no I/O, no wall clock. ``now`` and the zone are arguments.
(Interim version: ISO-8601 instants only; natural language and recurrence follow.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import InvalidInput


@dataclass(frozen=True)
class When:
    """How Herald reads one expression.

    ``first`` is the first occurrence (aware UTC). ``rule`` is the RFC 5545 text
    (``DTSTART;TZID=...`` line plus ``RRULE:`` line) for a recurrence, else None.
    """

    expression: str
    timezone: str
    first: datetime
    rule: str | None
    description: str

    @property
    def recurring(self) -> bool:
        return self.rule is not None

    def occurrences(self, count: int = 5, after: datetime | None = None) -> list[datetime]:
        """The next ``count`` occurrences strictly after ``after`` (default: from the first)."""
        if self.rule is None:
            return [self.first] if after is None or self.first > after else []
        return occurrences(self.rule, count=count, after=after)


def zone(name: str) -> ZoneInfo:
    """The IANA zone called ``name``; InvalidInput if there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInput(
            f"Unknown time zone {name!r}: use an IANA name such as Europe/Berlin or America/New_York."
        ) from exc


def parse_when(text: str, *, tz: str, now: datetime) -> When:
    """Read ``text`` written in zone ``tz`` at instant ``now``.

    Raises InvalidInput with a sentence saying what was not understood, or when the
    time is not in the future.
    """
    zi = zone(tz)
    raw = text.strip()
    if not raw:
        raise InvalidInput("The time is empty: say when, for example 2026-04-01 08:00.")
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(
            f"Could not read the time {raw!r}: use ISO-8601, for example 2026-04-01 08:00."
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zi)
    first = parsed.astimezone(UTC)
    if first <= now:
        raise InvalidInput(f"The time {raw!r} is in the past; pick a time in the future.")
    local = first.astimezone(zi)
    return When(raw, tz, first, None, f"once, {local:%a %d %b %Y %H:%M} {tz}")


def occurrences(rule: str, *, count: int, after: datetime | None = None) -> list[datetime]:
    """Occurrences (aware UTC) of a stored RFC 5545 rule strictly after ``after``."""
    raise InvalidInput("Recurring rules are not supported yet.")


def next_occurrence(rule: str, after: datetime) -> datetime | None:
    """The first occurrence of a stored rule strictly after ``after``, or None when it has ended."""
    found = occurrences(rule, count=1, after=after)
    return found[0] if found else None
