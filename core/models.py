"""Herald's tables (SQLModel). Times are aware UTC in Python, whatever the database.

The store (``core.store``) is the only module that queries them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import JSON, Field, SQLModel

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Each table's ``model_config`` (``defer_build``) has pydantic build its validators when
# a model is first constructed, not at import: a command that only reads rows (``herald
# list``, ``show``) never builds them (~4 ms of every start). SQLAlchemy's mapping is
# built at import as before.

#: Integer on SQLite (so it is the rowid and autoincrements), BIGINT elsewhere.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def sqlite_utc_text(value: datetime) -> str:
    """An aware timestamp as :class:`UTCDateTime` stores it in SQLite (for statements
    run below SQLAlchemy's type processing)."""
    if value.tzinfo is UTC:  # the usual case (every clock gives UTC): no conversion
        return value.isoformat(" ", "microseconds")[:26]
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


class _SQLiteUTC(sqlite.DATETIME):
    """SQLite's DATETIME with the same text format ("2026-03-30 07:00:00.000000"), but
    converted with the C ``isoformat``/``fromisoformat`` instead of a regular
    expression: the dispatcher's hot path reads and writes many of these."""

    def bind_processor(self, dialect: Dialect) -> Any:
        def process(value: datetime | None) -> str | None:
            return None if value is None else value.isoformat(" ", "microseconds")

        return process

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        def process(value: str | None) -> datetime | None:
            return None if value is None else datetime.fromisoformat(value)

        return process


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always aware UTC in Python.

    PostgreSQL stores ``timestamptz``; SQLite stores the UTC wall time as text in a
    fixed-width format, so comparisons and ordering stay correct.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(_SQLiteUTC())  # type: ignore[no-untyped-call]
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class ScheduleState(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    #: A member's message that a second person approves before anything is sent
    #: (core.approvals): no job waits until it is approved.
    AWAITING = "awaiting"


class Outcome(StrEnum):
    """What a schedule's latest tried occurrence did, as people read it."""

    DELIVERED = "delivered"
    #: dead, discarded or expired: it will not be sent unless an admin retries it
    FAILED = "failed"
    RETRYING = "retrying"
    SKIPPED = "skipped"


#: The outcome a job's final (or retrying) state means for its schedule.
OUTCOME_OF_JOB = {
    "delivered": Outcome.DELIVERED.value,
    "retrying": Outcome.RETRYING.value,
    "dead": Outcome.FAILED.value,
    "expired": Outcome.FAILED.value,
    "discarded": Outcome.FAILED.value,
    "skipped": Outcome.SKIPPED.value,
    "acknowledged": Outcome.DELIVERED.value,
}


#: What ``--state`` and the console's ``state:`` filter accept: a lifecycle state or
#: an outcome (matching a one-off whose occurrence did that, and a recurring schedule
#: whose last occurrence did).
STATE_FILTERS = (
    "pending",
    "retrying",
    "delivered",
    "failed",
    "skipped",
    "active",
    "paused",
    "awaiting",
    "ended",
    "completed",
    "cancelled",
)


def describe_state(state: str, recurring: bool, last_outcome: str | None) -> str:
    """A schedule's state as people read it: a one-off says what its occurrence did
    (delivered, failed, retrying, or pending before anything was tried), never
    "completed" when nothing was sent; a recurring one says active, paused, ended or
    cancelled and its last outcome ("active, last failed")."""
    if state == ScheduleState.AWAITING.value:
        return "awaiting approval"
    if state in (ScheduleState.CANCELLED.value, ScheduleState.PAUSED.value) and not recurring:
        return state
    if not recurring:
        return last_outcome or "pending"
    lifecycle = "ended" if state == ScheduleState.COMPLETED.value else state
    return f"{lifecycle}, last {last_outcome}" if last_outcome else lifecycle


class JobState(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    RETRYING = "retrying"
    DELIVERED = "delivered"
    DEAD = "dead"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    DISCARDED = "discarded"
    #: An occurrence that fell on a blackout date of one of the schedule's skip
    #: calendars: never sent, kept so the timeline shows it (``last_error`` names why).
    SKIPPED = "skipped"
    #: A delivered occurrence of a schedule sent "until done" that someone marked done
    #: (``done_by``, ``done_at``): its ladder of nags and escalations stops
    #: (core.until_done).
    ACKNOWLEDGED = "acknowledged"


#: Waiting jobs as SQL, exactly as the partial index ``ix_job_waiting_due`` says it.
WAITING_SQL = "state IN ('pending', 'retrying')"
#: Jobs a dispatcher holds, as the partial index ``ix_job_lease`` says it (PostgreSQL).
LEASED_SQL = "state = 'claimed'"
#: Jobs no longer waiting or held, as ``ix_job_state_finished`` says it (PostgreSQL).
FINISHED_SQL = "state NOT IN ('pending', 'retrying', 'claimed')"

#: Job states that still wait to be sent (cancelling a schedule cancels these).
OPEN_JOB_STATES = (JobState.PENDING, JobState.RETRYING)
#: The same, as the values stored in the ``state`` column.
OPEN_STATE_VALUES = tuple(state.value for state in OPEN_JOB_STATES)


class Role(StrEnum):
    MEMBER = "member"
    OPERATOR = "operator"
    ADMIN = "admin"


def _utc(**kw: Any) -> Any:
    return Field(sa_type=UTCDateTime, **kw)


#: The tenant of the terminal: the CLI, the console and the rows made before tenants.
LOCAL_TENANT = "local"


class Member(SQLModel, table=True):
    """A platform user (``slack:U123``, ``discord:456``, ``local:alice``) as a member of one
    tenant (``slack:T…``, ``discord:<guild>``, ``local``): roles are held per tenant."""

    model_config = {"defer_build": True}  # validators built on first use

    tenant: str = Field(
        default=LOCAL_TENANT,
        primary_key=True,
        max_length=200,
        sa_column_kwargs={"server_default": LOCAL_TENANT},
    )
    id: str = Field(primary_key=True, max_length=200)
    display_name: str = Field(default="", max_length=200)
    role: str = Field(default=Role.MEMBER.value, max_length=16)
    #: The platform says this member administers the workspace or server (Slack
    #: admins/owners, Discord Manage Server), kept in sync by the chat adapters.
    platform_admin: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    timezone: str | None = Field(default=None, max_length=64)
    #: Secret of the member's calendar feed URL (``/calendar/<token>.ics``), if issued.
    calendar_token: str | None = Field(default=None, max_length=64, unique=True)
    created_at: datetime = _utc()
    updated_at: datetime = _utc()


class Schedule(SQLModel, table=True):
    """What a person asked for: a body, a destination and when (once or a rule)."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.Index("ix_schedule_owner_state", "owner", "state"),
        sa.Index("ix_schedule_state_next", "state", "next_run_at"),
        sa.Index("ix_schedule_tenant_state", "tenant", "state"),
        sa.Index("ux_schedule_owner_key", "tenant", "owner", "idempotency_key", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    #: The workspace or server it belongs to (``slack:T…``, ``discord:<guild>``, ``local``).
    tenant: str = Field(
        default=LOCAL_TENANT, max_length=200, sa_column_kwargs={"server_default": LOCAL_TENANT}
    )
    owner: str = Field(max_length=200)
    destination: str = Field(max_length=2000, index=True)
    body: str = Field(sa_type=sa.Text)
    expression: str = Field(max_length=1000)
    timezone: str = Field(max_length=64)
    #: RFC 5545 text (DTSTART;TZID=... and RRULE lines), or None for a one-off.
    rrule: str | None = Field(default=None, sa_type=sa.Text)
    #: The first occurrence (UTC).
    starts_at: datetime = _utc()
    #: The next planned occurrence (UTC), None once nothing is left to send.
    next_run_at: datetime | None = _utc(default=None)
    state: str = Field(default=ScheduleState.ACTIVE.value, max_length=16)
    #: urgent, normal or bulk (core.preferences): its jobs' rank in the queue.
    priority: str = Field(
        default="normal", max_length=8, sa_column_kwargs={"server_default": "normal"}
    )
    #: What its latest tried occurrence did (:class:`Outcome`), None before any was
    #: tried; recorded in the transaction that records the job's outcome.
    last_outcome: str | None = Field(default=None, max_length=16)
    idempotency_key: str | None = Field(default=None, max_length=200)
    max_lateness_s: int | None = Field(default=None)
    #: Presentation options passed to the channel (Slack blocks, sender name, email
    #: subject...). Never secrets.
    options: dict[str, Any] = Field(
        default_factory=dict, sa_type=JSON, sa_column_kwargs={"server_default": "{}"}
    )
    version: int = Field(default=1)
    #: The event feed this schedule is a reminder of (set by Herald only, never by a
    #: request): a feed finds its reminders by this link, its owner and its tenant.
    feed_id: int | None = Field(
        default=None, foreign_key="feed.id", ondelete="SET NULL", index=True
    )
    #: Its recipients (core.routing): each a destination or a chain tried in order, and
    #: the zone its hour is read in. ``destination`` is the first one's first step.
    recipients: list[dict[str, Any]] = Field(
        default_factory=list, sa_type=JSON, sa_column_kwargs={"server_default": "[]"}
    )
    #: Ids of the calendars (core.calendars) whose events are dates to skip.
    skip_calendars: list[int] = Field(
        default_factory=list, sa_type=JSON, sa_column_kwargs={"server_default": "[]"}
    )
    #: Occurrences in a row that failed (dead, expired, discarded), counted once per
    #: occurrence (``failed_through``: the latest counted); a delivery resets it. A
    #: recurring schedule at ``HERALD_AUTO_PAUSE_AFTER`` is paused by the system.
    failed_streak: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    failed_through: datetime | None = _utc(default=None)
    #: False: never paused for failing (``--no-auto-pause``).
    auto_pause: bool = Field(default=True, sa_column_kwargs={"server_default": sa.true()})
    #: The named template its text comes from (core.render), and the version it sends:
    #: ``body`` and the template's parts in ``options`` are that version's, copied when
    #: it was saved or the template was edited, so a claim reads nothing more. None:
    #: its own text.
    template_id: int | None = Field(
        default=None, foreign_key="template.id", ondelete="SET NULL", index=True
    )
    template_version: int | None = Field(default=None)
    #: Kept out of its channel's agenda (``--private``): only its author, operators and
    #: admins see it listed, and it is no one else's duplicate.
    private: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    created_at: datetime = _utc()
    updated_at: datetime = _utc()

    @property
    def shown_state(self) -> str:
        """Its state as people read it (see :func:`describe_state`)."""
        return describe_state(self.state, self.rrule is not None, self.last_outcome)

    @property
    def destinations(self) -> list[str]:
        """Every destination it may send to, in order (each recipient's chain)."""
        from core.routing import from_json

        return [d for r in from_json(self.recipients, self.destination) for d in r.to]


class Template(SQLModel, table=True):
    """A named message of a tenant, written once and scheduled many times with data
    (core.render): its current version's parts; every version is kept in
    :class:`TemplateVersion`."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (sa.UniqueConstraint("tenant", "name", name="uq_template_tenant_name"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=200)
    name: str = Field(max_length=64)
    description: str = Field(default="", max_length=500)
    #: The current version's parts (a copy of its TemplateVersion row).
    version: int = Field(default=1)
    body: str = Field(sa_type=sa.Text)
    subject: str | None = Field(default=None, max_length=1000)
    blocks: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    embeds: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    #: Its declared variables, name → kind (core.render.KINDS).
    variables: dict[str, str] = Field(
        default_factory=dict, sa_type=JSON, sa_column_kwargs={"server_default": "{}"}
    )
    created_by: str = Field(max_length=200)
    updated_by: str = Field(max_length=200)
    created_at: datetime = _utc()
    updated_at: datetime = _utc()


class TemplateVersion(SQLModel, table=True):
    """One version of a template, as it was saved: what a schedule kept on it sends."""

    __tablename__ = "template_version"
    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (sa.UniqueConstraint("template_id", "version", name="uq_template_version"),)

    id: int | None = Field(default=None, primary_key=True)
    template_id: int = Field(foreign_key="template.id", ondelete="CASCADE")
    version: int
    body: str = Field(sa_type=sa.Text)
    subject: str | None = Field(default=None, max_length=1000)
    blocks: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    embeds: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    variables: dict[str, str] = Field(
        default_factory=dict, sa_type=JSON, sa_column_kwargs={"server_default": "{}"}
    )
    author: str = Field(max_length=200)
    created_at: datetime = _utc()


#: How long the reason for turning down a retry request may be.
REJECT_REASON_CHARS = 500


class Job(SQLModel, table=True):
    """One planned send of a schedule."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.UniqueConstraint(
            "schedule_id", "recipient", "occurrence_at", "ladder", name="uq_job_schedule_ladder"
        ),
        # On PostgreSQL the indexes on state hold only the rows their queries read:
        # claiming a job or recording its outcome then adds no entry to two of them
        # (SQLite uses a partial index only for queries that repeat its condition).
        sa.Index("ix_job_state_due", "state", "due_at", postgresql_where=sa.text(WAITING_SQL)),
        # the claim's own index: waiting jobs in due order (first created first among
        # those due at the same moment), nothing else
        sa.Index(
            "ix_job_waiting_due",
            "due_at",
            "id",
            sqlite_where=sa.text(WAITING_SQL),
            postgresql_where=sa.text(WAITING_SQL),
        ),
        sa.Index(
            "ix_job_state_finished",
            "state",
            "finished_at",
            postgresql_where=sa.text(FINISHED_SQL),
        ),
        sa.Index("ix_job_lease", "state", "lease_expires_at", postgresql_where=sa.text(LEASED_SQL)),
        # waiting jobs whose destination is not their schedule's own (another
        # recipient, a fallback step), by destination: the congestion forecast
        # (core.store.channel_view); most jobs have none and are not in it
        sa.Index(
            "ix_job_waiting_destination",
            "destination",
            "due_at",
            sqlite_where=sa.text(WAITING_SQL + " AND destination IS NOT NULL"),
            postgresql_where=sa.text(WAITING_SQL + " AND destination IS NOT NULL"),
        ),
        # waiting jobs by priority, then in due order (core.preferences.RANK)
        sa.Index(
            "ix_job_waiting_priority",
            "priority",
            "due_at",
            "id",
            sqlite_where=sa.text(WAITING_SQL),
            postgresql_where=sa.text(WAITING_SQL),
        ),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    schedule_id: int = Field(foreign_key="schedule.id", ondelete="CASCADE")
    #: Which of the schedule's recipients it is for (core.routing: its ``id``).
    recipient: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    #: The schedule's occurrence (UTC), the same for every recipient.
    occurrence_at: datetime = _utc()
    #: When it is sent: the occurrence, or the same wall time in the recipient's zone.
    due_at: datetime = _utc()
    #: The destination of its current step; None: the schedule's own (``destination``,
    #: recipient 0's first step).
    destination: str | None = Field(default=None, max_length=2000)
    #: Which step of its recipient's chain it is at (0: the first).
    step: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    #: Its recipient as JSON (core.routing.Recipient.route) when it is more than one
    #: destination in the schedule's zone; None otherwise.
    route: str | None = Field(default=None, sa_type=sa.Text)
    #: When its current step began (for a step's time limit); None: the first step, begun
    #: when the occurrence fell due for its recipient (not ``due_at``, which retries move).
    step_since: datetime | None = _utc(default=None)
    state: str = Field(default=JobState.PENDING.value, max_length=16)
    #: Its schedule's priority as a rank (core.preferences.RANK: 0 urgent, 1 normal,
    #: 2 bulk): claims and rate slots serve the lower rank first.
    priority: int = Field(
        default=1, sa_type=sa.SmallInteger, sa_column_kwargs={"server_default": "1"}
    )
    attempts: int = Field(default=0)
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = _utc(default=None)
    idempotency_key: str = Field(max_length=64, unique=True)
    last_error: str | None = Field(default=None, sa_type=sa.Text)
    #: "" for an occurrence's message; for a step of its ladder (a schedule sent until
    #: done, core.until_done) which step: ``nag 3``, ``escalate 1.0``, ``done``.
    ladder: str = Field(default="", max_length=24, sa_column_kwargs={"server_default": ""})
    #: A ladder step's message it answers: the provider's id of the occurrence's message
    #: (a Slack ``CHANNEL/TS``, a Discord message id), replied to or edited.
    thread: str | None = Field(default=None, max_length=200)
    #: Who marked a delivered occurrence done, and when (state ``acknowledged``).
    done_by: str | None = Field(default=None, max_length=200)
    done_at: datetime | None = _utc(default=None)
    created_at: datetime = _utc()
    updated_at: datetime = _utc()
    finished_at: datetime | None = _utc(default=None)


class Attempt(SQLModel, table=True):
    """The delivery log: one row per try."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.Index("ix_attempt_job_started", "job_id", "started_at"),
        sa.Index("ix_attempt_started", "started_at"),
        sa.Index("ix_attempt_provider_message", "provider", "provider_message_id"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    job_id: int = Field(sa_type=BigId, foreign_key="job.id", ondelete="CASCADE")
    started_at: datetime = _utc()
    finished_at: datetime | None = _utc(default=None)
    outcome: str = Field(max_length=16)
    status_code: int | None = Field(default=None)
    error: str | None = Field(default=None, sa_type=sa.Text)
    provider_message_id: str | None = Field(default=None, max_length=200)
    worker: str = Field(default="", max_length=200)
    #: Where this try went (a recipient's step); None for attempts of an older Herald.
    destination: str | None = Field(default=None, max_length=2000)
    #: The message text as this attempt sent it (variables filled in for its
    #: occurrence); None for attempts of an older Herald, and those that sent nothing.
    body: str | None = Field(default=None, sa_type=sa.Text)
    #: Which provider took it when its channel goes through several (``sendgrid``,
    #: ``twilio``); None: the channel is its own provider.
    provider: str | None = Field(default=None, max_length=40)
    #: What the provider reported later (core.receipts): ``delivered``,
    #: ``undelivered`` or ``bounced``; None: nothing (yet). Never changes once set.
    receipt: str | None = Field(default=None, max_length=16)
    receipt_at: datetime | None = _utc(default=None)
    #: The provider's words of a failed receipt (its error code and reason).
    receipt_detail: str | None = Field(default=None, sa_type=sa.Text)
    #: How long after the job was due this try started (ms); None for older attempts.
    late_ms: int | None = Field(default=None)
    #: Started more than ``HERALD_LATE_AFTER`` after it was due (a catch-up send).
    delayed: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})


class ApprovalKind(StrEnum):
    """What a second person decides (core.approvals): one table for every kind."""

    #: A dead letter sent again: asked by a member or an operator, decided by an admin.
    RETRY = "retry"
    #: A member's message with broadcast mentions, or into an announcement channel,
    #: before it is sent: decided by the tenant's approvers.
    SEND = "send"


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    #: Not decided before the message was due (a one-off: it is not sent).
    EXPIRED = "expired"
    #: Made moot before a decision: the dead letter was retried or discarded, the
    #: schedule edited or cancelled.
    WITHDRAWN = "withdrawn"


class Approval(SQLModel, table=True):
    """A request that a second person decides: a dead letter's retry, or a member's
    message before it is sent (core.approvals, core/cases/approvals.py)."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.Index("ix_approval_tenant_state", "tenant", "state", "id"),
        sa.Index("ix_approval_job", "job_id"),
        sa.Index("ix_approval_schedule", "schedule_id"),
        sa.Index("ix_approval_due", "state", "expires_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=200)
    #: :class:`ApprovalKind`
    kind: str = Field(max_length=16)
    #: The dead letter to retry (kind ``retry``).
    job_id: int | None = Field(
        default=None, sa_type=BigId, foreign_key="job.id", ondelete="CASCADE"
    )
    #: The schedule to send (kind ``send``), at the version asked about.
    schedule_id: int | None = Field(default=None, foreign_key="schedule.id", ondelete="CASCADE")
    schedule_version: int | None = Field(default=None)
    #: :class:`ApprovalState`
    state: str = Field(default=ApprovalState.PENDING.value, max_length=16)
    requested_by: str = Field(max_length=200)
    requested_at: datetime = _utc()
    #: Why it needs a decision, in words ("@channel in a member's message").
    why: str = Field(default="", max_length=500)
    decided_by: str | None = Field(default=None, max_length=200)
    decided_at: datetime | None = _utc(default=None)
    #: A rejection's reason (or an expiry's), as the author reads it.
    reason: str | None = Field(default=None, max_length=REJECT_REASON_CHARS)
    #: Kind ``send``: the occurrence it must be decided before; past it undecided, a
    #: one-off expires and a recurring schedule's request waits for its next.
    expires_at: datetime | None = _utc(default=None)
    #: The request or answer its subject shows now (a dead letter's latest request, or
    #: the rejection read while it stays dead); a retry, a discard or a new request
    #: closes it.
    shown: bool = Field(default=True, sa_column_kwargs={"server_default": sa.true()})


class Receipt(StrEnum):
    """What a provider reports of a message after it accepted it."""

    DELIVERED = "delivered"
    UNDELIVERED = "undelivered"
    BOUNCED = "bounced"


class ProviderHealth(SQLModel, table=True):
    """A provider found down (core.channels.failover): every dispatcher skips it until
    ``down_until``."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "provider_health"

    provider: str = Field(primary_key=True, max_length=40)
    down_until: datetime = _utc()
    reason: str = Field(default="", sa_type=sa.Text)
    changed_at: datetime = _utc()


class Device(SQLModel, table=True):
    """A member's push device (``push:`` reaches all of a member's devices)."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.UniqueConstraint("tenant", "member_id", "token", name="uq_device_member_token"),
        sa.Index("ix_device_member", "tenant", "member_id"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    tenant: str = Field(max_length=200)
    member_id: str = Field(max_length=200)
    #: The FCM registration token.
    token: str = Field(max_length=4096)
    label: str = Field(default="", max_length=100)
    platform: str = Field(default="", max_length=16)
    created_at: datetime = _utc()


class Preference(SQLModel, table=True):
    """A member's say in how Herald reaches them (core.preferences.Preferences as
    JSON); the member id ``*`` holds the tenant's defaults."""

    model_config = {"defer_build": True}  # validators built on first use

    tenant: str = Field(primary_key=True, max_length=200)
    member_id: str = Field(primary_key=True, max_length=200)
    data: str = Field(default="{}", sa_type=sa.Text)
    updated_at: datetime = _utc()
    updated_by: str = Field(default="", max_length=200)


class ReceiptSeen(SQLModel, table=True):
    """A provider callback already taken (its signature's digest): the same callback
    sent again is a replay and is refused. Pruned with the delivery log."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "receipt_seen"

    provider: str = Field(primary_key=True, max_length=40)
    digest: str = Field(primary_key=True, max_length=64)
    seen_at: datetime = _utc()


class Audit(SQLModel, table=True):
    """Who did what to which object, when. Append-only."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.Index("ix_audit_object", "object_type", "object_id"),
        sa.Index("ix_audit_at", "at"),
        sa.Index("ix_audit_tenant_at", "tenant", "at"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    at: datetime = _utc()
    tenant: str = Field(
        default=LOCAL_TENANT, max_length=200, sa_column_kwargs={"server_default": LOCAL_TENANT}
    )
    actor: str = Field(max_length=200)
    action: str = Field(max_length=64)
    object_type: str = Field(max_length=32)
    object_id: str = Field(max_length=64)
    details: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    #: Where the action came from: cli, console, slack, discord, api or system, as the
    #: entry point said (core.actors.Surface); None when it did not say.
    surface: str | None = Field(default=None, max_length=16)


class RateBucket(SQLModel, table=True):
    """A destination's shared rate limit (core.ratelimit): the moment its token bucket
    is full again. Every dispatcher takes its send slots from this row."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "rate_bucket"

    destination: str = Field(primary_key=True, max_length=2000)
    tat: datetime = _utc()


class Worker(SQLModel, table=True):
    """A running dispatcher and its heartbeat (for the console and readiness)."""

    model_config = {"defer_build": True}  # validators built on first use

    id: str = Field(primary_key=True, max_length=200)
    host: str = Field(max_length=200)
    pid: int
    #: The kernel boot and PID namespace it ran in (core.dispatcher.liveness.machine_id):
    #: another dispatcher with the same one may judge it dead when ``pid`` no longer runs.
    machine: str | None = Field(default=None, max_length=100)
    started_at: datetime = _utc()
    heartbeat_at: datetime = _utc()
    stopped_at: datetime | None = _utc(default=None)


class CalendarSource(SQLModel, table=True):
    """An iCalendar source (a URL, refreshed on a schedule, or an uploaded file) and
    its last good content: the blackout dates of skip calendars, the events of feeds."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "calendar"
    __table_args__ = (
        sa.Index("ux_calendar_owner_source", "tenant", "owner", "source", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(
        default=LOCAL_TENANT, max_length=200, sa_column_kwargs={"server_default": LOCAL_TENANT}
    )
    owner: str = Field(max_length=200)
    #: ``https://...`` or ``file:<name>`` for an upload.
    source: str = Field(max_length=2000)
    name: str = Field(default="", max_length=200)
    #: The last good iCalendar text (kept when a refresh fails).
    body: str = Field(default="", sa_type=sa.Text)
    etag: str | None = Field(default=None, max_length=400)
    last_modified: str | None = Field(default=None, max_length=100)
    fetched_at: datetime | None = _utc(default=None)
    checked_at: datetime | None = _utc(default=None)
    last_error: str | None = Field(default=None, sa_type=sa.Text)
    error_at: datetime | None = _utc(default=None)
    failures: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    created_at: datetime = _utc()
    updated_at: datetime = _utc()


class FeedState(StrEnum):
    ACTIVE = "active"
    REMOVED = "removed"


class Feed(SQLModel, table=True):
    """A destination subscribed to a calendar: a reminder ``before_s`` seconds before
    every event, rendered from ``template`` (core.templates)."""

    model_config = {"defer_build": True}  # validators built on first use

    id: int | None = Field(default=None, primary_key=True)
    calendar_id: int = Field(foreign_key="calendar.id", ondelete="CASCADE", index=True)
    tenant: str = Field(
        default=LOCAL_TENANT,
        max_length=200,
        index=True,
        sa_column_kwargs={"server_default": LOCAL_TENANT},
    )
    owner: str = Field(max_length=200)
    destination: str = Field(max_length=2000)
    before_s: int = Field(default=600)
    template: str = Field(sa_type=sa.Text)
    timezone: str = Field(default="UTC", max_length=64)
    state: str = Field(default=FeedState.ACTIVE.value, max_length=16)
    created_at: datetime = _utc()
    updated_at: datetime = _utc()


class TokenScope(StrEnum):
    """What an API token may do, at most (its member's role still decides): ``read``
    (look), ``write`` (also schedule and change), ``admin`` (also decide on dead letters)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


class ApiToken(SQLModel, table=True):
    """A bearer token of the HTTP API: it acts as one member of one tenant, within that
    member's role and its own scope. Only a hash of its secret is stored."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "api_token"
    __table_args__ = (sa.Index("ix_api_token_member", "tenant", "member_id"),)

    #: The token's public id (``hk_…``): shown in lists and the audit log, never secret.
    id: str = Field(primary_key=True, max_length=32)
    tenant: str = Field(default=LOCAL_TENANT, max_length=200)
    member_id: str = Field(max_length=200)
    scope: str = Field(max_length=8)
    name: str = Field(default="", max_length=200)
    #: SHA-256 of the secret (hex): the secret has 256 random bits, so no slow hash is needed.
    secret_hash: str = Field(max_length=64)
    created_by: str = Field(max_length=200)
    created_at: datetime = _utc()
    expires_at: datetime | None = _utc(default=None)
    revoked_at: datetime | None = _utc(default=None)
    last_used_at: datetime | None = _utc(default=None)


class Event(SQLModel, table=True):
    """What happened to a job or a schedule, for applications (core.events): pushed to
    event hooks and read by ``GET /v1/events``. Written in the transaction that records
    the outcome, and only when someone listens (core.events.ALWAYS, or a hook's types).

    Read in ``(tx, id)`` order: ``tx`` is the writing transaction (PostgreSQL's
    ``pg_current_xact_id()``; 0 on SQLite, whose one writer commits in id order), so a
    reader that reads only transactions older than every running one never passes an
    event committed later (core.store.events)."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (
        sa.Index("ix_event_tenant_order", "tenant", "tx", "id"),
        sa.Index("ix_event_at", "at"),
        # SQLite gives a new row the highest id + 1: after every event was pruned, ids
        # would start again below the cursors hooks and readers hold
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    tx: int = Field(default=0, sa_type=sa.BigInteger, sa_column_kwargs={"server_default": "0"})
    tenant: str = Field(max_length=200)
    #: core.events.EventType
    type: str = Field(max_length=32)
    at: datetime = _utc()
    schedule_id: int | None = Field(default=None)
    job_id: int | None = Field(default=None, sa_type=sa.BigInteger)
    #: The schedule's owner (a member's hook sees its own schedules' events only).
    owner: str = Field(default="", max_length=200)
    #: The job's idempotency key (a hook may filter on its prefix).
    key: str | None = Field(default=None, max_length=200)
    #: The event's ``data`` object as JSON text (core.events.payload).
    data: str = Field(default="{}", sa_type=sa.Text)


class HookState(StrEnum):
    ACTIVE = "active"
    #: Failing for ``HERALD_HOOK_DISABLE_AFTER``: nothing is pushed until re-enabled.
    DISABLED = "disabled"


class EventHook(SQLModel, table=True):
    """An application's subscription to events: pushed to ``url``, signed with
    ``secret`` (Standard Webhooks), from the cursor ``(cursor_tx, cursor_id)`` on."""

    model_config = {"defer_build": True}  # validators built on first use

    __tablename__ = "event_hook"
    __table_args__ = (sa.Index("ix_event_hook_tenant", "tenant", "state"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=200)
    #: Who registered it: an admin's hook hears the tenant's events, a member's only
    #: those of the member's own schedules.
    owner: str = Field(max_length=200)
    #: Whether ``owner`` was an admin when it was registered (what it hears).
    tenant_wide: bool = Field(default=False)
    url: str = Field(max_length=2000)
    #: The event types it hears (core.events.EventType values).
    types: list[str] = Field(default_factory=list, sa_type=JSON)
    schedule_id: int | None = Field(default=None)
    key_prefix: str | None = Field(default=None, max_length=200)
    description: str = Field(default="", max_length=200)
    #: ``whsec_`` and 32 random bytes in base64: the signing key (shown once).
    secret: str = Field(max_length=100)
    state: str = Field(default=HookState.ACTIVE.value, max_length=16)
    cursor_tx: int = Field(default=0, sa_type=sa.BigInteger)
    cursor_id: int = Field(default=0, sa_type=sa.BigInteger)
    #: The failing event's tries, and when to try again.
    tries: int = Field(default=0)
    next_try_at: datetime | None = _utc(default=None)
    failing_since: datetime | None = _utc(default=None)
    last_error: str | None = Field(default=None, sa_type=sa.Text)
    delivered: int = Field(default=0, sa_type=sa.BigInteger)
    last_delivered_at: datetime | None = _utc(default=None)
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = _utc(default=None)
    created_at: datetime = _utc()
    updated_at: datetime = _utc()
    disabled_at: datetime | None = _utc(default=None)


class Notice(SQLModel, table=True):
    """Something its author is told of by direct message on the surface they scheduled
    from (bot/notices.py): a failed delivery, a schedule paused for failing, a disabled
    event hook. Written in the transaction that records it; gone once told."""

    model_config = {"defer_build": True}  # validators built on first use

    __table_args__ = (sa.Index("ix_notice_owner", "owner", "id"),)

    id: int | None = Field(default=None, primary_key=True, sa_type=BigId)
    tenant: str = Field(max_length=200)
    owner: str = Field(max_length=200)
    #: core.events.NoticeKind
    kind: str = Field(max_length=16)
    schedule_id: int | None = Field(default=None)
    job_id: int | None = Field(default=None, sa_type=sa.BigInteger)
    #: The approval an approver is asked to decide (kind ``approval``), or whose
    #: decision the author is told (core.approvals).
    approval_id: int | None = Field(default=None)
    #: Why, in one sentence (the job's last error, or the pause's reason).
    reason: str = Field(default="", sa_type=sa.Text)
    at: datetime = _utc()
    #: Taken by an adapter until then (a crash re-tells it after).
    lease_until: datetime | None = _utc(default=None)


class Lateness(SQLModel, table=True):
    """How late sends started, per dispatcher and minute, as counts per bucket of
    core.metrics.LATENESS_BUCKETS: the console's p50/p95/p99 (flushed every few
    seconds with the heartbeat, never per send)."""

    model_config = {"defer_build": True}  # validators built on first use

    worker: str = Field(primary_key=True, max_length=200)
    minute: datetime = Field(sa_type=UTCDateTime, primary_key=True)
    #: Counts per bucket, as a JSON array.
    counts: str = Field(default="[]", sa_type=sa.Text)


def _archive(table: sa.Table, *indexes: tuple[str, ...]) -> sa.Table:
    """A table of the same columns as ``table`` (its archive: no keys but the primary,
    no defaults; rows arrive as they were)."""
    columns = [
        sa.Column(
            c.name, c.type, primary_key=c.primary_key, nullable=c.nullable, autoincrement=False
        )
        for c in table.columns
    ]
    name = f"{table.name}_archive"
    return sa.Table(
        name,
        SQLModel.metadata,
        *columns,
        *(sa.Index(f"ix_{name}_{'_'.join(cols)}", *cols) for cols in indexes),
    )


#: Finished jobs and their attempts older than ``HERALD_RETENTION_DAYS``, moved here
#: by the housekeeping (core.store.archive) and pruned after ``HERALD_ARCHIVE_DAYS``.
JOB_ARCHIVE = _archive(Job.__table__, ("schedule_id", "occurrence_at"), ("finished_at",))  # type: ignore[attr-defined]
ATTEMPT_ARCHIVE = _archive(Attempt.__table__, ("job_id",), ("started_at",))  # type: ignore[attr-defined]
