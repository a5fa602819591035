"""What a dispatcher is told: its configuration, the retry backoff, and who a message
says scheduled it."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from core import limits
from core.destinations import Destination
from core.ratelimit import LATENESS, RateLimits
from core.settings import Settings
from core.store import ClaimedJob


@dataclass(frozen=True)
class DispatcherConfig:
    concurrency: int = 64
    batch_size: int = 2000
    lease_seconds: float = 60.0
    sweep_seconds: float = 5.0
    #: Another dispatcher that has not heartbeated for this many sweeps is dead: its
    #: jobs are handed back at once, whatever their leases say.
    dead_after_sweeps: int = 3
    max_attempts: int = 8
    backoff_base: float = 5.0
    backoff_cap: float = 3600.0
    max_lateness: float = 3600.0
    shutdown_timeout: float = 30.0
    retention_days: float = 30.0
    dead_letter_days: float = 90.0
    dead_letter_max: int = 100_000
    #: A job that would wait longer than this for its destination's rate limit is
    #: handed back (due when the limit allows) as soon as it is claimed.
    max_rate_wait: float = 10.0
    #: A rate-limited destination never has more jobs claimed, by every dispatcher
    #: together, than it sends in this many seconds at its pace (core.ratelimit.
    #: claim_cap: at most rate × horizon). A claim puts off the rest, due again as
    #: their slots come near. (The settings set max_rate_wait to the same.)
    claim_horizon: float = 10.0
    #: A rate-limited send that could not start within this many seconds of its slot
    #: (a stalled loop, a busy machine) takes a fresh slot rather than crowd the next
    #: ones. Slots leave room for this lateness (core.ratelimit.spacing), so no second
    #: sees more than the limit; a larger grace than ratelimit.LATENESS would void that.
    slot_grace: float = LATENESS
    #: Limits by destination prefix; others keep their channel's default.
    rate_limits: RateLimits = RateLimits()
    #: In service mode, claim jobs this many seconds before they fall due and send
    #: each at its exact time: the claim's round trip is then not part of lateness.
    #: Longer when claiming a full batch takes longer here (``Dispatcher.prefetch``).
    prefetch_seconds: float = 0.05
    #: Whether messages into shared channels say who scheduled them, and per tenant
    #: over it (Settings ``scheduled_by``; off here unless the settings say so).
    scheduled_by: bool = False
    tenant_scheduled_by: Mapping[str, bool] = field(default_factory=dict)
    #: HERALD_ADMINS: admins of every tenant, whom a member accepting reminders only
    #: from admins accepts (core.dispatcher.recipients).
    admins: frozenset[str] = frozenset()
    #: HERALD_DEFAULT_TZ: the zone a person's quiet hours are read in when neither they
    #: nor their tenant's defaults have one (as the preferences' read-back says).
    default_tz: str = "UTC"
    #: HERALD_LATE_AFTER: a try starting later than this after due is marked delayed.
    late_after: float = 60.0
    #: HERALD_AUTO_PAUSE_AFTER: a recurring schedule failing this many occurrences in a
    #: row is paused (0: never).
    auto_pause_after: int = 3
    #: HERALD_HOOK_DISABLE_AFTER: an event hook failing this long is disabled.
    hook_disable_after: float = 86400.0
    #: HERALD_ARCHIVE_DAYS: archived history is pruned after this (0: kept for ever).
    archive_days: float = 365.0

    @classmethod
    def from_settings(cls, s: Settings) -> DispatcherConfig:
        return cls(
            concurrency=s.concurrency,
            batch_size=s.batch_size,
            lease_seconds=s.lease_seconds,
            sweep_seconds=s.sweep_seconds,
            dead_after_sweeps=s.dead_after_sweeps,
            max_attempts=s.max_attempts,
            backoff_base=s.backoff_base,
            backoff_cap=s.backoff_cap,
            max_lateness=s.max_lateness,
            shutdown_timeout=s.shutdown_timeout,
            retention_days=s.retention_days,
            dead_letter_days=s.dead_letter_days,
            dead_letter_max=s.dead_letter_max,
            rate_limits=RateLimits.parse(s.rate_limits),
            max_rate_wait=s.claim_horizon,
            claim_horizon=s.claim_horizon,
            scheduled_by=s.scheduled_by,
            tenant_scheduled_by=dict(s.tenant_scheduled_by),
            admins=frozenset(s.admins),
            default_tz=s.default_tz,
            late_after=s.late_after,
            auto_pause_after=s.auto_pause_after,
            hook_disable_after=s.hook_disable_after,
            archive_days=s.archive_days,
        )

    def scheduled_by_name(self, job: ClaimedJob, destination: Destination) -> str | None:
        """The name to show under ``job``'s message ("scheduled by NAME"), or None: only
        into a shared channel (a Slack or Discord channel, not a direct message, a
        webhook or an email), when the owner's tenant wants it. The owner's name as
        Herald knows it, else their member id on their platform (``U0123ABC``): never
        nobody."""
        if not shared_channel(destination, job.tenant):
            return None
        if not self.tenant_scheduled_by.get(job.tenant, self.scheduled_by):
            return None
        return job.owner_name.strip() or job.owner.partition(":")[2] or job.owner or None

    @property
    def max_inflight(self) -> int:
        return max(self.concurrency * 2, self.batch_size * 2)

    @property
    def dead_after(self) -> float:
        """Seconds without a heartbeat after which a dispatcher counts as dead."""
        return self.sweep_seconds * self.dead_after_sweeps

    @property
    def keep_alive_seconds(self) -> float:
        """How often the heartbeat is written and the leases renewed: three times in
        the shorter of a lease and the silence that makes a dispatcher dead."""
        return min(self.lease_seconds, self.dead_after) / 3

    @property
    def lease_margin(self) -> float:
        """A job is sent only while its lease (and this dispatcher's life) last this
        much longer: time for the request to leave, and for clocks to disagree."""
        return min(self.lease_seconds, self.dead_after) / 4


def claim_room(config: DispatcherConfig, inflight: int) -> int:
    """How many jobs the next claim may take with ``inflight`` claimed and unrecorded:
    0 while the gap is small (fewer, larger claims)."""
    room = config.max_inflight - inflight
    threshold = min(config.batch_size, config.max_inflight // 2)
    if room <= 0 or (room < threshold and inflight):
        return 0
    return min(room, config.batch_size)


def prefetch_seconds(config: DispatcherConfig, claim_per_job: float) -> float:
    """How many seconds before jobs fall due the service claims them: the configured
    prefetch, or one and a half times what a full batch took to claim here lately
    (``claim_per_job`` seconds a job; PostgreSQL on a busy machine: 100-300 ms for
    2,000 jobs), at most a second."""
    expected = 1.5 * claim_per_job * config.batch_size
    return min(max(config.prefetch_seconds, expected), 1.0)


def first_claim(config: DispatcherConfig, claim_per_job: float) -> int:
    """How many jobs an idle service claims first: what it can send at once (twice
    the concurrency), or more where claims are fast enough to claim more within the
    configured prefetch (SQLite: a full batch)."""
    batch = config.batch_size
    least = min(batch, 2 * config.concurrency)
    if claim_per_job <= 0:
        return least
    return max(least, min(batch, int(config.prefetch_seconds / claim_per_job)))


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(n-1))]."""
    ceiling = min(cap, base * (2 ** max(0, attempt - 1)))
    return rng.uniform(0, ceiling)


def shared_channel(destination: Destination, tenant: str) -> bool:
    """Whether a destination is a channel others read: a Slack channel (``C…``, a
    private ``G…``; not a direct message ``D…`` or a person ``U…``/``@…``), or a
    Discord channel of a server (not of a direct-message tenant ``discord:@…``)."""
    if destination.kind == "discord" and tenant.startswith("discord:@"):
        return False
    return limits.shared_channel(destination)


def default_worker_id() -> str:
    """This process's name among dispatchers: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{random.randrange(16**6):06x}"
