"""Plain-data views of Herald's records, shared by every surface (JSON, chat, console).

Error texts are scrubbed when they are recorded; a view scrubs them again of anything
credential-shaped (rows written before that, by an older Herald)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import inspect as orm_state

from core import routing, timeexpr
from core.actors import Actor
from core.channels import parse_destination
from core.errors import HeraldError
from core.instants import iso as iso
from core.instants import local as local
from core.lateness import late_for
from core.models import Attempt, Job, Schedule
from core.receipts import MAX_BODY, provider_label
from core.routing import Recipient
from core.scrub import scrub_credentials
from core.store import DeadLetter


def local_short(value: datetime | None, zone: str) -> str:
    """``2026-03-30 09:00 Europe/Berlin`` in ``zone``; ``-`` for None."""
    if value is None:
        return "-"
    return f"{value.astimezone(ZoneInfo(zone)):%Y-%m-%d %H:%M} {zone}"


def error_text(text: str | None) -> str | None:
    """A stored error text fit for a screen (:func:`core.scrub.scrub_credentials`)."""
    return None if text is None else scrub_credentials(text)


def describe(schedule: Schedule) -> str:
    """How the schedule's time reads in words: "every weekday at 09:00 (Europe/Berlin)",
    "once, Tue 3 Mar 2026 16:00 (UTC)"."""
    if schedule.rrule is not None:
        return timeexpr.describe(schedule.rrule)
    return timeexpr.describe_once(schedule.starts_at, schedule.timezone)


def when_words(schedule: Schedule) -> str:
    """:func:`describe` without the zone it ends with (a list shows the zone once, by
    the next run): "every weekday at 09:00", "once, Tue 3 Mar 2026 16:00"."""
    return describe(schedule).removesuffix(f" ({schedule.timezone})")


def when_column(schedule: Schedule) -> str:
    """A list's WHEN beside its NEXT: a rule in words (:func:`when_words`), a one-off
    still to come just "once" (its time is the next run), one that is done its time."""
    if schedule.rrule is None and schedule.next_run_at is not None:
        return "once"
    return when_words(schedule)


def sees_destination(viewer: Actor | None, owner: str) -> bool:
    """Whether ``viewer`` sees the destinations of ``owner``'s schedules in full (their
    host, port and path; secrets in them still hidden): the owner and the admins."""
    return viewer is not None and (viewer.is_admin or viewer.id == owner)


def destination(uri: str, *, full: bool = False) -> str:
    """A destination fit for a screen: for its owner and the admins (``full``, see
    :func:`sees_destination`) a webhook's host, port and path with its secrets hidden
    (:meth:`Destination.for_owner`); for anyone else only its scheme and host
    (:meth:`Destination.redacted`)."""
    try:
        parsed = parse_destination(uri)
    except HeraldError:
        return scrub_credentials(uri)
    return parsed.for_owner() if full else parsed.redacted()


def recipients_of(schedule: Schedule) -> list[Recipient]:
    """A schedule's recipients, in order (one for a row older than routing)."""
    return routing.from_json(schedule.recipients, schedule.destination)


def recipients_text(schedule: Schedule, *, full: bool = False) -> str:
    """Every recipient in words, in order: "#ops, #dev, <@U1> or alice@example.com"
    (each destination as :func:`destination` shows it; a recipient reading the time
    in its own zone says which)."""
    return ", ".join(
        routing.describe(r, lambda d: destination(d, full=full)) for r in recipients_of(schedule)
    )


def recipient_times(
    schedule: Schedule,
    occurrence: datetime | None = None,
    *,
    shown: Callable[[str], str] = destination,
    most: int | None = None,
) -> str | None:
    """When each recipient reading the time in its own zone gets ``occurrence`` (default
    the next run): "<@U1> 09:00 Europe/Berlin = 08:00Z, bob@example.com 09:00
    America/New_York = 14:00Z" (the first ``most`` of them, then "and N more"); None
    when none does (every one gets the schedule's)."""
    at = occurrence or schedule.next_run_at
    zoned = [r for r in recipients_of(schedule) if r.zone is not None]
    if at is None or not zoned:
        return None
    parts = []
    for r in zoned[:most]:
        assert r.zone is not None
        due = routing.due_for(at, schedule.timezone, r.zone)
        wall = due.astimezone(ZoneInfo(r.zone))
        parts.append(f"{shown(r.first)} {wall:%H:%M} {r.zone} = {due:%H:%MZ}")
    more = len(zoned) - len(parts)
    return ", ".join(parts) + (f" and {more} more" if more else "")


