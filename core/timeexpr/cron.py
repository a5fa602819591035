"""Five-field cron ("0 9 * * 1-5") turned into RFC 5545 RRULE lines.

Herald stores every recurrence as RFC 5545 text, so cron is translated rather than
run. APScheduler 3's ``CronTrigger.from_crontab`` does not help here: it reads
day-of-week 0 as Monday where cron means Sunday (its documented 3.x wart), it ANDs
day-of-month with day-of-week where cron ORs them, and it only computes fire times,
never a rule we could store. croniter is not a dependency. The field grammar is a
few lines, so it is read here.

Mapping (times are on the local wall clock unless noted):
* minute/hour lists -> BYMINUTE/BYHOUR, seconds always 0;
* day-of-month only -> MONTHLY;BYMONTHDAY, day-of-week only -> WEEKLY;BYDAY;
* both restricted -> two RRULE lines (cron fires when either matches);
* a restricted month adds BYMONTH;
* when only minutes are restricted (``*/15 * * * *``, ``5 * * * *``) the rule is
  HOURLY (or MINUTELY for ``* * * * *``) and runs on the elapsed-time timeline, so it
  neither skips nor doubles an hour at a DST change. With an hour or day
  restriction it is a wall-clock rule: like cron itself, a time in the repeated
  fall-back hour fires once, and times in a spring-forward gap fire at the shifted
  instant (once, even when two gap times land on the same instant).
"""

from __future__ import annotations

import re

from core.errors import InvalidInput
from core.timeexpr.rule import DAY_CODES, check_parts
from core.timeexpr.words import refuse

_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DOW_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_ITEM = re.compile(r"^(?:(\*)|([0-9a-z]+)(?:-([0-9a-z]+))?)(?:/(\d+))?$")
LOOKS_LIKE_CRON = re.compile(
    r"^(?:@[a-z]+|[\d*/,-]+ [\d*/,-]+ [\d*/,?lw#a-z-]+ [\d*/,a-z-]+ [\d*/,?l#a-z-]+)$"
)


def _value(token: str, name: str, low: int, high: int, field: str) -> int:
    names = _MONTH_NAMES if name == "month" else _DOW_NAMES if name == "day-of-week" else ()
    if token in names:
        return names.index(token) + (1 if name == "month" else 0)
    if not token.isdigit() or not token.isascii():
        raise refuse(field, f"{token!r} is not a {name} in cron")
    value = int(token)
    if not low <= value <= high:
        raise refuse(field, f"the cron {name} field goes from {low} to {high}")
    return value


def _field(text: str, name: str, low: int, high: int) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        m = _ITEM.match(item)
        if not m:
            raise refuse(text, f"{item!r} is not a cron {name} (use *, 5, 1-5, */15 or lists)")
        star, first, last, step_text = m.groups()
        step = int(step_text) if step_text else 1
        if step < 1:
            raise refuse(text, f"the step in the cron {name} field must be at least 1")
        if star:
            start, end = low, high
        else:
            start = _value(first, name, low, high, text)
            end = _value(last, name, low, high, text) if last else (high if step_text else start)
        if end < start:
            raise refuse(text, f"the cron {name} range {item} runs backwards")
        values.update(range(start, end + 1, step))
    return values


def _join(values: set[int]) -> str:
    return ",".join(str(v) for v in sorted(values))


def cron_lines(text: str) -> list[dict[str, str]] | None:
    """RRULE part maps for a cron expression, or None if ``text`` is not cron.

    Raises InvalidInput for cron that is malformed or never fires.
    """
    text = _MACROS.get(text, text)
    if not LOOKS_LIKE_CRON.match(text):
        return None
    if text.startswith("@"):
        raise refuse(text, f"the cron shortcuts are {', '.join(_MACROS)}")
    fields = text.split()
    sets = [_field(f, *spec) for f, spec in zip(fields, _FIELDS, strict=True)]
    minutes, hours, monthdays, months, weekdays = sets
    weekdays = {d % 7 for d in weekdays}  # 7 is Sunday too
    # Cron's rule: a field is "restricted" unless it starts with "*".
    dom_free, dow_free = fields[2].startswith("*"), fields[4].startswith("*")
    month_free = len(months) == 12
    base: dict[str, str] = {"BYSECOND": "0"}
    if not month_free:
        base["BYMONTH"] = _join(months)

    if dom_free and dow_free and month_free and len(hours) == 24:
        if len(minutes) == 60:
            return [{"FREQ": "MINUTELY", "BYSECOND": "0"}]
        return [{"FREQ": "HOURLY", "BYMINUTE": _join(minutes), "BYSECOND": "0"}]

    base.update({"BYHOUR": _join(hours), "BYMINUTE": _join(minutes)})
    by_month_day = {**base, "FREQ": "MONTHLY", "BYMONTHDAY": _join(monthdays)}
    days = ",".join(DAY_CODES[(d - 1) % 7] for d in sorted(weekdays, key=lambda d: (d - 1) % 7))
    by_week_day = {**base, "FREQ": "WEEKLY", "BYDAY": days}
    if dom_free and dow_free:
        lines = [{**base, "FREQ": "DAILY"}]
    elif dow_free:
        lines = [by_month_day]
    elif dom_free:
        lines = [by_week_day]
    else:
        lines = [by_month_day, by_week_day]
    live = []
    for parts in lines:
        try:
            check_parts(parts)
        except InvalidInput:
            continue  # e.g. "31 in february": this line never fires, the other may
        live.append(parts)
    if not live:
        raise refuse(text, "no month has that day, so this cron never fires")
    return live
