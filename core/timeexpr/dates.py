"""EXDATE and RDATE lines of a rule (RFC 5545 3.8.5.1 and 3.8.5.2).

A person may paste a rule the way RFC 5545 writes it, exclusions and extra dates
included::

    DTSTART;TZID=America/New_York:19970902T090000
    EXDATE;TZID=America/New_York:19970902T090000
    RRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13

Values are read with their ``TZID`` (or as UTC with ``Z``; a floating value is in the
rule's zone) and kept as UTC instants on the :class:`core.timeexpr.rule.Rule`; an
``EXDATE`` of dates (``VALUE=DATE``, or values without a time) removes every occurrence
on those local days. RDATE takes date-times only (no DATE or PERIOD values). At most
:data:`MAX_DATES` of each, so a stored rule stays small.

This module sits on core.timeexpr.rule; core.timeexpr.rule_text reads a rule's lines
with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from zoneinfo import ZoneInfo

from core.timeexpr.rule import Rule, bad_rule, localize, parse_stamp
from core.zones import zone

#: At most this many EXDATE values (instants and days) and this many RDATE values.
MAX_DATES = 100
_DATES_RE = re.compile(r"^(EXDATE|RDATE)((?:;[A-Z-]+=[^:;]+)*):(\S+)$", re.I)


@dataclass(frozen=True)
class DateLine:
    """One EXDATE or RDATE line as written: its values, each value's zone (``"UTC"``
    for ``...Z``, None when floating) and whether they are dates."""

    kind: str  # "EXDATE" or "RDATE"
    values: tuple[datetime, ...]
    zones: tuple[str | None, ...]
    dates: bool


def read_date_line(line: str) -> DateLine:
    """Read ``EXDATE[;TZID=zone][;VALUE=DATE|DATE-TIME]:v1,v2,...`` or ``RDATE...``.

    Raises InvalidInput naming what is wrong.
    """
    m = _DATES_RE.match(line)
    if not m:
        raise bad_rule(f"the line {line[:40]!r} is not understood")
    kind = m.group(1).upper()
    params: dict[str, str] = {}
    for chunk in m.group(2).strip(";").split(";") if m.group(2) else ():
        key, _, value = chunk.partition("=")
        params[key.upper()] = value
    unknown = set(params) - {"TZID", "VALUE"}
    if unknown:
        raise bad_rule(f"{kind} has a parameter Herald does not understand ({min(unknown)})")
    value_type = params.get("VALUE", "").upper()
    if value_type not in ("", "DATE", "DATE-TIME") or (kind, value_type) == ("RDATE", "DATE"):
        raise bad_rule(f"{kind};VALUE={value_type} is not supported: give dates with times")
    tz = zone(params["TZID"]).key if "TZID" in params else None
    raws = m.group(3).split(",")
    if len(raws) > MAX_DATES:
        raise bad_rule(f"a rule takes at most {MAX_DATES} {kind} values")
    values, zones, timed = [], [], set()
    for raw in raws:
        value, is_utc, has_time = parse_stamp(raw, kind)
        values.append(value)
        zones.append("UTC" if is_utc else tz)
        timed.add(has_time)
    if len(timed) > 1:
        raise bad_rule(f"{kind} mixes dates and dates with times")
    dates = timed == {False}
    if (value_type == "DATE" and not dates) or (value_type == "DATE-TIME" and dates):
        raise bad_rule(f"the values of {kind} are not of its VALUE={value_type}")
    if dates and kind == "RDATE":
        raise bad_rule("RDATE needs dates with times, like 20260401T090000")
    return DateLine(kind, tuple(values), tuple(zones), dates)


def with_dates(rule: Rule, lines: list[DateLine]) -> Rule:
    """``rule`` with the values of ``lines`` added (a floating value is read in the
    rule's zone). Raises InvalidInput past :data:`MAX_DATES` of a kind."""
    if not lines:
        return rule
    exdates, exdays, rdates = set(rule.exdates), set(rule.exdays), set(rule.rdates)
    for line in lines:
        for value, tz in zip(line.values, line.zones, strict=True):
            if line.dates:
                exdays.add(value.date())
            else:
                instant = localize(value, ZoneInfo(tz) if tz else rule.zone)
                (exdates if line.kind == "EXDATE" else rdates).add(instant)
    if len(exdates) + len(exdays) > MAX_DATES or len(rdates) > MAX_DATES:
        raise bad_rule(f"a rule takes at most {MAX_DATES} EXDATE and {MAX_DATES} RDATE values")
    return replace(
        rule, exdates=frozenset(exdates), exdays=frozenset(exdays), rdates=tuple(sorted(rdates))
    )
