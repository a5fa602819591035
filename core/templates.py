"""Message templates: ``{event.summary}`` and friends, rendered safely.

A template is Python ``str.format`` syntax restricted to the documented fields:

- ``{event.summary}``, ``{event.location}``, ``{event.description}`` (text)
- ``{event.start}``, ``{event.end}`` (a time; a format spec is a strftime pattern,
  e.g. ``{event.start:%H:%M}``), shown in the feed's zone
- ``{date}`` (the occurrence's local date; ``{date:%A %d %B}`` works too)
- ``{schedule.id}``

A feed's reminder template may use all of them; an ordinary schedule's text may use
``{date}`` and ``{schedule.id}`` (:func:`is_schedule_template`, rendered by the
dispatcher for each occurrence with :func:`render_schedule`).

Nothing is looked up on an object: the field name as written is a key in a dictionary
of values, so ``{event.__class__}`` or ``{event.start.tzinfo}`` are simply unknown.
Unknown fields, conversions (``!r``) and nested specs are refused by :func:`check`
with :class:`~core.errors.InvalidInput` when the template is created. ``{{`` and
``}}`` are literal braces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from functools import lru_cache
from string import Formatter
from zoneinfo import ZoneInfo

from core.errors import InvalidInput

#: Every field a template may use, and what it is.
FIELDS: dict[str, str] = {
    "event.summary": "the event's title",
    "event.start": "when the event starts (e.g. {event.start:%H:%M})",
    "event.end": "when the event ends",
    "event.location": "where the event is",
    "event.description": "the event's description",
    "date": "the date of the occurrence (e.g. {date:%A %d %B})",
    "schedule.id": "the schedule's number",
}

#: Fields whose values are dates or times (their format spec is a strftime pattern).
_TIMES = {"event.start", "event.end", "date"}

DEFAULT_REMINDER = "{event.summary} at {event.start:%H:%M}"

MAX_TEMPLATE = 4000

_formatter = Formatter()

Values = Mapping[str, str | int | date | datetime | None]


#: What an ordinary schedule's text may use (a feed's reminders also have ``event.*``).
SCHEDULE_FIELDS = frozenset({"date", "schedule.id"})

#: Something that reads as a variable: ``{name}``, ``{name:spec}``, ``{name!r}``.
_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_.]*(?:![a-z])?(?::[^{}]*)?\}")


def _known(names: Iterable[str] = FIELDS) -> str:
    return ", ".join("{" + name + "}" for name in sorted(names, key=list(FIELDS).index))


def check(template: str, *, allowed: set[str] | None = None, noun: str = "template") -> str:
    """Return ``template`` if it only uses known fields (``allowed``, default all),
    else raise InvalidInput with a sentence naming the problem."""
    if not isinstance(template, str) or not template.strip():
        raise InvalidInput(f"The {noun} is empty: say what to post.")
    if len(template) > MAX_TEMPLATE:
        raise InvalidInput(f"The {noun} is over {MAX_TEMPLATE:,} characters.")
    names = set(FIELDS) if allowed is None else allowed
    try:
        parts = list(_formatter.parse(template))
    except ValueError as exc:
        raise InvalidInput(
            f"The {noun}'s braces do not match ({exc}); write {{{{ and }}}} for a literal brace."
        ) from exc
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in names:
            shown = "{" + field + "}" if field else "{}"
            raise InvalidInput(
                f"The {noun} uses {shown}, which Herald does not know here: use "
                f"{_known(names)} (write {{{{ and }}}} for a literal brace)."
            )
        if conversion:
            raise InvalidInput(f"The {noun}'s {{{field}!{conversion}}}: conversions not allowed.")
        if spec and ("{" in spec or "}" in spec):
            raise InvalidInput(f"The {noun}'s {{{field}}} has a nested field in its format.")
        if spec and field not in _TIMES:
            raise InvalidInput(
                f"The {noun}'s {{{field}}} is text and takes no format (only times do)."
            )
    return template


def is_schedule_template(text: str) -> bool:
    """Whether a schedule's text uses variables (``{date}``, ``{schedule.id}``). Text
    holding something that reads as a variable is checked like a template, so an
    unknown one is refused with a clear message when the schedule is saved; other
    braces (``{"json": 1}``, ``{ }``) are plain text."""
    if _VARIABLE.search(text.replace("{{", "").replace("}}", "")) is None:
        return False  # sent as written, escaped braces too
    check(text, allowed=set(SCHEDULE_FIELDS), noun="message")
    return True


def render_schedule(text: str, *, schedule_id: int, occurrence: datetime, zone: str) -> str:
    """A schedule's text for one occurrence: ``{date}`` is the occurrence's date in
    the schedule's time zone."""
    local = occurrence.astimezone(ZoneInfo(zone))
    return render(text, {"date": local.date(), "schedule.id": schedule_id})


#: The longest a schedule id can be written (SQL BIGINT's largest value, 19 digits).
LONGEST_ID = len(str(2**63 - 1))
#: Every date of a leap year: each weekday in each month, each day of the year.
_YEAR = tuple(date.fromordinal(date(2028, 1, 1).toordinal() + n) for n in range(366))


@lru_cache(maxsize=256)
def _longest_date(spec: str) -> int:
    return max(len(day.strftime(spec)) for day in _YEAR) if spec else len("2028-01-01")


def longest_schedule_text(text: str) -> int:
    """The most characters a schedule's (checked) text can render to: ``{date:%A %d
    %B}`` as its longest day name and month, ``{schedule.id}`` as the largest id."""
    size = 0
    for literal, field, spec, _ in _formatter.parse(text):
        size += len(literal)
        if field == "schedule.id":
            size += LONGEST_ID
        elif field == "date":
            size += _longest_date(spec or "")
    return size


@lru_cache(maxsize=1024)
def _checked(template: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """A template's parts, checked once per distinct template (a schedule's text is
    rendered for every occurrence, a feed's template for every reminder)."""
    check(template)
    return tuple((literal, field, spec) for literal, field, spec, _ in _formatter.parse(template))


def render(template: str, values: Values) -> str:
    """Fill ``template`` from ``values`` (keyed by field name). A missing or None value
    renders as empty text. Raises InvalidInput for a template :func:`check` refuses."""
    out: list[str] = []
    for literal, field, spec in _checked(template):
        out.append(literal)
        if not field:
            continue
        value = values.get(field)
        if value is None:
            continue
        if isinstance(value, date | datetime) and spec:
            out.append(value.strftime(spec))
        else:
            out.append(str(value))
    return "".join(out)
