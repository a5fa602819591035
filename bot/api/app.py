"""The HTTP API (``/v1``) on ``herald run``'s HTTP port: every route calls the same
``core`` use case the CLI calls, as the member a bearer token acts for.

Each route is one :class:`Route` in :data:`ROUTES`: method, path, the scope it needs,
the pydantic models of its query, body and answer. The handlers read and answer through
those models, and :mod:`bot.api.openapi` builds the OpenAPI document from the same table.
Errors are RFC 9457 problems (``application/problem+json``) carrying the sentence the
CLI prints; every answer carries ``X-Request-Id``."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from bot.api import models as m
from bot.http_guard import BodyRefused, HttpLimits, body_limit, read_body, refusal_format
from core import verbs, views
from core.actors import Actor, Principal
from core.calendars import CalendarError
from core.cases import Herald
from core.cases.importer import (
    ImportRateExceeded,
    ImportRejected,
    ImportTooLarge,
    import_schedules,
)
from core.cases.tokens import Unauthorized, scope_allows
from core.channels import parse_destination
from core.errors import (
    Conflict,
    DatabaseError,
    HeraldError,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from core.models import ApiToken, Schedule
from core.store.dead_letters import DeadFilter
from core.tenancy import MentionRefused, QuotaExceeded
from core.verbs import STATE_VERBS, Verb, perform

log = logging.getLogger(__name__)

PREFIX = "/v1"
PROBLEM = "application/problem+json"
#: Where each kind of problem is described: a section of the API's own page (a URI
#: relative to the server, as RFC 9457 allows), so it resolves wherever Herald runs.
PROBLEM_DOCS = "/v1/docs#problem"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_JSON_BODY = 64 * 1024
#: How deep a JSON body may nest (objects and arrays); a channel's options need a few.
MAX_JSON_DEPTH = 32
_TOO_DEEP = f"The body nests objects and arrays deeper than {MAX_JSON_DEPTH} levels."
_TOUCH_EVERY = 60.0  # seconds between writes of a token's last use
#: What a client is told of a database failure (the cause, with the database's
#: address, goes to the log only).
DATABASE_UNAVAILABLE = "The database is unavailable; try again in a few seconds."

HERALD_KEY = web.AppKey("herald_api_herald", Herald)


# --- problems -----------------------------------------------------------------------

STATUS_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    409: "Conflict",
    412: "Precondition failed",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    428: "Precondition required",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}
PROBLEM_SLUGS: dict[str, str] = {
    "quota-exceeded": "A member's or tenant's quota refuses it; nothing changed.",
    "mention-refused": "The text notifies people its author may not notify.",
    "insufficient-scope": "The token's scope does not cover this route.",
    "idempotency-key-reused": "The Idempotency-Key was used for a different schedule.",
}
STATUS_SLUGS = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    408: "request-timeout",
    409: "conflict",
    412: "precondition-failed",
    413: "content-too-large",
    415: "unsupported-media-type",
    422: "invalid-input",
    428: "precondition-required",
    429: "too-many-requests",
    500: "internal-error",
    503: "unavailable",
}


class ApiProblem(Exception):
    """An answer that is a problem: its status and the sentence people read."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        slug: str | None = None,
        invalid: list[m.InvalidLine] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.slug = slug
        self.invalid = invalid


def problem_response(
    status: int,
    detail: str,
    *,
    request_id: str,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    slug: str | None = None,
    invalid: list[m.InvalidLine] | None = None,
) -> web.Response:
    body = m.Problem(
        type=f"{PROBLEM_DOCS}-{slug or STATUS_SLUGS.get(status, 'error')}",
        title=STATUS_TITLES.get(status, "Error"),
        status=status,
        detail=detail,
        instance=instance,
        request_id=request_id,
        invalid=invalid,
    )
    return web.Response(
        status=status,
        text=body.model_dump_json(exclude_none=True),
        content_type=PROBLEM,
        headers={**(headers or {}), "X-Request-Id": request_id},
    )


