"""``/v1/templates`` and a schedule's ``template`` through the API's own aiohttp app (in
process, on SQLite and PostgreSQL; the dispatcher drained against a recording channel,
time a ManualClock): an operator's token adds, lists, shows, previews, edits (If-Match,
a refusal naming a dependant schedule, force_version) and removes a template; a
member's token schedules it with data and reads the text as sent; bad input is a 422
problem of one sentence and changes nothing; a member's token cannot manage templates,
a read token cannot write, and another tenant finds none. (The live ``herald run``
serves the same routes: Schemathesis runs over them in test_api_schema.py.)"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, get_args

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.api.openapi import openapi_document
from bot.api.templates import DESCRIPTION_MAX, SUBJECT_MAX, Kind
from bot.http_guard import HttpLimits, guarded_app
from core import render
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.models import Template, TemplateVersion
from tests.support.channels import RecordingChannel
from tests.support.store import audit_trail

ROOT = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
TENANT, OTHER = "slack:T0AAA", "slack:T0BBB"
DEPLOY = "Deploy {{ service }} v{{ version }} (#{{ schedule.id }})"
VARIABLES = {"service": "text", "version": "number"}
DISCORD = "discord:123456789012345678"


@pytest.fixture
async def client(herald: Herald) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield c


async def bearer(
    herald: Herald, member: str, tenant: str = TENANT, scope: str = "write"
) -> dict[str, str]:
    minted = await herald.create_token(ROOT, member, tenant=tenant, scope=scope)
    return {"Authorization": f"Bearer {minted.secret}"}


async def operator(
    herald: Herald, member: str = "slack:UADA", tenant: str = TENANT
) -> dict[str, str]:
    """A write token of an admin of ``tenant`` (a write token acts as an operator)."""
    await herald.set_role(ROOT, member, "admin", tenant=tenant)
    return await bearer(herald, member, tenant)


async def ok(response: ClientResponse, status: int = 200) -> Any:
    body = await response.json(content_type=None)
    assert response.status == status, body
    return body


async def problem(response: ClientResponse, status: int) -> str:
    body = await response.json(content_type=None)
    assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    detail = str(body["detail"])
    assert detail.endswith(".") and "\n" not in detail
    return detail


async def add_deploy(client: TestClient[Any, Any], headers: dict[str, str]) -> dict[str, Any]:
    made = await client.post(
        "/v1/templates",
        json={"name": "deploy", "body": DEPLOY, "variables": VARIABLES, "description": "ship"},
        headers=headers,
    )
    assert made.headers["ETag"] == '"1"' and made.headers["Location"] == "/v1/templates/deploy"
    return dict(await ok(made, 201))


def dispatcher(herald: Herald, log: RecordingChannel, discord: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=30, max_lateness=3600)
    return Dispatcher(
        herald.store,
        {"log": log, "discord": discord},
        clock=herald.clock,
        config=config,
        rng=random.Random(7),
    )


async def test_a_template_added_listed_shown_previewed_edited_and_removed(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    made = await add_deploy(client, ada)
    assert (made["name"], made["version"], made["variables"], made["used_by"]) == (
        "deploy",
        1,
        VARIABLES,
        [],
    )
    assert [v["version"] for v in made["versions"]] == [1]

    s = await ok(
        await client.post(
            "/v1/schedules",
            json={
                "to": "log:",
                "when": "every day at 9am",
                "template": "deploy",
                "data": {"service": "api", "version": "1.4"},
            },
            headers=anna,
        ),
        201,
    )
    assert s["template"] == {
        "name": "deploy",
        "version": 1,
        "data": {"service": "api", "version": 1.4},
        "data_by_recipient": {},
    }
    assert s["text"] == DEPLOY and "liquid" not in s["options"]

    listed = await ok(await client.get("/v1/templates", headers=anna))
    assert [(t["name"], t["version"], t["used_by"]) for t in listed["templates"]] == [
        ("deploy", 1, 1)
    ]
    shown = await client.get("/v1/templates/deploy", headers=anna)
    assert shown.headers["ETag"] == '"1"'
    assert (await ok(shown))["used_by"] == [s["id"]]

    preview = await ok(
        await client.post(
            "/v1/templates/deploy/preview",
            json={"data": {"service": "api"}},
            headers=anna,
        )
    )
    assert preview["text"] == "Deploy api v{{ version }} (#123)" and preview["version"] == 1

    edited = await client.patch(
        "/v1/templates/deploy",
        json={"body": "Shipped {{ service }} v{{ version }}"},
        headers={**ada, "If-Match": '"1"'},
    )
    body = await ok(edited)
    assert edited.headers["ETag"] == '"2"'
    assert (body["version"], body["moved"], body["kept"]) == (2, [s["id"]], [])
    assert [v["version"] for v in body["versions"]] == [2, 1]
    stale = await client.patch(
        "/v1/templates/deploy", json={"description": "x"}, headers={**ada, "If-Match": '"1"'}
    )
    assert "version 2, not 1" in await problem(stale, 412)
    old = await ok(
        await client.post("/v1/templates/deploy/preview", json={"version": 1}, headers=anna)
    )
    assert old["text"].startswith("Deploy {{ service }}")
    got = await ok(await client.get(f"/v1/schedules/{s['id']}", headers=anna))
    assert got["template"]["version"] == 2

    template = await herald.store.get_template(TENANT, "deploy")
    assert template is not None
    refused = await client.delete("/v1/templates/deploy", headers=ada)
    assert f"used by 1 schedule (#{s['id']})" in await problem(refused, 422)
    await ok(await client.post(f"/v1/schedules/{s['id']}/cancel", headers=anna))
    removed = await ok(await client.delete("/v1/templates/deploy", headers=ada))
    assert (removed["name"], removed["version"]) == ("deploy", 2)
    await problem(await client.get("/v1/templates/deploy", headers=ada), 404)
    assert (await ok(await client.get("/v1/templates", headers=ada)))["templates"] == []
    trail = await audit_trail(herald.store, "template", str(template.id))
    assert [(e.action, e.actor) for e in trail] == [
        ("template.create", "slack:UADA"),
        ("template.edit", "slack:UADA"),
        ("template.remove", "slack:UADA"),
    ]


async def test_an_edit_that_would_break_a_schedule_is_refused_naming_it_unless_forced(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    await add_deploy(client, ada)
    s = await ok(
        await client.post(
            "/v1/schedules",
            json={
                "to": "log:",
                "when": "every day at 9am",
                "template": "deploy",
                "data": {"service": "api", "version": 2},
            },
            headers=anna,
        ),
        201,
    )
    change = {
        "body": "{{ service }} in {{ region }}",
        "variables": {**VARIABLES, "region": "text"},
    }
    refused = await client.patch("/v1/templates/deploy", json=change, headers=ada)
    detail = await problem(refused, 422)
    assert f"would break 1 schedule using it (#{s['id']})" in detail
    assert "--force-version" not in detail and '("force_version": true)' in detail
    assert (await ok(await client.get("/v1/templates/deploy", headers=ada)))["version"] == 1

    forced = await ok(
        await client.patch(
            "/v1/templates/deploy", json={**change, "force_version": True}, headers=ada
        )
    )
    assert (forced["version"], forced["moved"]) == (2, [])
    [kept] = forced["kept"]
    assert kept["schedule_id"] == s["id"] and "region" in kept["reason"]
    got = await ok(await client.get(f"/v1/schedules/{s['id']}", headers=anna))
    assert got["template"]["version"] == 1  # kept on the version it had


async def test_a_templated_schedule_sends_its_text_filled_in_per_recipient(
    herald: Herald, client: TestClient[Any, Any], clock: ManualClock
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    await add_deploy(client, ada)
    s = await ok(
        await client.post(
            "/v1/schedules",
            json={
                "to": ["log:", DISCORD],
                "when": "in 1 hour",
                "template": "deploy",
                "data": {"service": "api", "version": 3},
                "data_by_recipient": {DISCORD: {"service": "web"}},
            },
            headers=anna,
        ),
        201,
    )
    assert s["template"]["data_by_recipient"] == {"1": {"service": "web"}}
    log, discord = RecordingChannel(), RecordingChannel(kind="discord")
    clock.advance(timedelta(hours=1))
    await dispatcher(herald, log, discord).drain(retry_window=60)
    sent = sorted(d.body for d in [*log.deliveries, *discord.deliveries])
    assert sent == [f"Deploy api v3 (#{s['id']})", f"Deploy web v3 (#{s['id']})"]
    jobs = await ok(await client.get(f"/v1/schedules/{s['id']}/jobs", headers=anna))
    assert sorted(a["text"] for a in jobs["attempts"]) == sent  # the text as sent


async def test_a_schedule_moves_onto_a_template_and_off_it(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    await add_deploy(client, ada)
    made = await client.post(
        "/v1/schedules",
        json={"to": "log:", "when": "every day at 9am", "text": "plain"},
        headers=anna,
    )
    s = await ok(made, 201)
    assert s["template"] is None
    path = f"/v1/schedules/{s['id']}"
    on = await ok(
        await client.patch(
            path,
            json={"template": "deploy", "data": {"service": "api", "version": 1}},
            headers={**anna, "If-Match": made.headers["ETag"]},
        )
    )
    assert on["template"]["name"] == "deploy" and on["text"] == DEPLOY
    data = await ok(
        await client.patch(path, json={"data": {"service": "web", "version": 2}}, headers=anna)
    )
    assert data["template"]["data"] == {"service": "web", "version": 2}
    off = await ok(
        await client.patch(path, json={"template": "none", "text": "plain again"}, headers=anna)
    )
    assert (off["template"], off["text"]) == (None, "plain again")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"template": "deploy", "data": {"service": "api", "version": 1, "region": "eu"}},
            "has no variable 'region'",
        ),
        (
            {"template": "deploy", "data": {"service": "api", "version": "1.4.2"}},
            "must be a number",
        ),
        ({"template": "deploy", "data": {"service": "api"}}, "needs a value for 'version'"),
        (
            {"template": "deploy", "text": "hi", "data": {"service": "a", "version": 1}},
            "a message or a template, not both",
        ),
        ({"text": "hi", "data": {"service": "api"}}, "name the template too"),
        ({"template": "deploy", "data": {"service": ["a"], "version": 1}}, "text or a number"),
        (
            {
                "template": "deploy",
                "data": {"service": "api", "version": 1},
                "data_by_recipient": {"log:elsewhere": {"service": "web"}},
            },
            "not one of this schedule's recipients",
        ),
    ],
)
async def test_bad_schedule_data_is_a_422_of_one_sentence(
    herald: Herald, client: TestClient[Any, Any], body: dict[str, Any], said: str
) -> None:
    ada = await operator(herald)
    await add_deploy(client, ada)
    answer = await client.post(
        "/v1/schedules", json={"to": "log:", "when": "in 1 hour", **body}, headers=ada
    )
    assert said in await problem(answer, 422)
    assert (await ok(await client.get("/v1/schedules", headers=ada)))["items"] == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {
                "name": "deploy",
                "body": "{{ service }} {{ region }}",
                "variables": {"service": "text"},
            },
            "{{ region }}, which is not declared",
        ),
        ({"name": "Deploy!", "body": "x"}, "lower-case letters"),
        ({"name": "deploy", "body": "x", "variables": {"service": "colour"}}, "variables.service"),
        ({"name": "deploy", "body": "{% include 'secrets' %}"}, "cannot be read"),
        ({"name": "deploy", "body": "x", "variables": {"date": "text"}}, "Herald fills in itself"),
    ],
)
async def test_a_bad_template_is_a_422_of_one_sentence(
    herald: Herald, client: TestClient[Any, Any], body: dict[str, Any], said: str
) -> None:
    ada = await operator(herald)
    assert said in await problem(await client.post("/v1/templates", json=body, headers=ada), 422)
    assert (await ok(await client.get("/v1/templates", headers=ada)))["templates"] == []


async def test_a_name_taken_is_a_409(herald: Herald, client: TestClient[Any, Any]) -> None:
    ada = await operator(herald)
    await add_deploy(client, ada)
    again = await client.post("/v1/templates", json={"name": "deploy", "body": "x"}, headers=ada)
    await problem(again, 409)


async def test_members_use_templates_and_read_tokens_only_read(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    reader = await bearer(herald, "slack:UADA", scope="read")
    body = {"name": "deploy", "body": DEPLOY, "variables": VARIABLES}
    assert "Only operators and admins" in await problem(
        await client.post("/v1/templates", json=body, headers=anna), 403
    )
    await add_deploy(client, ada)
    await problem(
        await client.patch("/v1/templates/deploy", json={"body": "mine"}, headers=anna), 403
    )
    await problem(await client.delete("/v1/templates/deploy", headers=anna), 403)
    for write in (
        client.post("/v1/templates", json={**body, "name": "other"}, headers=reader),
        client.patch("/v1/templates/deploy", json={"body": "x"}, headers=reader),
        client.delete("/v1/templates/deploy", headers=reader),
    ):
        assert "scope" in await problem(await write, 403)
    assert (await ok(await client.get("/v1/templates/deploy", headers=reader)))["version"] == 1
    preview = await client.post(
        "/v1/templates/deploy/preview", json={"data": {"version": 2}}, headers=reader
    )
    assert (await ok(preview))["text"] == "Deploy {{ service }} v2 (#123)"
    empty = await client.post("/v1/templates/deploy/preview", headers=reader)
    assert (await ok(empty))["text"] == "Deploy {{ service }} v{{ version }} (#123)"


async def test_another_tenants_template_is_not_found(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    await add_deploy(client, ada)
    bea = await operator(herald, "slack:UBEA", OTHER)
    bob = await bearer(herald, "slack:UBOB", OTHER)
    for who in (bea, bob):
        assert (await ok(await client.get("/v1/templates", headers=who)))["templates"] == []
        await problem(await client.get("/v1/templates/deploy", headers=who), 404)
        await problem(await client.post("/v1/templates/deploy/preview", headers=who), 404)
        used = await client.post(
            "/v1/schedules",
            json={
                "to": "log:",
                "when": "in 1 hour",
                "template": "deploy",
                "data": {"service": "api", "version": 1},
            },
            headers=who,
        )
        assert "no template named 'deploy'" in await problem(used, 404)
    await problem(
        await client.patch("/v1/templates/deploy", json={"body": "hijacked"}, headers=bea), 404
    )
    await problem(await client.delete("/v1/templates/deploy", headers=bea), 404)
    # B may have its own of the same name; A's is untouched
    await add_deploy(client, bea)
    mine = await ok(await client.get("/v1/templates/deploy", headers=ada))
    assert mine["body"] == DEPLOY and mine["created_by"] == "slack:UADA"


def test_the_document_names_the_kinds_and_the_template_routes() -> None:
    assert set(get_args(Kind)) == set(render.KINDS)
    for table in (Template, TemplateVersion):  # what the columns hold, not more
        assert table.__table__.c.subject.type.length == SUBJECT_MAX  # type: ignore[attr-defined]
    assert Template.__table__.c.description.type.length == DESCRIPTION_MAX  # type: ignore[attr-defined]
    document = openapi_document()
    paths = document["paths"]
    assert set(paths["/v1/templates"]) == {"get", "post"}
    assert set(paths["/v1/templates/{name}"]) == {"get", "patch", "delete"}
    [name] = paths["/v1/templates/{name}"]["patch"]["parameters"][:1]
    assert (name["in"], name["schema"]["type"], name["example"]) == ("path", "string", "deploy")
    schemas = document["components"]["schemas"]
    for model in ("ScheduleCreate", "ScheduleEdit"):
        assert {"template", "data", "data_by_recipient"} <= set(schemas[model]["properties"])
    assert "text" not in schemas["ScheduleCreate"].get("required", [])
    assert schemas["TemplateEdit"]["properties"]["force_version"]["type"] == "boolean"


async def test_a_templated_create_repeated_with_its_key_must_ask_for_the_same_data(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    ada = await operator(herald)
    anna = await bearer(herald, "slack:UANNA")
    await add_deploy(client, ada)
    body = {
        "to": ["log:", DISCORD],
        "when": "in 1 hour",
        "template": "deploy",
        "data": {"service": "api", "version": 3},
        "data_by_recipient": {DISCORD: {"service": "web"}},
    }
    keyed = {**anna, "Idempotency-Key": "deploy-1"}
    first = await ok(await client.post("/v1/schedules", json=body, headers=keyed), 201)
    again = await client.post(
        "/v1/schedules", json={**body, "data": {"service": "api", "version": "3"}}, headers=keyed
    )
    assert again.status == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert (await again.json())["id"] == first["id"]
    for changed in (
        {**body, "data": {"service": "api", "version": 4}},
        {**body, "data_by_recipient": {DISCORD: {"service": "db"}}},
    ):
        other = await client.post("/v1/schedules", json=changed, headers=keyed)
        assert "different schedule" in await problem(other, 422)
