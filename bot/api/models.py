"""The HTTP API's request and response bodies, as pydantic models.

The handlers validate what they read and what they answer with these models, and the
OpenAPI document (:mod:`bot.api.openapi`) is generated from them: what the document
says is what the code checks. Its limits and the words that describe them come from the
tables the use cases check with (``core.limits``, ``core.cases.schedules``), and each
model carries one example (``json_schema_extra``), which the document and ``/v1/docs``
show. Times are RFC 3339 with an offset (UTC, ``Z``).

Requests name a schedule's zone ``timezone``, as answers do; ``tz``, the name earlier
versions took, is still accepted (not both at once)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    Field,
    Strict,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bot.api.model_base import In as _In
from bot.api.model_base import Out as _Out
from bot.api.model_base import example as _example
from bot.api.recipients import (
    Destination,
    FirstOf,
    RecipientOut,
    Recipients,
    recipients_field,
    step_timeout_field,
    time_of_field,
    to_field,
)
from core import limits, render, routing
from core import until_done as ladders
from core.cases import MAX_KEY, OPTIONS

__all__ = ["FirstOf", "RecipientOut"]


def _zone() -> Any:
    """The ``timezone`` field of a request (``tz`` on the model, as the use cases say)."""
    return Field(
        default=None,
        alias="timezone",
        max_length=64,
        description="The zone to read the time in: a city (Berlin) or an IANA zone "
        "(Europe/Berlin); default: the member's own (herald timezone), else Herald's. "
        "'tz', its name in earlier versions, is accepted too.",
        examples=["Europe/Berlin"],
    )


class _Zoned(_In):
    """A request naming a zone (its ``tz`` field is :func:`_zone`): ``timezone``, as
    answers say it, or ``tz``; both at once only when they agree."""

    @model_validator(mode="before")
    @classmethod
    def _one_zone(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tz" in data and "timezone" in data:
            if data["tz"] != data["timezone"]:
                raise PydanticCustomError(
                    "zone_twice", "send timezone or tz (its older name), not both"
                )
            data = {k: v for k, v in data.items() if k != "tz"}
        return data


def _text_description() -> str:
    """What the ``text`` field says, from core.limits (the table the check reads)."""
    tighter: dict[int, list[str]] = {}
    for kind, limit in limits.TEXT.items():
        if limit.size < limits.HERALD_TEXT.size:
            tighter.setdefault(limit.size, []).append(f"{kind}:")
    also = "".join(
        f"; {' and '.join(kinds)} destinations allow {size:,}"
        for size, kinds in sorted(tighter.items())
    )
    return (
        f"The message: at most {limits.HERALD_TEXT.size:,} characters (Herald's limit{also}). "
        "{date:%A} and the like are filled in when it is sent."
    )


def _options_description() -> str:
    """What ``options`` says, from core.cases.schedules.OPTIONS (what the check takes)."""
    kinds = ", ".join(
        f"{name} ({'a list of objects' if kind is list else 'text'})"
        for name, kind in OPTIONS.items()
    )
    return f"Channel options: {kinds}. Any other name is refused."


_OPTIONS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                name: {"type": "array", "items": {"type": "object"}}
                if kind is list
                else {"type": "string"}
                for name, kind in OPTIONS.items()
            },
            "additionalProperties": False,
        },
        {"type": "null"},
    ],
    "default": None,
    "description": _options_description(),
    "examples": [{"username": "Release bot"}],
}


# --- requests -----------------------------------------------------------------------

#: A schedule's priority (core.preferences.PRIORITIES).
Priority = Literal["urgent", "normal", "bulk"]
#: A true or false that is one (not "yes", 1 or "true").
StrictFlag = Annotated[bool, Strict()]


def _scalar(value: Any) -> Any:
    """A template variable's value: text or a number (its kind is checked by core)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("data_value", "a value is text or a number")
    if isinstance(value, str) and len(value) > render.MAX_VALUE:
        raise PydanticCustomError(
            "data_value_long", "a value is at most {most} characters", {"most": render.MAX_VALUE}
        )
    return value