def _from_error(exc: HeraldError) -> ApiProblem:
    """The problem a use case's refusal is, with the sentence the CLI prints."""
    if isinstance(exc, Unauthorized):
        return ApiProblem(401, str(exc), headers={"WWW-Authenticate": 'Bearer realm="herald"'})
    if isinstance(exc, ImportRejected):  # the first bad lines; the detail counts them all
        lines = [m.InvalidLine(line=n, reason=why) for n, why in exc.invalid]
        return ApiProblem(422, str(exc), invalid=lines)
    if isinstance(exc, ImportTooLarge):
        return ApiProblem(413, str(exc))
    if isinstance(exc, ImportRateExceeded):
        return ApiProblem(429, str(exc), headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, QuotaExceeded):
        return ApiProblem(403, str(exc), slug="quota-exceeded")
    if isinstance(exc, MentionRefused):
        return ApiProblem(403, str(exc), slug="mention-refused")
    if isinstance(exc, NotFound):
        return ApiProblem(404, str(exc))
    if isinstance(exc, PermissionDenied):
        return ApiProblem(403, str(exc))
    if isinstance(exc, Conflict):
        return ApiProblem(409, str(exc))
    if isinstance(exc, InvalidInput | CalendarError):  # input Herald cannot read
        return ApiProblem(422, str(exc))
    if isinstance(exc, DatabaseError):  # where the database is stays in the log
        return ApiProblem(503, DATABASE_UNAVAILABLE, headers={"Retry-After": "5"})
    return ApiProblem(400, str(exc))


_PLAIN = {
    "extra_forbidden": "unknown field (see /v1/docs for the fields this route takes)",
    "missing": "required",
}


def _validation_sentence(exc: ValidationError, where: str) -> str:
    """Pydantic's complaints as one sentence: ``limit: must be at most 200; …``."""
    parts = []
    for error in exc.errors()[:5]:
        loc = ".".join(str(x) for x in error["loc"]) or where
        parts.append(f"{loc}: {_PLAIN.get(error['type'], error['msg'])}")
    more = f" (and {len(exc.errors()) - 5} more)" if len(exc.errors()) > 5 else ""
    return f"The request {where} is not valid: {'; '.join(parts)}{more}."


# --- one call -----------------------------------------------------------------------


@dataclass
class Call:
    """One request, authenticated: who acts, what they sent, as the models read it."""

    request: web.Request
    herald: Herald
    principal: Principal
    token: ApiToken
    query: Any = None
    body: Any = None
    request_id: str = ""

    def path_int(self, name: str) -> int:
        raw = self.request.match_info[name]
        if not raw.isdigit() or len(raw) > 18:
            raise ApiProblem(404, f"No {name.replace('_', ' ')} {raw!r}: ids are numbers.")
        return int(raw)

    def if_match(self, *, required: bool = False) -> int | None:
        """The schedule version ``If-Match`` names (``"3"``); None for none or ``*``."""
        raw = self.request.headers.get("If-Match")
        if raw is None or raw.strip() == "*":
            if required and raw is None:
                raise ApiProblem(428, "Send If-Match with the version you read (its ETag).")
            return None
        tag = raw.strip().removeprefix("W/").strip('"')
        if not tag.isdigit() or len(tag) > 9:
            raise ApiProblem(400, f"If-Match {raw!r} is not a schedule version: send its ETag.")
        return int(tag)


@dataclass
class Reply:
    """What a handler answers: a model (or list of them), its status, extra headers."""

    body: BaseModel | None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Call], Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    """One operation of the API, as the handlers and the OpenAPI document read it."""

    method: str
    path: str
    operation: str
    summary: str
    scope: str
    handler: Handler
    response: type[BaseModel] | None
    status: int = 200
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    #: A body that is not JSON: its media type (a bulk import's JSON Lines).
    raw_body: str | None = None
    #: Request headers the route reads: name -> description.
    headers: dict[str, str] = field(default_factory=dict)
    #: Problem statuses it can answer besides 400/401/403/429/500/503.
    problems: tuple[int, ...] = ()
    tag: str = "schedules"
    #: What the document says of it beyond its summary (a sentence or two).
    description: str = ""


# --- handlers -----------------------------------------------------------------------


