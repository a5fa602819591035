"""Prometheus metrics of the dispatcher. One :class:`Metrics` per process, on its own
registry (tests make their own). No label carries user text or an unbounded id: only
channel kinds (never a recipient or a destination: a schedule with 500 recipients adds
no series), outcomes, job states, priorities (urgent, normal, bulk) and calendar ids
(one series per URL calendar, at most :data:`CALENDAR_SERIES`; never a URL)."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Protocol, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from core.lateness import LATENESS_BUCKETS, LateMinutes
from core.models import JobState
from core.preferences import PRIORITIES

if TYPE_CHECKING:
    from core.store import CalendarHealth

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
BATCH_BUCKETS = (1, 5, 10, 50, 100, 250, 500, 1000, 2500, 10000)
#: At most this many calendars get series of their own.
CALENDAR_SERIES = 1000


class HasPriority(Protocol):
    """A claimed job, as the claim counter reads it: its rank (0 urgent, 1 normal, 2
    bulk)."""

    @property
    def priority(self) -> int: ...


#: How Prometheus writes a bucket bound (``1.0``, ``0.005``), typed.
_go_float = cast(Callable[[float], str], floatToGoString)


class _Series:
    """One label value's buckets (non-cumulative; the last is +Inf) and sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # first bound >= value: "le"
        self.total += value


class LoopHistogram:
    """A histogram with one label, observed from the event loop only, exposed through
    the registry as a custom collector (the same series a ``Histogram`` exposes).

    prometheus-client's ``Histogram.observe`` takes a lock twice per observation; the
    dispatcher makes two observations per delivery, all on one thread, and the locks
    cost more than the rest of recording a delivery."""

    def __init__(
        self,
        name: str,
        documentation: str,
        label: str,
        buckets: tuple[float, ...],
        *,
        registry: CollectorRegistry,
    ) -> None:
        self.name, self.documentation, self.label = name, documentation, label
        self._bounds = tuple(float(b) for b in buckets)
        self._series: dict[str, _Series] = {}
        registry.register(self)

    def labels(self, value: str) -> _Series:
        series = self._series.get(value)
        if series is None:
            series = self._series[value] = _Series(self._bounds)
        return series

    def describe(self) -> list[HistogramMetricFamily]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=[self.label])]

    def collect(self) -> list[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=[self.label])
        for value, series in self._series.items():
            counts = list(accumulate(series.counts))
            bounds = [*(_go_float(b) for b in self._bounds), "+Inf"]
            family.add_metric([value], list(zip(bounds, counts, strict=True)), series.total)
        return [family]


@dataclass(frozen=True)
class ChannelMetrics:
    """The labelled children of one channel kind."""

    ok: Any
    retry: Any
    permanent: Any
    duration: Any
    lateness: Any
    retries: Any
    provider_429: Any
    rate_limit_waits: Any
    fallbacks: Any
    delayed: Any

    def outcome(self, outcome: str) -> Any:
        return {"ok": self.ok, "retry": self.retry}.get(outcome, self.permanent)


#: Gauges read from the database: every dispatcher exports the same value, so a query
#: over several aggregates them with ``max`` (never ``sum``: three dispatchers would
#: report three times the queue). deploy/prometheus-rules.yml follows this.
DATABASE_GAUGES = (
    "herald_jobs",
    "herald_jobs_waiting",
    "herald_dead_letters_awaiting_decision",
    "herald_oldest_overdue_seconds",
    "herald_calendars_failing",
    "herald_calendar_last_success_timestamp_seconds",
    "herald_calendar_failing_since_timestamp_seconds",
)


