"""The schedule modal: a picker of one or more channels, the message, a "when" field
with a preview, or date and time pickers with a repeat choice. Building the view and
reading what was submitted; the handlers decide what to do with it.

Block ids are stable (``channel``, ``text``, ``when``, ``date``, ``time``, ``repeat``,
and for a new schedule ``skip``: calendars whose event dates are skipped; when the
tenant has templates, ``template`` and ``data``, issue 39) so ``views.update`` keeps
what the person typed, and inline errors name them.

Templates: a picker of the tenant's templates (a ``static_select``; an
``external_select`` past the 100 options Slack allows a static one,
https://docs.slack.dev/reference/block-kit/block-elements/select-menu-element), its
first option "no template"; and the template's data, ``name=value`` one per line.
With a template picked the message may stay empty (both given are refused).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any

from bot.slack.blocks import clip
from bot.slack.grammar import escape, unescape
from core import limits, timeexpr
from core.calendars import is_url

CALLBACK = "herald_schedule"
REPEATS = {
    "once": "Once",
    "daily": "Every day",
    "weekdays": "Every weekday",
    "weekly": "Every week on that day",
    "monthly": "Every month on that date",
}
_NO_PREVIEW = "Press Enter in the field to preview the next times."
#: The template picker's option for "no template: the message above" (no template's
#: name: a name starts with a letter or a digit, core.render.NAME).
NO_TEMPLATE = "-"
NO_TEMPLATE_LABEL = "None: send the message above"
DATA_EXAMPLE = "service=api\nversion=1.4"
#: The most characters a template preview shows in the modal.
PREVIEW_CHARS = 1500
#: A new schedule's checkbox (block ``private``): left out of its channel's agenda.
PRIVATE = "private"
PRIVATE_OPTION = {
    "text": {"type": "plain_text", "text": "Private: leave it out of the channel's list"},
    "description": {"type": "plain_text", "text": "/schedule list here shows it to you only."},
    "value": PRIVATE,
}
#: The most channels the modal's picker starts with (a schedule with more is shown
#: fixed): they and the metadata fit Slack's limits.
MAX_PICKED = 100


def fingerprint(text: str) -> str:
    """A short digest of a message body (the modal's metadata cannot hold 4,000 chars)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fits_input(text: str) -> bool:
    """Whether a stored message (Slack's escaped form) fits the modal's message field."""
    return len(unescape(text)) <= limits.SLACK_INPUT_MAX_LENGTH.size


def _title(editing: int | None) -> str:
    """The modal's title: ``Edit schedule #12``, within Slack's 24 characters."""
    if editing is None:
        return "Schedule a message"
    title = f"Edit schedule #{editing}"
    return title if len(title) <= limits.SLACK_MODAL_TITLE.size else "Edit schedule"


@dataclass(frozen=True)
class ModalMeta:
    """What the modal remembers between opening and submitting (``private_metadata``).

    For an edit: the schedule, its version and its initial values (the message only as
    a fingerprint), so only what the person changed is sent to ``edit_schedule``."""

    schedule_id: int | None = None
    version: int | None = None
    #: The channels the picker starts with: the schedule's, or the one typed in.
    channels: tuple[str, ...] = ()
    when: str | None = None
    text_fp: str | None = None
    #: A destination the picker cannot show (webhook, email...): kept as it is.
    fixed: str | None = None
    #: The message is longer than the message field holds: it is shown, not edited.
    long_text: bool = False
    #: ``when`` as a fingerprint, when the expression itself does not fit the metadata.
    when_fp: str | None = None
    #: The template the schedule sends (an edit), and its data as a fingerprint of the
    #: data field's text as opened (:func:`data_text`).
    template: str | None = None
    data_fp: str | None = None

    def dumps(self) -> str:
        """The metadata, within Slack's 3,000 characters of ``private_metadata``."""
        meta = self
        if self.fixed is not None and len(self.fixed) > 200:
            meta = replace(meta, fixed=limits.clip(self.fixed, 200))
        raw = json.dumps(asdict(meta), separators=(",", ":"), ensure_ascii=False)
        if len(raw) > limits.SLACK_PRIVATE_METADATA.size and meta.when is not None:
            meta = replace(meta, when=None, when_fp=fingerprint(meta.when))
            raw = json.dumps(asdict(meta), separators=(",", ":"), ensure_ascii=False)
        return raw

    def when_changed(self, when: str | None) -> bool:
        """Whether ``when`` differs from the time the modal was opened with."""
        if when is None:
            return False
        if self.when_fp is not None:
            return fingerprint(when) != self.when_fp
        return when != self.when

    @classmethod
    def loads(cls, raw: str | None) -> ModalMeta:
        try:
            data = json.loads(raw or "{}")
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        channels = data.get("channels")
        if isinstance(data.get("channel"), str):  # a modal opened before several channels
            channels = [data["channel"]]
        known["channels"] = tuple(str(c) for c in channels or () if isinstance(c, str))
        return cls(**known)


def _input(block_id: str, label: str, element: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "label": {"type": "plain_text", "text": label},
        "element": {**element, "action_id": block_id},
        **extra,
    }


def _text(value: str) -> dict[str, str]:
    return {"type": "plain_text", "text": value}


def schedule_modal(
    *,
    zone: str,
    meta: ModalMeta,
    text: str | None = None,
    preview: str | None = None,
    kept: str | None = None,
    templates: Sequence[str] = (),
    data: str | None = None,
    template_preview: str | None = None,
    picked: str | None = None,
) -> dict[str, Any]:
    """The modal view. ``text`` is the message in Slack's escaped form (shown
    unescaped); ``preview`` is mrkdwn for the preview line. ``kept``: for a message
    longer than the field (``meta.long_text``), what the view already says of it
    (:func:`kept_text`), when the view is rebuilt without the message at hand.
    ``templates``: the names of the tenant's templates (none: no template fields);
    ``picked`` (default ``meta.template``; :data:`NO_TEMPLATE`: none) starts picked,
    with ``data`` (the data field's text); ``template_preview`` is mrkdwn under them."""
    editing = meta.schedule_id is not None
    offers = bool(templates) or meta.template is not None
    blocks: list[dict[str, Any]] = []
    if meta.fixed is not None:
        blocks.append(
            {
                "type": "section",
                "block_id": "destination",
                "text": {
                    "type": "mrkdwn",
                    "text": clip(
                        f"Sends to `{escape(meta.fixed)}` (change it with the herald CLI)."
                    ),
                },
            }
        )
    else:
        # several channels at once (issue 35): Slack's multi_conversations_select,
        # https://api.slack.com/reference/block-kit/block-elements#conversation_multi_select
        picker: dict[str, Any] = {
            "type": "multi_conversations_select",
            "placeholder": _text("Pick one or more channels"),
            "filter": {"include": ["public", "private"], "exclude_bot_users": True},
        }
        if meta.channels:
            picker["initial_conversations"] = list(meta.channels)
        else:
            picker["default_to_current_conversation"] = True
        blocks.append(_input("channel", "Post in", picker))
    if meta.long_text:
        # a message the field cannot hold is shown, never cut: editing it would shorten it
        size = len(unescape(text or ""))
        said = kept or (
            f"*Message* ({size:,} characters) stays as it is: "
            f"{limits.SLACK_INPUT_MAX_LENGTH.sentence(size, 'it has')} Change it with "
            f"`herald edit {meta.schedule_id} --text …`, or save a shorter text "
            f"with `/schedule` instead.\n{_quoted(text or '')}"
        )
        blocks.append(
            {
                "type": "section",
                "block_id": "text_kept",
                "text": {"type": "mrkdwn", "text": clip(said)},
            }
        )
    else:
        message: dict[str, Any] = {
            "type": "plain_text_input",
            "multiline": True,
            "max_length": limits.SLACK_INPUT_MAX_LENGTH.size,
        }
        if text is not None:
            message["initial_value"] = unescape(text)
        if offers:
            hint = _text("Or pick a template below instead.")
            blocks.append(_input("text", "Message", message, optional=True, hint=hint))
        else:
            blocks.append(_input("text", "Message", message))
    if offers:
        chosen = meta.template if picked is None else picked
        chosen = None if chosen == NO_TEMPLATE else chosen
        blocks.extend(template_blocks(templates, chosen, data, template_preview))
    when: dict[str, Any] = {
        "type": "plain_text_input",
        "placeholder": _text("every weekday at 9am, tomorrow at 14:00, in 2 hours…"),
        "dispatch_action_config": {"trigger_actions_on": ["on_enter_pressed"]},
    }
    if meta.when:
        when["initial_value"] = meta.when
    blocks.append(
        _input(
            "when",
            "When",
            when,
            optional=True,
            dispatch_action=True,
            hint=_text(
                f"Anything /schedule reads, in your zone ({zone}). Or leave it empty "
                "and pick a date and time below."
            ),
        )
    )
    blocks.append(
        {
            "type": "context",
            "block_id": "preview",
            "elements": [{"type": "mrkdwn", "text": clip(preview or _NO_PREVIEW)}],
        }
    )
    blocks.append(_input("date", "Date", {"type": "datepicker"}, optional=True))
    blocks.append(_input("time", "Time", {"type": "timepicker"}, optional=True))
    options = [{"text": _text(label), "value": value} for value, label in REPEATS.items()]
    blocks.append(
        _input(
            "repeat",
            "Repeat",
            {"type": "static_select", "options": options, "initial_option": options[0]},
            optional=True,
        )
    )
    if not editing:
        blocks.append(
            _input(
                "skip",
                "Skip dates from calendars",
                {
                    "type": "plain_text_input",
                    "multiline": True,
                    "placeholder": _text("https://example.org/holidays.ics"),
                },
                optional=True,
                hint=_text(
                    "iCalendar (.ics) URLs, one per line: no message is sent on the dates "
                    "of their events (public holidays, team days off…)."
                ),
            )
        )
        blocks.append(
            _input(
                PRIVATE,
                "Channel's list",
                {"type": "checkboxes", "options": [PRIVATE_OPTION]},
                optional=True,
            )
        )
    return {
        "type": "modal",
        "callback_id": CALLBACK,
        "title": _text(_title(meta.schedule_id)),
        "submit": _text("Save" if editing else "Schedule"),
        "close": _text("Cancel"),
        "private_metadata": meta.dumps(),
        "blocks": blocks,
    }


def option(name: str) -> dict[str, Any]:
    label = NO_TEMPLATE_LABEL if name == NO_TEMPLATE else name
    return {"text": _text(limits.clip(label, limits.SLACK_OPTION_TEXT.size)), "value": name}


def template_blocks(
    templates: Sequence[str],
    picked: str | None,
    data: str | None,
    preview: str | None,
) -> list[dict[str, Any]]:
    """The template picker (``template``), its data (``data``) and a preview line
    (``template_preview``). Picking a template sends an action (``dispatch_action``):
    the view comes back with its variables and its text filled in."""
    names = list(dict.fromkeys(templates))
    if picked is not None and picked not in names:
        names.insert(0, picked)
    first = option(picked or NO_TEMPLATE)
    picker: dict[str, Any]
    if len(names) + 1 <= limits.SLACK_SELECT_OPTIONS.size:
        options = [option(NO_TEMPLATE), *(option(n) for n in names)]
        picker = {"type": "static_select", "options": options, "initial_option": first}
    else:  # more than Slack lists: typed, and looked up (Herald's options handler)
        picker = {"type": "external_select", "min_query_length": 0, "initial_option": first}
    picker["placeholder"] = _text("Pick a template")
    values: dict[str, Any] = {
        "type": "plain_text_input",
        "multiline": True,
        "max_length": limits.SLACK_INPUT_MAX_LENGTH.size,
        "placeholder": _text(DATA_EXAMPLE.replace("\n", ", ")),
    }
    if data:
        values["initial_value"] = limits.clip(data, limits.SLACK_INPUT_MAX_LENGTH.size)
    return [
        _input(
            "template",
            "Template",
            picker,
            optional=True,
            dispatch_action=True,
            hint=_text("A message written once, filled in with the data below."),
        ),
        _input(
            "data",
            "Template data",
            values,
            optional=True,
            hint=_text(
                "One name=value per line, for the template's variables (`/schedule "
                "templates` lists them)."
            ),
        ),
        {
            "type": "context",
            "block_id": "template_preview",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": clip(preview or "Pick a template to see its variables and text."),
                }
            ],
        },
    ]


