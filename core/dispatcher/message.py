"""What is sent for a claimed job: its text, its variables filled in, and who it says
scheduled it."""

from __future__ import annotations

import asyncio
import logging
from zoneinfo import ZoneInfoNotFoundError

from core import templates
from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import Destination
from core.dispatcher.config import DispatcherConfig
from core.errors import HeraldError
from core.routing import step_key
from core.store import ClaimedJob

log = logging.getLogger("core.dispatcher")


def delivery(job: ClaimedJob, destination: Destination, config: DispatcherConfig) -> Delivery:
    """The delivery a channel sends for ``job`` to its (parsed) ``destination``."""
    return Delivery(
        job_id=job.id,
        schedule_id=job.schedule_id,
        destination=destination,
        body=body(job),
        idempotency_key=step_key(job.idempotency_key, job.step),
        attempt=job.attempts,
        occurrence_at=job.occurrence_at,
        due_at=job.due_at,
        options=job.options,
        scheduled_by=config.scheduled_by_name(job, destination),
        tenant=job.tenant,
    )


def body(job: ClaimedJob) -> str:
    """The text to send: a schedule whose text uses variables gets them filled in for
    this occurrence (checked when it was saved; if that check has since changed, the
    text goes out as written rather than not at all)."""
    if not job.options.get("template"):
        return job.body
    try:
        return templates.render_schedule(
            job.body, schedule_id=job.schedule_id, occurrence=job.occurrence_at, zone=job.timezone
        )
    except (HeraldError, ValueError, ZoneInfoNotFoundError):
        log.warning("schedule text could not be filled in", extra={"job_id": job.id})
        return job.body


async def send(channel: Channel, delivery: Delivery) -> DeliveryResult:
    """The channel's answer; a channel that raises is a retry, not a lost job."""
    try:
        return await channel.send(delivery)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - a channel bug must not lose the job
        kind = delivery.destination.kind
        log.exception("channel raised", extra={"job_id": delivery.job_id, "destination": kind})
        return DeliveryResult.retry(f"Internal error in the {kind} channel.")
