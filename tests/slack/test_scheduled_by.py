"""Delivered messages say who scheduled them ("scheduled by @Ada"): into shared channels,
per tenant, with the name Herald knows (members table), never a mention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from core.channels import build_channels
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.slack.conftest import SlackEnv
from tests.slack.support import TENANT, text_of, who


@pytest.fixture
def clock() -> ManualClock:
    """Behind the wall: "in 2 seconds" is already due for a dispatcher on the real clock."""
    return ManualClock(datetime.now(UTC) - timedelta(seconds=5))


async def delivered(env: SlackEnv) -> list[dict[str, Any]]:
    channels = build_channels(env.settings)  # pointed at the fake by SLACK_API_URL
    try:
        config = DispatcherConfig.from_settings(env.settings)
        dispatcher = Dispatcher(env.herald.store, channels, clock=SystemClock(), config=config)
        await dispatcher.drain()
    finally:
        for channel in channels.values():
            await channel.close()
    return env.slack.messages


async def test_a_message_into_a_channel_says_who_scheduled_it(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> in 2 seconds: hello", user="U1")
    assert "Scheduled" in text_of(await env.reply())
    [posted] = await delivered(env)
    assert posted["text"] == "hello\n_scheduled by @Ada_"  # U1's name, from users.info
    assert "<@U1>" not in json.dumps(posted) and "link_names" not in posted


@pytest.mark.parametrize(
    "slack_extra", [{"HERALD_TENANT_SCHEDULED_BY": f"{TENANT}=off"}], indirect=True
)
async def test_a_tenant_may_turn_it_off(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> in 2 seconds: hello", user="U1")
    await env.reply()
    [posted] = await delivered(env)
    assert posted["text"] == "hello"


@pytest.mark.parametrize("slack_extra", [{"HERALD_SCHEDULED_BY": "false"}], indirect=True)
async def test_it_can_be_off_for_all(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> in 2 seconds: hello", user="U1")
    await env.reply()
    [posted] = await delivered(env)
    assert posted["text"] == "hello"


async def test_blocks_get_a_context_block_the_sdk_accepts(env: SlackEnv) -> None:
    await env.herald.sync_member(who("U2"), display_name="<!channel> & *Grace*")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Release notes"}}]
    await env.herald.create_schedule(
        who("U2"),
        to="slack:C0123",
        when="in 2 seconds",
        text="Release notes",
        options={"blocks": blocks},
    )
    [posted] = await delivered(env)
    sent = posted["blocks"]
    sent = json.loads(sent) if isinstance(sent, str) else sent
    assert sent[0] == blocks[0]
    credit = sent[-1]
    assert credit == {
        "type": "context",
        "elements": [
            {"type": "plain_text", "text": "scheduled by @<!channel> & *Grace*", "emoji": False}
        ],
    }
    for raw in sent:
        parsed = Block.parse(raw)
        assert parsed is not None
        parsed.validate_json()


async def test_a_name_in_the_text_cannot_mention_anyone(env: SlackEnv) -> None:
    await env.herald.sync_member(who("U2"), display_name="<!here> <@U1>")
    await env.herald.create_schedule(who("U2"), to="slack:C0123", when="in 2 seconds", text="x")
    [posted] = await delivered(env)
    assert posted["text"] == "x\n_scheduled by @&lt;!here&gt; &lt;@U1&gt;_"


async def test_without_a_known_name_the_member_id_is_the_credit(env: SlackEnv) -> None:
    """Issue 32 (finding 6): a member Herald knows no name of still gets a credit, by
    their member id (plain text: never a mention, which would notify them every time)."""
    await env.herald.create_schedule(
        who("UNEW"), to="slack:C0123", when="in 2 seconds", text="as written"
    )
    [posted] = await delivered(env)
    assert posted["text"] == "as written\n_scheduled by @UNEW_"
    assert "<@UNEW>" not in json.dumps(posted)
