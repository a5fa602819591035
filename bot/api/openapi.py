"""The OpenAPI 3.1 document of the HTTP API, generated from the route table
(:data:`bot.api.routes.ROUTES`) and the pydantic models its handlers read and answer with,
and a page that renders it (no script, nothing fetched from elsewhere): each route's
fields, and one example request and answer (the models' own examples)."""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bot.api import models as m
from bot.api.problems import PROBLEM, PROBLEM_SLUGS, STATUS_SLUGS, STATUS_TITLES
from bot.api.requests import PREFIX, Route
from bot.api.routes import ROUTES
from bot.api.templates import NAME_PATTERN
from core.cases import FIELDS as IMPORT_FIELDS

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
    409: "Conflict with the schedule's state (or a name taken)",
    412: "If-Match names an older version",
    413: "Body too large",
    415: "Unsupported media type",
    422: "Input Herald cannot accept (the sentence says why)",
    428: "If-Match required",
    429: "Rate limited (see Retry-After)",
    500: "Herald failed (quote the request id)",
    503: "Database unavailable (see Retry-After)",
}


#: The ids the examples use in paths (the models' examples name the same ones).
PATH_EXAMPLES: dict[str, int | str] = {
    "schedule_id": 42,
    "job_id": 9,
    "approval_id": 5,
    "device_id": 7,
    "hook_id": 3,
    "name": "deploy",
}
#: Path parameters that are not ids (a number from 1): their schema.
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 64},
    "approval_id": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
}
#: The fields an import line must have; the others (core.cases.importer.FIELDS) may be.
_IMPORT_REQUIRED = ("to", "when", "text")
IMPORT_EXAMPLE = "\n".join(
    json.dumps(line)
    for line in (
        {"to": "log:", "when": "tomorrow at 9am", "text": "Water the plants", "key": "plants"},
        {"to": "webhook:https://hooks.example.com/standup", "when": "in 2 hours", "text": "Hi"},
    )
)


def example_of(model: type[BaseModel] | None) -> Any:
    """A model's one example (``json_schema_extra``), or None."""
    extra = model.model_config.get("json_schema_extra") if model is not None else None
    found = extra.get("examples") if isinstance(extra, dict) else None
    return found[0] if isinstance(found, list) and found else None


def _import_description() -> str:
    optional = sorted(IMPORT_FIELDS - set(_IMPORT_REQUIRED))
    return (
        f"One JSON object a line: {', '.join(_IMPORT_REQUIRED)}, and optionally "
        f"{' and '.join(optional)} (as POST {PREFIX}/schedules takes them)."
    )


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
                "schema": PATH_SCHEMAS.get(name, {"type": "integer", "minimum": 1}),
                "example": PATH_EXAMPLES[name],
            }
        )
    if route.query is not None:
        schema = route.query.model_json_schema()
        required = set(schema.get("required", []))
        example = example_of(route.query) or {}
        for name, prop in schema["properties"].items():
            param: dict[str, Any] = {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": {k: v for k, v in prop.items() if k not in ("description", "examples")},
            }
            if "description" in prop:
                param["description"] = prop["description"]
            if name in example:
                param["example"] = example[name]
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
        "description": (
            f"{route.description + ' ' if route.description else ''}"
            f"Needs a token with the `{route.scope}` scope (or higher)."
        ),
        "security": [{"bearer": []}],
        "parameters": _parameters(route),
        "responses": {},
    }
    if route.body is not None:
        op["requestBody"] = {
            "required": not route.body_optional,
            "content": {
                "application/json": {
                    "schema": {"$ref": _REF.format(model=route.body.__name__)},
                    "example": example_of(route.body),
                }
            },
        }
    if route.raw_body is not None:
        op["requestBody"] = {
            "required": True,
            "description": _import_description(),
            "content": {
                route.raw_body: {"schema": {"type": "string"}},
                # the example on text/plain only: a client (Schemathesis) may send it as is
                "text/plain": {"schema": {"type": "string"}, "example": IMPORT_EXAMPLE},
            },
        }
    if route.media is not None:
        op["responses"][str(route.status)] = {
            "description": _STATUS_TEXT[route.status],
            "headers": {"X-Request-Id": {"schema": {"type": "string"}}},
            "content": {route.media: {"schema": {"type": "string"}}},
        }
    if route.response is not None:
        ok: dict[str, Any] = {
            "description": _STATUS_TEXT[route.status],
            "headers": {"X-Request-Id": {"schema": {"type": "string"}}},
            "content": {
                "application/json": {
                    "schema": {"$ref": _REF.format(model=route.response.__name__)},
                    "example": example_of(route.response),
                }
            },
        }
        if route.operation == "createSchedule":
            ok["links"] = _schedule_links()
        op["responses"][str(route.status)] = ok
        if route.status == 201 and route.operation == "createSchedule":
            op["responses"]["200"] = {**ok, "description": "Replayed: the key's first result"}
        if route.status == 201 and route.operation == "importSchedules":
            op["responses"]["200"] = {**ok, "description": "Nothing new imported"}
        if route.status == 201 and route.operation == "addMyDevice":
            op["responses"]["200"] = {**ok, "description": "Registered already: the same device"}
    problem = {PROBLEM: {"schema": {"$ref": _REF.format(model="Problem")}}}
    # a JSON body past requests.JSON_BODY is refused (a long list of recipients can be)
    large = (413,) if route.body is not None or route.raw_body is not None else ()
    for status in sorted({*_COMMON_PROBLEMS, *route.problems, *large, 404, 405}):
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
    """A plain HTML page listing every route of ``doc`` (:func:`openapi_document`): its
    parameters, the fields of its body and of its answer, one example request and one
    example answer, and its other answers."""
    schemas: dict[str, Any] = doc["components"]["schemas"]
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
                media = op["requestBody"]["content"]
                kinds = ", ".join(media)
                first = next(iter(media.values()))
                described = op["requestBody"].get("description")
                body = f"<p>Body ({html.escape(kinds)})"
                body += f": {html.escape(described)}</p>" if described else ":</p>"
                body += _fields(first["schema"], schemas)
            status, answer = _success(op)
            answer_fields = ""
            if answer is not None:
                answer_fields = f"<p>Answer ({status}):</p>" + _fields(answer["schema"], schemas)
            others = ", ".join(sorted(op["responses"]))
            rows.append(
                f"<section><h2><code>{method.upper()} {html.escape(path)}</code></h2>"
                f"<p>{html.escape(op['summary'])}. {html.escape(op['description'])}</p>"
                f"{'<ul>' + params + '</ul>' if params else ''}{body}{answer_fields}"
                f"<h3>Example request</h3><pre>{html.escape(example_request(path, method, op))}"
                f"</pre><h3>Example answer</h3><pre>{html.escape(example_answer(op))}</pre>"
                f"<p>Answers: {others}</p></section>"
            )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Herald HTTP API</title><style>body{font-family:sans-serif;max-width:60em;"
        "margin:2em auto;padding:0 1em}code{background:#f3f3f3}pre{background:#f6f6f6;"
        "padding:.5em;overflow-x:auto}section{border-top:1px solid #ddd}</style></head>"
        "<body><h1>Herald HTTP API</h1>"
        f"<p>{html.escape(doc['info']['description'])}</p>"
        f'<p>The machine-readable document: <a href="{PREFIX}/openapi.json">'
        f"{PREFIX}/openapi.json</a>.</p>" + "".join(rows) + _problems() + "</body></html>"
    )