def data_text(data: dict[str, Any]) -> str:
    """A schedule's data as the data field shows it: ``name=value`` one per line."""
    return "\n".join(f"{k}={unescape(str(v))}" for k, v in data.items())


def read_data(text: str) -> tuple[dict[str, str], str | None]:
    """The data field read: ``name=value`` per line (blank lines skipped), values in
    Slack's escaped form; and what is wrong with it, or None."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        name, equals, value = line.partition("=")
        name = name.strip().lower()
        if not equals or not name:
            return found, f"Write each value as name=value on its own line, not {line[:60]!r}."
        if name in found:
            return found, f"{name[:40]!r} is given twice: give each value once."
        found[name] = escape(value.strip())
    return found, None


def kept_text(view: dict[str, Any]) -> str | None:
    """What a view (as Slack sends it back with an action) says of a message too long
    for its field (the ``text_kept`` section), or None. Slack sends only inputs in the
    view's state, so this is the one place the message is still at hand: a rebuilt view
    (the preview) carries it over rather than show an empty message."""
    for block in view.get("blocks") or []:
        if isinstance(block, dict) and block.get("block_id") == "text_kept":
            said = (block.get("text") or {}).get("text")
            return said if isinstance(said, str) and said else None
    return None


def _quoted(text: str) -> str:
    """The start of a (Slack-escaped) message, quoted."""
    shown = clip(text, 600)
    return "\n".join(f">{line}" for line in shown.splitlines() or [""])


def picked(day: str, clock: str, repeat: str) -> str:
    """The expression for the date and time pickers and the repeat choice, e.g.
    ``every weekday at 09:00 starting 2026-03-05``."""
    start = date.fromisoformat(day)
    if repeat == "daily":
        return f"every day at {clock} starting {day}"
    if repeat == "weekdays":
        return f"every weekday at {clock} starting {day}"
    if repeat == "weekly":
        return f"every {start:%A} at {clock} starting {day}"
    if repeat == "monthly":
        return f"every month on the {timeexpr.ordinal_text(start.day)} at {clock} starting {day}"
    return f"{day} {clock}"


@dataclass(frozen=True)
class Submission:
    """What the modal holds: ``channels`` (in the order picked; empty for a fixed
    destination), ``text`` in Slack's escaped form, ``when`` (typed, or built from the
    pickers; None when neither), the errors found in its shape, by block id, and the
    skip calendars' URLs."""

    channels: tuple[str, ...]
    text: str
    when: str | None
    errors: dict[str, str]
    #: Calendar URLs from the "Skip dates from calendars" field.
    skip: tuple[str, ...] = ()
    #: The template picked (None: the message), its data, and the data field's text.
    template: str | None = None
    data: dict[str, str] = field(default_factory=dict)
    data_text: str = ""
    #: "Private: leave it out of the channel's list" ticked (a new schedule).
    private: bool = False