#: Job states a recipient's occurrence ended in, as :func:`fared` counts them.
_FAILED = frozenset({"dead", "expired", "discarded"})


def fared(
    schedule: Schedule, jobs: list[Job], *, shown: Callable[[str], str] = destination
) -> str | None:
    """How the recipients fared at the latest occurrence any of them was tried (from
    the schedule's ``jobs``): "delivered to 2 of 3; #old failed", "delivered to 3 of
    3", "delivered to 1 of 3; 2 waiting". None for a one-recipient schedule (its state
    says it) or before anything was tried."""
    recipients = recipients_of(schedule)
    if len(recipients) < 2:
        return None
    jobs = [j for j in jobs if not j.ladder]  # a ladder's steps are not its occurrences
    tried = [j for j in jobs if j.state in _FAILED or j.state in ("delivered", "retrying")]
    if not tried:
        return None
    latest = max(j.occurrence_at for j in tried)
    names = {r.id: r for r in recipients}
    of = [j for j in jobs if j.occurrence_at == latest and j.recipient in names]
    delivered = sum(1 for j in of if j.state == "delivered")
    parts = [f"delivered to {delivered} of {len(recipients)}"]
    failed = [shown(j.destination or names[j.recipient].first) for j in of if j.state in _FAILED]
    if failed:
        parts.append(f"{', '.join(failed)} failed")
    retrying = sum(1 for j in of if j.state == "retrying")
    waiting = len(recipients) - delivered - len(failed) - retrying
    if retrying:
        parts.append(f"{retrying} retrying")
    if waiting > 0:
        parts.append(f"{waiting} waiting")
    return "; ".join(parts)


def read_back(schedule: Schedule) -> str:
    """:func:`describe`, telling the person who just wrote the time how Herald read
    what it chose: "every weekday at 09:00 (UTC) — add 'at …' to change it", "every
    Sunday at 18:00 (America/Los_Angeles) — PST is read as America/Los_Angeles (…)"
    (the confirmation of a create or an edit; :func:`core.timeexpr.read_back_notes`)."""
    words = describe(schedule)
    at = schedule.updated_at - timedelta(microseconds=1)  # when it was read
    at = at if at.utcoffset() is not None else at.replace(tzinfo=UTC)
    notes = timeexpr.read_back_notes(schedule.expression, tz=schedule.timezone, at=at)
    return " — ".join([words, *notes, *save_notes(schedule)])


#: Where a save's notes ride on the schedule it returns (the ORM's per-object ``info``).
_SAVE_NOTES = "herald_read_back_notes"


def add_save_notes(schedule: Schedule, notes: list[str]) -> Schedule:
    """Attach what the use case that just saved ``schedule`` found worth saying (e.g.
    "Bob's quiet hours: sent at 08:00 their time"), for :func:`read_back` to say; kept on
    this object only, never stored."""
    if notes:
        orm_state(schedule).info[_SAVE_NOTES] = list(notes)
    return schedule


#: Where a save's warnings ride (core.cases.channel_view.SaveWarning: duplicates,
#: congestion), for surfaces to show apart from the read-back (the CLI on stderr).
_WARNINGS = "herald_save_warnings"


def add_warnings(schedule: Schedule, warnings: Sequence[Any]) -> Schedule:
    """Attach the warnings of the save that returned ``schedule`` (kept on this object
    only, never stored)."""
    if warnings:
        info = orm_state(schedule).info
        info[_WARNINGS] = [*info.get(_WARNINGS, ()), *warnings]
    return schedule


def warnings_of(schedule: Schedule) -> list[Any]:
    """The warnings :func:`add_warnings` attached (``SaveWarning``: ``kind``, ``text``,
    ``as_dict()``); none for a schedule read back."""
    return list(orm_state(schedule).info.get(_WARNINGS, ()))