def _schedule(s: Schedule) -> m.ScheduleOut:
    return m.ScheduleOut.model_validate(views.schedule_dict(s))


def _etag(s: Schedule) -> dict[str, str]:
    return {"ETag": f'"{s.version}"'}


_BAD_CURSOR = "That cursor is not one this API gave: pass next_cursor as it came."


def _cursor(value: dict[str, Any]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str | None) -> dict[str, Any] | None:
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        data = None
    if not isinstance(data, dict):
        raise ApiProblem(400, _BAD_CURSOR)
    return data


async def create_schedule(call: Call) -> Reply:
    body: m.ScheduleCreate = call.body
    header_key = call.request.headers.get("Idempotency-Key")
    if header_key is not None and body.key is not None and header_key != body.key:
        raise ApiProblem(422, "The Idempotency-Key header and the key field differ: send one.")
    key = header_key if header_key is not None else body.key
    schedule, created = await call.herald.create_schedule(
        call.principal,
        to=body.to,
        when=body.when,
        text=body.text,
        tz=body.tz,
        key=key,
        max_lateness=body.max_lateness,
        options=body.options,
        skip=body.skip,
        skip_files=body.skip_files or None,
    )
    headers = {**_etag(schedule), "Location": f"{PREFIX}/schedules/{schedule.id}"}
    if created:
        return Reply(_schedule(schedule), 201, headers)
    asked_to = await call.herald.named_channel(call.principal, body.to)  # slack:#name
    if schedule.body != body.text or schedule.destination != str(parse_destination(asked_to)):
        raise ApiProblem(
            422,
            f"The idempotency key {key!r} was used for a different schedule ({schedule.id}); "
            "use a new key for a new request.",
            slug="idempotency-key-reused",
        )
    return Reply(_schedule(schedule), 200, {**headers, "Idempotent-Replayed": "true"})


async def list_schedules(call: Call) -> Reply:
    q: m.ScheduleListQuery = call.query
    cursor = _read_cursor(q.cursor)
    before = cursor.get("before") if cursor else None
    if cursor is not None and not (type(before) is int and 0 < before < 2**31):  # not True
        raise ApiProblem(400, _BAD_CURSOR)
    rows = await call.herald.list_schedules(
        call.principal,
        everyone=q.all,
        state=q.state,
        destination=q.to,
        text=q.search,
        tenant=q.tenant,
        limit=q.limit + 1,
        newest_first=True,
        before_id=before,
    )
    page, more = rows[: q.limit], len(rows) > q.limit
    after = _cursor({"before": page[-1].id}) if more and page else None
    return Reply(m.SchedulePage(items=[_schedule(s) for s in page], next_cursor=after))


async def get_schedule(call: Call) -> Reply:
    detail = await call.herald.show_schedule(call.principal, call.path_int("schedule_id"))
    return Reply(_schedule(detail.schedule), headers=_etag(detail.schedule))


async def schedule_jobs(call: Call) -> Reply:
    detail = await call.herald.show_schedule(call.principal, call.path_int("schedule_id"))
    data = views.detail_dict(detail)
    out = m.ScheduleJobs(
        schedule_id=data["id"],
        jobs=[m.JobOut.model_validate(j) for j in data["jobs"]],
        attempts=[m.AttemptOut.model_validate(a) for a in data["attempts"]],
    )
    return Reply(out)


async def edit_schedule(call: Call) -> Reply:
    body: m.ScheduleEdit = call.body
    schedule = await _versioned(
        call,
        lambda version: call.herald.edit_schedule(
            call.principal,
            call.path_int("schedule_id"),
            when=body.when,
            text=body.text,
            to=body.to,
            tz=body.tz,
            expected_version=version,
        ),
    )
    return Reply(_schedule(schedule), headers=_etag(schedule))


async def _versioned(call: Call, change: Callable[[int | None], Awaitable[Schedule]]) -> Schedule:
    """Run ``change`` at the version If-Match names: a stale one is 412, not 409."""
    version = call.if_match()
    try:
        return await change(version)
    except Conflict as exc:
        if version is not None and "version" in str(exc):
            raise ApiProblem(412, str(exc)) from None
        raise


