"""The API's problems: RFC 9457 answers (``application/problem+json``) carrying the
sentence the CLI prints, and which problem each use case's refusal is (by its error
class, never by a route of its own)."""

from __future__ import annotations

from aiohttp import web
from pydantic import ValidationError

from bot.api import models as m
from core.calendars import CalendarError
from core.cases import (
    Duplicated,
    ImportRateExceeded,
    ImportRejected,
    ImportTooLarge,
    Unauthorized,
)
from core.errors import (
    Conflict,
    DatabaseError,
    HeraldError,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from core.tenancy import MentionRefused, QuotaExceeded

PROBLEM = "application/problem+json"
#: Where each kind of problem is described: a section of the API's own page (a URI
#: relative to the server, as RFC 9457 allows), so it resolves wherever Herald runs.
PROBLEM_DOCS = "/v1/docs#problem"

#: What a client is told of a database failure (the cause, with the database's
#: address, goes to the log only).
DATABASE_UNAVAILABLE = "The database is unavailable; try again in a few seconds."

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
    "duplicate": "The same text is already scheduled there at about the same time "
    "(a create with ?strict=true); nothing was created.",
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
        duplicates: list[m.SaveWarningOut] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.slug = slug
        self.invalid = invalid
        self.duplicates = duplicates


def problem_response(
    status: int,
    detail: str,
    *,
    request_id: str,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    slug: str | None = None,
    invalid: list[m.InvalidLine] | None = None,
    duplicates: list[m.SaveWarningOut] | None = None,
) -> web.Response:
    body = m.Problem(
        type=f"{PROBLEM_DOCS}-{slug or STATUS_SLUGS.get(status, 'error')}",
        title=STATUS_TITLES.get(status, "Error"),
        status=status,
        detail=detail,
        instance=instance,
        request_id=request_id,
        invalid=invalid,
        duplicates=duplicates,
    )
    return web.Response(
        status=status,
        text=body.model_dump_json(exclude_none=True),
        content_type=PROBLEM,
        headers={**(headers or {}), "X-Request-Id": request_id},
    )


def from_error(exc: HeraldError) -> ApiProblem:
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
    if isinstance(exc, Duplicated):  # a create refused (?strict=true): what it found
        listed = [m.SaveWarningOut.model_validate(w.as_dict()) for w in exc.found]
        return ApiProblem(409, str(exc), slug="duplicate", duplicates=listed)
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


def validation_sentence(exc: ValidationError, where: str) -> str:
    """Pydantic's complaints as one sentence: ``limit: must be at most 200; …``."""
    parts = []
    for error in exc.errors()[:5]:
        loc = ".".join(str(x) for x in error["loc"]) or where
        parts.append(f"{loc}: {_PLAIN.get(error['type'], error['msg'])}")
    more = f" (and {len(exc.errors()) - 5} more)" if len(exc.errors()) > 5 else ""
    return f"The request {where} is not valid: {'; '.join(parts)}{more}."


def import_too_large(limit: int) -> str:
    """The refusal of an import body over ``HERALD_IMPORT_MAX_BYTES``."""
    return (
        f"An import may have at most {limit:,} bytes (HERALD_IMPORT_MAX_BYTES) and this one "
        "has more: split it into smaller files."
    )
