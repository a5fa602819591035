"""The HTTP API's request and response bodies, as pydantic models.

The handlers validate what they read and what they answer with these models, and the
OpenAPI document (:mod:`bot.api.openapi`) is generated from them: what the document
says is what the code checks. Times are RFC 3339 with an offset (UTC, ``Z``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class _In(BaseModel):
    """A request body or query: unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests -----------------------------------------------------------------------


class ScheduleCreate(_In):
    """A new schedule: the same fields as ``herald schedule``."""

    to: str = Field(
        max_length=2000,
        description="Destination URI: slack:#channel, discord:<channel id>, "
        "webhook:https://…, email:someone@example.com, slack:@U… (a reminder by DM).",
        examples=["webhook:https://hooks.example.com/standup"],
    )
    when: str = Field(
        max_length=500,
        description="When, as people write it: 'tomorrow at 9am', 'every weekday at 09:00', "
        "an ISO time, or an RFC 5545 rule.",
        examples=["every weekday at 9am"],
    )
    text: str = Field(max_length=40000, description="The message.")
    tz: str | None = Field(
        default=None, max_length=64, description="Time zone (default: the member's)."
    )
    key: str | None = Field(
        default=None,
        max_length=200,
        description="Your idempotency key (or send the Idempotency-Key header).",
    )
    max_lateness: float | None = Field(
        default=None, ge=0, description="Seconds late after which an occurrence is dropped."
    )
    options: dict[str, Any] | None = Field(
        default=None, description="Channel options (as herald schedule --option)."
    )
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


class ScheduleEdit(_In):
    """What to change (at least one of when, text, to)."""

    when: str | None = Field(default=None, max_length=500)
    text: str | None = Field(default=None, max_length=40000)
    to: str | None = Field(default=None, max_length=2000)
    tz: str | None = Field(default=None, max_length=64)


class RejectRetry(_In):
    reason: str | None = Field(default=None, max_length=500, description="Told to whoever asked.")


# Query strings are bounded so that a whole request line fits aiohttp's 8,190 bytes
# even when every character is percent-encoded UTF-8 (up to 12 bytes each).


class ScheduleListQuery(_In):
    state: str | None = Field(
        default=None,
        max_length=20,
        description="pending, delivered, retrying, failed, active, paused, ended, cancelled…",
    )
    to: str | None = Field(default=None, max_length=300, description="One destination.")
    search: str | None = Field(default=None, max_length=100, description="Words in the text.")
    all: bool = Field(default=False, description="Everyone's (operators and admins).")
    tenant: str | None = Field(default=None, max_length=100, description="Herald-wide only.")
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = Field(default=None, max_length=100, description="next_cursor of a page.")


class DeadListQuery(_In):
    to: str | None = Field(default=None, max_length=300, description="A destination prefix.")
    requested: bool | None = Field(default=None, description="Only those with a retry request.")
    tenant: str | None = Field(default=None, max_length=100, description="Herald-wide only.")
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = Field(default=None, max_length=100)


class WhenQuery(_In):
    when: str = Field(min_length=1, max_length=500, examples=["every weekday at 9am"])
    tz: str | None = Field(default=None, max_length=64)
    count: int = Field(default=5, ge=1, le=50)


class ImportQuery(_In):
    skip_invalid: bool = Field(
        default=False, description="Import the good lines and report the bad (default: none)."
    )


# --- responses ----------------------------------------------------------------------


class ScheduleOut(_Out):
    id: int
    tenant: str
    owner: str
    destination: str
    text: str
    expression: str
    timezone: str
    recurring: bool
    rule: str | None
    description: str
    starts_at: AwareDatetime | None
    next_run_at: AwareDatetime | None
    state: str = Field(description="What people read: pending, delivered, failed, active…")
    lifecycle: str
    last_outcome: str | None
    key: str | None
    max_lateness_s: float | None
    options: dict[str, Any]
    version: int = Field(description="Send it back in If-Match to edit safely.")
    created_at: AwareDatetime | None
    updated_at: AwareDatetime | None


class SchedulePage(_Out):
    items: list[ScheduleOut]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null: last.")


class JobOut(_Out):
    id: int | None
    occurrence_at: AwareDatetime | None
    due_at: AwareDatetime | None
    state: str
    attempts: int
    lease_owner: str | None
    lease_expires_at: AwareDatetime | None
    idempotency_key: str
    last_error: str | None
    finished_at: AwareDatetime | None


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
    #: The text this attempt sent, its variables filled in (None: kept by no older
    #: Herald, or nothing was sent).
    text: str | None = None


class ScheduleJobs(_Out):
    schedule_id: int
    jobs: list[JobOut]
    attempts: list[AttemptOut]


class WhenSkipped(_Out):
    at: AwareDatetime
    event: str


class WhenOut(_Out):
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
    items: list[DeadLetterOut]
    next_cursor: str | None


class DeadDecisionOut(_Out):
    job_id: int
    result: Literal["retried", "requested", "rejected", "discarded"]
    count: int = Field(description="How many dead letters changed (0: none did).")


class InvalidLine(_Out):
    line: int
    reason: str


class ImportOut(_Out):
    imported: int
    skipped_existing: int
    skipped_duplicate: int
    invalid: list[InvalidLine] = Field(
        description="The first 20 bad lines skipped (invalid_count counts them all)."
    )
    invalid_count: int = Field(description="Every bad line skipped.")
    ids: list[int]


class Me(_Out):
    member: str
    tenant: str
    role: str = Field(description="The role this token acts with (its scope may cap it).")
    scope: Literal["read", "write", "admin"]
    token: str = Field(description="The token's public id.")
    expires_at: AwareDatetime | None


class Problem(_Out):
    """An error, as RFC 9457 says (``application/problem+json``)."""

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
