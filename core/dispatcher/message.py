"""What is sent for a claimed job: its text, its variables filled in (a named
template's with its data, core.render), and who it says scheduled it."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from core import reminders, render, templates, tracing, until_done
from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import Destination
from core.dispatcher.config import DispatcherConfig
from core.errors import HeraldError
from core.events import recipient_label
from core.routing import step_key
from core.store import ClaimedJob

log = logging.getLogger("core.dispatcher")


def delivery(job: ClaimedJob, destination: Destination, config: DispatcherConfig) -> Delivery:
    """The delivery a channel sends for ``job`` to its (parsed) ``destination``.
    Raises :class:`core.render.RenderError` for a named template that cannot be filled
    in (checked when saved, so only when its data or the renderer changed since): the
    job is a dead letter saying why, rather than a message sent half written."""
    text = body(job)
    options: Mapping[str, Any] = job.options
    used = options.get(LIQUID)
    if used is not None:
        text, options = templated(job, destination, used)
    credit = config.scheduled_by_name(job, destination)
    if job.ladder or until_done.OPTION in options:
        # a step is one even when its schedule was edited to send plainly since
        text, options, credit = laddered(job, text, options, credit)
    return Delivery(
        job_id=job.id,
        schedule_id=job.schedule_id,
        destination=destination,
        body=text,
        idempotency_key=step_key(job.idempotency_key, job.step),
        attempt=job.attempts,
        occurrence_at=job.occurrence_at,
        due_at=job.due_at,
        options=options,
        scheduled_by=credit,
        tenant=job.tenant,
    )


def laddered(
    job: ClaimedJob, text: str, options: Mapping[str, Any], credit: str | None
) -> tuple[str, Mapping[str, Any], str | None]:
    """A message sent until done (core.until_done): the occurrence's own with its Done
    button; a nag as a reply under it; an escalation as a message of its own saying
    what is not done where; the ``done`` step as the edit of the message, its button
    gone. Steps carry no reminder buttons in a direct message (``notice``)."""
    kind = until_done.step_kind(job.ladder)
    if not kind:
        return text, {**options, until_done.DONE_BUTTON: job.id}, credit
    steps: dict[str, Any] = {**options, reminders.NOTICE: True}
    for part in ("blocks", "embeds", until_done.OPTION):
        steps.pop(part, None)
    if kind == until_done.NAG:
        if job.thread:
            steps[until_done.REPLY_TO] = job.thread
        return until_done.nag_text(text, job.ladder), steps, None
    if kind == until_done.ESCALATE:
        # its rule edited while the step was being sent: its delay as written
        written = max(job.due_at - job.occurrence_at, timedelta(0))
        after = until_done.escalated_after(job.ladder, until_done.of_options(options), written)
        where = until_done.where(job.thread) if job.thread else "its channel"
        return until_done.escalation_text(text, after, where, job.owner), steps, None
    steps[until_done.EDIT_OF] = job.thread
    at = job.done_at or job.occurrence_at
    return until_done.done_text(text, job.done_by or "someone", at, job.timezone), steps, credit


#: The option holding a templated schedule's data (core.cases.templates.LIQUID).
LIQUID = "liquid"


def templated(
    job: ClaimedJob, destination: Destination, used: dict[str, Any]
) -> tuple[str, Mapping[str, Any]]:
    """A templated job's text and options, its parts filled in for its recipient and
    occurrence (in the recipient's own zone when it has one)."""
    options = job.options
    subject, blocks, embeds = options.get("subject"), options.get("blocks"), options.get("embeds")

    def occurrence(name: str) -> render.Occurrence:
        zone = job.timezone
        if job.route is not None:
            zone = json.loads(job.route).get("zone") or zone
        shown = name or recipient_label(str(destination))
        return render.Occurrence(job.schedule_id, job.occurrence_at, zone, shown)

    if subject is None and blocks is None and embeds is None:
        return render.fill_text(job.body, used, job.recipient, occurrence), options
    parts = render.Parts(job.body, subject, blocks, embeds)
    filled = render.fill(parts, used, job.recipient, occurrence)
    options = dict(options)
    for part in ("subject", "blocks", "embeds"):
        value = getattr(filled, part)
        if value is not None:
            options[part] = value
    return filled.body, options


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


async def send(channel: Channel, delivery: Delivery, started: datetime) -> DeliveryResult:
    """The channel's answer; a channel that raises is a retry, not a lost job. With
    traces on, the send is a ``herald.send`` span (:func:`traced`)."""
    if tracing.on:
        return await traced(channel, delivery, started)
    try:
        return await channel.send(delivery)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - a channel bug must not lose the job
        return raised(delivery)


async def traced(channel: Channel, delivery: Delivery, started: datetime) -> DeliveryResult:
    """:func:`send` in a ``herald.send`` span of a trace of its own, the parent of the
    channel's request: the job and schedule ids, the channel's kind, the attempt, how
    late it started (seconds after it fell due) and the outcome; never the text or
    the destination's address."""
    attributes: tracing.Attributes = {
        "herald.job.id": delivery.job_id,
        "herald.schedule.id": delivery.schedule_id,
        "herald.channel.kind": delivery.destination.kind,
        "herald.attempt": delivery.attempt,
        "herald.lateness_s": (started - delivery.due_at).total_seconds(),
    }
    with tracing.span("herald.send", attributes, root=True, client=True) as span:
        try:
            result = await channel.send(delivery)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a channel bug must not lose the job
            result = raised(delivery)
        span.set_attribute("herald.outcome", result.outcome.value)
        sent_in[delivery.job_id] = tracing.current_context()
        return result


#: The span of each job's last send, by job id, while traces are on, until its outcome
#: is recorded: the outcome's log line says that trace's ids (reporting.record).
sent_in: dict[int, Any] = {}


def raised(delivery: Delivery) -> DeliveryResult:
    """A channel raised: logged with its traceback, and a retry."""
    kind = delivery.destination.kind
    log.exception("channel raised", extra={"job_id": delivery.job_id, "destination": kind})
    return DeliveryResult.retry(f"Internal error in the {kind} channel.")
