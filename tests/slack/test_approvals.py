"""Approvals in Slack (issue 40): a member's message into an announcement channel is
held, and the reply says so; the sweep asks each approver by direct message and the
alert channel with Approve and Reject; Approve works and the clicked message says who
approved; Reject opens a modal for the reason and the alert message says who rejected
and why; nobody approves their own request (an ephemeral sentence);
``/schedule approvals`` lists the requests with the same buttons. Through the fake
Slack, with a ManualClock, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.slack.approvals import APPROVE, REJECT
from core.actors import Principal
from core.clock import ManualClock
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import ALERTS, SlackEnv, slack_env
from tests.slack.support import TENANT, action_ids, text_of
from tests.slack.test_payload_contract import valid_message, valid_view

HELD = (
    "Held for approval: it goes to slack:C0123, an announcement channel. "
    "Nothing is sent until an approver approves it."
)


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    """#general is an announcement channel; U2 approves besides the admin."""
    extra = {
        "HERALD_ANNOUNCEMENT_CHANNELS": "slack:C0123",
        "HERALD_APPROVERS": "slack:U2",
        "HERALD_SWEEP_SECONDS": 3600,  # the tests sweep
    }
    async with slack_env(slack, db_url, clock, extra) as built:
        # a listed approver is asked once Herald knows them in the workspace
        await built.herald.sync_member(Principal("slack:U2", TENANT))
        yield built


def dms(env: SlackEnv, user: str) -> list[dict[str, Any]]:
    im = env.slack.ims.get(user)
    return [m for m in env.slack.messages if im is not None and m["channel"] == im]


def alerts(env: SlackEnv) -> list[dict[str, Any]]:
    return [m for m in env.slack.messages if m["channel"] == ALERTS]


async def held(env: SlackEnv, user: str, text: str = "Big news") -> int:
    """``user`` schedules ``text`` into #general; the request's id, once the approvers
    were asked (a sweep, past the digest window of an earlier one)."""
    count = len(env.slack.responses)
    await env.send.command(f"<#C0123|general> tomorrow at 9: {text}", user=user)
    reply = await env.reply(count + 1)
    assert HELD in text_of(reply) and "awaiting approval" in text_of(reply)
    valid_message((reply["text"], reply["blocks"]))
    env.clock.advance(env.settings.notice_digest_seconds)
    await env.adapter.notices.sweep()
    return max(r.id for r in await env.herald.approvals("slack:UADMIN"))


def clicked(message: dict[str, Any]) -> dict[str, Any]:
    return {"ts": message["ts"], "blocks": message["blocks"], "text": message["text"]}


async def handled(env: SlackEnv) -> None:
    await env.adapter.tracker.drain(10.0)


async def test_the_author_is_told_it_waits_and_list_says_so(env: SlackEnv) -> None:
    await held(env, "U1")
    [schedule] = await env.schedules()
    assert schedule.state == "awaiting"
    await env.send.command("list", user="U1")
    assert "awaiting approval" in text_of(await env.reply(2))
    await env.send.command(f"show {schedule.id}", user="U1")
    assert "awaiting approval" in text_of(await env.reply(3))


async def test_approvers_and_the_alert_channel_are_asked_with_buttons(env: SlackEnv) -> None:
    request = await held(env, "U1")
    for where in (dms(env, "U2"), alerts(env)):
        [asked] = where
        assert action_ids(asked) == [APPROVE, REJECT]
        assert "<@U1> asks to send to <#C0123>" in text_of(asked) and ">Big news" in text_of(
            asked
        ).replace("> ", ">")
        assert asked["blocks"][-1]["elements"][0]["value"] == str(request)
        valid_message((asked["text"], asked["blocks"]))
    assert dms(env, "U1") == []  # the author asks nobody


async def test_an_approvers_approve_in_a_direct_message(env: SlackEnv) -> None:
    request = await held(env, "U1")
    [asked] = dms(env, "U2")
    im = env.slack.ims["U2"]
    await env.send.click(APPROVE, str(request), user="U2", channel=im, message=clicked(asked))
    await env.slack.until(lambda: env.slack.edits)
    [update] = env.slack.edits
    assert (update["channel"], update["ts"]) == (im, asked["ts"])
    assert "Approved by <@U2> at 07:05" in text_of(update)  # U2 reads New York time
    assert "asks to send" in text_of(update) and action_ids(update) == []
    valid_message((update["text"], update["blocks"]))
    [schedule] = await env.schedules()
    assert schedule.state == "active"
    env.clock.advance(env.settings.notice_digest_seconds)
    await env.adapter.notices.sweep()
    [told] = dms(env, "U1")
    assert "<@U2> approved your message" in told["text"]


