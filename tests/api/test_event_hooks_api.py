"""``/v1/event-hooks`` and ``/v1/events`` through the API's own aiohttp app (in process,
on SQLite and PostgreSQL): an admin's token registers a hook and gets its secret once,
lists, shows, enables and removes it; a member's token manages only its own; another
tenant sees nothing; a read token cannot register; bad input is a 422 problem; the
pull feed pages with its cursor. (The live ``herald run`` serves the same routes:
Schemathesis runs over them in test_api_schema.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.http_guard import HttpLimits, guarded_app
from core.cases import Herald

ROOT = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
TENANT = "slack:T0AAA"
URL = "https://hooks.example.com/herald/s3cr3t-path"


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


async def make_admin(herald: Herald, member: str, tenant: str = TENANT) -> None:
    await herald.set_role(ROOT, member, "admin", tenant=tenant)


async def problem(response: ClientResponse, status: int) -> str:
    body = await response.json(content_type=None)
    assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    return str(body["detail"])


async def test_register_list_show_enable_remove(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    await make_admin(herald, "slack:UADA")
    ada = await bearer(herald, "slack:UADA", scope="admin")
    anna = await bearer(herald, "slack:UANNA")
    other = await bearer(herald, "slack:UADA", tenant="slack:T0EVIL")
    made = await client.post(
        "/v1/event-hooks",
        json={"url": URL, "types": ["job.dead", "job.delivered"], "key_prefix": "order-"},
        headers=ada,
    )
    assert made.status == 201, await made.text()
    hook = await made.json()
    assert hook["secret"].startswith("whsec_")
    assert hook["url"] == "https://hooks.example.com/…" and "s3cr3t" not in json.dumps(hook)
    assert (hook["types"], hook["tenant_wide"], hook["state"]) == (
        ["job.dead", "job.delivered"],
        True,
        "active",
    )
    path = f"/v1/event-hooks/{hook['id']}"
    shown = await (await client.get(path, headers=ada)).json()
    assert "secret" not in shown and shown["id"] == hook["id"]

    annas = await (
        await client.post("/v1/event-hooks", json={"url": URL, "types": ["job.dead"]}, headers=anna)
    ).json()
    assert annas["tenant_wide"] is False
    listed = await (await client.get("/v1/event-hooks", headers=ada)).json()
    assert [h["id"] for h in listed["hooks"]] == [hook["id"], annas["id"]]
    listed = await (await client.get("/v1/event-hooks", headers=anna)).json()
    assert [h["id"] for h in listed["hooks"]] == [annas["id"]]
    assert (await (await client.get("/v1/event-hooks", headers=other)).json())["hooks"] == []
    # another member's, another tenant's: not found
    await problem(await client.get(path, headers=anna), 404)
    await problem(await client.delete(path, headers=anna), 404)
    await problem(await client.get(path, headers=other), 404)

    enabled = await client.post(path + "/enable", headers=ada)
    assert enabled.status == 200 and (await enabled.json())["state"] == "active"
    removed = await client.delete(path, headers=ada)
    assert removed.status == 200
    await problem(await client.get(path, headers=ada), 404)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"url": "ftp://hooks.example.com/x", "types": ["job.dead"]}, "http(s) URL"),
        ({"url": URL, "types": []}, "types"),
        ({"url": URL, "types": ["job.exploded"]}, "types"),
        ({"url": URL, "types": ["job.dead"], "key_prefix": "k" * 201}, "key_prefix"),
        ({"url": URL, "types": ["job.dead"], "secret": "mine"}, "secret"),
    ],
)
async def test_bad_input_is_a_422_problem(
    herald: Herald, client: TestClient[Any, Any], body: dict[str, Any], said: str
) -> None:
    ada = await bearer(herald, "slack:UADA")
    detail = await problem(await client.post("/v1/event-hooks", json=body, headers=ada), 422)
    assert said in detail


async def test_a_read_token_cannot_register(herald: Herald, client: TestClient[Any, Any]) -> None:
    reader = await bearer(herald, "slack:UADA", scope="read")
    body = {"url": URL, "types": ["job.dead"]}
    await problem(await client.post("/v1/event-hooks", json=body, headers=reader), 403)
    assert (await client.get("/v1/event-hooks", headers=reader)).status == 200


async def test_the_pull_feed_pages_and_is_scoped(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    await make_admin(herald, "slack:UADA")
    ada = await bearer(herald, "slack:UADA", scope="admin")
    anna = await bearer(herald, "slack:UANNA")
    event = sa.text(
        "INSERT INTO event (tx, tenant, type, at, schedule_id, job_id, owner, key, data) "
        "VALUES (:tx, :tenant, 'job.dead', :at, 4, 9, :owner, :key, :data)"
    )
    pg = herald.store.backend == "postgresql"
    async with herald.store._engine.begin() as conn:
        for n, owner in enumerate(["slack:UANNA", "slack:UARNO", "slack:UANNA"]):
            await conn.execute(
                event.bindparams(tx=1 if pg else 0),
                {
                    "tenant": TENANT,
                    "at": herald.clock.now(),
                    "owner": owner,
                    "key": f"k{n}",
                    "data": json.dumps({"idempotency_key": f"k{n}", "attempt": 5}),
                },
            )
    first = await client.get("/v1/events", params={"limit": "2"}, headers=ada)
    page = await first.json()
    assert first.status == 200, page
    assert [e["data"]["idempotency_key"] for e in page["events"]] == ["k0", "k1"]
    assert page["events"][0]["id"].startswith("evt_")
    assert page["events"][0]["type"] == "job.dead"
    rest = await (
        await client.get("/v1/events", params={"after": page["next_cursor"]}, headers=ada)
    ).json()
    assert [e["data"]["idempotency_key"] for e in rest["events"]] == ["k2"]
    mine = await (await client.get("/v1/events", headers=anna)).json()
    assert [e["data"]["idempotency_key"] for e in mine["events"]] == ["k0", "k2"]
    await problem(await client.get("/v1/events", params={"after": "nope"}, headers=ada), 422)
    await problem(await client.get("/v1/events", params={"limit": "0"}, headers=ada), 422)