def _state_change(verb: Verb) -> Handler:
    """The route of a verb of :data:`core.verbs.STATE_VERBS` (pause, resume, skip,
    cancel): the same table the CLI, Slack, Discord and the console read."""

    async def change(call: Call) -> Reply:
        schedule_id = call.path_int("schedule_id")
        schedule = await _versioned(
            call,
            lambda version: perform(
                call.herald, verb, call.principal, schedule_id, expected_version=version
            ),
        )
        return Reply(_schedule(schedule), headers=_etag(schedule))

    change.__name__ = f"{verb.name}_schedule"
    return change


async def preview_when(call: Call) -> Reply:
    """The use case every surface's preview is (the zone, default time and skip
    calendars ``POST /schedules`` would use for this member)."""
    q: m.WhenQuery = call.query
    shown = await call.herald.preview_when(call.principal, q.when, tz=q.tz, count=q.count)
    reading, default = shown.reading, shown.reading.default_time
    out = m.WhenOut(
        expression=reading.expression,
        timezone=shown.zone,
        zone_source=shown.source.value,
        recurring=reading.recurring,
        rule=reading.rule,
        description=reading.description,
        default_time=None if default is None else f"{default:%H:%M}",
        occurrences=shown.occurrences,
        skip_calendars=shown.calendars,
        skipped=[m.WhenSkipped(at=at, event=name) for at, name in shown.skipped],
    )
    return Reply(out)


def _dead(letter: Any) -> m.DeadLetterOut:
    return m.DeadLetterOut.model_validate(views.dead_letter_dict(letter))


async def list_dead(call: Call) -> Reply:
    q: m.DeadListQuery = call.query
    cursor = _read_cursor(q.cursor)
    before: tuple[datetime, int] | None = None
    if cursor is not None:
        try:
            before = datetime.fromisoformat(cursor["at"]), int(cursor["job"])
            if before[0].utcoffset() is None or not 0 < before[1] < 2**63:
                raise ValueError(cursor)
        except (KeyError, TypeError, ValueError):
            raise ApiProblem(400, _BAD_CURSOR) from None
    f = DeadFilter(tenant=q.tenant, destination=q.to, requested=q.requested)
    rows = await call.herald.dead_page(call.principal, f, before=before, limit=q.limit + 1)
    page, more = rows[: q.limit], len(rows) > q.limit
    after = None
    if more and page and page[-1].finished_at is not None:
        after = _cursor({"at": page[-1].finished_at.isoformat(), "job": page[-1].job_id})
    return Reply(m.DeadLetterPage(items=[_dead(d) for d in page], next_cursor=after))


async def get_dead(call: Call) -> Reply:
    letters = await call.herald.dead_letter(call.principal, call.path_int("job_id"))
    return Reply(_dead(letters[0]))


async def retry_dead(call: Call) -> Reply:
    """Retry (an admin) or ask for one: core/verbs.py's retry."""
    job_id = call.path_int("job_id")
    result, count = await perform(call.herald, "retry", call.principal, [job_id])
    return Reply(m.DeadDecisionOut(job_id=job_id, result=result, count=count))


async def _decide(call: Call, decision: str) -> Reply:
    """An admin's decision (core/verbs.py's DECISIONS: retry, discard), as an alert's
    button takes it: anyone else is refused for their role (403, which says nothing of
    the letter), an admin is answered 404 for a letter they cannot see."""
    job_id = call.path_int("job_id")
    count = await call.herald.decide_dead_letters(call.principal, [job_id], decision)
    return Reply(m.DeadDecisionOut(job_id=job_id, result=verbs.verb(decision).past, count=count))


async def approve_dead(call: Call) -> Reply:
    return await _decide(call, "retry")


async def reject_dead(call: Call) -> Reply:
    """Turn a retry request down, with a reason: core/verbs.py's reject."""
    job_id = call.path_int("job_id")
    body: m.RejectRetry | None = call.body
    reason = None if body is None else body.reason
    count = await perform(call.herald, "reject", call.principal, [job_id], reason=reason)
    return Reply(m.DeadDecisionOut(job_id=job_id, result=verbs.verb("reject").past, count=count))


