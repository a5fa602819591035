"""How the console writes times and long text in narrow cells."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

#: The most of a long text a table cell holds (the detail pane shows the rest).
CELL = 500


def ago(value: datetime | None, now: datetime) -> str:
    """``12s ago``, ``in 3m``, ``2h ago``, ``5d ago``; ``-`` for None."""
    if value is None:
        return "-"
    seconds = (value - now).total_seconds()
    span = abs(seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if span >= size:
            text = f"{int(span // size)}{unit}"
            break
    else:
        text = f"{int(span)}s"
    return f"in {text}" if seconds > 0 else f"{text} ago"


def span(delta: timedelta) -> str:
    """``2h``, ``1d 2h 30m``, ``-15m``: a duration as a person writes it."""
    seconds = int(delta.total_seconds())
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    parts = []
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return sign + (" ".join(parts) or "0s")


def stamp(value: datetime | None, zone: str, *, seconds: bool = True) -> str:
    """``03-02 12:00:05`` in ``zone``; ``-`` for None."""
    if value is None:
        return "-"
    fmt = "%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return value.astimezone(ZoneInfo(zone)).strftime(fmt)


def clip(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"