def _value(values: dict[str, Any], block: str) -> dict[str, Any]:
    found = (values.get(block) or {}).get(block) or {}
    return found if isinstance(found, dict) else {}


def read_submission(view: dict[str, Any]) -> Submission:
    """Read a submitted (or, for the preview, a current) modal's state."""
    values = (view.get("state") or {}).get("values") or {}
    errors: dict[str, str] = {}
    picker = _value(values, "channel")
    chosen = picker.get("selected_conversations")
    if chosen is None and picker.get("selected_conversation"):  # a single picker's view
        chosen = [picker["selected_conversation"]]
    channels = tuple(dict.fromkeys(str(c) for c in chosen or () if c))
    if "channel" in values and not channels:
        errors["channel"] = "Pick the channels to post in (one or more)."
    text = (_value(values, "text").get("value") or "").strip()
    chosen_template = (_value(values, "template").get("selected_option") or {}).get("value")
    template = None if chosen_template in (None, "", NO_TEMPLATE) else str(chosen_template)
    typed_data = (_value(values, "data").get("value") or "").strip()
    data, wrong = read_data(typed_data)
    if wrong is not None:
        errors["data"] = wrong
    elif data and template is None:
        errors["data"] = "Pick a template for these values, or leave them out."
    long_text = ModalMeta.loads(view.get("private_metadata")).long_text
    if template is not None and text:
        errors["text"] = "Give a message or a template, not both: empty one of them."
    elif not text and template is None and not long_text:
        errors["text"] = (
            "Say what to send, or pick a template."
            if "template" in values
            else ("Say what to send.")
        )
    when = (_value(values, "when").get("value") or "").strip() or None
    day = _value(values, "date").get("selected_date")
    clock = _value(values, "time").get("selected_time")
    repeat = (_value(values, "repeat").get("selected_option") or {}).get("value") or "once"
    if when is None:
        if day and clock:
            when = picked(day, clock, repeat)
        elif day:
            errors["time"] = "Pick a time too (or type when in the field above)."
        elif clock:
            errors["date"] = "Pick a date too (or type when in the field above)."
        else:
            errors["when"] = "Say when: type it here, or pick a date and a time below."
    skip = tuple(
        dict.fromkeys((_value(values, "skip").get("value") or "").replace(",", " ").split())
    )
    bad = [source for source in skip if not is_url(source)]
    if bad:
        errors["skip"] = (
            f"{bad[0][:80]!r} is not a calendar URL: paste the https:// address of an "
            "iCalendar (.ics) file, one per line."
        )
    ticked = _value(values, PRIVATE).get("selected_options") or ()
    private = any(isinstance(o, dict) and o.get("value") == PRIVATE for o in ticked)
    return Submission(
        channels, escape(text), when, errors, skip, template, data, typed_data, private
    )
