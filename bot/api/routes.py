"""The API's route table: each operation is one :class:`~bot.api.requests.Route` in
:data:`ROUTES` (method, path, the scope it needs, its handler, the pydantic models of
its query, body and answer). :mod:`bot.api.server` serves the table and
:mod:`bot.api.openapi` builds the OpenAPI document from it: it is the one source of both."""

from __future__ import annotations

from bot.api import approvals, devices, hooks, preferences, templates, until_done
from bot.api import models as m
from bot.api.handlers import (
    agenda_calendar,
    approve_dead,
    create_schedule,
    discard_dead,
    edit_schedule,
    get_dead,
    get_schedule,
    import_lines,
    list_dead,
    list_schedules,
    me,
    preview_when,
    reject_dead,
    retry_dead,
    schedule_jobs,
    state_change,
)
from bot.api.requests import PREFIX, Route
from core import verbs
from core.verbs import STATE_VERBS

_IF_MATCH = {"If-Match": 'The version you read, as its ETag ("3"); a newer one is refused (412).'}
_SCHEDULE = "/schedules/{schedule_id}"
_DEAD = "/dead-letters/{job_id}"
#: DELETE on a schedule is the CLI's ``herald delete``: an alias of ``cancel`` (core/verbs.py).
_DELETE = verbs.verb("delete")

#: What a state route's document says beyond its summary.
_STATE_DESCRIPTIONS = {
    "send-now": "Its next occurrence is sent at once, with a fresh idempotency key; a "
    "recurring rule's later occurrences stay as planned (a one-off is simply sent now). "
    "The answer's notes say which occurrence. Refused (422) for a paused schedule, one "
    "awaiting approval or one with nothing left to send; 409 while its next send is "
    "under way.",
}


def _camel(name: str) -> str:
    """A verb's name in an operation id: ``send-now`` -> ``sendNow``."""
    first, *rest = name.split("-")
    return first + "".join(part.capitalize() for part in rest)