async def test_a_reject_asks_why_in_a_modal(env: SlackEnv) -> None:
    request = await held(env, "U1")
    [asked] = alerts(env)
    await env.send.click(
        REJECT, str(request), user="UADMIN", channel=ALERTS, message=clicked(asked)
    )
    await env.slack.until(lambda: env.slack.opened)
    opened = env.slack.opened[0]["view"]
    valid_view(opened)
    assert opened["callback_id"] == "herald_approval_reject"
    view = {
        **opened,
        "id": "V9",
        "state": {
            "values": {"reason": {"reason": {"type": "plain_text_input", "value": "Too loud"}}}
        },
    }
    answer = await env.send.submit(view, user="UADMIN")
    assert answer.status == 200 and answer.text == ""  # the modal closes
    await env.slack.until(lambda: env.slack.edits)
    [update] = env.slack.edits
    assert (update["channel"], update["ts"]) == (ALERTS, asked["ts"])
    assert "Rejected by <@UADMIN>: Too loud" in text_of(update) and action_ids(update) == []
    valid_message((update["text"], update["blocks"]))
    [schedule] = await env.schedules()
    assert schedule.state == "cancelled"
    [row] = await env.herald.approvals("slack:UADMIN", state=None)
    assert (row.state, row.decided_by, row.reason) == ("rejected", "slack:UADMIN", "Too loud")


async def test_nobody_approves_their_own(env: SlackEnv) -> None:
    request = await held(env, "U2")  # an approver's own message is held too
    [asked] = alerts(env)
    await env.send.click(APPROVE, str(request), user="U2", channel=ALERTS, message=clicked(asked))
    reply = await env.reply(2)
    assert reply["response_type"] == "ephemeral"
    assert f"Request {request} is your own: another approver decides it." in text_of(reply)
    assert env.slack.edits == []
    [schedule] = await env.schedules()
    assert schedule.state == "awaiting"
    await env.send.click(APPROVE, str(request), user="U1", channel=ALERTS, message=clicked(asked))
    assert "Only the workspace's approvers" in text_of(await env.reply(3))


async def test_the_approvals_command_lists_them_with_buttons(env: SlackEnv) -> None:
    request = await held(env, "U1")
    await env.send.command("approvals", user="UADMIN")
    listed = await env.reply(2)
    assert "Requests waiting for an approver*: 1" in text_of(listed)
    assert action_ids(listed) == [APPROVE, REJECT]
    valid_message((listed["text"], listed["blocks"]))
    await env.send.command("approvals", user="U1")
    mine = await env.reply(3)
    assert "Big news" in text_of(mine) and action_ids(mine) == []  # the author's own
    await env.send.click(
        APPROVE, str(request), user="UADMIN", block_id=f"approval:{request}", message=None
    )
    replaced = await env.reply(4)
    assert replaced["replace_original"] is True  # the list as it is now: empty
    assert "Approved by <@UADMIN>" in text_of(replaced) and action_ids(replaced) == []
    assert "No request waits for an approver." in text_of(replaced)
    valid_message((replaced["text"], replaced["blocks"]))
    await handled(env)
    [schedule] = await env.schedules()
    assert schedule.state == "active"


async def test_without_an_alert_channel_its_request_is_dropped(
    slack: FakeSlackApp, sqlite_url: str, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    extra = {
        "HERALD_ANNOUNCEMENT_CHANNELS": "slack:C0123",
        "HERALD_SLACK_ALERT_CHANNEL": "",
        "HERALD_SWEEP_SECONDS": 3600,
    }
    async with slack_env(slack, sqlite_url, clock, extra) as env:
        await held(env, "U1")
        await held(env, "U1", "More news")
        assert alerts(env) == [] and await env.herald.pending_notices("slack") == 0
    said = [r for r in caplog.records if "alert channel are dropped" in r.getMessage()]
    assert len(said) == 1  # said once


async def test_a_reject_from_the_list_replaces_the_list(env: SlackEnv) -> None:
    request = await held(env, "U1")
    await env.send.command("approvals", user="UADMIN")
    await env.reply(2)
    await env.send.click(REJECT, str(request), user="UADMIN", message=None)
    await env.slack.until(lambda: env.slack.opened)
    opened = env.slack.opened[0]["view"]
    typed = {"reason": {"reason": {"type": "plain_text_input", "value": "Not today"}}}
    view = {**opened, "id": "V9", "state": {"values": typed}}
    answer = await env.send.submit(view, user="UADMIN")
    assert answer.status == 200 and answer.text == ""
    replaced = await env.reply(3)
    assert replaced["replace_original"] is True
    shown = text_of(replaced)
    assert "Rejected by <@UADMIN>: Not today" in shown
    assert "No request waits for an approver." in shown
    valid_message((replaced["text"], replaced["blocks"]))
    [schedule] = await env.schedules()
    assert schedule.state == "cancelled"
