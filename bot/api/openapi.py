"""The OpenAPI 3.1 document of the HTTP API, generated from the route table
(:data:`bot.api.app.ROUTES`) and the pydantic models its handlers read and answer with,
and a page that renders it (no script, nothing fetched from elsewhere)."""

from __future__ import annotations

import html
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bot.api import models as m
from bot.api.app import PREFIX, PROBLEM, PROBLEM_SLUGS, ROUTES, STATUS_SLUGS, STATUS_TITLES, Route

_REF = "#/components/schemas/{model}"
_COMMON_PROBLEMS = (400, 401, 403, 429, 500, 503)
_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    400: "Malformed request (bad JSON, cursor or header)",
    401: "No token, or a bad, expired or revoked one",
    403: "The token's scope, the member's role or a quota refuses it",
    404: "Not found within the token's tenant",
    405: "Method not allowed",
    409: "Conflict with the schedule's state",
    412: "If-Match names an older version",
    413: "Body too large",
    415: "Unsupported media type",
    422: "Input Herald cannot accept (the sentence says why)",
    428: "If-Match required",
    429: "Rate limited (see Retry-After)",
    500: "Herald failed (quote the request id)",
    503: "Database unavailable (see Retry-After)",
}


def _models() -> list[tuple[type[BaseModel], Any]]:
    """Every model the document names: request bodies as they are validated, answers
    (and problems) as they are serialized."""
    seen: dict[str, tuple[type[BaseModel], Any]] = {"Problem": (m.Problem, "serialization")}
    for route in ROUTES:
        if route.body is not None:
            seen[route.body.__name__] = (route.body, "validation")
        if route.response is not None:
            seen[route.response.__name__] = (route.response, "serialization")
    return list(seen.values())


def _parameters(route: Route) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in _path_names(route.path):
        params.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "integer", "minimum": 1},
            }
        )
    if route.query is not None:
        schema = route.query.model_json_schema()
        required = set(schema.get("required", []))
        for name, prop in schema["properties"].items():
            param: dict[str, Any] = {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": {k: v for k, v in prop.items() if k != "description"},
            }
            if "description" in prop:
                param["description"] = prop["description"]
            params.append(param)
    for name, description in route.headers.items():
        params.append(
            {
                "name": name,
                "in": "header",
                "required": False,
                "description": description,
                "schema": {"type": "string", "maxLength": 200},
            }
        )
    return params


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.operation,
        "summary": route.summary,
        "tags": [route.tag],
        "description": f"Needs a token with the `{route.scope}` scope (or higher).",
        "security": [{"bearer": []}],
        "parameters": _parameters(route),
        "responses": {},
    }
    if route.body is not None:
        op["requestBody"] = {
            "required": route.body is not m.RejectRetry,
            "content": {
                "application/json": {"schema": {"$ref": _REF.format(model=route.body.__name__)}}
            },
        }
    if route.raw_body is not None:
        op["requestBody"] = {
            "required": True,
            "description": "One JSON object a line: to, when, text, and optionally tz and key.",
            "content": {
                kind: {"schema": {"type": "string"}} for kind in (route.raw_body, "text/plain")
            },
        }
    if route.response is not None:
        ok: dict[str, Any] = {
            "description": _STATUS_TEXT[route.status],
            "headers": {"X-Request-Id": {"schema": {"type": "string"}}},
            "content": {
                "application/json": {"schema": {"$ref": _REF.format(model=route.response.__name__)}}
            },
        }
        if route.operation == "createSchedule":
            ok["links"] = _schedule_links()
        op["responses"][str(route.status)] = ok
        if route.status == 201 and route.operation == "createSchedule":
            op["responses"]["200"] = {**ok, "description": "Replayed: the key's first result"}
        if route.status == 201 and route.operation == "importSchedules":
            op["responses"]["200"] = {**ok, "description": "Nothing new imported"}
    problem = {PROBLEM: {"schema": {"$ref": _REF.format(model="Problem")}}}
    for status in sorted({*_COMMON_PROBLEMS, *route.problems, 404, 405}):
        op["responses"][str(status)] = {"description": _STATUS_TEXT[status], "content": problem}
    return op


def _schedule_links() -> dict[str, Any]:
    """What a new schedule's id leads to (OpenAPI links: clients and property-based
    testers follow them from a create to the routes that take its id)."""
    return {
        route.operation: {
            "operationId": route.operation,
            "parameters": {"schedule_id": "$response.body#/id"},
        }
        for route in ROUTES
        if route.path.startswith("/schedules/{schedule_id}")
    }


def openapi_document() -> dict[str, Any]:
    """The whole document (OpenAPI 3.1, JSON Schema 2020-12 from pydantic)."""
    _, defs = models_json_schema(_models(), ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(PREFIX + route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Herald HTTP API",
            "version": "1",
            "description": (
                "Schedule, inspect and approve messages from any program. Authenticate "
                "with `Authorization: Bearer hk_…` (`herald token create`). Errors are "
                "RFC 9457 problems; times are RFC 3339; every answer has X-Request-Id."
            ),
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "hk_<id>_<secret>"}
            },
        },
    }


def docs_page(doc: dict[str, Any]) -> str:
    """A plain HTML page listing every route of ``doc`` (:func:`openapi_document`), its
    parameters and its answers."""
    rows: list[str] = []
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            params = "".join(
                f"<li><code>{html.escape(p['name'])}</code> ({p['in']}"
                f"{', required' if p.get('required') else ''})"
                f"{': ' + html.escape(p['description']) if p.get('description') else ''}</li>"
                for p in op["parameters"]
            )
            body = ""
            if "requestBody" in op:
                kinds = ", ".join(op["requestBody"]["content"])
                body = f"<p>Body: {html.escape(kinds)}</p>"
            answers = ", ".join(sorted(op["responses"]))
            rows.append(
                f"<section><h2><code>{method.upper()} {html.escape(path)}</code></h2>"
                f"<p>{html.escape(op['summary'])}. {html.escape(op['description'])}</p>"
                f"{'<ul>' + params + '</ul>' if params else ''}{body}"
                f"<p>Answers: {answers}</p></section>"
            )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Herald HTTP API</title><style>body{font-family:sans-serif;max-width:60em;"
        "margin:2em auto;padding:0 1em}code{background:#f3f3f3}section{border-top:1px "
        "solid #ddd}</style></head><body><h1>Herald HTTP API</h1>"
        f"<p>{html.escape(doc['info']['description'])}</p>"
        f'<p>The machine-readable document: <a href="{PREFIX}/openapi.json">'
        f"{PREFIX}/openapi.json</a>.</p>" + "".join(rows) + _problems() + "</body></html>"
    )


def _problems() -> str:
    """The problem types, each at the anchor its ``type`` URI names."""
    items = [
        (slug, f"{status} {STATUS_TITLES[status]}: {_STATUS_TEXT.get(status, '')}")
        for status, slug in STATUS_SLUGS.items()
    ] + list(PROBLEM_SLUGS.items())
    return (
        "<section><h2>Problems</h2><p>Errors are <code>application/problem+json</code> "
        "(RFC 9457); <code>detail</code> is the sentence the CLI prints.</p><dl>"
        + "".join(
            f'<dt id="problem-{slug}"><code>{slug}</code></dt><dd>{html.escape(text)}</dd>'
            for slug, text in items
        )
        + "</dl></section>"
    )
