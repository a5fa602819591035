"""What a provider's answer, or the lack of one, means for a claimed job.

Pure functions of the job, the channel's result and the configuration: each returns
what to record (a :class:`~core.store.Verdict` or a :class:`~core.store.HandBack`)
and changes nothing, so the loop decides what to do with it (a provider's pause is
returned as a time, :func:`asked_pause`). Their sentences are what the console and
the dead letters show.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta

from core import calendars, timeexpr, until_done
from core.calendars import Blackouts
from core.channels.base import DeliveryResult, Outcome
from core.dispatcher.config import DispatcherConfig, backoff_delay
from core.dispatcher.fallback import fall_back, step_deadline
from core.errors import HeraldError
from core.models import JobState
from core.preferences import REFUSED
from core.store import AttemptRecord, ClaimedJob, HandBack, Settled, Verdict

log = logging.getLogger("core.dispatcher")

# Job states as plain strings: ``JobState.X.value`` is an enum attribute lookup, and
# the hot path would do it several times per delivery.
PENDING, RETRYING, DELIVERED, DEAD, EXPIRED, SKIPPED = (
    JobState.PENDING.value,
    JobState.RETRYING.value,
    JobState.DELIVERED.value,
    JobState.DEAD.value,
    JobState.EXPIRED.value,
    JobState.SKIPPED.value,
)


def before_sending(job: ClaimedJob, now: datetime, config: DispatcherConfig) -> Verdict | None:
    """The job's verdict when it must not be sent at all (None: it may be): expired when
    it is later than its schedule's (or the configured) lateness allows, dead when it
    has had all its tries."""
    limit = job.max_lateness_s if job.max_lateness_s is not None else config.max_lateness
    late = (now - job.due_at).total_seconds()
    if late > limit:
        return Verdict(
            job,
            EXPIRED,
            error=(
                f"Not sent: it was {duration(late)} late, over the {duration(limit)} "
                "limit (the dispatcher was probably down)."
            ),
            next_run=next_run(job, now),
        )
    if job.attempts > config.max_attempts:
        return dead(job, None, f"Gave up after {job.attempts - 1} tries.", now)
    return None


def judge(
    job: ClaimedJob,
    result: DeliveryResult,
    started: datetime,
    finished: datetime,
    config: DispatcherConfig,
    rng: random.Random,
    body: str | None = None,
) -> Verdict:
    """What to record of a try: its attempt (with ``body``, the text it sent; the
    delivery log shows it) and the job's next state. A 429 with Retry-After is retried
    however many tries the job had, and that try is not counted."""
    attempt = AttemptRecord(
        started_at=started,
        finished_at=finished,
        outcome=result.outcome.value,
        status_code=result.status_code,
        error=result.error,
        message_id=result.message_id,
        body=body,
        destination=job.destination,
        provider=result.provider,
    )
    if result.outcome is Outcome.OK:
        return Verdict(job, DELIVERED, attempt, next_run=next_run(job, finished))
    if result.outcome is Outcome.PERMANENT:
        return dead(job, attempt, result.error or "The provider refused it.", finished)
    rate_limited = result.retry_after is not None and result.status_code == 429
    if job.attempts >= config.max_attempts and not rate_limited:
        return dead(job, attempt, f"Gave up after {job.attempts} tries: {result.error}", finished)
    delay = (
        result.retry_after
        if result.retry_after is not None
        else backoff_delay(job.attempts, config.backoff_base, config.backoff_cap, rng)
    )
    retry_at = finished + timedelta(seconds=delay)
    deadline = step_deadline(job)
    # past its step's time limit, or retried only after it: the next step begins at the
    # limit (or now, when the limit has passed)
    if deadline is not None and (finished >= deadline or retry_at > deadline):
        late = f"Not delivered within its step's time limit: {result.error}"
        moved = fall_back(job, attempt, late, max(finished, deadline))
        if moved is not None:
            return moved
    return Verdict(
        job,
        RETRYING,
        attempt,
        error=result.error,
        retry_at=retry_at,
        refund_attempt=rate_limited,
    )


def asked_pause(result: DeliveryResult, finished: datetime) -> datetime | None:
    """Until when the provider asked for no more sends to the destination (its
    Retry-After), or None."""
    if result.retry_after is None:
        return None
    return finished + timedelta(seconds=result.retry_after)


def dead(job: ClaimedJob, attempt: AttemptRecord | None, error: str, now: datetime) -> Verdict:
    """A dead letter (a recurring schedule goes on with its next occurrence), unless the
    job's recipient has a next step to fall back to."""
    fallen = fall_back(job, attempt, error, now)
    if fallen is not None:
        return fallen
    return Verdict(job, DEAD, attempt, error=error, next_run=next_run(job, now))