def save_notes(schedule: Schedule) -> list[str]:
    """The notes :func:`add_save_notes` attached to this object (none for one read back)."""
    return list(orm_state(schedule).info.get(_SAVE_NOTES, ()))


def paused_by_system(s: Schedule, after: int) -> bool:
    """Whether the system paused ``s`` for failing (``HERALD_AUTO_PAUSE_AFTER`` is
    ``after``): it pauses at the streak that reaches it, in the transaction that counts
    it, and a resume starts the count again, so a person's pause has a shorter one."""
    return s.state == "paused" and s.auto_pause and 0 < after <= s.failed_streak


def failing_words(s: Schedule, after: int) -> list[str]:
    """What ``show`` says of a recurring schedule's failures: paused by the system,
    its occurrences failed in a row, auto-pause off."""
    if s.rrule is None:
        return []
    said = []
    if paused_by_system(s, after):
        said.append(f"paused by the system after {s.failed_streak} failed occurrences")
    elif s.failed_streak:
        row = "occurrence" if s.failed_streak == 1 else f"{s.failed_streak} occurrences"
        said.append(f"failing: its last {row} failed")
    if not s.auto_pause:
        said.append("auto-pause: off")
    return said


def last_failure(jobs: Sequence[Job], zone: str) -> str | None:
    """What ``show`` says of the schedule's latest message that failed for good (dead or
    expired), in one line: when, why, and what can be done; None when none did."""
    failed = [j for j in jobs if j.state in ("dead", "expired")]
    if not failed:
        return None
    job = max(failed, key=lambda j: (j.finished_at or j.due_at, j.id or 0))
    why = error_text(job.last_error) or "no reason was recorded"
    when = local_short(job.finished_at or job.due_at, zone)
    then = (
        f"ask for a retry: herald dead retry {job.id}"
        if job.state == "dead"
        else "an expired message cannot be retried"
    )
    return f"last failure: job {job.id} ({job.state}) at {when}: {why} ({then})"


def filled_text(schedule: Schedule, at: datetime | None = None) -> str | None:
    """What a templated schedule sends its first recipient at ``at`` (default its next
    send, else its start), filled in as the dispatcher fills it in (its id, that
    occurrence in the recipient's zone, the recipient's data and name): what a reply or
    a list quotes instead of the template's source. None for a schedule with its own
    text, or a template that cannot be filled in (the dispatcher then refuses it)."""
    from core import render
    from core.events import recipient_label

    used = (schedule.options or {}).get("liquid")
    if used is None:
        return None
    options = schedule.options or {}
    parts = render.Parts(
        schedule.body, options.get("subject"), options.get("blocks"), options.get("embeds")
    )
    first = recipients_of(schedule)[0]

    def occurrence(name: str) -> render.Occurrence:
        shown = name or recipient_label(first.first)
        when = at or schedule.next_run_at or schedule.starts_at
        zone = first.zone or schedule.timezone
        return render.Occurrence(schedule.id or 0, when, zone, shown)

    try:
        return render.fill(parts, used, first.id, occurrence).body
    except HeraldError:
        return None


def shown_text(schedule: Schedule) -> str:
    """A schedule's text as a list shows it: its own, or its template's name and
    version before the next message filled in (``deploy v3: Deploy api v1.4``)."""
    used = template_of(schedule)
    if used is None:
        return schedule.body
    filled = filled_text(schedule)
    return f"{used['name']} v{used['version']}: {schedule.body if filled is None else filled}"


def template_of(schedule: Schedule) -> dict[str, Any] | None:
    """The named template a schedule sends (core.render) as lists and the API show it:
    its name, the version it is on, its data and each recipient's own (by recipient
    id); None for a schedule with its own text."""
    used = (schedule.options or {}).get("liquid")
    if used is None or schedule.template_version is None:
        return None
    return {
        "name": used.get("template"),
        "version": schedule.template_version,
        "data": used.get("data") or {},
        "data_by_recipient": used.get("by_recipient") or {},
    }


