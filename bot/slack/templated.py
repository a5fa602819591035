"""What Slack shows of a schedule that sends a named template (issue 39): the template,
its version and data, and its next message filled in as it will be sent, never the
template's source as if it were the message."""

from __future__ import annotations

from typing import Any

from bot.slack.words import escape, unescape
from core import views
from core.models import Schedule

#: How many values of a schedule's data its summary names before "…".
SHOWN_DATA = 6


def used(schedule: Schedule) -> dict[str, Any] | None:
    """The template a schedule sends (:func:`core.views.template_of`), or None."""
    return views.template_of(schedule)


def line(schedule: Schedule) -> str | None:
    """``Template *deploy* v3 with service=api, version=1.4`` (mrkdwn), or None for a
    schedule with its own text."""
    template = used(schedule)
    if template is None:
        return None
    said = f"Template *{escape(str(template['name']))}* v{template['version']}"
    data = template["data"] or {}
    if data:
        pairs = [f"{escape(str(k))}={_value(v)}" for k, v in list(data.items())[:SHOWN_DATA]]
        more = ", …" if len(data) > SHOWN_DATA else ""
        said += " with " + ", ".join(pairs) + more
    if template["data_by_recipient"]:
        said += " (and data of its own for some recipients)"
    return said


def named(schedule: Schedule) -> str:
    """`` template *deploy* v3`` for a headline ("Scheduled template *deploy* v3 for
    #team."), or "" for a schedule with its own text."""
    template = used(schedule)
    if template is None:
        return ""
    return f" template *{escape(str(template['name']))}* v{template['version']}"


def create_args(template: str | None, data: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The template arguments of :meth:`core.cases.Herald.create_schedule` for a
    ``/schedule … template:NAME name=value`` (none for a message)."""
    if template is None:
        return {}
    return {"template": template, "data": dict(data)}


def _value(value: Any) -> str:
    """A value as shown: stored as Slack escapes it (typed in Slack) or raw (the CLI,
    the API), shown escaped once either way."""
    text = escape(unescape(str(value)))
    shown = text if len(text) <= 60 else text[:59] + "…"
    return f"“{shown}”" if " " in shown else shown


def next_text(schedule: Schedule) -> str | None:
    """The text of the schedule's next message to its first recipient, filled in as
    the dispatcher will fill it in (its id, its next occurrence in its zone, that
    recipient's data and name); None when it has no next occurrence or is no templated
    schedule, or the template cannot be filled in (the dispatcher then refuses it)."""
    if schedule.next_run_at is None or schedule.id is None:
        return None
    return views.filled_text(schedule, schedule.next_run_at)