#: One value of a template's variable (core.render.check_data reads it by its kind:
#: a number may come as text, "1.4"; a date as YYYY-MM-DD).
DataValue = Annotated[
    Any,
    AfterValidator(_scalar),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "maxLength": render.MAX_VALUE}, {"type": "number"}]}
    ),
]
#: A template's data: variable name -> value.
DataValues = Annotated[dict[str, DataValue], Field(max_length=render.MAX_VARIABLES)]


def _template_field(edit: bool) -> Any:
    detach = ' "none" (with a text) stops using one.' if edit else ""
    return Field(
        default=None,
        min_length=1,
        max_length=64,
        description="A named template of the tenant to send instead of a text (GET "
        f"/v1/templates), filled in with data.{detach}",
        examples=["deploy"],
    )


def _data_field() -> Any:
    return Field(
        default=None,
        description="The values of the template's variables, each of its kind (text, a "
        'number, a date as YYYY-MM-DD): {"service": "api", "version": 1.4}. A value '
        "missing, of the wrong kind or for no variable is refused.",
        examples=[{"service": "api", "version": 1.4}],
    )


def _data_by_recipient_field() -> Any:
    return Field(
        default=None,
        max_length=routing.ADMIN_CAP,
        description="A recipient's own values, by its first destination as given "
        '({"email:ann@example.com": {"service": "web"}}); they override data.',
        examples=[{"email:ann@example.com": {"service": "web"}}],
    )


def _priority(description: str) -> Any:
    return Field(default=None, description=description, examples=["urgent"])


# --- sent until done (core.until_done) ------------------------------------------------

#: A duration as the ladder takes it: 15m, 1h, 90m.
Duration = Annotated[str, Field(min_length=1, max_length=20, examples=["15m"])]


class EscalationIn(_In):
    """One escalation level: whom to message, and how long after the message."""

    model_config = _example({"to": ["slack:@U0LEAD"], "after": "1h"})

    to: (
        Destination
        | Annotated[list[Destination], Field(min_length=1, max_length=ladders.MAX_ESCALATE_TO)]
    ) = Field(
        description=f"A destination, or up to {ladders.MAX_ESCALATE_TO}: a person "
        "(slack:@U…, discord:@…) or a channel."
    )
    after: Duration = Field(
        description="How long after the message, if nobody pressed Done: 1h, 90m (a "
        "minute to 24 hours; each level later than the one before)."
    )

    def spec(self) -> dict[str, Any]:
        return {"to": [self.to] if isinstance(self.to, str) else list(self.to), "after": self.after}


class UntilDoneIn(_In):
    """A message sent until done: a Done button, nags in its thread, escalations."""

    model_config = _example({"nag": "15m", "escalate": [{"to": ["slack:@U0LEAD"], "after": "1h"}]})

    nag: Duration | None = Field(
        default=None,
        description="Reply under the message this often until someone presses Done: "
        f"15m, 1h (at least {ladders.NAG_FLOOR.seconds // 60} minutes for members, "
        f"{ladders.NAG_FLOOR_STAFF.seconds // 60} for operators and admins; at most "
        f"{ladders.MAX_NAGS} nags). Null: no nags.",
    )
    escalate: list[EscalationIn] = Field(
        default_factory=list,
        max_length=ladders.MAX_LEVELS,
        description=f"Up to {ladders.MAX_LEVELS} escalation levels, in order.",
    )

    def spec(self) -> dict[str, Any]:
        """The ladder as the use cases take it."""
        return {"nag": self.nag, "escalate": [level.spec() for level in self.escalate]}


def _until_done_field(edit: bool) -> Any:
    plain = (
        " false sends it plainly again; absent or null: unchanged. A ladder given replaces "
        "the one it had."
        if edit
        else ""
    )
    return Field(
        default=None,
        description="Send each occurrence until someone presses its Done button: nag in "
        f"its thread and escalate to others meanwhile (core.until_done).{plain}",
        examples=[{"nag": "15m", "escalate": [{"to": ["slack:@U0LEAD"], "after": "1h"}]}],
    )


class LevelOut(_Out):
    to: list[str]
    after: int = Field(description="Seconds after the message.")


class UntilDoneOut(_Out):
    model_config = _example(
        {
            "nag": 900,
            "levels": [{"to": ["slack:@U0LEAD"], "after": 3600}],
            "words": "until done, nag every 15 minutes, escalate to slack:@U0LEAD after 1 hour",
        }
    )

    nag: int | None = Field(description="Seconds between nags (null: no nags).")
    levels: list[LevelOut] = Field(description="The escalation levels, in order.")
    words: str = Field(description="The ladder in words.")


