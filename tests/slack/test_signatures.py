"""HTTP mode trusts only requests signed with SLACK_SIGNING_SECRET within five minutes:
anything else gets 401 and changes nothing (no Web API call, no schedule)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.slack.conftest import SlackEnv
from tests.slack.support import SECRET, signature


def untouched(env: SlackEnv) -> None:
    """Only the start-up token check ever reached the fake Slack."""
    assert [r.path for r in env.slack.requests] == ["/api/auth.test"]
    assert env.slack.responses == []


async def test_a_signed_request_is_accepted(env: SlackEnv) -> None:
    answer = await env.send.command("in 1 hour: signed")
    assert answer.status == 200
    await env.reply()
    assert len(await env.schedules()) == 1


@pytest.mark.parametrize(
    ("case", "kwargs", "age"),
    [
        ("unsigned", {"signed": False}, 0),
        ("forged", {"secret": "not-the-signing-secret"}, 0),
        ("six minutes old", {}, 360),
        ("six minutes ahead", {}, -360),
    ],
)
async def test_a_command_that_is_not_signed_right_is_refused(
    env: SlackEnv, case: str, kwargs: dict[str, Any], age: int
) -> None:
    if age:  # the clock is read now, not when the tests were collected
        kwargs = {**kwargs, "timestamp": int(time.time()) - age}
    answer = await env.send.post(env.send.command_body("in 1 hour: forged"), **kwargs)
    assert answer.status == 401, case
    assert await env.schedules() == []
    untouched(env)


async def test_a_signature_over_another_body_is_refused(env: SlackEnv) -> None:
    stamp = str(int(time.time()))
    signed_body = env.send.command_body("in 1 hour: harmless")
    sent_body = env.send.command_body("in 1 hour: swapped")
    headers = {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature(SECRET, stamp, signed_body),
    }
    assert (await env.send.raw(sent_body, headers)).status == 401
    assert await env.schedules() == []
    untouched(env)


async def test_a_bad_timestamp_header_is_refused(env: SlackEnv) -> None:
    body = env.send.command_body("in 1 hour: x")
    headers = {
        "X-Slack-Request-Timestamp": "yesterday",
        "X-Slack-Signature": signature(SECRET, "yesterday", body),
    }
    assert (await env.send.raw(body, headers)).status == 401
    untouched(env)


async def test_forged_clicks_and_submissions_change_nothing(env: SlackEnv) -> None:
    await env.send.command("every day at 9: keep me")
    await env.reply()
    before = len(env.slack.requests)
    click = {
        "type": "block_actions",
        "user": {"id": "UADMIN"},
        "team": {"id": "T0HERALD"},
        "actions": [{"action_id": "herald_cancel", "block_id": "b", "value": "1"}],
        "response_url": env.slack.response_url(),
        "trigger_id": "x",
    }
    submission = {
        "type": "view_submission",
        "user": {"id": "U1"},
        "team": {"id": "T0HERALD"},
        "view": {"id": "V1", "callback_id": "herald_schedule", "state": {"values": {}}},
    }
    for payload in (click, submission):
        body = urlencode({"payload": json.dumps(payload)})
        answer = await env.send.post(body, secret="guessed")
        assert answer.status == 401
        answer = await env.send.post(body, timestamp=int(time.time()) - 600)
        assert answer.status == 401
    [schedule] = await env.schedules()
    assert schedule.state == "active" and schedule.version == 1
    assert len(env.slack.requests) == before and len(env.slack.responses) == 1
