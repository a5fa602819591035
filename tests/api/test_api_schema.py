"""The OpenAPI document: valid OpenAPI 3.1, generated from the models the handlers use,
and true of the live API (a property-based run of Schemathesis finds no 5xx and no
answer outside the document: a bounded number of cases here, more in
``make reliability``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from bot.api import models
from bot.api.openapi import openapi_document
from bot.api.routes import ROUTES
from core import routing
from tests.api.conftest import ROOT, Service

FULL = os.environ.get("HERALD_RELIABILITY") == "full"
#: Schemathesis's checks: no server error, and every answer as the document says
#: (status, media type, headers, body). ``positive_data_acceptance`` is left out on
#: purpose: a string the schema allows ("when": "ÿ") is still refused with 422 when
#: Herald cannot read it, which is the documented answer.
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "missing_required_header",
        "unsupported_method",
        "allow_header_conformance",
        "use_after_free",
        "ensure_resource_availability",
    ]
)


#: Statuses that reject data outside the document: Schemathesis's own list, and 413 (a
#: body past 64 KiB, such as more recipients than the document allows, each long, is
#: refused for its size before its fields are read; the document says so).
REJECTIONS = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5xx"]
CONFIG = f"[checks.negative_data_rejection]\nexpected-statuses = {json.dumps(REJECTIONS)}\n"


def test_the_document_is_valid_openapi_and_names_every_route() -> None:
    document = openapi_document()
    validate(document)
    assert document["openapi"] == "3.1.0"
    operations = {
        op["operationId"] for methods in document["paths"].values() for op in methods.values()
    }
    assert operations == {route.operation for route in ROUTES}
    schemas = document["components"]["schemas"]
    # generated from the handlers' own models, field for field
    for model in (models.ScheduleCreate, models.ScheduleOut):  # by the names on the wire
        names = {field.alias or name for name, field in model.model_fields.items()}
        assert set(schemas[model.__name__]["properties"]) == names


def test_the_document_says_what_to_takes_and_how_recipients_read() -> None:
    """``to``: one destination or a list of destinations and chains (issue 35)."""
    document = openapi_document()
    schemas = document["components"]["schemas"]
    for model in ("ScheduleCreate", "ScheduleEdit"):
        one, many, *null = schemas[model]["properties"]["to"]["oneOf"]
        assert one["type"] == "string" and many["type"] == "array"
        assert many["maxItems"] == routing.ADMIN_CAP
        kinds = many["items"]["anyOf"]
        assert kinds[0]["type"] == "string"
        assert kinds[1] == {"$ref": "#/components/schemas/FirstOf"}
        assert null == ([] if model == "ScheduleCreate" else [{"type": "null"}])
    chain = schemas["FirstOf"]["properties"]["first_of"]
    assert (chain["minItems"], chain["maxItems"]) == (1, routing.MAX_STEPS)
    assert schemas["ScheduleCreate"]["properties"]["time_of"]["enum"] == ["author", "recipient"]
    assert schemas["ScheduleCreate"]["properties"]["step_timeout"]["anyOf"][0]["minimum"] == 60
    assert "recipients" in schemas["ScheduleOut"]["required"]
    assert schemas["RecipientOut"]["required"] == ["id", "to"]  # zone, timeout: when set
    assert {"recipient", "destination", "step"} <= set(schemas["JobOut"]["required"])
    assert "destination" in schemas["AttemptOut"]["properties"]
    create = document["paths"]["/v1/schedules"]["post"]["responses"]
    assert "413" in create  # a body past 64 KiB (a long list of recipients) is refused


def test_the_live_document_and_its_page(service: Service) -> None:
    with service.client(None) as c:
        served = c.get("/v1/openapi.json")
        assert served.status_code == 200 and served.json() == openapi_document()
        page = c.get("/v1/docs")
        assert page.headers["Content-Type"].startswith("text/html")
        for route in ROUTES:
            assert f"{route.method} /v1{route.path}" in page.text
        assert 'id="problem-quota-exceeded"' in page.text


@pytest.mark.parametrize(
    "service",
    [
        pytest.param(
            "sqlite",
            marks=pytest.mark.skipif(
                not FULL,
                reason="Schemathesis on SQLite runs in make reliability (HERALD_RELIABILITY="
                "full); the default run sends its cases to PostgreSQL",
            ),
        ),
        "postgres",
    ],
    indirect=True,
)
@pytest.mark.timeout(360)  # its run's own bound (300 s) and the service's start, not 120 s
def test_schemathesis_finds_nothing_wrong(service: Service, tmp_path: Path) -> None:
    """By default on PostgreSQL, where a value the handlers forgot to bound is most
    likely to become a 5xx: it refuses a NUL character in text and, in an INTEGER column
    (a schedule's id in a path), a number past 32 bits, both of which SQLite takes.
    ``HERALD_RELIABILITY=full`` runs it on SQLite too, with 100 cases an operation
    instead of 5."""
    token = service.token(ROOT, scope="admin")
    with service.client(token) as c:  # data for the routes that take an id
        made = c.post("/v1/schedules", json={"to": "log:", "when": "in 3 hours", "text": "x"})
        assert made.status_code == 201
    st = Path(sys.executable).with_name("schemathesis")
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    run = subprocess.run(
        [
            str(st),
            "--config-file",
            str(config),
            "run",
            f"{service.base}/v1/openapi.json",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            "100" if FULL else "5",
            "--checks",
            CHECKS,
            "--seed",
            "20261202",
            "--generation-database",
            "none",
            "--workers",
            "1",
            "--no-color",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900 if FULL else 300,
    )
    failures = run.stdout.partition("FAILURES")[2].partition("WARNINGS")[0]
    assert run.returncode == 0, (failures or run.stdout)[:8000] + run.stderr[-2000:]
    assert "passed" in run.stdout
    assert httpx.get(f"{service.base}/healthz").status_code == 200  # still up
