"""``auto_pause`` on a schedule through the API's own aiohttp app (in process, on SQLite
and PostgreSQL): taken on create (default true) and edit, and answered with the
schedule's failed occurrences in a row."""

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
TENANT = "slack:T0AAA"
ALICE = "slack:U0ALICE"


@pytest.fixture
async def client(herald: Herald) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield c


async def ok(response: ClientResponse, status: int = 200) -> Any:
    body = await response.json()
    assert response.status == status, body
    return body


async def test_auto_pause_on_create_edit_and_read_back(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    minted = await herald.create_token(ADMIN, ALICE, tenant=TENANT, scope="write")
    alice = {"Authorization": f"Bearer {minted.secret}"}
    base = {"to": "log:", "when": "every day at 9am", "text": "Hi"}
    made = await ok(await client.post("/v1/schedules", json=base, headers=alice), 201)
    assert (made["auto_pause"], made["failed_streak"]) == (True, 0)
    off = await ok(
        await client.post("/v1/schedules", json={**base, "auto_pause": False}, headers=alice),
        201,
    )
    assert off["auto_pause"] is False
    got = await ok(await client.get(f"/v1/schedules/{off['id']}", headers=alice))
    assert got["auto_pause"] is False
    edited = await client.patch(
        f"/v1/schedules/{off['id']}", json={"auto_pause": True}, headers=alice
    )
    assert (await ok(edited))["auto_pause"] is True
    bad = await client.post("/v1/schedules", json={**base, "auto_pause": "maybe"}, headers=alice)
    assert bad.status == 422
