"""A recipient's chain (core.routing) as the dispatcher walks it: when a step failed for
good, or was tried past its time limit, the job falls back to the next step instead of
becoming a dead letter; only the last step's failure is one. Pure functions."""

from __future__ import annotations

from datetime import datetime, timedelta

from core import routing
from core.channels import parse_destination
from core.errors import HeraldError
from core.models import JobState
from core.store import AttemptRecord, ClaimedJob, Verdict

RETRYING = JobState.RETRYING.value


def shown(destination: str) -> str:
    """A destination as the console and a dead letter say it (no secret in it)."""
    try:
        return parse_destination(destination).redacted()
    except HeraldError:
        return "an unreadable destination"


def fall_back(
    job: ClaimedJob, attempt: AttemptRecord | None, error: str, now: datetime
) -> Verdict | None:
    """The job moved on to its recipient's next step, due ``now`` (when that step
    begins), when it has one (None: this was the last step, or the only one)."""
    if job.route is None:
        return None
    following = routing.next_step(routing.parse_route(job.route), job.step)
    if following is None:
        return None
    return Verdict(
        job,
        RETRYING,
        attempt,
        error=f"{error} Falling back to {shown(following)} (step {job.step + 2}).",
        retry_at=now,
        next_step=following,
    )


def step_deadline(job: ClaimedJob) -> datetime | None:
    """When the job's current step has been tried as long as its recipient allows (None:
    no limit, or no next step to go to)."""
    if job.route is None:
        return None
    route = routing.parse_route(job.route)
    if route.timeout is None or routing.next_step(route, job.step) is None:
        return None
    # the first step began when the recipient's occurrence fell due (``due_at`` moves
    # with each retry); a later one (or a retried chain) when it was entered
    since = job.step_since or routing.due_for(job.occurrence_at, job.timezone, route.zone)
    return since + timedelta(seconds=route.timeout)