class ScheduleCreate(_Zoned):
    """A new schedule: the same fields as ``herald schedule``."""

    model_config = _example(
        {
            "to": "webhook:https://hooks.example.com/standup",
            "when": "every weekday at 9am",
            "text": "Stand-up in the usual room",
            "timezone": "Europe/Berlin",
            "key": "standup-2026",
        },
        zoned=True,
    )

    to: Destination | Recipients = to_field(
        required=True,
        description="Where it goes: one destination (slack:#channel, discord:<channel id>, "
        "webhook:https://…, email:someone@example.com, slack:@U… for a reminder by DM), "
        'or a list of recipients, each a destination or a chain {"first_of": [...]} '
        "whose next destination is tried only when the one before fails. One schedule; "
        "each recipient gets its own job, retries and dead letter.",
    )
    when: str = Field(
        max_length=500,
        description="When, as people write it: 'tomorrow at 9am', 'every weekday at 09:00', "
        "an ISO time, or an RFC 5545 rule.",
        examples=["every weekday at 9am"],
    )
    time_of: Literal["author", "recipient"] = time_of_field()
    step_timeout: int | None = step_timeout_field()
    tz: str | None = _zone()
    text: str = Field(
        default="",
        max_length=limits.HERALD_TEXT.size,
        description=_text_description() + " Required unless a template is named.",
    )
    template: str | None = _template_field(edit=False)
    data: DataValues | None = _data_field()
    data_by_recipient: dict[str, DataValues] | None = _data_by_recipient_field()
    key: str | None = Field(
        default=None,
        max_length=MAX_KEY,
        description="Your idempotency key (or send the Idempotency-Key header).",
    )
    max_lateness: float | None = Field(
        default=None, ge=0, description="Seconds late after which an occurrence is dropped."
    )
    options: dict[str, Any] | None = Field(default=None, json_schema_extra=_OPTIONS_SCHEMA)
    skip: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Calendar URLs whose event dates are skipped.",
    )
    skip_files: dict[str, str] = Field(
        default_factory=dict,
        max_length=5,
        description="Calendars to skip given as iCalendar text, by a name of your choice "
        "(as herald schedule --skip-calendar FILE; within the 64 KiB body).",
    )

    priority: Priority | None = _priority(
        "urgent is served before normal, bulk after it; urgent is not held by quiet hours "
        "(to people who set them: admins and operators only). Default normal."
    )
    auto_pause: Annotated[bool, Strict()] = Field(
        default=True,
        description="Whether Herald pauses a recurring schedule whose last "
        "HERALD_AUTO_PAUSE_AFTER occurrences all failed (its author is told; resume "
        "starts it again).",
    )
    until_done: UntilDoneIn | None = _until_done_field(edit=False)
    private: Annotated[bool, Strict()] = Field(
        default=False,
        description="Keep it out of its channel's agenda (GET /v1/schedules?to=…): only "
        "its author, operators and admins see it listed, and it is nobody else's duplicate.",
    )

    _to = field_validator("to", mode="wrap")(staticmethod(recipients_field))

    @model_validator(mode="before")
    @classmethod
    def _text_or_template(cls, data: Any) -> Any:
        if isinstance(data, dict) and "text" not in data and data.get("template") is None:
            raise PydanticCustomError("text_missing", "text: required, unless a template is named")
        return data


