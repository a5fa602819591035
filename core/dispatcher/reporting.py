"""What the dispatcher says of the outcomes it records: metrics, and one structured log
event per outcome that is not a plain delivery (never the message's text; with traces
on, carrying its send's trace)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping

import core.dispatcher.message as message
from core import tracing
from core.channels.base import Channel
from core.channels.failover import FailoverChannel
from core.dispatcher.verdicts import DELIVERED, RETRYING, SKIPPED
from core.events import late_ms
from core.metrics import Metrics
from core.preferences import HELD
from core.store import DispatchStore, Settled

log = logging.getLogger("core.dispatcher")


def record(item: Settled, metrics: Metrics, worker: str, late_after: float) -> None:
    """Metrics and the log event of one recorded outcome: a failure (retrying, dead,
    expired, handed back) at WARNING with every field, a delivery at DEBUG, a job its
    recipient's preferences skip or hold at INFO. A try that started more than
    ``late_after`` seconds after it fell due is counted delayed, as the store marks its
    attempt (core.store.queue ``finish``); a first try's lateness is observed and
    counted in its minute (the console's percentiles, core.lateness). At INFO,
    :func:`recorded_batch` says one line per batch (a line per delivery doubled the
    CPU a burst takes)."""
    job, attempt = item.job, item.attempt
    kind = job.destination.partition(":")[0]
    m = metrics.channel(kind)
    duration_ms = None
    if attempt is not None:
        m.outcome(attempt.outcome).inc()
        took = (attempt.finished_at - attempt.started_at).total_seconds()
        duration_ms = round(took * 1000, 1)
        m.duration.observe(took)
        late = late_ms(attempt.started_at, job.due_at)
        delayed = late > late_after * 1000
        if delayed:
            m.delayed.inc()
        if job.attempts == 1:
            m.lateness.observe(late / 1000)
            metrics.late_minutes.add(
                int(attempt.started_at.timestamp()) // 60, late / 1000, delayed
            )
        if attempt.status_code == 429:
            m.provider_429.inc()
        if item.state == RETRYING and item.next_step is None:
            m.retries.inc()
    if item.next_step is not None:  # a step failed for good: on to the recipient's next
        m.fallbacks.inc()
    level = logging.DEBUG if item.state == DELIVERED else logging.WARNING
    if item.state == SKIPPED or (item.attempt is None and (item.error or "").startswith(HELD)):
        level = logging.INFO  # the recipient's say (core.dispatcher.recipients), no failure
    sent = message.sent_in.pop(job.id, None) if tracing.on else None
    if log.isEnabledFor(level):
        with tracing.resumed(sent):  # traces on: the line says its send's trace
            log.log(
                level,
                f"job {item.state}",
                extra={
                    "event": f"job.{item.state}",
                    "job_id": job.id,
                    "schedule_id": job.schedule_id,
                    "destination": kind,
                    "attempt": job.attempts,
                    "outcome": attempt.outcome if attempt else None,
                    "status_code": attempt.status_code if attempt else None,
                    "duration_ms": duration_ms,
                    "worker": worker,
                    "error": item.error,
                },
            )


def recorded_batch(counted: Counter[str], worker: str) -> None:
    """One INFO line for a recorded batch, with its counts by state."""
    if counted and log.isEnabledFor(logging.INFO):
        log.info(
            "jobs recorded",
            extra={"event": "jobs.recorded", "jobs": counted.total(), **counted, "worker": worker},
        )


def lost_lease(item: Settled, worker: str) -> None:
    """The job's lease expired while it was being sent and another try took over; this
    outcome is kept in the delivery log only."""
    if tracing.on:
        message.sent_in.pop(item.job.id, None)
    log.warning(
        "outcome of a job whose lease was lost",
        extra={
            "event": "job.lease_lost",
            "job_id": item.job.id,
            "schedule_id": item.job.schedule_id,
            "attempt": item.job.attempts,
            "outcome": item.attempt.outcome if item.attempt else None,
            "worker": worker,
        },
    )


def attach_channels(
    channels: Mapping[str, Channel], store: DispatchStore, metrics: Metrics
) -> None:
    """Give each channel the database (providers' shared health, members' devices) and
    each channel of several providers its metrics."""
    for kind, channel in channels.items():
        channel.attach(store)
        if isinstance(channel, FailoverChannel):
            channel.observe = metrics.provider(kind)
