"""Outcomes told back (issue 38): the events applications hear, the notices authors get,
and what the recording of a batch writes for them.

An outcome is recorded in one transaction (core.store.queue ``finish``); in that same
transaction Herald writes

- an **event** row (the ``event`` table, the outbox) for each outcome someone listens to:
  the failures (:data:`ALWAYS`) always, the others only when one of the tenant's event
  hooks hears that type (:class:`OutcomePolicy.listening`), so a deployment without hooks
  records a delivery exactly as before;
- a **notice** row for a chat author whose job died or expired (bot/notices.py tells
  them, one digest per author and window);
- the schedule's failure streak, and the pause of a recurring schedule whose last
  ``HERALD_AUTO_PAUSE_AFTER`` occurrences all failed.

Events are pushed to hooks signed as Standard Webhooks say
(https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
``webhook-id`` (the event's id, the same on every redelivery), ``webhook-timestamp``
(Unix seconds) and ``webhook-signature`` (``v1,`` and the base64 HMAC-SHA256 of
``id.timestamp.body`` under the secret's bytes).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.store import Settled


class EventType(StrEnum):
    JOB_DELIVERED = "job.delivered"
    JOB_RETRYING = "job.retrying"
    JOB_DEAD = "job.dead"
    JOB_EXPIRED = "job.expired"
    #: A provider reported on an accepted message later (core.receipts).
    JOB_RECEIPT = "job.receipt"
    SCHEDULE_PAUSED = "schedule.paused"
    SCHEDULE_ENDED = "schedule.ended"


EVENT_TYPES = tuple(t.value for t in EventType)
#: Recorded whether or not a hook listens: failures are rare, the pull feed
#: (``GET /v1/events``) and the console read them, and they cost the hot path nothing.
ALWAYS = frozenset({EventType.JOB_DEAD.value, EventType.JOB_EXPIRED.value})
#: The event type of each job state the dispatcher records.
OF_STATE = {
    "delivered": EventType.JOB_DELIVERED.value,
    "retrying": EventType.JOB_RETRYING.value,
    "dead": EventType.JOB_DEAD.value,
    "expired": EventType.JOB_EXPIRED.value,
}
#: Job states whose author is told (a failure that will not be sent unless retried).
TOLD_STATES = frozenset({"dead", "expired"})
#: Owners on these platforms are told by direct message (others read ``herald
#: list``/``show`` and the events).
CHAT_PLATFORMS = ("slack:", "discord:")


class NoticeKind(StrEnum):
    DEAD = "dead"
    EXPIRED = "expired"
    #: The system paused a recurring schedule that kept failing.
    PAUSED = "paused"
    #: An event hook failed for a day and was disabled.
    HOOK_DISABLED = "hook_disabled"
    #: An approver is asked to decide a held message (``approval_id``); to the owner
    #: ``<platform>:#alert`` it is posted to that platform's alert channel instead.
    APPROVAL = "approval"
    #: The author is told what became of their held message (``reason`` says it).
    DECIDED = "decided"


#: The owner of a notice meant for a platform's alert channel, not a person:
#: ``slack:#alert``.
ALERT_OWNER = "#alert"


#: Characters of a notice's reason at most (a provider's words, already scrubbed).
REASON_CHARS = 300
#: What the system says when it pauses a schedule (the audit's actor and the notice).
AUTO_PAUSE_ACTOR = "system:auto-pause"


@dataclass
class OutcomePolicy:
    """What the recording of a batch writes besides the outcome itself. The dispatcher
    keeps ``listening`` fresh (core.dispatcher.hooks, every few seconds)."""

    #: ``HERALD_LATE_AFTER``: a try starting later than this after due is ``delayed``.
    late_after: float = 60.0
    #: ``HERALD_AUTO_PAUSE_AFTER`` (0: never).
    auto_pause_after: int = 3
    #: Tenant -> the event types its active hooks hear.
    listening: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def wants(self, tenant: str, event_type: str) -> bool:
        if event_type in ALWAYS:
            return True
        heard = self.listening.get(tenant)
        return heard is not None and event_type in heard

    def wants_any(self, tenant: str, types: Iterable[str]) -> bool:
        return any(self.wants(tenant, t) for t in types)


@dataclass(slots=True)
class EventRow:
    """One row of the ``event`` table, before it is written."""

    tenant: str
    type: str
    at: datetime
    schedule_id: int | None
    job_id: int | None
    owner: str
    key: str | None
    data: str


@dataclass(slots=True)
class NoticeRow:
    tenant: str
    owner: str
    kind: str
    schedule_id: int | None
    job_id: int | None
    reason: str
    at: datetime


def late_ms(started_at: datetime, due_at: datetime) -> int:
    """How many milliseconds after ``due_at`` a try started (0 when on time or early)."""
    return max(0, round((started_at - due_at).total_seconds() * 1000))


@functools.lru_cache(maxsize=4096)
def recipient_shown(destination: str) -> str:
    """A destination as events show it: redacted as the audit log and other surfaces
    show it (a webhook's path and query hidden). Remembered: a burst's jobs go to few
    destinations, and parsing one costs more than the rest of its event."""
    from core.channels import parse_destination
    from core.errors import InvalidInput

    try:
        return parse_destination(destination).redacted()
    except InvalidInput:
        return destination.partition(":")[0] + ":…"


def recipient_label(destination: str) -> str:
    """A destination as ``{{ recipient.name }}`` reads when Herald knows no name for
    it: its address as shown, without its kind (``ann@example.com``, ``#…``)."""
    return recipient_shown(destination).partition(":")[2] or destination


def job_data(item: Settled, now: datetime, policy: OutcomePolicy) -> dict[str, Any]:
    """The ``data`` of a job event: which schedule, job and recipient, the try and
    its times (ISO 8601, UTC), and why when it failed."""
    job, attempt = item.job, item.attempt
    data: dict[str, Any] = {
        "schedule_id": job.schedule_id,
        "job_id": job.id,
        "idempotency_key": job.idempotency_key,
        "recipient": recipient_shown(job.destination),
        "recipient_index": job.recipient,
        "state": item.state,
        "attempt": job.attempts,
        "occurrence_at": job.occurrence_at.isoformat(),
        "due_at": job.due_at.isoformat(),
        "at": now.isoformat(),
    }
    if attempt is not None:
        late = late_ms(attempt.started_at, job.due_at)
        data["started_at"] = attempt.started_at.isoformat()
        data["late_s"] = round(late / 1000, 3)
        data["delayed"] = late > policy.late_after * 1000
        if attempt.status_code is not None:
            data["status_code"] = attempt.status_code
        if attempt.provider is not None:
            data["provider"] = attempt.provider
        if attempt.body is not None:  # the text as this try sent it
            data["text"] = attempt.body
    used = job.options.get("liquid")
    if used is not None:  # a named template's (core.render): which, and which version
        data["template"] = {"name": used.get("template"), "version": used.get("version")}
    if item.state != "delivered" and item.error:
        data["error"] = item.error[:REASON_CHARS]
    if item.retry_at is not None and item.state == "retrying":
        data["retry_at"] = item.retry_at.isoformat()
    return data


def job_events(
    items: Sequence[Settled], owned: set[int], now: datetime, policy: OutcomePolicy
) -> list[EventRow]:
    """The events of a recorded batch: one per outcome still this worker's whose type
    its tenant hears (hand-backs and skips are not events)."""
    rows: list[EventRow] = []
    for item in items:
        job = item.job
        kind = OF_STATE.get(item.state)
        if kind is None or job.id not in owned or not policy.wants(job.tenant, kind):
            continue
        if item.attempt is None and item.state == "retrying":
            continue  # a hand-back: nothing was tried
        rows.append(
            EventRow(
                tenant=job.tenant,
                type=kind,
                at=now,
                schedule_id=job.schedule_id,
                job_id=job.id,
                owner=job.owner,
                key=job.idempotency_key,
                data=json.dumps(job_data(item, now, policy), separators=(",", ":")),
            )
        )
    return rows


def job_notices(items: Sequence[Settled], owned: set[int], now: datetime) -> list[NoticeRow]:
    """The notices of a recorded batch: a chat author's job that died or expired."""
    return [
        NoticeRow(
            tenant=item.job.tenant,
            owner=item.job.owner,
            kind=item.state,
            schedule_id=item.job.schedule_id,
            job_id=item.job.id,
            reason=(item.error or "")[:REASON_CHARS],
            at=now,
        )
        for item in items
        if item.state in TOLD_STATES
        and item.job.id in owned
        and item.job.owner.startswith(CHAT_PLATFORMS)
    ]


def schedule_data(schedule_id: int, reason: str, now: datetime, **more: Any) -> str:
    """The ``data`` of a schedule event, as JSON text."""
    return json.dumps(
        {"schedule_id": schedule_id, "reason": reason, "at": now.isoformat(), **more},
        separators=(",", ":"),
    )


def auto_pause_reason(n: int) -> str:
    return f"its last {n} occurrences all failed" if n > 1 else "its last occurrence failed"


# --- Standard Webhooks ------------------------------------------------------------------

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A hook's signing secret: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def message_id(event_id: int) -> str:
    """An event's ``webhook-id``: the same for every delivery of it."""
    return f"evt_{event_id}"


def body_of(event_type: str, at: datetime, data: str) -> str:
    """The body pushed for an event: ``{"type", "timestamp", "data"}`` as Standard
    Webhooks recommend; ``data`` is the stored JSON text, placed as it is."""
    head = json.dumps({"type": event_type, "timestamp": at.isoformat()}, separators=(",", ":"))
    return head[:-1] + ',"data":' + data + "}"


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """The ``webhook-signature`` header of a body."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{msg_id}.{timestamp}.{body}".encode()
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, msg_id, timestamp, body),
    }