class ScheduleEdit(_Zoned):
    """What to change (at least one of when, text, to, add, remove, priority,
    auto_pause, template, data, data_by_recipient, until_done, private)."""

    model_config = _example(
        {"when": "every weekday at 9:30am", "timezone": "Europe/Berlin"}, zoned=True
    )

    when: str | None = Field(default=None, max_length=500, description="The new time.")
    tz: str | None = _zone()
    text: str | None = Field(
        default=None, max_length=limits.HERALD_TEXT.size, description=_text_description()
    )
    to: Destination | Recipients | None = to_field(
        required=False,
        description="Every recipient anew (as POST /v1/schedules takes them); recipients "
        "kept keep their jobs.",
    )
    add: Recipients | None = Field(
        default=None, description="Recipients to add (destinations or chains)."
    )
    remove: list[Destination] | None = Field(
        default=None,
        min_length=1,
        max_length=routing.ADMIN_CAP,
        description="Recipients to remove, each named by a destination of its chain.",
    )
    priority: Priority | None = _priority("The new priority: urgent, normal or bulk.")
    auto_pause: Annotated[bool, Strict()] | None = Field(
        default=None, description="Whether Herald may pause it for failing (see create)."
    )
    template: str | None = _template_field(edit=True)
    data: DataValues | None = _data_field()
    data_by_recipient: dict[str, DataValues] | None = _data_by_recipient_field()
    until_done: UntilDoneIn | Literal[False] | None = _until_done_field(edit=True)
    private: Annotated[bool, Strict()] | None = Field(
        default=None,
        description="true keeps it out of its channel's agenda, false shows it there "
        "again (see create).",
    )

    _to = field_validator("to", "add", mode="wrap")(staticmethod(recipients_field))

    @field_validator("until_done", mode="before")
    @classmethod
    def _ladder_or_false(cls, value: Any) -> Any:
        if value is not False and not isinstance(value, dict | None):  # not 0, not true
            raise PydanticCustomError(
                "until_done", "a ladder ({nag, escalate}), or false to send it plainly"
            )
        return value


class RejectRetry(_In):
    model_config = _example({"reason": "The endpoint is being replaced; schedule it again."})

    reason: str | None = Field(default=None, max_length=500, description="Told to whoever asked.")


# Query strings are bounded so that a whole request line fits aiohttp's 8,190 bytes
# even when every character is percent-encoded UTF-8 (up to 12 bytes each).


class ScheduleListQuery(_In):
    model_config = _example({"state": "active", "limit": 20})

    state: str | None = Field(
        default=None,
        max_length=20,
        description="pending, delivered, retrying, failed, active, paused, ended, cancelled…",
    )
    to: str | None = Field(
        default=None,
        max_length=300,
        description="A destination: schedules any of whose recipients (a chain's step "
        "too) goes there. A Slack or Discord channel (slack:C…, slack:#name, "
        "discord:<channel id>) without state, search or tenant is its agenda: every "
        "active schedule into it not marked private, whoever wrote it, soonest first, "
        "each with its author, to a member of that platform who can see the channel (403 "
        "otherwise) and to operators and admins; a member of another (local:…) lists "
        "their own into it.",
    )
    search: str | None = Field(default=None, max_length=100, description="Words in the text.")
    all: bool = Field(default=False, description="Everyone's (operators and admins).")
    tenant: str | None = Field(default=None, max_length=100, description="Herald-wide only.")
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = Field(default=None, max_length=100, description="next_cursor of a page.")


class DeadListQuery(_In):
    model_config = _example({"requested": True, "limit": 20})

    to: str | None = Field(default=None, max_length=300, description="A destination prefix.")
    requested: bool | None = Field(default=None, description="Only those with a retry request.")
    tenant: str | None = Field(default=None, max_length=100, description="Herald-wide only.")
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = Field(default=None, max_length=100)


class ScheduleJobsQuery(_In):
    model_config = _example({"archived": True})

    archived: bool = Field(
        default=False,
        description="Also the archived history: jobs finished more than "
        "HERALD_RETENTION_DAYS ago (the latest 50) with their attempts, marked archived.",
    )


class WhenQuery(_Zoned):
    model_config = _example(
        {"when": "every weekday at 9am", "timezone": "Europe/Berlin", "count": 3}, zoned=True
    )

    when: str = Field(
        min_length=1,
        max_length=500,
        description="When, as POST /v1/schedules takes it.",
        examples=["every weekday at 9am"],
    )
    tz: str | None = _zone()
    count: int = Field(default=5, ge=1, le=50, description="How many occurrences to list.")


class AgendaQuery(_In):
    model_config = _example({"to": "slack:C0GENERAL"})

    to: str = Field(
        min_length=1,
        max_length=300,
        description="A Slack or Discord channel (slack:C…, slack:#name, discord:<channel "
        "id>): its agenda, as GET /v1/schedules?to= lists it; another destination: your "
        "schedules into it (operators and admins: everyone's).",
    )


