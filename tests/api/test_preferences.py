"""``/v1/me/preferences`` and ``/v1/tenant/preferences`` (issue 37), and ``priority`` on
schedules, through the API's own aiohttp app (in process, on SQLite and PostgreSQL): a
member shows, sets and clears their preferences; bad input is a 422 problem and changes
nothing; the tenant's defaults are an admin's (others: 403 problems) and show in each
member's; a schedule's priority is taken on create and edit, answered, and an import is
bulk unless a line says otherwise; a blocked author's reminder is refused with the use
case's sentence. (Schemathesis runs over the same routes in test_api_schema.py.)"""

from __future__ import annotations

import asyncio
import io
import json
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
ALICE, BOB, CAROL = "slack:U0ALICE", "slack:U0BOB", "slack:U0CAROL"
UNSET: dict[str, Any] = {
    "place": None,
    "accept_from": None,
    "blocked": [],
    "quiet": None,
    "quiet_text": None,
    "hold_channels": None,
    "notices": None,
}


@pytest.fixture
async def client(herald: Herald) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield c


async def bearer(herald: Herald, member: str, scope: str = "write") -> dict[str, str]:
    minted = await herald.create_token(ADMIN, member, tenant=TENANT, scope=scope)
    return {"Authorization": f"Bearer {minted.secret}"}


async def problem(response: ClientResponse, status: int) -> str:
    body = await response.json(content_type=None)
    assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    return str(body["detail"])


async def ok(response: ClientResponse, status: int = 200) -> Any:
    body = await response.json()
    assert response.status == status, body
    return body