def _success(op: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The first 2xx answer of an operation: its status and JSON media object."""
    for status, answer in op["responses"].items():
        if status.startswith("2"):
            return status, answer.get("content", {}).get("application/json")
    return "", None


def example_request(path: str, method: str, op: dict[str, Any]) -> str:
    """The operation's example request as HTTP: its line (path ids and query from the
    parameters' examples) and its example body."""
    query: dict[str, Any] = {}
    for param in op["parameters"]:
        if "example" not in param:
            continue
        if param["in"] == "path":
            path = path.replace("{" + param["name"] + "}", str(param["example"]))
        elif param["in"] == "query":
            value = param["example"]
            query[param["name"]] = str(value).lower() if isinstance(value, bool) else value
    line = f"{method.upper()} {path}" + (f"?{urlencode(query)}" if query else "")
    if "requestBody" not in op:
        return line
    content = op["requestBody"]["content"]
    kind = next(iter(content))
    example = next((m["example"] for m in content.values() if "example" in m), None)
    shown = example if isinstance(example, str) else json.dumps(example, indent=2)
    return f"{line}\nContent-Type: {kind}\n\n{shown}"


def example_answer(op: dict[str, Any]) -> str:
    """The operation's example answer: its status and example body."""
    status, media = _success(op)
    if media is None:  # not JSON: an iCalendar file
        kinds = [kind for s, a in op["responses"].items() if s == status for kind in a["content"]]
        return f"{status}\n\n({', '.join(kinds)})"
    return f"{status}\n\n{json.dumps(media.get('example'), indent=2)}"


def _fields(schema: dict[str, Any], schemas: dict[str, Any]) -> str:
    """A model's fields as a list: name, type, required, limits, description."""
    if "$ref" not in schema:
        return ""
    model = schemas[schema["$ref"].rsplit("/", 1)[-1]]
    required = set(model.get("required", []))
    items = []
    for name, prop in model.get("properties", {}).items():
        limits = _limits(prop)
        described = prop.get("description", "")
        items.append(
            f"<li><code>{html.escape(name)}</code> ({html.escape(_type(prop))}"
            f"{', required' if name in required else ''}{limits})"
            f"{': ' + html.escape(described) if described else ''}</li>"
        )
    return "<ul>" + "".join(items) + "</ul>"


def _type(prop: dict[str, Any]) -> str:
    """A JSON Schema type in words: ``string or null``, ``list of ScheduleOut``."""
    if "$ref" in prop:
        return str(prop["$ref"].rsplit("/", 1)[-1])
    branches = prop.get("anyOf") or prop.get("oneOf")  # oneOf: one or a list (``to``)
    if branches:
        return " or ".join(_type(p) for p in branches)
    if "enum" in prop:
        return "one of " + ", ".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "string" and prop.get("format") == "date-time":
        return "time (RFC 3339)"
    return str(kind)


def _limits(prop: dict[str, Any]) -> str:
    """A field's bounds in words (``at most 4,000 characters``)."""
    found: list[str] = []
    for part in [prop, *prop.get("anyOf", []), *prop.get("oneOf", [])]:
        if "maxLength" in part:
            found.append(f"at most {part['maxLength']:,} characters")
        if "maxItems" in part:
            found.append(f"at most {part['maxItems']:,} items")
        if "maxProperties" in part:
            found.append(f"at most {part['maxProperties']:,} entries")
        if "minimum" in part:
            found.append(f"at least {part['minimum']:g}")
        if "maximum" in part:
            found.append(f"at most {part['maximum']:g}")
    return "".join(f", {item}" for item in dict.fromkeys(found))


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