class ScheduleCreateQuery(_In):
    model_config = _example({"strict": True})

    strict: bool = Field(
        default=False,
        description="Refuse (409, nothing created) when the same text is already "
        "scheduled there within ten minutes of one of its sends; default: create it "
        "and say so in warnings.",
    )


class ImportQuery(_In):
    model_config = _example({"skip_invalid": True})

    skip_invalid: bool = Field(
        default=False, description="Import the good lines and report the bad (default: none)."
    )
    priority: Priority | None = _priority(
        "The priority of the lines that name none (default bulk: an import waits behind "
        "what is scheduled one at a time)."
    )


# --- responses ----------------------------------------------------------------------

#: The schedule the examples show (what POST /v1/schedules answers to its example).
SCHEDULE_EXAMPLE: dict[str, Any] = {
    "id": 42,
    "tenant": "local",
    "owner": "local:ada",
    "destination": "webhook:https://hooks.example.com/standup",
    "recipients": [{"id": 0, "to": ["webhook:https://hooks.example.com/standup"]}],
    "text": "Stand-up in the usual room",
    "expression": "every weekday at 9am",
    "timezone": "Europe/Berlin",
    "recurring": True,
    "rule": "DTSTART;TZID=Europe/Berlin:20260302T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
    "description": "every weekday at 09:00 (Europe/Berlin)",
    "starts_at": "2026-03-02T08:00:00Z",
    "next_run_at": "2026-03-02T08:00:00Z",
    "state": "active",
    "lifecycle": "active",
    "priority": "normal",
    "last_outcome": None,
    "auto_pause": True,
    "private": False,
    "failed_streak": 0,
    "key": "standup-2026",
    "max_lateness_s": None,
    "options": {},
    "version": 1,
    "created_at": "2026-03-01T10:00:00Z",
    "updated_at": "2026-03-01T10:00:00Z",
}
_JOB_EXAMPLE: dict[str, Any] = {
    "id": 7,
    "recipient": 0,
    "destination": None,
    "step": 0,
    "occurrence_at": "2026-03-02T08:00:00Z",
    "due_at": "2026-03-02T08:00:00Z",
    "state": "delivered",
    "attempts": 1,
    "lease_owner": None,
    "lease_expires_at": None,
    "idempotency_key": "piceJVUAmv0cmNUZofQnOA",
    "last_error": None,
    "finished_at": "2026-03-02T08:00:01Z",
}
_DEAD_EXAMPLE: dict[str, Any] = {
    "job_id": 9,
    "schedule_id": 42,
    "tenant": "local",
    "owner": "local:ada",
    "destination": "webhook:https://hooks.example.com/standup",
    "text": "Stand-up in the usual room",
    "attempts": 8,
    "last_error": "The webhook answered 410 Gone: the receiver says it is gone for good.",
    "occurrence_at": "2026-03-03T08:00:00Z",
    "died_at": "2026-03-03T09:12:00Z",
    "retry_requested_by": "local:ada",
    "retry_requested_at": "2026-03-03T10:00:00Z",
    "retry_rejected_by": None,
    "retry_reject_reason": None,
}


class TemplateUseOut(_Out):
    model_config = _example(
        {
            "name": "deploy",
            "version": 2,
            "data": {"service": "api", "version": 1.4},
            "data_by_recipient": {"1": {"service": "web"}},
        }
    )

    name: str = Field(description="The template's name (GET /v1/templates/{name}).")
    version: int = Field(
        description="The version it sends: a template edit moves it to the new one, "
        "unless it was kept on this one (force_version)."
    )
    data: dict[str, Any] = Field(description="The values of the template's variables.")
    data_by_recipient: dict[str, dict[str, Any]] = Field(
        description="Each recipient's own values, by recipient id (ScheduleOut.recipients); "
        "they override data."
    )


class SaveWarningOut(_Out):
    """Something a save found worth saying (core.cases.channel_view.SaveWarning)."""

    model_config = _example(
        {
            "kind": "duplicate",
            "message": "Bob already scheduled 'Stand-up in 5 minutes' into <#C0GENERAL> "
            "every weekday at 09:00 (UTC) (id 41)",
            "schedule_id": 41,
            "at": "2026-03-02T09:00:00Z",
        }
    )

    kind: Literal["duplicate", "congestion"]
    message: str = Field(description="The warning in words.")
    schedule_id: int | None = Field(default=None, description="The duplicate's id.")
    at: AwareDatetime | None = Field(default=None, description="The send it is about.")
    late_seconds: float | None = Field(
        default=None, description="Congestion: how long that send is expected to wait."
    )


