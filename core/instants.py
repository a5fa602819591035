"""How an instant is written: ISO-8601 for machines, a zone's wall clock for people.

Pure and light (no table, no store): ``herald when`` writes its preview with these
without loading the database code; :mod:`core.views` re-exports them for the others.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo


def iso(value: datetime | None) -> str | None:
    """ISO-8601 UTC with a ``Z``, or None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def local(value: datetime | None, zone: str) -> str:
    """``Mon 30 Mar 2026 09:00`` in ``zone``; ``-`` for None."""
    if value is None:
        return "-"
    return value.astimezone(ZoneInfo(zone)).strftime("%a %d %b %Y %H:%M")
