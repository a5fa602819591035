"""Reminders in direct messages, through the Slack and Discord channels against the
local fakes of their APIs: the DM is opened first, then the message posted there with
Snooze and Done buttons.

Slack: https://api.slack.com/methods/conversations.open (``users``, errors
``user_not_found``, ``cannot_dm_bot``, ``user_disabled``, ``missing_scope``) and
https://api.slack.com/reference/block-kit/blocks#actions. Discord:
https://discord.com/developers/docs/resources/user#create-dm and
https://discord.com/developers/docs/components/reference#button; 50007 "Cannot send
messages to this user" (https://discord.com/developers/docs/topics/opcodes-and-status-codes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import discord as discordpy
import pytest
from pydantic import SecretStr
from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, SectionBlock

from core import limits, reminders
from core.channels import parse_destination
from core.channels.base import Outcome
from core.channels.discord import DiscordChannel, reminder_row
from core.channels.slack import SlackChannel
from core.errors import InvalidInput
from tests.fakes import FakeDiscord, FakeSlack
from tests.fakes.deliveries import make_delivery

SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
BOB = "123456789012345678"
SHY = "223456789012345678"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=SLACK_TOKEN) as fake:
        fake.add_person("U0BOB")
        fake.add_person("U0BOT", is_bot=True)
        fake.add_person("U0GONE", deleted=True)
        yield fake


@pytest.fixture
async def slack_channel(slack: FakeSlack) -> AsyncIterator[SlackChannel]:
    ch = SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0)
    yield ch
    await ch.close()


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(DISCORD_TOKEN) as fake:
        fake.add_user(BOB)
        fake.add_user(SHY, takes_dms=False)
        yield fake


@pytest.fixture
async def discord_channel(discord: FakeDiscord) -> AsyncIterator[DiscordChannel]:
    ch = DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url, timeout=2.0)
    yield ch
    await ch.close()


# --- Slack --------------------------------------------------------------------------


async def test_slack_opens_the_dm_then_posts_there_with_buttons(
    slack: FakeSlack, slack_channel: SlackChannel
) -> None:
    result = await slack_channel.send(make_delivery("slack:@U0BOB", "Stretch", schedule_id=42))

    assert result.outcome is Outcome.OK
    [opened] = slack.requests_to("conversations.open")
    assert opened.params() == {"users": "U0BOB"}
    assert [r.path for r in slack.requests] == ["/api/conversations.open", "/api/chat.postMessage"]
    [posted] = slack.messages
    assert posted["channel"] == slack.ims["U0BOB"] and posted["channel"].startswith("D")
    assert result.message_id == f"{posted['channel']}/{posted['ts']}"
    assert posted["text"] == "Stretch"
    section, actions = posted["blocks"]
    assert section["text"]["text"] == "Stretch"
    assert [e["action_id"] for e in actions["elements"]] == [
        "herald_reminder_15m",
        "herald_reminder_1h",
        "herald_reminder_tomorrow",
        "herald_reminder_done",
    ]
    assert {e["value"] for e in actions["elements"]} == {"42"}


async def test_slack_dm_blocks_validate_with_slack_sdk_models(
    slack: FakeSlack, slack_channel: SlackChannel
) -> None:
    body = "x" * limits.HERALD_TEXT.size  # longer than one section holds
    options = {reminders.ASKED_BY: "slack:U0ALICE", reminders.ASKED_BY_NAME: "Alice"}
    await slack_channel.send(make_delivery("slack:@U0BOB", body, options=options))

    [posted] = slack.messages
    assert posted["text"].startswith("<@U0ALICE> asked me to remind you: x")
    parsed = [Block.parse(b) for b in posted["blocks"]]
    for block in parsed:
        assert block is not None
        block.validate_json()  # raises SlackObjectFormationError when out of limits
        assert block.to_dict() == posted["blocks"][parsed.index(block)]
    *sections, actions = parsed
    assert all(isinstance(s, SectionBlock) for s in sections) and len(sections) == 2
    assert "".join(b["text"]["text"] for b in posted["blocks"][:-1]) == posted["text"]
    assert isinstance(actions, ActionsBlock)
    assert all(isinstance(e, ButtonElement) for e in actions.elements)
    limits.check_slack_blocks(posted["blocks"])  # Herald's own reading of the same limits


async def test_slack_dm_channel_is_opened_once_per_user(
    slack: FakeSlack, slack_channel: SlackChannel
) -> None:
    for _ in range(3):
        assert (await slack_channel.send(make_delivery("slack:@U0BOB"))).outcome is Outcome.OK
    assert len(slack.requests_to("conversations.open")) == 1
    assert len(slack.messages) == 3


@pytest.mark.parametrize(
    ("user", "words"),
    [
        ("U0NOBODY", "was not found"),
        ("U0BOT", "is a bot"),
        ("U0GONE", "is deactivated"),
    ],
)
async def test_slack_users_that_cannot_get_a_dm_are_permanent(
    slack: FakeSlack, slack_channel: SlackChannel, user: str, words: str
) -> None:
    result = await slack_channel.send(make_delivery(f"slack:@{user}"))
    assert result.outcome is Outcome.PERMANENT
    assert words in (result.error or "") and user in (result.error or "")
    assert slack.messages == []
    with pytest.raises(InvalidInput, match=words):
        await slack_channel.validate(parse_destination(f"slack:@{user}"))


async def test_slack_without_im_write_says_which_scope(slack: FakeSlack) -> None:
    slack.scopes = ("chat:write",)
    ch = SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0)
    try:
        result = await ch.send(make_delivery("slack:@U0BOB"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "im:write" in (result.error or "")


# --- Discord ------------------------------------------------------------------------


async def test_discord_creates_the_dm_channel_then_the_message_with_buttons(
    discord: FakeDiscord, discord_channel: DiscordChannel
) -> None:
    result = await discord_channel.send(make_delivery(f"discord:@{BOB}", "Stretch", schedule_id=42))

    assert result.outcome is Outcome.OK
    [create] = discord.requests_to("POST /api/v10/users/@me/channels")
    assert create.json() == {"recipient_id": BOB}
    dm = discord.dms[BOB]
    [message] = discord.channels[dm].messages
    assert result.message_id == message["id"]
    assert message["content"] == "Stretch"
    [row] = message["components"]
    assert [c["custom_id"] for c in row["components"]] == [
        "herald:reminder:15m:42",
        "herald:reminder:1h:42",
        "herald:reminder:tomorrow:42",
        "herald:reminder:done:42",
    ]


def test_discord_buttons_are_what_discord_py_would_send() -> None:
    """The row equals discord.py's own button model, and each custom_id fits."""
    row = reminder_row(9_999_999_999)
    for sent in row["components"]:
        model = discordpy.ui.Button(
            label=sent["label"],
            style=discordpy.ButtonStyle(sent["style"]),
            custom_id=sent["custom_id"],
        )
        built = model.to_component_dict()
        assert {k: built.get(k) for k in sent} == sent
        assert len(sent["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
        assert len(sent["label"]) <= 80  # a button's label (components reference)


async def test_discord_dm_says_who_asked_and_is_opened_once(
    discord: FakeDiscord, discord_channel: DiscordChannel
) -> None:
    options: dict[str, Any] = {reminders.ASKED_BY: "discord:42"}
    for key in ("first-occurrence-key", "second-occurrence-key"):
        delivery = make_delivery(f"discord:@{BOB}", "x", key=key, options=options)
        result = await discord_channel.send(delivery)
        assert result.outcome is Outcome.OK
    assert len(discord.requests_to("users/@me/channels")) == 1
    contents = [m["content"] for m in discord.messages]
    assert contents == ["<@42> asked me to remind you: x"] * 2


async def test_discord_user_without_dms_is_permanent_with_advice(
    discord: FakeDiscord, discord_channel: DiscordChannel
) -> None:
    result = await discord_channel.send(make_delivery(f"discord:@{SHY}"))
    assert result.outcome is Outcome.PERMANENT and result.status_code == 403
    assert "50007" in (result.error or "") and "direct messages" in (result.error or "")


async def test_discord_unknown_user_is_refused_at_schedule_time(
    discord_channel: DiscordChannel,
) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        await discord_channel.validate(parse_destination("discord:@323456789012345678"))
    await discord_channel.validate(parse_destination(f"discord:@{BOB}"))  # no error


async def test_discord_text_with_who_asked_must_fit_2000() -> None:
    ch = DiscordChannel(DISCORD_TOKEN, base_url="http://127.0.0.1:9/api/v10")
    try:
        options = {reminders.ASKED_BY: "discord:42"}
        result = await ch.send(make_delivery(f"discord:@{BOB}", "y" * 1990, options=options))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "2,000" in (result.error or "")


async def test_a_notice_from_herald_carries_no_reminder_buttons(
    slack: FakeSlack,
    slack_channel: SlackChannel,
    discord: FakeDiscord,
    discord_channel: DiscordChannel,
) -> None:
    """An admin's answer to a retry request, in the requester's DMs: plain text."""
    notice = {reminders.NOTICE: True}
    said = "An admin approved your request to retry dead letter 7."
    sent = await slack_channel.send(make_delivery("slack:@U0BOB", said, options=notice))
    assert sent.outcome is Outcome.OK
    [posted] = slack.messages
    assert posted["text"] == said
    assert not [b for b in posted.get("blocks") or [] if b["type"] == "actions"]
    sent = await discord_channel.send(make_delivery(f"discord:@{BOB}", said, options=notice))
    assert sent.outcome is Outcome.OK
    [message] = discord.messages
    assert message["content"] == said and not message.get("components")