class ScheduleOut(_Out):
    model_config = _example(SCHEDULE_EXAMPLE)

    id: int
    tenant: str
    owner: str
    destination: str = Field(description="The first recipient's first destination.")
    recipients: list[RecipientOut] = Field(description="Every recipient, in order.")
    fared: str | None = Field(
        default=None,
        description="How several recipients fared at the latest occurrence tried "
        "('delivered to 2 of 3; #old failed'); only where the jobs are read (GET one).",
    )
    recipient_times: str | None = Field(
        default=None,
        description="With time_of recipient: when each person gets the next run, in their "
        "zone and in UTC ('<@U1> 09:00 Europe/Berlin = 08:00Z, ...'); null otherwise.",
    )
    text: str = Field(
        description="Its message; with a template, that version's text, its variables "
        "unfilled (the text as sent is each attempt's)."
    )
    expression: str
    timezone: str
    recurring: bool
    rule: str | None
    description: str
    starts_at: AwareDatetime | None
    next_run_at: AwareDatetime | None
    state: str = Field(
        description="What people read: pending, delivered, failed, active…; 'awaiting "
        "approval' for a member's message an approver has to approve first."
    )
    lifecycle: str = Field(
        description="active, paused, completed, cancelled, or awaiting (held for an "
        "approver: nothing is sent until approved; GET /v1/approvals)."
    )
    priority: Priority = Field(
        default="normal", description="urgent, normal or bulk: its place in the queue."
    )
    last_outcome: str | None
    auto_pause: bool = Field(
        default=True, description="Whether Herald may pause it for failing (auto_pause)."
    )
    private: bool = Field(
        default=False,
        description="Kept out of its channel's agenda: only its author, operators and "
        "admins see it listed.",
    )
    failed_streak: int = Field(
        default=0,
        description="Its latest occurrences in a row that none of its recipients got; at "
        "HERALD_AUTO_PAUSE_AFTER the system pauses it (a resume starts it at 0 again).",
    )
    key: str | None
    max_lateness_s: float | None
    options: dict[str, Any]
    template: TemplateUseOut | None = Field(
        default=None,
        description="The named template it sends, the version it is on and its data "
        "(null: its own text).",
    )
    until_done: UntilDoneOut | None = Field(
        default=None,
        description="Its ladder when each occurrence is sent until done (null: sent plainly).",
    )
    version: int = Field(description="Send it back in If-Match to edit safely.")
    created_at: AwareDatetime | None
    updated_at: AwareDatetime | None
    author: str | None = Field(
        default=None,
        description="Its author as people read them (their name, else their id): in a "
        "channel's agenda only.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What the change just made means, in words ('sending its Tue 03 Mar "
        "2026 09:00 occurrence now; the next ones stay as planned'); empty when read back.",
    )
    warnings: list[SaveWarningOut] = Field(
        default_factory=list,
        description="What its save found worth saying: the same text already scheduled "
        "there at about the same time (duplicate), a destination so crowded it would wait "
        "(congestion). Empty when read back.",
    )


class SchedulePage(_Out):
    model_config = _example({"items": [SCHEDULE_EXAMPLE], "next_cursor": "eyJiZWZvcmUiOjQyfQ"})

    items: list[ScheduleOut]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null: last.")


class JobOut(_Out):
    id: int | None
    recipient: int = Field(description="The recipient's id (ScheduleOut.recipients).")
    destination: str | None = Field(
        description="Where its current step goes (null: the schedule's destination)."
    )
    step: int = Field(description="Its step in the recipient's chain (0: the first).")
    occurrence_at: AwareDatetime | None
    due_at: AwareDatetime | None
    state: str
    attempts: int
    lease_owner: str | None
    lease_expires_at: AwareDatetime | None
    idempotency_key: str
    last_error: str | None
    finished_at: AwareDatetime | None
    ladder: str = Field(
        default="",
        description="A step of its occurrence's ladder (sent until done): 'nag 2', "
        "'escalate 1.0' (level 1, its first destination), 'done' (the edit saying who "
        "did it); empty for the occurrence's message.",
    )
    done_by: str | None = Field(
        default=None, description="Who marked the occurrence's message done (state acknowledged)."
    )
    done_at: AwareDatetime | None = None
    archived: bool = Field(
        default=False,
        description="Moved to the archive after HERALD_RETENTION_DAYS (listed only with "
        "archived=true).",
    )