async def test_a_member_shows_sets_and_clears_their_preferences(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    alice = await bearer(herald, ALICE)
    shown = await ok(await client.get("/v1/me/preferences", headers=alice))
    assert shown["member"] == ALICE and shown["zone"] == "UTC"
    assert shown["own"] == shown["tenant"] == UNSET
    assert shown["effective"]["accept_from"] == "anyone"
    assert shown["effective"]["notices"] is True  # told of failures unless turned off

    change = {
        "place": "email:alice@example.com",
        "accept_from": "admins",
        "block": ["@U0BOB"],
        "quiet": "22:00-08:00",
        "quiet_days": ["weekends"],
    }
    put = await ok(await client.put("/v1/me/preferences", json=change, headers=alice))
    assert put["own"] == {
        "place": "email:alice@example.com",
        "accept_from": "admins",
        "blocked": [BOB],
        "quiet": {"window": "22:00-08:00", "days": ["sat", "sun"]},
        "quiet_text": "22:00–08:00 and weekends",
        "hold_channels": None,
        "notices": None,
    }
    assert await ok(await client.get("/v1/me/preferences", headers=alice)) == put
    # what a GET answered may be sent back as it is
    again = {"quiet": put["own"]["quiet"], "accept_from": "admins"}
    assert (await ok(await client.put("/v1/me/preferences", json=again, headers=alice))) == put

    for bad, fragment in (
        ({"accept_from": "admins", "quiet": "25:00-08:00"}, "not a time of day"),
        ({"place": "slack:C0CHANNEL"}, "place of yours"),
        ({"hold_channels": True}, "tenant default"),
        ({"accept_from": "friends"}, "accept_from"),
        ({"quiet_days": ["caturday"]}, "not a day"),
        ({"colour": "blue"}, "colour"),
        ({"hold_channels": 1}, "hold_channels"),
    ):
        said = await problem(await client.put("/v1/me/preferences", json=bad, headers=alice), 422)
        assert fragment in said, said
    assert await ok(await client.get("/v1/me/preferences", headers=alice)) == put

    clear = {"place": "", "accept_from": "", "unblock": [BOB], "quiet": "", "quiet_days": []}
    cleared = await ok(await client.put("/v1/me/preferences", json=clear, headers=alice))
    assert cleared["own"] == UNSET
    bob = await ok(await client.get("/v1/me/preferences", headers=await bearer(herald, BOB)))
    assert bob["own"] == UNSET  # each member's own


async def test_the_tenants_defaults_are_an_admins(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    await herald.set_role(ADMIN, CAROL, "admin", tenant=TENANT)
    carol = await bearer(herald, CAROL, scope="admin")
    alice = await bearer(herald, ALICE)
    alice_admin_scope = await bearer(herald, ALICE, scope="admin")  # a member still
    carol_write = await bearer(herald, CAROL)  # an admin, but a token capped below it
    defaults = {"quiet": "22:00-08:00", "block": [BOB], "hold_channels": True}
    for who in (alice, alice_admin_scope, carol_write):
        await problem(await client.get("/v1/tenant/preferences", headers=who), 403)
        put = await client.put("/v1/tenant/preferences", json=defaults, headers=who)
        await problem(put, 403)
    empty = await ok(await client.get("/v1/tenant/preferences", headers=carol))
    assert empty == {"tenant": TENANT, "defaults": UNSET}

    saved = await ok(await client.put("/v1/tenant/preferences", json=defaults, headers=carol))
    assert saved["defaults"]["hold_channels"] is True
    assert saved["defaults"]["blocked"] == [BOB]
    assert await ok(await client.get("/v1/tenant/preferences", headers=carol)) == saved
    place = {"place": "email:team@example.com"}
    said = await problem(await client.put("/v1/tenant/preferences", json=place, headers=carol), 422)
    assert "each member names their own" in said

    mine = await ok(await client.get("/v1/me/preferences", headers=alice))
    assert mine["own"] == UNSET and mine["tenant"] == saved["defaults"]
    assert mine["effective"]["quiet"] == {"window": "22:00-08:00", "days": []}
    assert mine["effective"]["blocked"] == [BOB]


async def test_priority_on_create_edit_answers_and_imports(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    alice = await bearer(herald, ALICE)
    base = {"to": "log:", "when": "tomorrow at 9am", "text": "Hi"}
    normal = await ok(await client.post("/v1/schedules", json=base, headers=alice), 201)
    assert normal["priority"] == "normal"
    bulk = await ok(
        await client.post("/v1/schedules", json={**base, "priority": "bulk"}, headers=alice), 201
    )
    assert bulk["priority"] == "bulk"
    edited = await client.patch(
        f"/v1/schedules/{bulk['id']}", json={"priority": "normal"}, headers=alice
    )
    assert (await ok(edited))["priority"] == "normal"
    got = await ok(await client.get(f"/v1/schedules/{bulk['id']}", headers=alice))
    assert got["priority"] == "normal"
    bad = await client.post("/v1/schedules", json={**base, "priority": "asap"}, headers=alice)
    assert "priority" in await problem(bad, 422)

    lines = '{"to": "log:", "when": "tomorrow at 9am", "text": "digest"}\n'
    lines += '{"to": "log:", "when": "tomorrow at 9am", "text": "page", "priority": "normal"}\n'
    imported = await client.post(
        "/v1/imports", data=lines, headers={**alice, "Content-Type": "application/jsonl"}
    )
    ids = (await ok(imported, 201))["ids"]
    priorities = [
        (await ok(await client.get(f"/v1/schedules/{i}", headers=alice)))["priority"] for i in ids
    ]
    assert priorities == ["bulk", "normal"]
    line = '{"to": "log:", "when": "tomorrow at 10am", "text": "standup"}\n'
    given = await client.post(
        "/v1/imports?priority=normal",
        data=line,
        headers={**alice, "Content-Type": "application/jsonl"},
    )
    [made] = (await ok(given, 201))["ids"]
    got = await ok(await client.get(f"/v1/schedules/{made}", headers=alice))
    assert got["priority"] == "normal"


async def test_a_blocked_author_is_refused_with_the_sentence(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    alice, bob = await bearer(herald, ALICE), await bearer(herald, BOB)
    await herald.set_role(ADMIN, ALICE, "member", tenant=TENANT)  # she has used Herald here
    await ok(await client.put("/v1/me/preferences", json={"block": [BOB]}, headers=alice))
    reminder = {"to": "slack:@U0ALICE", "when": "tomorrow at 9am", "text": "Hi"}
    refused = await client.post("/v1/schedules", json=reminder, headers=bob)
    assert "does not accept reminders from you" in await problem(refused, 403)
    mine = await client.post("/v1/schedules", json=reminder, headers=alice)  # her own: fine
    assert mine.status == 201, await mine.text()


async def test_herald_prefs_through_the_api_says_what_the_local_command_says(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    """``herald prefs`` with HERALD_API_URL set (bot/cli/remote.py): the same words."""
    from bot.cli.parser import build_parser
    from bot.cli.prefs import remote_prefs
    from bot.cli.remote import Remote, RemoteError

    token = (await bearer(herald, ALICE))["Authorization"].removeprefix("Bearer ")
    url = str(client.make_url("")).rstrip("/")

    async def remote(*argv: str) -> str:
        out = io.StringIO()
        args = build_parser().parse_args(["prefs", *argv])
        # urllib blocks: off the loop that serves the app
        await asyncio.to_thread(remote_prefs, Remote(url, token, out), args)
        return out.getvalue()

    said = await remote("set", "--accept", "admins", "--quiet", "22:00-08:00")
    assert said.splitlines()[0] == "Saved."
    assert "  who may remind you: only admins (yours)" in said
    assert "  quiet hours:        22:00–08:00, UTC time (yours)" in said
    assert json.loads(await remote("--json"))["own"]["accept_from"] == "admins"
    with pytest.raises(RemoteError, match="not a time of day"):
        await remote("set", "--quiet", "25:00-08:00")
    with pytest.raises(RemoteError, match="local database only"):
        await remote("--member", BOB)
    with pytest.raises(RemoteError, match="admin"):  # a write token: not the admin scope
        await remote("tenant")


async def test_a_member_turns_failure_notices_off_and_on(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    alice = await bearer(herald, ALICE)
    off = await ok(await client.put("/v1/me/preferences", json={"notices": False}, headers=alice))
    assert off["own"]["notices"] is False and off["effective"]["notices"] is False
    assert off["summary"].endswith("failure notices off")
    bad = await client.put("/v1/me/preferences", json={"notices": "off"}, headers=alice)
    assert bad.status == 422
    on = await ok(await client.put("/v1/me/preferences", json={"notices": True}, headers=alice))
    assert on["effective"]["notices"] is True