class Metrics:
    """The dispatcher's counters, histograms and gauges (those of
    :data:`DATABASE_GAUGES` are the database's, the rest this process's)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.deliveries = Counter(
            "herald_deliveries",
            "Delivery tries by channel kind and outcome.",
            ["channel", "outcome"],
            registry=r,
        )
        self.duration = LoopHistogram(
            "herald_delivery_duration_seconds",
            "Time a channel took to send.",
            "channel",
            DURATION_BUCKETS,
            registry=r,
        )
        self.lateness = LoopHistogram(
            "herald_delivery_lateness_seconds",
            "Start of the first try minus the job's due time.",
            "channel",
            LATENESS_BUCKETS,
            registry=r,
        )
        self.delayed = Counter(
            "herald_delayed",
            "Tries that started more than HERALD_LATE_AFTER after they fell due (marked "
            "delayed in the delivery log), by channel kind.",
            ["channel"],
            registry=r,
        )
        #: How late tries started, per minute: the console's percentiles (written to
        #: the database with the sweep, core.dispatcher.liveness).
        self.late_minutes = LateMinutes()
        self.jobs = Gauge(
            "herald_jobs", "Jobs by state (from the database).", ["state"], registry=r
        )
        self.dead_awaiting = Gauge(
            "herald_dead_letters_awaiting_decision",
            "Dead letters with a retry request an admin has not decided on.",
            registry=r,
        )
        self.overdue_seconds = Gauge(
            "herald_oldest_overdue_seconds",
            "How long the oldest waiting job has been due (0 when none is).",
            registry=r,
        )
        self.retries = Counter(
            "herald_retries_scheduled",
            "Failed tries that were scheduled again.",
            ["channel"],
            registry=r,
        )
        self.rate_limit_waits = Counter(
            "herald_rate_limit_waits",
            "Sends held back by a per-destination rate limit.",
            ["channel"],
            registry=r,
        )
        self.provider_429 = Counter(
            "herald_provider_429", "HTTP 429 answers from providers.", ["channel"], registry=r
        )
        # by the kind of the step that failed; never by recipient or destination
        self.fallbacks = Counter(
            "herald_fallbacks",
            "Recipients' chains that fell back to their next step, by the failed step's "
            "channel kind.",
            ["channel"],
            registry=r,
        )
        # by provider (few, named by the settings): ok, retry, permanent, or skipped
        # while it was down (core.channels.failover)
        self.provider_deliveries = Counter(
            "herald_provider_deliveries",
            "Deliveries by the provider a channel sent them through, and its answer "
            "(skipped: passed over while down).",
            ["channel", "provider", "outcome"],
            registry=r,
        )
        self.receipts = Counter(
            "herald_receipts",
            "Delivery receipts providers reported, by what they said (core.receipts).",
            ["provider", "status"],
            registry=r,
        )
        self.leases_lapsed = Counter(
            "herald_leases_lapsed",
            "Jobs not sent because this dispatcher's lease on them lapsed first (a stall).",
            registry=r,
        )
        self.event_pushes = Counter(
            "herald_event_pushes",
            "Events pushed to event hooks, by outcome (delivered, failed).",
            ["outcome"],
            registry=r,
        )
        self.acknowledged = Histogram(
            "herald_ack_seconds",
            "Seconds from a message sent until done to someone marking it done.",
            buckets=(60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400),
            registry=r,
        )
        self.claims = Histogram(
            "herald_claim_batch_size",
            "Jobs per claim statement.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        # by priority (urgent, normal, bulk): what the claims served, and what waits
        self.claimed = Counter(
            "herald_claimed",
            "Jobs claimed, by priority (urgent, normal, bulk).",
            ["priority"],
            registry=r,
        )
        self._claimed_by_rank = [self.claimed.labels(name) for name in PRIORITIES]
        self.waiting = Gauge(
            "herald_jobs_waiting",
            "Jobs waiting to be claimed (pending or retrying), by priority (from the database).",
            ["priority"],
            registry=r,
        )
        self._channels: dict[str, ChannelMetrics] = {}
        self.heartbeat = Gauge(
            "herald_dispatcher_heartbeat_timestamp_seconds",
            "Unix time of the dispatcher loop's last tick.",
            registry=r,
        )
        self.calendar_failures = Counter(
            "herald_calendar_refresh_failures",
            "Calendar refreshes that failed to fetch or parse, by calendar id.",
            ["calendar_id"],
            registry=r,
        )
        self.calendars_failing = Gauge(
            "herald_calendars_failing",
            "URL calendars whose last refresh failed (from the database).",
            registry=r,
        )
        self.calendar_last_success = Gauge(
            "herald_calendar_last_success_timestamp_seconds",
            "Unix time of each URL calendar's last successful refresh (from the database).",
            ["calendar_id"],
            registry=r,
        )
        self.calendar_failing_since = Gauge(
            "herald_calendar_failing_since_timestamp_seconds",
            "Unix time of the first of a calendar's failed refreshes in a row; absent "
            "while its refreshes work (from the database).",
            ["calendar_id"],
            registry=r,
        )

    def channel(self, kind: str) -> ChannelMetrics:
        """The per-channel children, looked up once per kind (``labels()`` takes a lock
        and builds a key on every call: too slow for the hot path)."""
        found = self._channels.get(kind)
        if found is None:
            found = ChannelMetrics(
                ok=self.deliveries.labels(kind, "ok"),
                retry=self.deliveries.labels(kind, "retry"),
                permanent=self.deliveries.labels(kind, "permanent"),
                duration=self.duration.labels(kind),
                lateness=self.lateness.labels(kind),
                retries=self.retries.labels(kind),
                provider_429=self.provider_429.labels(kind),
                rate_limit_waits=self.rate_limit_waits.labels(kind),
                fallbacks=self.fallbacks.labels(kind),
                delayed=self.delayed.labels(kind),
            )
            self._channels[kind] = found
        return found

    def provider(self, kind: str) -> Callable[[str, str], None]:
        """What a channel of several providers calls after each provider's answer."""
        counter = self.provider_deliveries

        def observe(provider: str, outcome: str) -> None:
            counter.labels(kind, provider, outcome).inc()

        return observe

    def observe_claim(self, jobs: Sequence[HasPriority]) -> None:
        """A claim's batch: its size, and its jobs by priority (the children looked up
        once: a claim of 2,000 costs three increments)."""
        self.claims.observe(len(jobs))
        by_rank = [0] * len(PRIORITIES)
        last = len(PRIORITIES) - 1
        for job in jobs:
            by_rank[min(max(job.priority, 0), last)] += 1
        for child, n in zip(self._claimed_by_rank, by_rank, strict=True):
            if n:
                child.inc(n)

    def observe_ack(self, seconds: float) -> None:
        """A message sent until done was marked done ``seconds`` after its delivery."""
        self.acknowledged.observe(seconds)

    def set_waiting(self, by_rank: Mapping[int, int]) -> None:
        """Jobs waiting by rank (core.preferences.RANK), as the database counts them."""
        for rank, name in enumerate(PRIORITIES):
            self.waiting.labels(name).set(by_rank.get(rank, 0))

    def tick(self) -> None:
        self.heartbeat.set(time.time())

    def set_job_counts(self, counts: Mapping[str, int]) -> None:
        for state in JobState:
            self.jobs.labels(state.value).set(counts.get(state.value, 0))

    def set_calendar_health(self, health: CalendarHealth) -> None:
        """Make the calendar gauges say what the database says (series of calendars
        that were removed, or recovered, disappear)."""
        self.calendars_failing.set(health.failing)
        self.calendar_last_success.clear()
        self.calendar_failing_since.clear()
        for status in health.calendars[:CALENDAR_SERIES]:
            label = str(status.calendar_id)
            if status.last_success is not None:
                self.calendar_last_success.labels(label).set(status.last_success.timestamp())
            if status.failing_since is not None:
                self.calendar_failing_since.labels(label).set(status.failing_since.timestamp())