class AttemptOut(_Out):
    id: int | None
    job_id: int
    started_at: AwareDatetime | None
    finished_at: AwareDatetime | None
    outcome: str
    status_code: int | None
    error: str | None
    provider_message_id: str | None
    worker: str
    destination: str | None = Field(
        default=None, description="Where this try went (null: the schedule's destination)."
    )
    #: The text this attempt sent, its variables filled in (None: kept by no older
    #: Herald, or nothing was sent).
    text: str | None = None
    provider: str | None = Field(
        default=None,
        description="The provider that took it, when its channel goes through several "
        "(sendgrid, mailgun, smtp, twilio, vonage); null for a channel that is its own "
        "(Slack, Discord, a webhook).",
    )
    receipt: str | None = Field(
        default=None,
        description="What the provider reported later: delivered, undelivered or "
        "bounced; null: no receipt (yet, or the provider sends none). Never changes once "
        "set.",
    )
    receipt_at: AwareDatetime | None = Field(
        default=None, description="When the provider said so (null: no receipt)."
    )
    receipt_detail: str | None = Field(
        default=None,
        description="The provider's words of a failed receipt (its error code and reason).",
    )
    handoff: str | None = Field(
        default=None,
        description="What the provider did with it, in words, its times in the "
        "schedule's zone: 'accepted by Twilio 09:00:01 · delivered 09:00:04'; 'no receipt "
        "yet' only for providers that send receipts; null for a channel without providers.",
    )
    archived: bool = Field(
        default=False,
        description="Moved to the archive after HERALD_RETENTION_DAYS (listed only with "
        "archived=true).",
    )
    late_s: float | None = Field(
        default=None,
        description="How many seconds after its due time this try started (0: on time; "
        "null: recorded before Herald kept lateness).",
    )
    delayed: bool = Field(
        default=False,
        description="It started more than HERALD_LATE_AFTER (default 60 s) after its due "
        "time: a catch-up after an outage, or a backlog.",
    )


class ScheduleJobs(_Out):
    model_config = _example(
        {
            "schedule_id": 42,
            "jobs": [_JOB_EXAMPLE],
            "attempts": [
                {
                    "id": 11,
                    "job_id": 7,
                    "started_at": "2026-03-02T08:00:00Z",
                    "finished_at": "2026-03-02T08:00:01Z",
                    "outcome": "ok",
                    "status_code": 201,
                    "error": None,
                    "provider_message_id": "SM1f0e8c2d3b4a59687766554433221100",
                    "worker": "herald-1",
                    "destination": None,
                    "provider": "twilio",
                    "receipt": "delivered",
                    "receipt_at": "2026-03-02T08:00:04Z",
                    "receipt_detail": None,
                    "handoff": "accepted by Twilio 09:00:01 · delivered 09:00:04",
                }
            ],
        }
    )

    schedule_id: int
    fared: str | None = Field(
        default=None, description="How several recipients fared (as GET the schedule says)."
    )
    jobs: list[JobOut]
    attempts: list[AttemptOut]


class WhenSkipped(_Out):
    at: AwareDatetime
    event: str


class WhenOut(_Out):
    model_config = _example(
        {
            "expression": "every weekday at 9am",
            "timezone": "Europe/Berlin",
            "zone_source": "given",
            "recurring": True,
            "rule": "RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
            "description": "every weekday at 09:00 (Europe/Berlin)",
            "default_time": None,
            "occurrences": [
                "2026-03-02T08:00:00Z",
                "2026-03-03T08:00:00Z",
                "2026-03-04T08:00:00Z",
            ],
            "skip_calendars": [],
            "skipped": [],
        }
    )

    expression: str
    timezone: str = Field(description="The zone the time was read in (and would be saved in).")
    zone_source: Literal["given", "member", "default"] = Field(
        description="Where the zone came from: tz, the member's own zone, Herald's default."
    )
    recurring: bool
    rule: str | None
    description: str
    default_time: str | None = Field(description="HH:MM Herald chose, when none was given.")
    occurrences: list[AwareDatetime] = Field(description="The next sends, skipped dates left out.")
    skip_calendars: list[str] = Field(
        default_factory=list, description="Calendars named with 'except … from URL'."
    )
    skipped: list[WhenSkipped] = Field(
        default_factory=list, description="Occurrences those calendars' events skip."
    )


