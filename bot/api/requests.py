"""The API's request framework: what a route declares (:class:`Route`), what its
handler is given and answers (:class:`Call`, :class:`Reply`), and :class:`Api`, which
turns a route into an aiohttp handler: the bearer token, the request rates, the token's
scope, the query and body read through the route's models (bounded in size and
nesting), and every refusal answered as a problem with ``X-Request-Id``."""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from bot.api.problems import (
    ApiProblem,
    from_error,
    import_too_large,
    problem_response,
    validation_sentence,
)
from bot.http_guard import BodyRefused, HttpLimits, read_body
from core.actors import Principal
from core.cases import Herald, Unauthorized, scope_allows
from core.errors import DatabaseError, HeraldError
from core.models import ApiToken

log = logging.getLogger(__name__)

PREFIX = "/v1"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
#: The most a JSON body may have, in bytes.
JSON_BODY = 64 * 1024
#: How deep a JSON body may nest (objects and arrays); a channel's options need a few.
MAX_JSON_DEPTH = 32
_TOO_DEEP = f"The body nests objects and arrays deeper than {MAX_JSON_DEPTH} levels."
_TOUCH_EVERY = 60.0  # seconds between writes of a token's last use


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
        """The version (a schedule's, a template's) ``If-Match`` names (``"3"``); None
        for none or ``*``."""
        raw = self.request.headers.get("If-Match")
        if raw is None or raw.strip() == "*":
            if required and raw is None:
                raise ApiProblem(428, "Send If-Match with the version you read (its ETag).")
            return None
        tag = raw.strip().removeprefix("W/").strip('"')
        if not tag.isdigit() or len(tag) > 9:
            raise ApiProblem(400, f"If-Match {raw!r} is not a version: send the ETag you read.")
        return int(tag)


@dataclass
class Reply:
    """What a handler answers: a model (or list of them), its status, extra headers."""

    body: BaseModel | None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: An answer that is not JSON (a calendar): its bytes, of the route's ``media``.
    raw: bytes | None = None


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
    #: An empty body is taken (the handler is given None): every field of ``body`` is
    #: optional (a rejection's reason).
    body_optional: bool = False
    #: A body that is not JSON: its media type (a bulk import's JSON Lines).
    raw_body: str | None = None
    #: Request headers the route reads: name -> description.
    headers: dict[str, str] = field(default_factory=dict)
    #: Problem statuses it can answer besides 400/401/403/429/500/503.
    problems: tuple[int, ...] = ()
    tag: str = "schedules"
    #: What the document says of it beyond its summary (a sentence or two).
    description: str = ""
    #: An answer that is not JSON: its media type (an iCalendar file); ``response`` None.
    media: str | None = None


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

    async def _admit(self, request: web.Request, route: Route) -> tuple[Principal, ApiToken]:
        """Who ``request`` acts for: its token, within the request rates (the address's
        without a valid token, else the member's) and the route's scope. Raises
        :class:`Unauthorized` or an :class:`ApiProblem` (429, 403) when not."""
        settings = self.herald.settings
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
        return principal, token

    async def _run(self, request: web.Request, route: Route, request_id: str) -> Reply:
        """The route's handler on ``request``, once admitted and read through the
        route's models (its query, then its body)."""
        principal, token = await self._admit(request, route)
        call = Call(request, self.herald, principal, token, request_id=request_id)
        call.query = _model(route.query, dict(request.query), "query")
        call.body = await self._body(request, route)
        return await route.handler(call)

    def handler(self, route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """The aiohttp handler of ``route``: every refusal and failure is a problem, and
        every answer carries ``X-Request-Id``."""

        async def handle(request: web.Request) -> web.StreamResponse:
            request_id = request_id_for(request)
            try:
                reply = await self._run(request, route, request_id)
            except (ApiProblem, HeraldError) as exc:
                if isinstance(exc, DatabaseError):
                    log.warning(
                        "api request: database unavailable",
                        extra={"request_id": request_id, "path": request.path, "error": str(exc)},
                    )
                p = exc if isinstance(exc, ApiProblem) else from_error(exc)
                return problem_response(
                    p.status,
                    p.detail,
                    request_id=request_id,
                    instance=request.path,
                    headers=p.headers,
                    slug=p.slug,
                    invalid=p.invalid,
                    duplicates=p.duplicates,
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
            if reply.raw is not None:
                media = route.media or "application/octet-stream"
                text = media.startswith("text/")
                headers["Content-Type"] = f"{media}; charset=utf-8" if text else media
                return web.Response(status=reply.status, body=reply.raw, headers=headers)
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
        raw = await read_body(request, replace(self.limits, max_body=JSON_BODY))
        if not raw.strip():
            if route.body_optional:
                return None
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
        raise ApiProblem(422, validation_sentence(exc, where)) from None


def _retry_after(wait: float) -> str:
    return str(max(1, round(wait + 0.5)))


def request_id_for(request: web.Request) -> str:
    given = request.headers.get("X-Request-Id", "")
    return given if _REQUEST_ID.match(given) else secrets.token_hex(8)
