"""A rule's whole RFC 5545 text read into a :class:`~core.timeexpr.rule.Rule`: its
``DTSTART`` line, its ``RRULE:`` lines (core.timeexpr.rule checks their parts) and its
``EXDATE`` and ``RDATE`` lines (core.timeexpr.dates reads them).

:func:`read_lines` splits text as a person pastes it (a ``DTSTART`` may be missing or
floating); :func:`parse_rule` reads a stored rule, which has both.
"""

from __future__ import annotations

import re
from datetime import datetime

from core.timeexpr.dates import DateLine, read_date_line, with_dates
from core.timeexpr.rule import Rule, bad_rule, parse_stamp, split_parts
from core.zones import zone

_DTSTART_RE = re.compile(r"^DTSTART(?:;TZID=([^:;]+))?(?:;VALUE=DATE(?:-TIME)?)?:(\S+)$", re.I)


def read_lines(
    text: str,
) -> tuple[str | None, datetime | None, list[dict[str, str]], list[DateLine]]:
    """DTSTART zone (None: floating), DTSTART (None: absent), RRULE lines and EXDATE /
    RDATE lines of ``text``.

    Lines may be separated by any whitespace. ``DTSTART:...Z`` is in UTC.
    """
    tzid: str | None = None
    dtstart: datetime | None = None
    lines: list[dict[str, str]] = []
    date_lines: list[DateLine] = []
    text = re.sub(r"\s*([;=,])\s*", r"\1", text)  # "FREQ=DAILY; BYHOUR = 9" as typed
    for line in text.split():
        upper = line.upper()
        if upper.startswith("RRULE:"):
            lines.append(split_parts(line[6:]))
        elif upper.startswith("DTSTART"):
            m = _DTSTART_RE.match(line)
            if not m or dtstart is not None:
                raise bad_rule(f"the start {line!r} is not understood")
            dtstart, is_utc, _ = parse_stamp(m.group(2), "DTSTART")
            tzid = "UTC" if is_utc else m.group(1)
        elif upper.startswith(("EXDATE", "RDATE")):
            date_lines.append(read_date_line(line))
        else:
            raise bad_rule(f"the line {line[:40]!r} is none of DTSTART, RRULE, EXDATE, RDATE")
    if not lines:
        raise bad_rule("there is no RRULE: line")
    if tzid is not None:
        tzid = zone(tzid).key
    return tzid, dtstart, lines, date_lines


def parse_rule(text: str) -> Rule:
    """Read a stored rule text (a DTSTART;TZID=... line, RRULE: lines, and any
    EXDATE / RDATE lines)."""
    tzid, dtstart, lines, date_lines = read_lines(text)
    if dtstart is None or tzid is None:
        raise bad_rule("a stored rule needs a DTSTART;TZID=... line")
    return with_dates(Rule(tzid, dtstart, tuple(lines)), date_lines)
