"""Plain-data views of Herald's records, shared by every surface (JSON, chat, console).

Error texts are scrubbed when they are recorded; a view scrubs them again of anything
credential-shaped (rows written before that, by an older Herald)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from core import timeexpr
from core.actors import Actor
from core.channels import parse_destination
from core.errors import HeraldError
from core.instants import iso as iso
from core.instants import local as local
from core.models import Attempt, Job, Schedule
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


def read_back(schedule: Schedule) -> str:
    """:func:`describe`, telling the person who just wrote the time how Herald read
    what it chose: "every weekday at 09:00 (UTC) — add 'at …' to change it", "every
    Sunday at 18:00 (America/Los_Angeles) — PST is read as America/Los_Angeles (…)"
    (the confirmation of a create or an edit; :func:`core.timeexpr.read_back_notes`)."""
    words = describe(schedule)
    at = schedule.updated_at - timedelta(microseconds=1)  # when it was read
    at = at if at.utcoffset() is not None else at.replace(tzinfo=UTC)
    notes = timeexpr.read_back_notes(schedule.expression, tz=schedule.timezone, at=at)
    return " — ".join([words, *notes])


def schedule_dict(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "tenant": schedule.tenant,
        "owner": schedule.owner,
        "destination": schedule.destination,
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
        "last_outcome": schedule.last_outcome,
        "key": schedule.idempotency_key,
        "max_lateness_s": schedule.max_lateness_s,
        "options": schedule.options,
        "version": schedule.version,
        "created_at": iso(schedule.created_at),
        "updated_at": iso(schedule.updated_at),
    }


def job_dict(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "occurrence_at": iso(job.occurrence_at),
        "due_at": iso(job.due_at),
        "state": job.state,
        "attempts": job.attempts,
        "lease_owner": job.lease_owner,
        "lease_expires_at": iso(job.lease_expires_at),
        "idempotency_key": job.idempotency_key,
        "last_error": error_text(job.last_error),
        "finished_at": iso(job.finished_at),
    }


def attempt_dict(attempt: Attempt) -> dict[str, Any]:
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
        "text": attempt.body,
    }


@dataclass(frozen=True)
class ScheduleDetail:
    """A schedule with its jobs (latest first) and their attempts (newest first)."""

    schedule: Schedule
    jobs: list[Job]
    attempts: list[Attempt]


def detail_dict(detail: ScheduleDetail) -> dict[str, Any]:
    return {
        **schedule_dict(detail.schedule),
        "jobs": [job_dict(job) for job in detail.jobs],
        "attempts": [attempt_dict(attempt) for attempt in detail.attempts],
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
