"""Prometheus metrics of the dispatcher. One :class:`Metrics` per process, on its own
registry (tests make their own). No label carries user text or an unbounded id: only
channel kinds, outcomes and job states."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from core.models import JobState

LATENESS_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 3600)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
BATCH_BUCKETS = (1, 5, 10, 50, 100, 250, 500, 1000, 2500, 10000)


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

    def outcome(self, outcome: str) -> Any:
        return {"ok": self.ok, "retry": self.retry}.get(outcome, self.permanent)


class Metrics:
    """The dispatcher's counters, histograms and gauges."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.deliveries = Counter(
            "herald_deliveries",
            "Delivery tries by channel kind and outcome.",
            ["channel", "outcome"],
            registry=r,
        )
        self.duration = Histogram(
            "herald_delivery_duration_seconds",
            "Time a channel took to send.",
            ["channel"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.lateness = Histogram(
            "herald_delivery_lateness_seconds",
            "Start of the first try minus the job's due time.",
            ["channel"],
            buckets=LATENESS_BUCKETS,
            registry=r,
        )
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
        self.claims = Histogram(
            "herald_claim_batch_size",
            "Jobs per claim statement.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self._channels: dict[str, ChannelMetrics] = {}
        self.heartbeat = Gauge(
            "herald_dispatcher_heartbeat_timestamp_seconds",
            "Unix time of the dispatcher loop's last tick.",
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
            )
            self._channels[kind] = found
        return found

    def tick(self) -> None:
        self.heartbeat.set(time.time())

    def set_job_counts(self, counts: Mapping[str, int]) -> None:
        for state in JobState:
            self.jobs.labels(state.value).set(counts.get(state.value, 0))