class DeadLetterOut(_Out):
    model_config = _example(_DEAD_EXAMPLE)

    job_id: int
    schedule_id: int
    tenant: str
    owner: str
    destination: str
    text: str
    attempts: int
    last_error: str | None
    occurrence_at: AwareDatetime | None
    died_at: AwareDatetime | None
    retry_requested_by: str | None
    retry_requested_at: AwareDatetime | None
    retry_rejected_by: str | None
    retry_reject_reason: str | None


class DeadLetterPage(_Out):
    model_config = _example({"items": [_DEAD_EXAMPLE], "next_cursor": None})

    items: list[DeadLetterOut]
    next_cursor: str | None


class DeadDecisionOut(_Out):
    model_config = _example({"job_id": 9, "result": "retried", "count": 1})

    job_id: int
    result: Literal["retried", "requested", "rejected", "discarded"]
    count: int = Field(description="How many dead letters changed (0: none did).")


class InvalidLine(_Out):
    line: int
    reason: str


class DuplicateLine(_Out):
    line: int
    message: str = Field(
        description="line 4: Bob already scheduled 'Stand-up' into <#C0GENERAL> every "
        "weekday at 09:00 (UTC) (id 41)"
    )
    schedule_id: int | None = Field(
        default=None, description="The existing schedule (null: an earlier line)."
    )


class ImportOut(_Out):
    model_config = _example(
        {
            "imported": 2,
            "skipped_existing": 0,
            "skipped_duplicate": 0,
            "invalid": [{"line": 3, "reason": "line 3: the message is empty: say what to send."}],
            "invalid_count": 1,
            "ids": [43, 44],
            "duplicates": [
                {
                    "line": 2,
                    "message": "line 2: You already scheduled 'Hi' into "
                    "webhook:hooks.example.com at 10:00 today (id 41)",
                    "schedule_id": 41,
                }
            ],
            "duplicate_count": 1,
        }
    )

    imported: int
    skipped_existing: int
    skipped_duplicate: int
    invalid: list[InvalidLine] = Field(
        description="The first 20 bad lines skipped (invalid_count counts them all)."
    )
    invalid_count: int = Field(description="Every bad line skipped.")
    ids: list[int]
    duplicates: list[DuplicateLine] = Field(
        default_factory=list,
        description="Lines imported although the same text was already scheduled there "
        "within ten minutes of one of their sends (by an existing schedule or an earlier "
        "line): said, never refused. The first 20 (duplicate_count counts them all).",
    )
    duplicate_count: int = Field(default=0, description="Every line with a duplicate.")


class Me(_Out):
    model_config = _example(
        {
            "member": "local:ada",
            "tenant": "local",
            "role": "member",
            "scope": "write",
            "token": "3f9a2c1b7d4e",
            "expires_at": None,
        }
    )

    member: str
    tenant: str
    role: str = Field(description="The role this token acts with (its scope may cap it).")
    scope: Literal["read", "write", "admin"]
    token: str = Field(description="The token's public id.")
    expires_at: AwareDatetime | None


class Problem(_Out):
    """An error, as RFC 9457 says (``application/problem+json``)."""

    model_config = _example(
        {
            "type": "/v1/docs#problem-invalid-input",
            "title": "Unprocessable content",
            "status": 422,
            "detail": "Herald allows 4,000 characters in a message; this message has 5,120.",
            "request_id": "3b1f0c9e2a7d4c1e",
        }
    )

    type: str = Field(description="A URI naming the kind of problem.")
    title: str
    status: int
    detail: str = Field(description="What went wrong, the sentence the CLI prints.")
    instance: str | None = None
    request_id: str
    invalid: list[InvalidLine] | None = Field(
        default=None,
        description="A refused import: its first 20 bad lines (the detail counts them all).",
    )
    duplicates: list[SaveWarningOut] | None = Field(
        default=None,
        description="A create refused with ?strict=true: the schedules already sending "
        "the same text there at about the same time.",
    )