async def discard_dead(call: Call) -> Reply:
    return await _decide(call, "discard")


def import_too_large(limit: int) -> str:
    """The refusal of an import body over ``HERALD_IMPORT_MAX_BYTES``."""
    return (
        f"An import may have at most {limit:,} bytes (HERALD_IMPORT_MAX_BYTES) and this one "
        "has more: split it into smaller files."
    )


async def import_lines(call: Call) -> Reply:
    """A bulk import: core/cases/importer.py bounds it (lines, bytes, the token's lines a
    minute) and checks it in slices, so the loop keeps serving meanwhile."""
    q: m.ImportQuery = call.query
    text: str = call.body
    report = await import_schedules(call.herald, call.principal, text, skip_invalid=q.skip_invalid)
    out = m.ImportOut(
        imported=report.imported,
        skipped_existing=report.skipped_existing,
        skipped_duplicate=report.skipped_duplicate,
        invalid=[m.InvalidLine(line=n, reason=why) for n, why in report.invalid],
        invalid_count=report.invalid_count,
        ids=report.ids,
    )
    return Reply(out, 201 if report.imported else 200)


async def me(call: Call) -> Reply:
    actor: Actor = await call.herald.actor(call.principal)
    return Reply(
        m.Me(
            member=actor.id,
            tenant=actor.tenant,
            role=actor.role.value,
            scope=call.token.scope,
            token=call.token.id,
            expires_at=call.token.expires_at,
        )
    )


_IF_MATCH = {"If-Match": 'The version you read, as its ETag ("3"); a newer one is refused (412).'}
_SCHEDULE = "/schedules/{schedule_id}"
_DEAD = "/dead-letters/{job_id}"
#: DELETE on a schedule is the CLI's ``herald delete``: an alias of ``cancel`` (core/verbs.py).
_DELETE = verbs.verb("delete")

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
        body=m.ScheduleCreate,
        headers={
            "Idempotency-Key": "Repeat a create safely: the same key answers the first "
            "result (200, Idempotent-Replayed: true) instead of making another schedule."
        },
        problems=(404, 409, 422),
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
            f"{verb.name}Schedule",
            verb.help.rstrip("."),
            "write",
            _state_change(verb),
            m.ScheduleOut,
            headers=_IF_MATCH,
            problems=(404, 409, 412, 422),
        )
        for verb in STATE_VERBS
    ),
    Route(
        "DELETE",
        _SCHEDULE,
        "deleteSchedule",
        f"{_DELETE.summary} (as POST {PREFIX}{_SCHEDULE}/{_DELETE.name})",
        "write",
        _state_change(_DELETE),
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
        problems=(404,),
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
)


# --- the app ------------------------------------------------------------------------


