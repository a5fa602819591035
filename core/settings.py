"""One typed settings object, read once from the environment (and an optional ``.env``).

Build it at start-up with :func:`load_settings` and pass it in; nothing else in Herald
reads ``os.environ``. Each field's alias is its variable (any case; ``.env`` below the
environment, a keyword of :func:`load_settings` above both); values are text that the
field's type or validator reads, never JSON. It is a plain pydantic model read by
:func:`load_settings`, not pydantic-settings' ``BaseSettings``: that library and the
asyncio it imports cost every command ~20 ms and ``herald when`` ~35 ms (issue 33).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator, Mapping
from datetime import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)

from core.channel_settings import ChannelSettings
from core.errors import ConfigError
from core.scrub import MIN_SECRET, SecretParts

if TYPE_CHECKING:
    from core.calendars import FetchLimits
    from core.netguard import Guard

#: The SQLite file of the default database, in :func:`data_dir`.
DATABASE_FILE = "herald.db"


def data_dir() -> Path:
    """Herald's per-user data folder: the platform's user data directory
    (``~/.local/share/herald`` or ``$XDG_DATA_HOME/herald`` on Linux,
    ``~/Library/Application Support/herald`` on macOS, ``%LOCALAPPDATA%\\herald`` on
    Windows), whatever folder a command runs in. Created when the database is."""
    import platformdirs

    return platformdirs.user_data_path("herald", appauthor=False)


def default_database_url() -> str:
    """``HERALD_DATABASE_URL`` when unset: one SQLite file per user, in :func:`data_dir`."""
    return f"sqlite:///{(data_dir() / DATABASE_FILE).as_posix()}"


#: The settings file read from the folder a process starts in, when it is there.
ENV_FILE = ".env"


class Settings(ChannelSettings):
    """Herald's configuration (:func:`load_settings` reads it). Secrets are ``SecretStr``
    so they never print, and so the log scrubber hunts them (:meth:`secret_values`).
    Each platform's settings are declared in ``core/channel_settings/``, bases of this
    model through :class:`~core.channel_settings.ChannelSettings`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, validate_default=True)

    #: Unset: one SQLite file per user (:func:`default_database_url`), not the
    #: current folder's, so every folder a command runs in sees the same schedules.
    database_url: str = Field(default_factory=default_database_url, alias="HERALD_DATABASE_URL")
    #: Admins of every tenant, besides those the database keeps: member ids such as
    #: ``slack:U0123``, ``discord:456``, ``local:alice``; each process reads it at start.
    admins: frozenset[str] = Field(default=frozenset(), alias="HERALD_ADMINS")
    #: The time zone (an IANA name such as ``Europe/Berlin``) of members who have set
    #: none: their times and quiet hours are read in it.
    default_tz: str = Field(default="UTC", alias="HERALD_DEFAULT_TZ")
    #: The time of day of a rule that names none ("every weekday"), in its own zone.
    default_time: time = Field(default=time(9, 0), alias="HERALD_DEFAULT_TIME")
    #: Per tenant, over HERALD_DEFAULT_TIME: ``slack:T0123=08:30,discord:42=10:00``.
    tenant_default_times: dict[str, time] = Field(
        default_factory=dict, alias="HERALD_TENANT_DEFAULT_TIMES"
    )
    #: Whether messages into shared channels (Slack and Discord channels: not direct
    #: messages, webhooks or email) end with "scheduled by NAME", the owner's name
    #: as Herald knows it.
    scheduled_by: bool = Field(default=True, alias="HERALD_SCHEDULED_BY")
    #: Per tenant, over HERALD_SCHEDULED_BY: ``slack:T0123=off,discord:42=on`` (each value
    #: ``on``/``off``, ``true``/``false``, ``yes``/``no`` or ``1``/``0``).
    tenant_scheduled_by: dict[str, bool] = Field(
        default_factory=dict, alias="HERALD_TENANT_SCHEDULED_BY"
    )
    #: The login name the terminal (the CLI, the console) acts as, ``local:NAME``;
    #: empty: the operating system's name of the user running Herald.
    user: str = Field(default="", alias="USER")

    #: Which chat adapters this process connects: "auto" (every one with a token),
    #: "none", or a comma-separated list ("slack", "discord").
    adapters: str = Field(default="auto", alias="HERALD_ADAPTERS")
    #: The address people reach `herald run` at (calendar feed links); default host:port.
    public_url: str | None = Field(default=None, alias="HERALD_PUBLIC_URL")
    #: The address `herald run` serves HTTP on (health, metrics, the HTTP API, calendar
    #: feeds, delivery receipts, Slack's HTTP mode); ``0.0.0.0``: every interface.
    http_host: str = Field(default="127.0.0.1", alias="HERALD_HTTP_HOST")
    #: The TCP port of that HTTP server.
    http_port: int = Field(default=8080, alias="HERALD_HTTP_PORT")
    #: Seconds a new connection to the HTTP port has to send its request line and
    #: headers, however it trickles them; then it is closed.
    http_header_timeout: float = Field(default=10.0, gt=0, alias="HERALD_HTTP_HEADER_TIMEOUT")
    #: Seconds an idle keep-alive connection to the HTTP port is kept open waiting for
    #: its next request.
    http_idle_timeout: float = Field(default=30.0, gt=0, alias="HERALD_HTTP_IDLE_TIMEOUT")
    #: Seconds a request body sent to the HTTP port may take to arrive.
    http_body_timeout: float = Field(default=10.0, gt=0, alias="HERALD_HTTP_BODY_TIMEOUT")
    #: Connections the HTTP port serves at once; one more is answered 503 and closed.
    http_max_connections: int = Field(default=256, ge=1, alias="HERALD_HTTP_MAX_CONNECTIONS")
    #: The most bytes of body Slack's ``POST /slack/events`` accepts (a larger one gets
    #: 413 before it is read); the HTTP API and receipts have limits of their own.
    http_max_body: int = Field(default=1024 * 1024, ge=1, alias="HERALD_HTTP_MAX_BODY")
    #: Requests per second each member may make to the HTTP API (/v1) on average, all
    #: their tokens together, per process; requests with no valid token share one
    #: allowance per client address. Past it: 429 with Retry-After.
    api_rate: float = Field(default=20.0, gt=0, alias="HERALD_API_RATE")
    #: How many HTTP API requests a member (or an address without a valid token) may
    #: send at once before HERALD_API_RATE holds them back.
    api_burst: int = Field(default=40, ge=1, alias="HERALD_API_BURST")
    #: The most bytes one bulk import (``herald import``, ``POST /v1/imports``) may have;
    #: the API refuses a larger body with 413 before reading it
    import_max_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        alias="HERALD_IMPORT_MAX_BYTES",
        validation_alias=AliasChoices("HERALD_IMPORT_MAX_BYTES", "HERALD_API_MAX_IMPORT"),
    )
    #: The most lines one bulk import may have; a longer one is refused whole.
    import_max_lines: int = Field(default=20_000, ge=1, alias="HERALD_IMPORT_MAX_LINES")
    #: Lines of bulk import each API token may send a minute, counted per process
    #: (0: no limit); imports at the terminal are not counted.
    import_lines_per_minute: int = Field(
        default=20_000, ge=0, alias="HERALD_IMPORT_LINES_PER_MINUTE"
    )
    #: The CLI as a client: with this and HERALD_API_TOKEN set, `herald schedule`,
    #: `list`, `show`, `edit`, `cancel` and the other commands bot/cli/remote.py names
    #: ask the service at this URL (its HTTP API) instead of opening the database.
    api_url: str | None = Field(default=None, alias="HERALD_API_URL")
    #: The API token (``hk_…``, from `herald token create`) the CLI sends to
    #: HERALD_API_URL; its commands act as the token's member.
    api_token: SecretStr | None = Field(default=None, alias="HERALD_API_TOKEN")

    # the console
    #: The member the console acts as (default local:$USER); `herald console --serve`
    #: sets it for each browser tab to the actor its login names.
    console_actor: str | None = Field(default=None, alias="HERALD_CONSOLE_ACTOR")
    #: `herald console --serve` logins: a file of "ACTOR_ID SECRET" lines (mode 600);
    #: unset, the server makes one secret at start, prints it once, acting as local:$USER.
    console_logins_file: str | None = Field(default=None, alias="HERALD_CONSOLE_LOGINS_FILE")

    # the HTTP channels and calendars
    #: Seconds each request to a chat platform or provider may take (Slack, Discord,
    #: webhooks, email, SMS and push; each SMTP command); the chat adapters connect within it.
    http_timeout: float = Field(default=30.0, gt=0, alias="HERALD_HTTP_TIMEOUT")
    #: The most connections the HTTP channels keep open to one host (0: as many as
    #: HERALD_CONCURRENCY, the size of the shared pool).
    http_per_host: int = Field(default=0, ge=0, alias="HERALD_HTTP_PER_HOST")
    #: Allow webhooks, Discord webhooks, calendars and Apprise services to reach loopback,
    #: private and link-local addresses (off: the network guard refuses them).
    webhook_allow_private: bool = Field(default=False, alias="HERALD_WEBHOOK_ALLOW_PRIVATE")
    #: Seconds a whole calendar fetch may take (redirects and a trickling body included).
    calendar_fetch_timeout: float = Field(
        default=20.0, gt=0, le=600, alias="HERALD_CALENDAR_FETCH_TIMEOUT"
    )
    #: The most bytes read from one calendar URL (after decompression).
    calendar_max_bytes: int = Field(
        default=5 * 1024 * 1024, ge=1024, le=1024**3, alias="HERALD_CALENDAR_MAX_BYTES"
    )

    #: Per-destination rate limits: ``PREFIX=RATE`` pairs, comma-separated
    #: (``webhook:https://hooks.internal/=200/s``, ``slack:C0ALERTS=1/s:10``); the
    #: longest matching prefix wins, others keep their channel's default.
    rate_limits: str | None = Field(default=None, alias="HERALD_RATE_LIMITS")
    #: A rate-limited destination never has more jobs claimed, by every dispatcher
    #: together, than its limit sends in this many seconds (at most rate × horizon);
    #: a claimed job whose send slot is further off is handed back.
    claim_horizon: float = Field(default=10.0, gt=0, le=3600, alias="HERALD_CLAIM_HORIZON")

    # calendars (read in worker processes: core.calendars.CalendarReader)
    #: Seconds one calendar may take to parse and expand; its worker is killed then.
    calendar_read_timeout: float = Field(default=20.0, gt=0, alias="HERALD_CALENDAR_READ_TIMEOUT")
    #: The most event occurrences one calendar may have in the window Herald reads.
    calendar_max_occurrences: int = Field(
        default=10_000, ge=1, alias="HERALD_CALENDAR_MAX_OCCURRENCES"
    )

    # logs
    #: How log lines on stderr look: ``human`` (readable) or ``json`` (one object a line).
    log_format: Literal["human", "json"] = Field(default="human", alias="HERALD_LOG_FORMAT")
    #: The lowest level logged (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``); unset:
    #: ``INFO`` for `herald run`, ``WARNING`` for the other commands.
    log_level: str | None = Field(default=None, alias="HERALD_LOG_LEVEL")
    #: Traces through OpenTelemetry (the ``otel`` extra; the exporter reads the standard
    #: OTEL_* variables): a span for each schedule created, claim, send and recording.
    otel: bool = Field(default=False, alias="HERALD_OTEL")

    # dispatcher
    #: Deliveries one dispatcher (a `herald run` process) sends at once; also the size of the
    #: HTTP channels' shared connection pool.
    concurrency: int = Field(default=64, ge=1, alias="HERALD_CONCURRENCY")
    #: The event loop of `herald run`: uvloop where it is installed (auto), or asyncio's
    #: own; ``uvloop`` insists (an error where it is missing).
    event_loop: Literal["auto", "uvloop", "asyncio"] = Field(
        default="auto", alias="HERALD_EVENT_LOOP"
    )
    #: The most jobs a dispatcher claims in one query; it holds at most twice this (or
    #: twice HERALD_CONCURRENCY, the larger) claimed and not yet recorded.
    batch_size: int = Field(default=2000, ge=1, le=10_000, alias="HERALD_BATCH_SIZE")
    #: Seconds a claimed job is leased to its dispatcher (renewed while it lives); a
    #: job whose lease ran out is handed back at the next sweep and sent again.
    lease_seconds: float = Field(default=60.0, gt=0, alias="HERALD_LEASE_SECONDS")
    #: Seconds between two sweeps of a dispatcher: it claims whatever is due, reclaims
    #: dead dispatchers' jobs and expired leases; the chat adapters tell authors of
    #: their failures as often.
    sweep_seconds: float = Field(default=5.0, gt=0, alias="HERALD_SWEEP_SECONDS")
    #: A dispatcher silent (no heartbeat) for this many sweeps is dead: its jobs are
    #: handed back at once instead of when their leases run out.
    dead_after_sweeps: int = Field(default=3, ge=2, le=1000, alias="HERALD_DEAD_AFTER_SWEEPS")
    #: Tries a message gets before it becomes a dead letter (a 429 with Retry-After is
    #: not counted).
    max_attempts: int = Field(default=8, ge=1, alias="HERALD_MAX_ATTEMPTS")
    #: Seconds: a failed try is retried after a random delay of up to this × 2^(tries − 1),
    #: at most HERALD_BACKOFF_CAP; a provider's Retry-After wins.
    backoff_base: float = Field(default=5.0, gt=0, alias="HERALD_BACKOFF_BASE")
    #: Seconds: the longest delay before a retry.
    backoff_cap: float = Field(default=3600.0, gt=0, alias="HERALD_BACKOFF_CAP")
    #: Seconds a message may start after it was due (after an outage); later, it is
    #: expired, not sent. A schedule's own limit wins over it.
    max_lateness: float = Field(default=3600.0, gt=0, alias="HERALD_MAX_LATENESS")
    #: Seconds `herald run` waits, when told to stop, for deliveries in flight to
    #: finish; the rest are handed back to be sent again.
    shutdown_timeout: float = Field(default=30.0, ge=0, alias="HERALD_SHUTDOWN_TIMEOUT")
    #: Days a finished job and its attempts stay in the active tables before the
    #: hourly housekeeping moves them to the archive.
    retention_days: float = Field(default=30.0, gt=0, alias="HERALD_RETENTION_DAYS")
    #: The most dead letters kept: the hourly housekeeping discards the oldest beyond
    #: it, audited and logged as a warning.
    dead_letter_max: int = Field(default=100_000, ge=1, alias="HERALD_DEAD_LETTER_MAX")
    #: Days a dead letter is kept: the hourly housekeeping discards older ones, audited
    #: and logged as a warning.
    dead_letter_days: float = Field(default=90.0, gt=0, alias="HERALD_DEAD_LETTER_DAYS")
    #: Finished jobs and attempts moved out of the active tables (after
    #: HERALD_RETENTION_DAYS) stay in the archive this many days; 0: kept for ever.
    archive_days: float = Field(default=365.0, ge=0, alias="HERALD_ARCHIVE_DAYS")

    # outcomes told back (core.events, issue 38)
    #: A recurring schedule whose last N occurrences all failed is paused; 0: never.
    auto_pause_after: int = Field(default=3, ge=0, le=1000, alias="HERALD_AUTO_PAUSE_AFTER")
    #: A send that starts more than this many seconds after it was due is ``delayed``.
    late_after: float = Field(default=60.0, gt=0, alias="HERALD_LATE_AFTER")
    #: An author's failures within this many seconds of the last notice make one digest.
    notice_digest_seconds: float = Field(default=300.0, ge=0, alias="HERALD_NOTICE_DIGEST")
    #: An event hook failing for this many seconds is disabled and its owner told.
    hook_disable_after: float = Field(default=86400.0, gt=0, alias="HERALD_HOOK_DISABLE_AFTER")
    #: Event hooks one tenant may register at most.
    max_event_hooks: int = Field(default=20, ge=1, le=1000, alias="HERALD_MAX_EVENT_HOOKS")

    # tenants, mentions and quotas (core.tenancy)
    #: Slack workspaces (team ids) this deployment serves; empty: the bot token's own.
    slack_team_ids: frozenset[str] = Field(default=frozenset(), alias="HERALD_SLACK_TEAM_IDS")
    #: Tenants whose members (not only admins) may use Slack's <!channel>, <!here>,
    #: <!everyone> and user-group mentions.
    broadcast_tenants: frozenset[str] = Field(default=frozenset(), alias="HERALD_BROADCAST_TENANTS")
    #: Tenants whose members' broadcast mentions (Slack's <!channel>, <!here>,
    #: <!everyone> and user groups; Discord's @everyone, @here and roles they may not
    #: mention) are held for approval instead of refused (core.approvals); ``all``: every
    #: tenant's.
    approve_broadcasts: frozenset[str] = Field(
        default=frozenset(), alias="HERALD_APPROVE_BROADCASTS"
    )
    #: Announcement channels (destinations, ``slack:C0123``, ``discord:1234…``): a
    #: member's message into one waits for an approver.
    announcement_channels: frozenset[str] = Field(
        default=frozenset(), alias="HERALD_ANNOUNCEMENT_CHANNELS"
    )
    #: Members (``slack:U0123``) who approve their tenant's held messages besides its
    #: admins.
    approvers: frozenset[str] = Field(default=frozenset(), alias="HERALD_APPROVERS")
    #: Tenants whose members (not only admins) may post into Slack under another name or
    #: icon (``username``, ``icon_url``, ``icon_emoji``): by default the terminal's.
    custom_sender_tenants: frozenset[str] = Field(
        default=frozenset({"local"}), alias="HERALD_CUSTOM_SENDER_TENANTS"
    )
    #: Tenants no quota applies to (the terminal's, by default), except through an API
    #: token: a token is bound by its member's quotas unless it is listed below.
    quota_exempt_tenants: frozenset[str] = Field(
        default=frozenset({"local"}), alias="HERALD_QUOTA_EXEMPT_TENANTS"
    )
    #: API tokens (their ids, as ``herald token list`` shows them) no quota applies to:
    #: the only exemption a token has.
    quota_exempt_tokens: frozenset[str] = Field(
        default=frozenset(), alias="HERALD_QUOTA_EXEMPT_TOKENS"
    )
    #: The most active or paused schedules one member may have in a tenant (a schedule
    #: counts once per recipient); exempt tenants and tokens aside.
    quota_schedules_per_member: int = Field(
        default=200, ge=1, alias="HERALD_QUOTA_SCHEDULES_PER_MEMBER"
    )
    #: The most active or paused schedules one tenant may have, all its members
    #: together (counted once per recipient); exempt tenants and tokens aside.
    quota_schedules: int = Field(default=10_000, ge=1, alias="HERALD_QUOTA_SCHEDULES_PER_TENANT")
    #: Seconds: the shortest interval of a member's recurring schedule into a shared
    #: chat channel (0: no minimum).
    quota_min_interval: float = Field(default=900.0, ge=0, alias="HERALD_QUOTA_MIN_INTERVAL")
    #: Slack and Discord commands per member per minute (0: no limit).
    quota_commands_per_minute: int = Field(
        default=30, ge=0, alias="HERALD_QUOTA_COMMANDS_PER_MINUTE"
    )
    #: Messages one member may have due to one destination within any hour (their own
    #: DMs, admins and exempt tenants aside; 0: no cap). core/cases/recipient_cap.py.
    recipient_hourly_cap: int = Field(default=30, ge=0, alias="HERALD_RECIPIENT_HOURLY_CAP")

    @field_validator(
        "slack_team_ids",
        "broadcast_tenants",
        "approve_broadcasts",
        "announcement_channels",
        "approvers",
        "custom_sender_tenants",
        "quota_exempt_tenants",
        "quota_exempt_tokens",
        mode="before",
    )
    @classmethod
    def _split_list(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("quota_exempt_tokens", mode="after")
    @classmethod
    def _token_ids(cls, value: frozenset[str]) -> frozenset[str]:
        """Token ids as ``herald token list`` shows them (an ``hk_`` before one is dropped)."""
        return frozenset(part.removeprefix("hk_") for part in value)

    @field_validator("default_time", mode="before")
    @classmethod
    def _read_time(cls, value: object) -> object:
        return _time_of_day(value) if isinstance(value, str) else value

    @field_validator("tenant_default_times", mode="before")
    @classmethod
    def _read_tenant_times(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        times: dict[str, time] = {}
        for pair in value.split(","):
            if not pair.strip():
                continue
            tenant, sep, text = pair.rpartition("=")
            if not sep or not tenant.strip():
                raise ValueError("each entry is TENANT=TIME, e.g. slack:T0123=08:30")
            times[tenant.strip()] = _time_of_day(text)
        return times

    @field_validator("tenant_scheduled_by", mode="before")
    @classmethod
    def _read_tenant_switches(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        switches: dict[str, bool] = {}
        for pair in value.split(","):
            if not pair.strip():
                continue
            tenant, sep, text = pair.rpartition("=")
            word = text.strip().lower()
            if not sep or not tenant.strip() or word not in _SWITCH:
                raise ValueError("each entry is TENANT=on or TENANT=off, e.g. slack:T0123=off")
            switches[tenant.strip()] = _SWITCH[word]
        return switches

    def default_time_for(self, tenant: str) -> time:
        """The time of day a rule without one takes in ``tenant``."""
        return self.tenant_default_times.get(tenant, self.default_time)

    @field_validator("rate_limits")
    @classmethod
    def _check_rate_limits(cls, value: str | None) -> str | None:
        if value is None:  # the default (validated too): no need to load the channels
            return value
        from core.ratelimit import RateLimits

        try:
            RateLimits.parse(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("admins", mode="before")
    @classmethod
    def _split_admins(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(part.strip() for part in value.split(",") if part.strip())
        return value

    def network_guard(self) -> Guard:
        """The network guard for every URL a member gives (webhooks, calendars, ...)."""
        from core.netguard import Guard

        return Guard(allow_private=self.webhook_allow_private)

    def calendar_limits(self) -> FetchLimits:
        """The limits of one calendar fetch (deadline, bytes)."""
        from core.calendars import FetchLimits

        return FetchLimits(deadline=self.calendar_fetch_timeout, max_bytes=self.calendar_max_bytes)

    def secret_values(self) -> list[str]:
        """Every configured secret's plain text (for the log scrubber): the value of
        every ``SecretStr`` field, found by its type (:func:`_secrets`), so a setting
        declared a secret is scrubbed without being listed anywhere."""
        return [v for v in _secrets(self) if len(v) >= MIN_SECRET]

    @property
    def database_is_default(self) -> bool:
        """Whether the database is the per-user default (HERALD_DATABASE_URL unset)."""
        return self.database_url == default_database_url()

    @property
    def local_actor(self) -> str:
        """The actor id of the person at this terminal: ``local:$USER``."""
        if self.user:
            return f"local:{self.user}"
        try:
            return f"local:{pwd.getpwuid(os.getuid()).pw_name}"
        except (KeyError, OSError):
            return "local:unknown"


def _secrets(value: object, parts: SecretParts | None = None) -> Iterator[str]:
    """The plain text of every ``SecretStr`` in ``value``: a model's fields (split as
    a field's :class:`~core.scrub.SecretParts` says), mappings' values and sequences'
    items, however deep."""
    if isinstance(value, SecretStr):
        text = value.get_secret_value()
        yield from (parts.split(text) if parts is not None else (text,))
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            split = next((m for m in field.metadata if isinstance(m, SecretParts)), None)
            yield from _secrets(getattr(value, name), split)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _secrets(item, parts)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _secrets(item, parts)


_SWITCH = {"on": True, "true": True, "yes": True, "1": True}
_SWITCH.update({"off": False, "false": False, "no": False, "0": False})


def _time_of_day(text: str) -> time:
    """``09:00``, ``9am``, ``noon``, as Herald reads a time in a phrase (whole minutes)."""
    from core import timeexpr
    from core.errors import InvalidInput

    try:
        found = timeexpr.clock(" ".join(text.lower().split()))
    except InvalidInput:
        found = None
    if found is None or found.second:
        raise ValueError("give a time of day such as 09:00 or 9am")
    return found


@lru_cache(maxsize=1)
def _variables() -> dict[str, tuple[str, ...]]:
    """Each setting's variables, by the name the model validates it under (its alias,
    or its first variable when it has older names too), in the order they are tried."""
    names: dict[str, tuple[str, ...]] = {}
    for field_name, field in Settings.model_fields.items():
        choices = field.validation_alias
        if isinstance(choices, AliasChoices):
            found = tuple(c for c in choices.choices if isinstance(c, str))
        elif isinstance(choices, str):
            found = (choices,)
        else:
            found = (field.alias or field_name,)
        names[found[0]] = (*found, field_name)
    return names


def _read(env_file: str | os.PathLike[str] | None) -> dict[str, str]:
    """The variables, by lower-case name: the settings file's, the environment's over
    them."""
    values: dict[str, str] = {}
    if env_file is not None and os.path.isfile(env_file):
        from dotenv import dotenv_values

        for name, value in dotenv_values(env_file, encoding="utf-8").items():
            if value is not None:  # a name without "=": nothing set
                values[name.lower()] = value
    values.update((name.lower(), value) for name, value in os.environ.items())
    return values


def load_settings(
    _env_file: str | os.PathLike[str] | None = ENV_FILE, **overrides: object
) -> Settings:
    """Read the environment once, and ``_env_file`` (``.env`` in the current folder, if
    there; None: none) below it. Keyword overrides, by variable or field name, win (used
    by tests and the CLI).

    Raises ConfigError naming each bad variable (never its value: it may be a secret).
    """
    read = _read(_env_file)
    given = {key.lower(): value for key, value in overrides.items()}
    data: dict[str, object] = {}
    for key, names in _variables().items():
        for name in names:
            if name.lower() in given:
                data[key] = given[name.lower()]
                break
        else:
            for name in names[:-1]:  # a field's own name is not a variable
                if name.lower() in read:
                    value = read[name.lower()]
                    # a setting unset by default (a token, a secret, an address) given
                    # empty, as `SLACK_BOT_TOKEN=` in .env.example, is not given
                    if value or Settings.model_fields[names[-1]].default is not None:
                        data[key] = value
                    break
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"The configuration is not valid: {problems}.") from None