def schedule_dict(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "tenant": schedule.tenant,
        "owner": schedule.owner,
        "destination": schedule.destination,
        "recipients": [r.as_json() for r in recipients_of(schedule)],
        "text": schedule.body,
        "expression": schedule.expression,
        "timezone": schedule.timezone,
        "recurring": schedule.rrule is not None,
        "rule": schedule.rrule,
        "description": describe(schedule),
        "starts_at": iso(schedule.starts_at),
        "next_run_at": iso(schedule.next_run_at),
        "state": schedule.shown_state,
        "lifecycle": schedule.state,
        "priority": schedule.priority,
        "last_outcome": schedule.last_outcome,
        "auto_pause": schedule.auto_pause,
        "private": schedule.private,
        "failed_streak": schedule.failed_streak,
        "key": schedule.idempotency_key,
        "max_lateness_s": schedule.max_lateness_s,
        "options": {k: v for k, v in schedule.options.items() if k != "liquid"},
        "template": template_of(schedule),
        "version": schedule.version,
        "created_at": iso(schedule.created_at),
        "updated_at": iso(schedule.updated_at),
    }


def job_dict(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "recipient": job.recipient,
        "destination": job.destination,
        "step": job.step,
        "occurrence_at": iso(job.occurrence_at),
        "due_at": iso(job.due_at),
        "state": job.state,
        "attempts": job.attempts,
        "lease_owner": job.lease_owner,
        "lease_expires_at": iso(job.lease_expires_at),
        "idempotency_key": job.idempotency_key,
        "last_error": error_text(job.last_error),
        "finished_at": iso(job.finished_at),
        # a step of its occurrence's ladder, and who marked the message done (core.until_done)
        "ladder": job.ladder,
        "done_by": job.done_by,
        "done_at": iso(job.done_at),
    }


#: Providers that report on a message after accepting it (core.receipts: Twilio's
#: status callbacks, SendGrid's and Mailgun's event webhooks). Only their accepted
#: attempts wait for a receipt; SMTP, Vonage (no /receipts/vonage yet), FCM and ntfy
#: say nothing after the hand-off, so nothing is promised for them.
RECEIPT_PROVIDERS = frozenset(MAX_BODY)  # the providers /receipts/<provider> takes
#: How much of a provider's words of a failed receipt a sentence carries.
RECEIPT_DETAIL_CHARS = 200


def delay(attempt: Any) -> str | None:
    """``delayed 4 min`` for an attempt that started more than ``HERALD_LATE_AFTER``
    after it fell due (core.store.queue ``finish`` marks it); None for one on time, or
    one an older Herald recorded (no lateness kept). ``attempt`` is an :class:`Attempt`
    or any row with its ``delayed`` and ``late_ms``."""
    late = getattr(attempt, "late_ms", None)
    if not getattr(attempt, "delayed", False) or late is None:
        return None
    return late_for(late / 1000)


def handoff(attempt: Any, zone: str) -> str | None:
    """What the provider an attempt went through did with it, its times in ``zone``:

    - "accepted by Twilio 09:00:01 · delivered 09:00:04"
    - "accepted by SendGrid 09:00:01 · bounced 09:02:10: 550 5.1.1 mailbox unavailable"
    - "accepted by Twilio 09:00:01 · no receipt yet" (a provider that sends receipts)
    - "accepted by SMTP 09:00:01" (one that never does: nothing more is claimed)
    - "refused by Mailgun 09:00:01" (a permanent answer), "not accepted by Twilio
      09:00:01" (a retryable one: down, rate-limited)

    A receipt on another day than the hand-off says its date ("03-03 09:00:04"). The
    provider's words of a failure are scrubbed and cut to :data:`RECEIPT_DETAIL_CHARS`.
    None for an attempt of a channel without providers (Slack, Discord, a webhook),
    whose words stay as they were. ``attempt`` is an :class:`Attempt` or any row with
    its fields (``core.store.AttemptRow``)."""
    provider = getattr(attempt, "provider", None)
    if not provider:
        return None
    label = provider_label(provider)
    took: datetime = attempt.finished_at or attempt.started_at
    said = f"{label} {_clock(took, zone)}"
    if attempt.outcome == "permanent":
        return f"refused by {said}"
    if attempt.outcome != "ok":
        return f"not accepted by {said}"
    words = f"accepted by {said}"
    receipt = getattr(attempt, "receipt", None)
    if receipt:
        at = getattr(attempt, "receipt_at", None)
        when = "" if at is None else f" {_clock(at, zone, since=took)}"
        detail = _bounded(getattr(attempt, "receipt_detail", None))
        return f"{words} · {receipt}{when}{': ' + detail if detail else ''}"
    if provider in RECEIPT_PROVIDERS:
        return f"{words} · no receipt yet"
    return words


