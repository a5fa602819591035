"""The API's words match (issue 33): requests name the zone ``timezone`` as answers do
(``tz`` still accepted), ``DELETE /v1/schedules/{id}`` is the CLI's ``herald delete``
(a cancel), the OpenAPI document's limits and descriptions come from the tables the
checks use, and ``/v1/docs`` shows each route's fields with one example request and
answer (each example valid for its model)."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest

from bot.api.openapi import docs_page, openapi_document
from bot.api.routes import ROUTES
from core import limits, verbs
from core.cases import FIELDS as IMPORT_FIELDS
from core.cases import MAX_KEY, OPTIONS
from tests.api.conftest import Service
from tests.api.test_api import problem


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi_document()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, methods in document["paths"].items()
        for method, op in methods.items()
    ]


# --- the document says what the checks check ----------------------------------------


def test_the_documented_limits_are_the_checks_own(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for model in ("ScheduleCreate", "ScheduleEdit"):
        text = schemas[model]["properties"]["text"]
        size = text.get("maxLength") or next(
            p["maxLength"] for p in text["anyOf"] if "maxLength" in p
        )
        assert size == limits.HERALD_TEXT.size == 4000
        assert f"at most {limits.HERALD_TEXT.size:,} characters" in text["description"]
    assert schemas["ScheduleCreate"]["properties"]["key"]["anyOf"][0]["maxLength"] == MAX_KEY
    options = schemas["ScheduleCreate"]["properties"]["options"]
    [shape] = [part for part in options["anyOf"] if part.get("type") == "object"]
    assert list(shape["properties"]) == list(OPTIONS) and shape["additionalProperties"] is False
    assert all(name in options["description"] for name in OPTIONS)
    [imports] = [op for _, path, op in _operations(document) if path == "/v1/imports"]
    assert all(name in imports["requestBody"]["description"] for name in IMPORT_FIELDS)

    words = json.dumps(document)
    assert "--option" not in words  # herald schedule has no such flag
    assert "40000" not in words and "40,000" not in words  # Herald keeps 4,000


def test_delete_is_documented_as_the_clis_delete(document: dict[str, Any]) -> None:
    delete = document["paths"]["/v1/schedules/{schedule_id}"]["delete"]
    assert "delete" in verbs.verb("cancel").aliases  # what herald delete is
    assert "as `herald delete` does (an alias of `herald cancel`)" in delete["description"]
    assert "the schedule stays" in delete["description"]
    assert delete["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ScheduleOut"
    )


def test_requests_name_the_zone_as_answers_do(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert "timezone" in schemas["ScheduleOut"]["properties"]
    for model in ("ScheduleCreate", "ScheduleEdit"):
        assert "timezone" in schemas[model]["properties"]
        assert "tz" not in schemas[model]["properties"]
    when = document["paths"]["/v1/when"]["get"]
    assert "timezone" in {p["name"] for p in when["parameters"]}


# --- examples -------------------------------------------------------------------------


def test_every_route_has_an_example_request_and_answer(document: dict[str, Any]) -> None:
    by_operation = {route.operation: route for route in ROUTES}
    for method, path, op in _operations(document):
        route = by_operation[op["operationId"]]
        if route.media is not None:  # not JSON (a calendar): its media type, no model
            assert route.response is None
            assert list(op["responses"][str(route.status)]["content"]) == [route.media]
            continue
        ok = op["responses"][str(route.status)]["content"]["application/json"]
        assert ok.get("example") is not None, f"{method} {path} has no example answer"
        assert route.response is not None
        route.response.model_validate(ok["example"])  # the example is a true answer
        if route.body is not None:
            example = op["requestBody"]["content"]["application/json"]["example"]
            route.body.model_validate(example)  # ... and a request the API takes
        if route.raw_body is not None:
            example = op["requestBody"]["content"]["text/plain"]["example"]
            assert all(json.loads(line)["to"] for line in example.splitlines())
        if route.query is not None:
            given = {p["name"]: p["example"] for p in op["parameters"] if "example" in p}
            assert given, f"{method} {path} has no example query"
            route.query.model_validate({k: v for k, v in given.items() if p_in(op, k) == "query"})
        for param in op["parameters"]:
            if param["in"] == "path":
                assert "example" in param


def p_in(op: dict[str, Any], name: str) -> str:
    return str(next(p["in"] for p in op["parameters"] if p["name"] == name))


def test_the_docs_page_shows_fields_and_examples(document: dict[str, Any]) -> None:
    page = docs_page(document)
    sections = page.split("<section>")[1:]
    shown = {
        re.search(r"<h2><code>([A-Z]+ [^<]+)</code></h2>", s).group(1): unescape(s)  # type: ignore[union-attr]
        for s in sections
        if s.startswith("<h2><code>")
    }
    for route in ROUTES:
        section = shown[f"{route.method} /v1{route.path}"]
        assert "Example request" in section and "Example answer" in section
        assert f"{route.method} /v1" in section.split("Example request")[1]
        if route.media is not None:  # a calendar: its media type is the answer shown
            assert f"({route.media})" in section.split("Example answer")[1]
            continue
        assert route.response is not None
        for name, field in route.response.model_fields.items():  # the answer's fields
            assert f"<code>{field.alias or name}</code>" in section
    create = shown["POST /v1/schedules"]
    assert "<code>timezone</code> (string or null, at most 64 characters)" in create
    assert "<code>text</code> (string, at most 4,000 characters)" in create  # or a template
    assert "Required unless a template is named" in create
    assert '"timezone": "Europe/Berlin"' in create.split("Example request")[1]
    assert (
        "GET /v1/when?when=every+weekday+at+9am&timezone=Europe%2FBerlin" in shown["GET /v1/when"]
    )
    assert "DELETE /v1/schedules/42" in shown["DELETE /v1/schedules/{schedule_id}"]


# --- the live API ---------------------------------------------------------------------


def test_timezone_and_tz_are_one_field(service: Service) -> None:
    with service.client(service.token("local:words-a")) as c:

        def create(**zones: str) -> Any:
            body = {"to": "log:", "when": "every day at 9am", "text": "x", **zones}
            return c.post("/v1/schedules", json=body)

        made = create(timezone="Asia/Tokyo")
        assert made.status_code == 201, made.text
        assert made.json()["timezone"] == "Asia/Tokyo"  # the name it was sent by
        old = create(tz="Europe/Paris")
        assert old.status_code == 201 and old.json()["timezone"] == "Europe/Paris"
        same = create(tz="UTC", timezone="UTC")
        assert same.status_code == 201 and same.json()["timezone"] == "UTC"
        both = create(tz="UTC", timezone="Asia/Tokyo")
        assert "send timezone or tz (its older name), not both" in problem(both, 422)["detail"]

        sid = made.json()["id"]
        edited = c.patch(
            f"/v1/schedules/{sid}",
            json={"when": "every day at 9am", "timezone": "America/New_York"},
        )
        assert edited.status_code == 200, edited.text
        assert edited.json()["timezone"] == "America/New_York"
        when = c.get("/v1/when", params={"when": "tomorrow at 9am", "timezone": "Asia/Tokyo"})
        assert when.status_code == 200 and when.json()["timezone"] == "Asia/Tokyo"
        listed = c.get("/v1/schedules").json()["items"]
        assert len(listed) == 3  # the refused one made nothing


def test_delete_cancels_as_herald_delete_does(service: Service) -> None:
    with service.client(service.token("local:words-b")) as c:
        made = c.post("/v1/schedules", json={"to": "log:", "when": "every day at 9am", "text": "x"})
        sid = made.json()["id"]
        stale = c.delete(f"/v1/schedules/{sid}", headers={"If-Match": '"7"'})
        problem(stale, 412)
        gone = c.delete(f"/v1/schedules/{sid}", headers={"If-Match": made.headers["ETag"]})
        assert gone.status_code == 200, gone.text
        assert gone.json()["id"] == sid and gone.json()["state"] == "cancelled"
        kept = c.get(f"/v1/schedules/{sid}")  # cancelled, not erased: its history stays
        assert kept.status_code == 200 and kept.json()["state"] == "cancelled"
        problem(c.delete(f"/v1/schedules/{sid}"), 409)  # already cancelled
        problem(c.delete("/v1/schedules/999999"), 404)


def test_the_api_refuses_text_over_herald_limit_as_documented(service: Service) -> None:
    with service.client(service.token("local:words-c")) as c:
        over = "x" * (limits.HERALD_TEXT.size + 1)
        refused = c.post("/v1/schedules", json={"to": "log:", "when": "in 2 hours", "text": over})
        assert "text" in problem(refused, 422)["detail"]
        most = "x" * limits.HERALD_TEXT.size
        taken = c.post("/v1/schedules", json={"to": "log:", "when": "in 2 hours", "text": most})
        assert taken.status_code == 201, taken.text
