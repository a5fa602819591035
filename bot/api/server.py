"""The HTTP API (``/v1``) on ``herald run``'s HTTP port: every route calls the same
``core`` use case the CLI calls, as the member a bearer token acts for.

:func:`add_api` serves the route table (:data:`bot.api.routes.ROUTES`) through the
request framework (:class:`bot.api.requests.Api`), the OpenAPI document built from the
same table (:mod:`bot.api.openapi`) and a page rendering it, and answers any other path
or method under ``/v1`` with a problem (:mod:`bot.api.problems`). With traces on
(:mod:`core.tracing`), each route's request is a server span joining the caller's
``traceparent``, and its answer carries the span's own."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.api.openapi import docs_page, openapi_document
from bot.api.problems import import_too_large, problem_response
from bot.api.requests import JSON_BODY, PREFIX, Api, Route, request_id_for
from bot.api.routes import ROUTES
from bot.http_guard import HttpLimits, body_limit, refusal_format
from core import tracing
from core.cases import Herald


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
    api = Api(herald, limits, clock)
    for route in ROUTES:
        handler = api.handler(route)
        if tracing.on:
            handler = traced(route, handler)
        app.router.add_route(route.method, PREFIX + route.path, handler)
    body_limit(app, PREFIX + "/", JSON_BODY)  # a JSON body; GET routes read none
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
        headers = {"X-Request-Id": request_id_for(request)}
        return web.Response(text=document, content_type="application/json", headers=headers)

    async def docs(request: web.Request) -> web.Response:
        headers = {"X-Request-Id": request_id_for(request)}
        return web.Response(text=page, content_type="text/html", headers=headers)

    app.router.add_get(PREFIX + "/openapi.json", openapi)
    app.router.add_get(PREFIX + "/docs", docs)
    app.router.add_route("*", PREFIX + "/{tail:.*}", _unknown)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def traced(route: Route, handler: Handler) -> Handler:
    """``handler`` answering in a server span (:func:`core.tracing.served`: a child of
    the request's ``traceparent``), its answer carrying the span's own ``traceparent``
    so the caller can join the trace; the span names the route, never its values."""
    path = PREFIX + route.path
    name = f"{route.method} {path}"
    attributes = {"http.request.method": route.method, "http.route": path}

    async def answer(request: web.Request) -> web.StreamResponse:
        with tracing.served(name, request.headers, attributes) as span:
            response = await handler(request)
            span.set_attribute("http.response.status_code", response.status)
            tracing.inject(response.headers)
            return response

    answer.__name__ = route.operation
    return answer


_PATTERNS = [
    (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", PREFIX + r.path) + "$"), r.method)
    for r in ROUTES
]


async def _unknown(request: web.Request) -> web.Response:
    """A path or method the API does not have: 404, or 405 with the methods it has."""
    allowed = sorted({method for pattern, method in _PATTERNS if pattern.match(request.path)})
    request_id = request_id_for(request)
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