def _clock(value: datetime, zone: str, *, since: datetime | None = None) -> str:
    """``09:00:04`` in ``zone``; ``03-03 09:00:04`` when its day is not ``since``'s."""
    tz = ZoneInfo(zone)
    here = value.astimezone(tz)
    if since is not None and since.astimezone(tz).date() != here.date():
        return f"{here:%m-%d %H:%M:%S}"
    return f"{here:%H:%M:%S}"


def _bounded(text: str | None) -> str:
    """A provider's words on one line, scrubbed, at most :data:`RECEIPT_DETAIL_CHARS`."""
    line = " ".join((error_text(text) or "").split())
    if len(line) <= RECEIPT_DETAIL_CHARS:
        return line
    return line[: RECEIPT_DETAIL_CHARS - 1].rstrip() + "…"


def attempt_dict(attempt: Attempt, zone: str = "UTC") -> dict[str, Any]:
    """An attempt as JSON; ``handoff`` (:func:`handoff`) says its times in ``zone``."""
    return {
        "id": attempt.id,
        "job_id": attempt.job_id,
        "started_at": iso(attempt.started_at),
        "finished_at": iso(attempt.finished_at),
        "outcome": attempt.outcome,
        "status_code": attempt.status_code,
        "error": error_text(attempt.error),
        "provider_message_id": attempt.provider_message_id,
        "worker": attempt.worker,
        "destination": attempt.destination,
        "text": attempt.body,
        "provider": attempt.provider,
        "receipt": attempt.receipt,
        "receipt_at": iso(attempt.receipt_at),
        "receipt_detail": error_text(attempt.receipt_detail),
        "handoff": handoff(attempt, zone),
        "late_s": None if attempt.late_ms is None else attempt.late_ms / 1000,
        "delayed": attempt.delayed,
    }


@dataclass(frozen=True)
class ScheduleDetail:
    """A schedule with its jobs (latest first) and their attempts (newest first); with
    its archived history when asked for (the jobs moved out of the active tables after
    HERALD_RETENTION_DAYS, with their attempts, in the same order)."""

    schedule: Schedule
    jobs: list[Job]
    attempts: list[Attempt]
    archived_jobs: list[Job] = field(default_factory=list)
    archived_attempts: list[Attempt] = field(default_factory=list)


def detail_dict(detail: ScheduleDetail) -> dict[str, Any]:
    """A schedule's detail as JSON: the live jobs and attempts, then the archived ones
    (when it holds any), each marked ``archived``."""
    zone = detail.schedule.timezone
    return {
        **schedule_dict(detail.schedule),
        "jobs": [
            *({**job_dict(job), "archived": False} for job in detail.jobs),
            *({**job_dict(job), "archived": True} for job in detail.archived_jobs),
        ],
        "attempts": [
            *({**attempt_dict(at, zone), "archived": False} for at in detail.attempts),
            *({**attempt_dict(at, zone), "archived": True} for at in detail.archived_attempts),
        ],
    }


def dead_letter_dict(letter: DeadLetter) -> dict[str, Any]:
    return {
        "job_id": letter.job_id,
        "schedule_id": letter.schedule_id,
        "tenant": letter.tenant,
        "owner": letter.owner,
        "destination": letter.destination,
        "text": letter.body,
        "attempts": letter.attempts,
        "last_error": error_text(letter.last_error),
        "occurrence_at": iso(letter.occurrence_at),
        "died_at": iso(letter.finished_at),
        "retry_requested_by": letter.retry_requested_by,
        "retry_requested_at": iso(letter.retry_requested_at),
        "retry_rejected_by": letter.retry_rejected_by,
        "retry_reject_reason": letter.retry_reject_reason,
    }


def matches(letter: DeadLetter, needle: str) -> bool:
    """Whether a dead letter's destination or error contains ``needle`` (any case)."""
    needle = needle.lower()
    return needle in letter.destination.lower() or needle in (letter.last_error or "").lower()
