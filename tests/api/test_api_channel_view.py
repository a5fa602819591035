"""The channel's view through the API's own aiohttp app (issue 41; in process, on SQLite
and PostgreSQL, time a ManualClock): a channel's agenda (GET /v1/schedules?to=) for a
member Slack says is in the channel, refused to one it says is not, and an operator's;
``private`` on create and PATCH; a create's ``warnings`` and ``?strict=true``'s 409
naming the duplicate (nothing created); POST …/send-now on a one-off and a recurring
schedule (If-Match, a paused one refused); and an import's report of its duplicates.
Slack itself is outside the machine: a recording channel answers who is in which channel."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.http_guard import HttpLimits, guarded_app
from core.cases import Herald
from core.destinations import Destination
from core.store import AuditFilter
from tests.conftest import START
from tests.support.channels import RecordingChannel

ROOT = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
TA, TB = "slack:TA", "slack:TB"
GENERAL = "slack:C0GENERAL"
STANDUP = "Stand-up in 5 minutes"


class SlackMembers(RecordingChannel):
    """Slack as Herald asks it who can see a channel (conversations.members): the
    members of each channel of workspace TA."""

    def __init__(self, members: dict[str, set[str]]) -> None:
        super().__init__(kind="slack")
        self.members = members
        self.asked: list[tuple[str, str]] = []

    async def member_sees(self, destination: Destination, user: str, *, tenant: str) -> bool:
        self.asked.append((destination.target, user))
        return tenant == TA and user in self.members.get(destination.target, set())


@pytest.fixture
def slack(herald: Herald) -> SlackMembers:
    found = SlackMembers({"C0GENERAL": {"UANNA", "UBOB"}})
    herald.channels["slack"] = found
    return found


@pytest.fixture
async def client(herald: Herald, slack: SlackMembers) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield c


async def bearer(herald: Herald, member: str, tenant: str = TA) -> dict[str, str]:
    if member == "slack:UBOB":  # his name, as Slack's profile gave it
        await herald.store.save_member(TA, member, now=START, display_name="Bob")
    minted = await herald.create_token(ROOT, member, tenant=tenant, scope="write")
    return {"Authorization": f"Bearer {minted.secret}"}


async def ok(response: ClientResponse, status: int = 200) -> Any:
    body = await response.json(content_type=None)
    assert response.status == status, body
    return body


async def problem(response: ClientResponse, status: int) -> dict[str, Any]:
    body = await response.json(content_type=None)
    assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert str(body["detail"]).endswith(".") and "\n" not in body["detail"]
    return dict(body)


async def create(
    client: TestClient[Any, Any], headers: dict[str, str], **body: Any
) -> dict[str, Any]:
    made: dict[str, Any] = await ok(
        await client.post("/v1/schedules", json={"to": GENERAL, **body}, headers=headers), 201
    )
    return made


async def test_a_channels_agenda_is_its_members_and_nobody_elses(
    herald: Herald, client: TestClient[Any, Any], slack: SlackMembers
) -> None:
    bob, anna, carl = (
        await bearer(herald, "slack:UBOB"),
        await bearer(herald, "slack:UANNA"),
        await bearer(herald, "slack:UCARL"),
    )
    ben = await bearer(herald, "slack:UBEN", TB)
    standup = await create(client, bob, when="every weekday at 9am", text=STANDUP)
    assert standup["private"] is False and standup["warnings"] == []
    secret = await create(client, bob, when="tomorrow at 10am", text="secret", private=True)
    assert secret["private"] is True
    await create(client, ben, when="tomorrow at 10am", text="another workspace's")
    await create(client, bob, to="slack:@UBOB", when="tomorrow at 11am", text="a DM")

    page = await ok(await client.get("/v1/schedules", params={"to": GENERAL}, headers=anna))
    assert [s["id"] for s in page["items"]] == [standup["id"]]
    [seen] = page["items"]
    assert seen["author"] == "Bob"
    assert seen["description"].startswith("every weekday at 09:00")
    assert seen["next_run_at"] == "2026-03-03T09:00:00Z"
    assert page["next_cursor"] is None
    assert ("C0GENERAL", "UANNA") in slack.asked

    # Bob's own agenda has his private one too, soonest first; one at a time by cursor
    first = await ok(
        await client.get("/v1/schedules", params={"to": GENERAL, "limit": 1}, headers=bob)
    )
    assert [s["id"] for s in first["items"]] == [standup["id"]]
    rest = await ok(
        await client.get(
            "/v1/schedules",
            params={"to": GENERAL, "limit": 1, "cursor": first["next_cursor"]},
            headers=bob,
        )
    )
    assert [s["id"] for s in rest["items"]] == [secret["id"]] and rest["next_cursor"] is None

    refused = await problem(
        await client.get("/v1/schedules", params={"to": GENERAL}, headers=carl), 403
    )
    assert refused["detail"] == (
        "You can see what is scheduled into a channel you can see: "
        "slack:C0GENERAL is not one of them."
    )
    # another workspace's member: Slack says no (a channel of TA), nothing of TA shown
    await problem(await client.get("/v1/schedules", params={"to": GENERAL}, headers=ben), 403)

    # an admin of the workspace sees the channel without asking Slack
    await herald.set_role(ROOT, "slack:UADA", "admin", tenant=TA)
    ada = await bearer(herald, "slack:UADA")
    asked = len(slack.asked)
    page = await ok(await client.get("/v1/schedules", params={"to": GENERAL}, headers=ada))
    assert [s["id"] for s in page["items"]] == [standup["id"]]  # a private one never
    assert len(slack.asked) == asked

    # a direct message is no channel: the list filter as before (Anna has none there)
    dm = await ok(await client.get("/v1/schedules", params={"to": "slack:@UBOB"}, headers=anna))
    assert dm["items"] == []
    # with a state, the list filter too: Bob's own into the channel
    mine = await ok(
        await client.get("/v1/schedules", params={"to": GENERAL, "state": "active"}, headers=anna)
    )
    assert mine["items"] == []

    audits = await herald.store.audit_page(AuditFilter(action="view.channel"), limit=20)
    readers = {a.actor for a in audits if a.action == "view.channel"}
    assert {"slack:UANNA", "slack:UADA"} <= readers
    denied = await herald.store.audit_page(AuditFilter(action="view.channel.denied"), limit=20)
    assert "slack:UCARL" in {a.actor for a in denied}


async def test_private_is_set_and_unset_by_patch(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    bob, anna = await bearer(herald, "slack:UBOB"), await bearer(herald, "slack:UANNA")
    made = await create(client, bob, when="tomorrow at 10am", text="retro", private=True)
    agenda = {"to": GENERAL}
    page = await ok(await client.get("/v1/schedules", params=agenda, headers=anna))
    assert page["items"] == []
    path = f"/v1/schedules/{made['id']}"
    shown = await ok(
        await client.patch(
            path, json={"private": False}, headers={**bob, "If-Match": f'"{made["version"]}"'}
        )
    )
    assert shown["private"] is False and shown["version"] == made["version"] + 1
    page = await ok(await client.get("/v1/schedules", params=agenda, headers=anna))
    assert [s["id"] for s in page["items"]] == [made["id"]]
    refused = await problem(await client.patch(path, json={"private": "yes"}, headers=bob), 422)
    assert "private" in refused["detail"]
    assert (await ok(await client.get(path, headers=bob)))["private"] is False


async def test_a_duplicate_is_a_warning_and_with_strict_a_409(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    bob, anna = await bearer(herald, "slack:UBOB"), await bearer(herald, "slack:UANNA")
    first = await create(client, bob, when="every weekday at 9am", text=STANDUP)
    body = {"to": GENERAL, "when": "every weekday at 9:05am", "text": "stand-up in 5  MINUTES"}

    refused = await problem(
        await client.post("/v1/schedules", json=body, params={"strict": "true"}, headers=anna),
        409,
    )
    assert refused["type"].endswith("#problem-duplicate")
    assert refused["detail"].startswith(f"Bob already scheduled '{STANDUP}' into ")
    assert f"(id {first['id']})" in refused["detail"]
    [dup] = refused["duplicates"]
    assert dup["kind"] == "duplicate" and dup["schedule_id"] == first["id"]
    assert dup["at"] == "2026-03-03T09:00:00Z"
    page = await ok(await client.get("/v1/schedules", headers=anna))
    assert page["items"] == []  # nothing created

    made = await ok(await client.post("/v1/schedules", json=body, headers=anna), 201)
    [warning] = made["warnings"]
    assert warning["kind"] == "duplicate" and warning["schedule_id"] == first["id"]
    assert warning["message"] == refused["detail"].rstrip(".")
    apart = await create(client, anna, when="every weekday at 9:30am", text=STANDUP)
    assert apart["warnings"] == []  # outside ten minutes
    read = await ok(await client.get(f"/v1/schedules/{made['id']}", headers=anna))
    assert read["warnings"] == []  # a save's, not the schedule's


async def test_a_crowded_channel_is_a_congestion_warning(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    for i in range(40):
        await herald.create_schedule(
            ROOT, to=GENERAL, when="tomorrow at 9am", text=f"m{i}", duplicates="ignore"
        )
    anna = await bearer(herald, "slack:UANNA")
    made = await create(client, anna, when="tomorrow at 9am", text="me")
    [warning] = made["warnings"]
    assert warning["kind"] == "congestion"
    assert warning["message"].startswith("41 messages are due into slack:C0GENERAL at 09:00")
    assert warning["late_seconds"] > 30


async def test_send_now_a_one_off_and_a_recurring_schedule(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    bob, anna = await bearer(herald, "slack:UBOB"), await bearer(herald, "slack:UANNA")
    once = await create(client, bob, when="in 2 hours", text="once")
    sent = await ok(
        await client.post(
            f"/v1/schedules/{once['id']}/send-now",
            headers={**bob, "If-Match": f'"{once["version"]}"'},
        )
    )
    assert sent["notes"] == ["sending now"] and sent["version"] == once["version"] + 1
    jobs = await ok(await client.get(f"/v1/schedules/{once['id']}/jobs", headers=bob))
    assert [j["due_at"] for j in jobs["jobs"]] == ["2026-03-02T12:00:00Z"]

    daily = await create(client, bob, when="every day at 9am", text="daily")
    stale = await problem(
        await client.post(
            f"/v1/schedules/{daily['id']}/send-now", headers={**bob, "If-Match": '"99"'}
        ),
        412,
    )
    assert "version" in stale["detail"]
    await problem(await client.post(f"/v1/schedules/{daily['id']}/send-now", headers=anna), 403)
    sent = await ok(await client.post(f"/v1/schedules/{daily['id']}/send-now", headers=bob))
    assert sent["notes"] == [
        "sending its Tue 03 Mar 2026 09:00 occurrence now; the next ones stay as planned"
    ]
    jobs = await ok(await client.get(f"/v1/schedules/{daily['id']}/jobs", headers=bob))
    [job] = jobs["jobs"]
    assert job["due_at"] == "2026-03-02T12:00:00Z"
    assert job["occurrence_at"] == "2026-03-03T09:00:00Z"

    await ok(await client.post(f"/v1/schedules/{daily['id']}/pause", headers=bob))
    paused = await problem(
        await client.post(f"/v1/schedules/{daily['id']}/send-now", headers=bob), 422
    )
    assert paused["detail"] == f"Schedule {daily['id']} is paused: resume it to send it now."
    audit = await herald.store.audit_page(AuditFilter(action="schedule.send_now"), limit=10)
    assert len([a for a in audit if a.action == "schedule.send_now"]) == 2


async def test_an_import_reports_its_duplicates_and_imports_them(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    bob, anna = await bearer(herald, "slack:UBOB"), await bearer(herald, "slack:UANNA")
    first = await create(client, bob, when="every weekday at 9am", text=STANDUP)
    lines = [
        {"to": GENERAL, "when": "every weekday at 9:05am", "text": STANDUP.upper()},
        {"to": "log:", "when": "tomorrow at 8am", "text": "Water the plants"},
        {"to": "log:", "when": "tomorrow at 8:03am", "text": "water the  plants"},
        {"to": "log:", "when": "tomorrow at 9am", "text": "water the plants"},
    ]
    body = "\n".join(json.dumps(line) for line in lines)
    report = await ok(
        await client.post(
            "/v1/imports",
            data=body,
            headers={**anna, "Content-Type": "application/jsonl"},
        ),
        201,
    )
    assert report["imported"] == 4 and report["duplicate_count"] == 2
    existing, earlier = report["duplicates"]
    assert existing["line"] == 1 and existing["schedule_id"] == first["id"]
    assert existing["message"].startswith(f"line 1: Bob already scheduled '{STANDUP}'")
    assert earlier == {
        "line": 3,
        "message": "line 3: line 2 of this import already schedules 'Water the plants' "
        "into log: once, Tue 3 Mar 2026 08:00 (UTC)",
        "schedule_id": None,
    }
    assert len(report["ids"]) == 4


async def test_a_channels_agenda_as_a_calendar(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    bob, anna = await bearer(herald, "slack:UBOB"), await bearer(herald, "slack:UANNA")
    carl = await bearer(herald, "slack:UCARL")
    await create(client, bob, when="every weekday at 9am", text=STANDUP)
    await create(client, bob, when="tomorrow at 10am", text="secret", private=True)
    got = await client.get("/v1/schedules.ics", params={"to": GENERAL}, headers=anna)
    assert got.status == 200
    assert got.headers["Content-Type"] == "text/calendar; charset=utf-8"
    assert got.headers["X-Request-Id"]
    calendar = (await got.read()).decode()
    assert calendar.startswith("BEGIN:VCALENDAR") and "RRULE:FREQ=WEEKLY" in calendar
    assert STANDUP in calendar and "secret" not in calendar
    refused = await problem(
        await client.get("/v1/schedules.ics", params={"to": GENERAL}, headers=carl), 403
    )
    assert "is not one of them" in refused["detail"]
    await problem(await client.get("/v1/schedules.ics", headers=anna), 422)  # to: required
    await problem(
        await client.get("/v1/schedules.ics", params={"to": "slack:@UBOB"}, headers=anna), 422
    )  # a direct message has no agenda


async def test_an_import_lists_the_first_20_duplicates_and_counts_them_all(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    anna = await bearer(herald, "slack:UANNA")
    lines = [
        {"to": "log:", "when": f"tomorrow at 8:{i:02d}am", "text": "Water the plants"}
        for i in range(25)
    ] + [{"to": "log:", "when": "tomorrow at 9am", "text": "Water the plants"}]  # 25 min on
    body = "\n".join(json.dumps(line) for line in lines)
    report = await ok(
        await client.post(
            "/v1/imports", data=body, headers={**anna, "Content-Type": "application/jsonl"}
        ),
        201,
    )
    assert report["imported"] == 26 and report["duplicate_count"] == 24
    assert [d["line"] for d in report["duplicates"]] == list(range(2, 22))
    # each names the first earlier line within ten minutes of it
    said = {d["line"]: d["message"].split(" of this import")[0] for d in report["duplicates"]}
    assert said[2] == "line 2: line 1" and said[11] == "line 11: line 1"
    assert said[12] == "line 12: line 2" and said[21] == "line 21: line 11"


async def test_a_member_of_no_platform_lists_their_own_into_a_channel(
    herald: Herald, client: TestClient[Any, Any]
) -> None:
    """A local member's token (Herald cannot ask Slack about them): ?to=CHANNEL is the
    list filter it always was, their own schedules into it, never others'."""
    bob = await bearer(herald, "slack:UBOB")
    await create(client, bob, when="every weekday at 9am", text=STANDUP)
    local = await bearer(herald, "local:lena", tenant="local")
    mine = await create(client, local, when="tomorrow at 9am", text="mine")
    page = await ok(await client.get("/v1/schedules", params={"to": GENERAL}, headers=local))
    assert [s["id"] for s in page["items"]] == [mine["id"]]
    assert page["items"][0]["author"] is None  # a list, not an agenda