class _Buckets:
    """A token bucket per key (per process): ``rate`` a second, ``burst`` at once. At
    most :attr:`MAX_KEYS` keys are held: full buckets are forgotten first."""

    MAX_KEYS = 10_000

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._state: dict[Any, tuple[float, float]] = {}

    def take(self, key: Any) -> float:
        """0 when a request may go now (it is counted), else the seconds until one may."""
        now = self.clock()
        level, at = self._state.pop(key, (float(self.burst), now))
        level = min(float(self.burst), level + (now - at) * self.rate)
        if len(self._state) >= self.MAX_KEYS:
            self._forget(now)
        if level >= 1.0:
            self._state[key] = (level - 1.0, now)
            return 0.0
        self._state[key] = (level, now)
        return (1.0 - level) / self.rate

    def _forget(self, now: float) -> None:
        full = [
            k
            for k, (level, at) in self._state.items()
            if level + (now - at) * self.rate >= self.burst
        ]
        for key in full:
            del self._state[key]
        for key in list(self._state)[: max(0, len(self._state) - self.MAX_KEYS // 2)]:
            del self._state[key]  # the least recently used (take moves a key to the end)


class Api:
    """The routes' shared state: the use cases, limits, rate buckets, token touches."""

    def __init__(
        self, herald: Herald, limits: HttpLimits, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.herald = herald
        self.limits = limits
        settings = herald.settings
        self.clock = clock
        #: One allowance per member, whichever of their tokens they send.
        self.buckets = _Buckets(settings.api_rate, settings.api_burst, clock)
        #: One per client address for requests that name no valid token.
        self.strangers = _Buckets(settings.api_rate, settings.api_burst, clock)
        self.max_import = settings.import_max_bytes
        self._touched: dict[str, float] = {}

    async def authenticate(self, request: web.Request) -> tuple[Principal, ApiToken]:
        header = request.headers.get("Authorization")
        if header is None:
            raise Unauthorized("Send an API token: Authorization: Bearer hk_…")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            raise Unauthorized("Only bearer tokens are taken: Authorization: Bearer hk_…")
        principal, token = await self.herald.token_principal(credentials)
        now = self.clock()
        if now - self._touched.get(token.id, -_TOUCH_EVERY) >= _TOUCH_EVERY:
            self._touched[token.id] = now
            await self.herald.store.touch_token(token.id, now=self.herald.clock.now())
        return principal, token

    def handler(self, route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            request_id = _request_id(request)
            settings = self.herald.settings
            try:
                try:
                    principal, token = await self.authenticate(request)
                except Unauthorized:
                    wait = self.strangers.take(request.remote or "?")
                    if wait > 0:
                        raise ApiProblem(
                            429,
                            f"More than {settings.api_burst} requests at once or "
                            f"{settings.api_rate:g} a second came from this address without "
                            "a valid API token; wait and try again.",
                            headers={"Retry-After": _retry_after(wait)},
                        ) from None
                    raise
                wait = self.buckets.take((token.tenant, token.member_id))
                if wait > 0:
                    raise ApiProblem(
                        429,
                        f"{token.member_id} sent more than {settings.api_burst} requests at "
                        f"once or {settings.api_rate:g} a second (all their tokens together); "
                        "wait and try again.",
                        headers={"Retry-After": _retry_after(wait)},
                    )
                if not scope_allows(token.scope, route.scope):
                    raise ApiProblem(
                        403,
                        f"Token {token.id} has the {token.scope} scope; this needs "
                        f"{route.scope}. Make a token with --scope {route.scope}.",
                        slug="insufficient-scope",
                    )
                call = Call(request, self.herald, principal, token, request_id=request_id)
                call.query = _model(route.query, dict(request.query), "query")
                call.body = await self._body(request, route)
                reply = await route.handler(call)
            except (ApiProblem, HeraldError) as exc:
                if isinstance(exc, DatabaseError):
                    log.warning(
                        "api request: database unavailable",
                        extra={"request_id": request_id, "path": request.path, "error": str(exc)},
                    )
                p = exc if isinstance(exc, ApiProblem) else _from_error(exc)
                return problem_response(
                    p.status,
                    p.detail,
                    request_id=request_id,
                    instance=request.path,
                    headers=p.headers,
                    slug=p.slug,
                    invalid=p.invalid,
                )
            except BodyRefused as exc:
                status = exc.response.status
                sentence = (exc.response.text or exc.reason).strip()
                return problem_response(status, sentence, request_id=request_id)
            except Exception:
                log.exception(
                    "api request failed", extra={"request_id": request_id, "path": request.path}
                )
                return problem_response(
                    500,
                    f"Something went wrong on Herald's side; quote request id {request_id}.",
                    request_id=request_id,
                )
            headers = {**reply.headers, "X-Request-Id": request_id}
            if reply.body is None:
                return web.Response(status=204, headers=headers)
            return web.Response(
                status=reply.status,
                text=reply.body.model_dump_json(),
                content_type="application/json",
                headers=headers,
            )

        handle.__name__ = route.operation
        return handle

    async def _body(self, request: web.Request, route: Route) -> Any:
        if route.raw_body is not None:
            kind = request.content_type
            if kind not in ("application/jsonl", "application/x-ndjson", "text/plain"):
                raise ApiProblem(
                    415, "Send JSON Lines (Content-Type: application/jsonl), one schedule a line."
                )
            limits = replace(self.limits, max_body=self.max_import)
            try:
                raw = await read_body(request, limits)
            except BodyRefused as exc:  # a chunked body, counted as it came
                if exc.response.status != 413:
                    raise
                raise ApiProblem(413, import_too_large(self.max_import)) from None
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ApiProblem(400, "The body is not UTF-8 text.") from None
        if route.body is None:
            return None
        raw = await read_body(request, replace(self.limits, max_body=_JSON_BODY))
        if not raw.strip():
            if route.method == "POST" and route.body is m.RejectRetry:
                return None  # a reason is optional
            raise ApiProblem(400, "Send a JSON object as the request body.")
        if request.content_type != "application/json":
            raise ApiProblem(415, "Send JSON (Content-Type: application/json).")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiProblem(400, f"The body is not valid JSON: {exc}.") from None
        except RecursionError:  # nested far deeper still
            raise ApiProblem(400, _TOO_DEEP) from None
        if _too_deep(data):
            raise ApiProblem(400, _TOO_DEEP)
        return _model(route.body, data, "body")


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests objects and arrays deeper than :data:`MAX_JSON_DEPTH`."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_JSON_DEPTH:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return False


def _model(model: type[BaseModel] | None, data: Any, where: str) -> Any:
    if model is None:
        if where == "query" and data:
            raise ApiProblem(400, f"This route takes no query parameters: {', '.join(data)}.")
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiProblem(422, _validation_sentence(exc, where)) from None


def _retry_after(wait: float) -> str:
    return str(max(1, round(wait + 0.5)))


def _request_id(request: web.Request) -> str:
    given = request.headers.get("X-Request-Id", "")
    return given if _REQUEST_ID.match(given) else secrets.token_hex(8)


def add_api(
    app: web.Application,
    herald: Herald,
    limits: HttpLimits,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Serve the API on ``app`` under ``/v1``: its routes, the OpenAPI document at
    ``/v1/openapi.json`` and a page that renders it at ``/v1/docs``. ``clock`` (seconds,
    monotonic) paces the request rates."""
    from bot.api.openapi import docs_page, openapi_document

    api = Api(herald, limits, clock)
    for route in ROUTES:
        app.router.add_route(route.method, PREFIX + route.path, api.handler(route))
    body_limit(app, PREFIX + "/", _JSON_BODY)  # a JSON body; GET routes read none
    body_limit(app, PREFIX + "/imports", herald.settings.import_max_bytes)
    refusal_format(  # before the prefix below: the first that matches answers
        app,
        PREFIX + "/imports",
        lambda status, _: problem_response(
            status,
            import_too_large(herald.settings.import_max_bytes),
            request_id=secrets.token_hex(8),
        ),
    )
    refusal_format(
        app,
        PREFIX + "/",
        lambda status, text: problem_response(status, text, request_id=secrets.token_hex(8)),
    )
    spec = openapi_document()
    document = json.dumps(spec, indent=1)
    page = docs_page(spec)

    async def openapi(request: web.Request) -> web.Response:
        headers = {"X-Request-Id": _request_id(request)}
        return web.Response(text=document, content_type="application/json", headers=headers)

    async def docs(request: web.Request) -> web.Response:
        headers = {"X-Request-Id": _request_id(request)}
        return web.Response(text=page, content_type="text/html", headers=headers)

    app.router.add_get(PREFIX + "/openapi.json", openapi)
    app.router.add_get(PREFIX + "/docs", docs)
    app.router.add_route("*", PREFIX + "/{tail:.*}", _unknown)


_PATTERNS = [
    (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", PREFIX + r.path) + "$"), r.method)
    for r in ROUTES
]


async def _unknown(request: web.Request) -> web.Response:
    """A path or method the API does not have: 404, or 405 with the methods it has."""
    allowed = sorted({method for pattern, method in _PATTERNS if pattern.match(request.path)})
    request_id = _request_id(request)
    if allowed:
        return problem_response(
            405,
            f"{request.path} takes {', '.join(allowed)}, not {request.method}.",
            request_id=request_id,
            headers={"Allow": ", ".join(allowed)},
        )
    return problem_response(
        404, f"There is no {request.path} in this API (see /v1/docs).", request_id=request_id
    )
