"""``/v1/me/devices`` through the API's own aiohttp app (in process, on SQLite and
PostgreSQL): an app registers its FCM token for the token's member, lists and removes
it; another tenant's member with the same id neither sees nor removes it; a read token
cannot add one; bad input is a 422 problem; a token is answered by its last 6
characters only. (The live ``herald run`` serves the same routes: Schemathesis runs
over them in test_api_schema.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.http_guard import HttpLimits, guarded_app
from core.cases import Herald

ADMIN = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
PHONE = "fGx1Q2x5:APA91bH8zT0kqW3v-phone-AAAAAA"


@pytest.fixture
async def client(herald: Herald) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield c


async def bearer(herald: Herald, tenant: str, scope: str = "write") -> dict[str, str]:
    minted = await herald.create_token(ADMIN, "slack:U0ALICE", tenant=tenant, scope=scope)
    return {"Authorization": f"Bearer {minted.secret}"}


async def problem(response: ClientResponse, status: int) -> str:
    body = await response.json(content_type=None)
    assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    return str(body["detail"])


async def test_a_member_registers_lists_and_removes_a_device(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    alice = await bearer(herald, "slack:T0AAA")
    mallory = await bearer(herald, "slack:T0EVIL")  # the same member id, another tenant
    reader = await bearer(herald, "slack:T0AAA", scope="read")
    body = {"token": PHONE, "label": "Pixel 8", "platform": "android"}
    made = await client.post("/v1/me/devices", json=body, headers=alice)
    assert made.status == 201, await made.text()
    device = await made.json()
    assert device == {
        "id": device["id"],
        "member": "slack:U0ALICE",
        "label": "Pixel 8",
        "platform": "android",
        "token_tail": "…AAAAAA",
    }
    again = await client.post("/v1/me/devices", json={"token": PHONE}, headers=alice)
    assert again.status == 200 and (await again.json())["id"] == device["id"]
    listed = await client.get("/v1/me/devices", headers=alice)
    assert await listed.json() == {"devices": [device], "max": 20}
    assert PHONE not in await listed.text()
    for bad in (
        {"token": PHONE, "platform": "symbian"},
        {"token": "a b"},
        {"token": PHONE, "x": 1},
    ):
        await problem(await client.post("/v1/me/devices", json=bad, headers=alice), 422)

    elsewhere = await client.get("/v1/me/devices", headers=mallory)
    assert (await elsewhere.json())["devices"] == []
    await problem(await client.delete(f"/v1/me/devices/{device['id']}", headers=mallory), 404)
    seen = await client.get("/v1/me/devices", headers=reader)
    assert (await seen.json())["devices"] == [device]
    add = await client.post("/v1/me/devices", json={"token": "b:APA91b"}, headers=reader)
    await problem(add, 403)

    gone = await client.delete(f"/v1/me/devices/{device['id']}", headers=alice)
    assert gone.status == 200 and await gone.json() == device
    await problem(await client.delete(f"/v1/me/devices/{device['id']}", headers=alice), 404)
    # nothing reaches her now: a push schedule to her is refused when it is saved
    schedule = {"to": "push:slack:U0ALICE", "when": "in 1 hour", "text": "Hi"}
    refused = await client.post("/v1/schedules", json=schedule, headers=alice)
    assert "no registered device here" in await problem(refused, 422)