def wait_for_limit(job: ClaimedJob, until: datetime, now: datetime, kind: str) -> HandBack:
    """Handed back untried, due at ``until`` when its (``kind``'s) rate limit allows."""
    wait = (until - now).total_seconds()
    return HandBack(
        job,
        RETRYING if job.attempts > 1 else PENDING,
        f"Waiting {duration(wait)} for {kind or 'its'} rate limits.",
        retry_at=until,
    )


def refused(job: ClaimedJob, refusal: str, now: datetime) -> Verdict:
    """Not sent, untried: its recipient's preferences refuse it now (``refusal``, a
    sentence of :func:`core.preferences.refusal`; they changed after it was saved, or
    saving would have refused it). Skipped, not dead: nothing failed and no admin can
    retry it; a recurring schedule goes on with its next occurrence."""
    why = refusal.rstrip(".")
    return Verdict(
        job,
        SKIPPED,
        error=f"{REFUSED} {why} (their preferences changed after this was scheduled).",
        next_run=next_run(job, now),
        refund_attempt=True,
    )


def held(job: ClaimedJob, until: datetime, reason: str) -> HandBack:
    """Handed back untried, due at ``until`` when its recipient's quiet hours end
    (``reason``: :func:`core.preferences.held_reason`); its try not counted, and its
    lateness counted from then."""
    return HandBack(job, RETRYING if job.attempts > 1 else PENDING, reason, retry_at=until)


def lapsed(job: ClaimedJob) -> HandBack:
    """Not sent: the lease lapsed (this dispatcher stalled, or could not reach the
    database) and another may hold the job now; handed back if it is still ours."""
    return HandBack(
        job,
        RETRYING if job.attempts > 1 else PENDING,
        "Not sent: this dispatcher's lease lapsed before sending; handed back.",
    )


def requeues(item: Settled) -> bool:
    """Whether recording ``item`` may leave something due (a retry, a recurring
    schedule's next occurrence, a message's ladder sent until done): the dispatcher
    then asks when."""
    job = item.job
    return (
        item.state != DELIVERED
        or item.next_run is not None
        or until_done.opens(job.ladder, job.options)
    )


def next_run(job: ClaimedJob, now: datetime) -> datetime | None:
    """A recurring schedule's next occurrence after this one and after now (no
    burst of stale repeats after downtime). None for a ladder's step: the occurrence's
    own message plans the next."""
    if job.rrule is None or job.ladder:
        return None
    try:
        after = max(job.occurrence_at, now)
        skip = job.options.get("skip")
        if skip:
            # Occurrences on a skip calendar's dates: their ``skipped`` jobs were
            # recorded when the calendar was attached or refreshed (core.cases.calendars).
            return calendars.next_allowed(job.rrule, after, Blackouts.from_json(skip))[0]
        return timeexpr.next_occurrence(job.rrule, after)
    except HeraldError:
        log.exception("stored rule cannot be read", extra={"schedule_id": job.schedule_id})
        return None


def duration(seconds: float) -> str:
    """A wait or a lateness in a notice: ``45s``, ``12 min``, ``1.5 h``."""
    return timeexpr.describe_duration(seconds, rough=True)