ROUTES: tuple[Route, ...] = (
    Route("GET", "/me", "me", "Who this token acts as", "read", me, m.Me, tag="tokens"),
    Route(
        "POST",
        "/schedules",
        "createSchedule",
        "Schedule a message (once or recurring)",
        "write",
        create_schedule,
        m.ScheduleOut,
        201,
        query=m.ScheduleCreateQuery,
        body=m.ScheduleCreate,
        headers={
            "Idempotency-Key": "Repeat a create safely: the same key answers the first "
            "result (200, Idempotent-Replayed: true) instead of making another schedule."
        },
        problems=(404, 409, 422),
        description="The answer's warnings say what the save found: the same text already "
        "scheduled there within ten minutes of one of its sends (created anyway), or a "
        "destination so crowded it would wait. With ?strict=true a duplicate is refused "
        "instead: 409, its problem's duplicates naming them, nothing created.",
    ),
    Route(
        "GET",
        "/schedules",
        "listSchedules",
        "List schedules, newest first (cursor pages)",
        "read",
        list_schedules,
        m.SchedulePage,
        query=m.ScheduleListQuery,
        problems=(404, 422),
    ),
    Route(
        "GET",
        "/schedules.ics",
        "getAgendaCalendar",
        "A channel's agenda as an iCalendar file",
        "read",
        agenda_calendar,
        None,
        query=m.AgendaQuery,
        problems=(404, 422),
        media="text/calendar",
        description="One event (a recurring one for a rule) per schedule of GET "
        "/v1/schedules?to=: everyone's into the channel not marked private, to a member "
        "who can see it (403 otherwise), as `herald export ics --to` writes it.",
    ),
    Route(
        "GET",
        _SCHEDULE,
        "getSchedule",
        "One schedule (its ETag is its version)",
        "read",
        get_schedule,
        m.ScheduleOut,
        problems=(404,),
    ),
    Route(
        "PATCH",
        _SCHEDULE,
        "editSchedule",
        "Change a schedule's time, text or destination",
        "write",
        edit_schedule,
        m.ScheduleOut,
        body=m.ScheduleEdit,
        headers=_IF_MATCH,
        problems=(404, 409, 412, 422),
    ),
    *(
        Route(
            "POST",
            f"{_SCHEDULE}/{verb.name}",
            f"{_camel(verb.name)}Schedule",
            verb.help.rstrip("."),
            "write",
            state_change(verb),
            m.ScheduleOut,
            headers=_IF_MATCH,
            problems=(404, 409, 412, 422),
            description=_STATE_DESCRIPTIONS.get(verb.name, ""),
        )
        for verb in STATE_VERBS
    ),
    Route(
        "DELETE",
        _SCHEDULE,
        "deleteSchedule",
        f"{_DELETE.summary} (as POST {PREFIX}{_SCHEDULE}/{_DELETE.name})",
        "write",
        state_change(_DELETE),
        m.ScheduleOut,
        headers=_IF_MATCH,
        problems=(404, 409, 412, 422),
        description=f"Cancels the schedule, as `herald delete` does (an alias of `herald "
        f"{_DELETE.name}`): nothing more is sent; the schedule stays, with its history, and "
        "GET answers it in state cancelled. It answers the cancelled schedule.",
    ),
    Route(
        "GET",
        f"{_SCHEDULE}/jobs",
        "listScheduleJobs",
        "A schedule's jobs (latest 50) and their attempts",
        "read",
        schedule_jobs,
        m.ScheduleJobs,
        query=m.ScheduleJobsQuery,
        problems=(404, 422),
    ),
    Route(
        "GET",
        "/when",
        "previewWhen",
        "How a time expression reads, and its next occurrences",
        "read",
        preview_when,
        m.WhenOut,
        query=m.WhenQuery,
        problems=(422,),
        tag="time",
    ),
    Route(
        "GET",
        "/dead-letters",
        "listDeadLetters",
        "Dead letters, newest first (cursor pages)",
        "read",
        list_dead,
        m.DeadLetterPage,
        query=m.DeadListQuery,
        problems=(404, 422),
        tag="dead letters",
    ),
    Route(
        "GET",
        _DEAD,
        "getDeadLetter",
        "One dead letter",
        "read",
        get_dead,
        m.DeadLetterOut,
        problems=(404,),
        tag="dead letters",
    ),
    Route(
        "POST",
        f"{_DEAD}/retry",
        "retryDeadLetter",
        "Retry a dead letter (an admin's retry happens; anyone else's is a request)",
        "write",
        retry_dead,
        m.DeadDecisionOut,
        problems=(404, 409),
        tag="dead letters",
    ),
    Route(
        "POST",
        f"{_DEAD}/approve",
        "approveDeadLetter",
        "Approve a retry (admins)",
        "admin",
        approve_dead,
        m.DeadDecisionOut,
        problems=(404, 409),
        tag="dead letters",
    ),
    Route(
        "POST",
        f"{_DEAD}/reject",
        "rejectDeadLetterRetry",
        "Turn down a retry request (admins); the reason is told to whoever asked",
        "admin",
        reject_dead,
        m.DeadDecisionOut,
        body=m.RejectRetry,
        body_optional=True,
        problems=(404, 409, 422),
        tag="dead letters",
    ),
    Route(
        "POST",
        f"{_DEAD}/discard",
        "discardDeadLetter",
        "Discard a dead letter for good (admins)",
        "admin",
        discard_dead,
        m.DeadDecisionOut,
        problems=(404, 409),
        tag="dead letters",
    ),
    Route(
        "POST",
        "/imports",
        "importSchedules",
        "Import schedules from JSON Lines (all or nothing, unless skip_invalid)",
        "write",
        import_lines,
        m.ImportOut,
        201,
        query=m.ImportQuery,
        raw_body="application/jsonl",
        problems=(413, 415, 422),
    ),
    *devices.ROUTES,
    *hooks.ROUTES,
    *preferences.ROUTES,
    *templates.ROUTES,
    *until_done.ROUTES,
    *approvals.ROUTES,
)
