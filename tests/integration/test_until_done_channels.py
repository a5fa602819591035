"""A message sent until done (issue 40) through the real Slack and Discord channels
against the local fakes of their APIs: the occurrence's message with its Done button,
a nag as a reply in its thread, the edit once done (``chat.update``; ``PATCH`` of the
message), in channels and in direct messages, and how each failure is classified.

Slack: https://docs.slack.dev/reference/methods/chat.postMessage (``thread_ts``),
https://docs.slack.dev/reference/methods/chat.update. Discord:
https://discord.com/developers/docs/resources/message#create-message
(``message_reference``), https://discord.com/developers/docs/resources/message#edit-message,
https://discord.com/developers/docs/resources/webhook#edit-webhook-message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from core import reminders
from core.channels.base import Delivery, DeliveryResult, Outcome
from core.channels.discord import DiscordChannel, DiscordWebhookChannel, done_row
from core.channels.slack import DONE_ACTION_ID, MAX_BLOCKS, SlackChannel, done_actions
from tests.fakes import FakeDiscord, FakeSlack, slack_error
from tests.fakes.deliveries import make_delivery

SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
CHAN = "123456789012345678"
BOB = "223456789012345678"
DONE = "Water the plants\n\n:white_check_mark: Done by <@U0CAROL> at 09:20"


def step(uri: str, body: str, *, key: str, **options: Any) -> Delivery:
    """A delivery of the ladder of job 41 (each step its own job and key)."""
    return make_delivery(uri, body, key=key, options=options, job_id=41)


# --- Slack --------------------------------------------------------------------------


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=SLACK_TOKEN) as fake:
        fake.add_channel("C0GENERAL", "general")
        fake.add_person("U0BOB")
        yield fake


def slack_channel(slack: FakeSlack) -> SlackChannel:
    return SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0)


@pytest.fixture
async def slack_ch(slack: FakeSlack) -> AsyncIterator[SlackChannel]:
    ch = slack_channel(slack)
    yield ch
    await ch.close()


async def test_slack_message_nag_and_done_edit_in_a_channel(
    slack: FakeSlack, slack_ch: SlackChannel
) -> None:
    posted = await slack_ch.send(
        step("slack:C0GENERAL", "Water the plants", key="occurrence", done_button=41)
    )
    assert posted.outcome is Outcome.OK and posted.message_id
    [message] = slack.messages
    assert message["blocks"][-1] == done_actions(41)
    assert message["blocks"][-1]["elements"][0]["action_id"] == DONE_ACTION_ID

    nag = await slack_ch.send(
        step("slack:C0GENERAL", "Still not done", key="nag 1", reply_to=posted.message_id)
    )
    assert nag.outcome is Outcome.OK
    reply = slack.messages[1]
    assert (reply["channel"], reply["thread_ts"]) == ("C0GENERAL", message["ts"])
    assert "blocks" not in reply
    assert nag.message_id == f"C0GENERAL/{reply['ts']}"

    done = await slack_ch.send(step("slack:C0GENERAL", DONE, key="done", edit_of=posted.message_id))
    assert done.outcome is Outcome.OK and done.message_id == posted.message_id
    [edit] = slack.edits
    assert (edit["channel"], edit["ts"], edit["text"]) == ("C0GENERAL", message["ts"], DONE)
    assert [b["type"] for b in edit["blocks"]] == ["section"]
    assert len(slack.messages) == 2  # edited, not posted


async def test_slack_direct_message_has_only_done_and_its_nag_needs_no_dm_opening(
    slack: FakeSlack, slack_ch: SlackChannel
) -> None:
    posted = await slack_ch.send(
        step("slack:@U0BOB", "Water the plants", key="occurrence", done_button=41)
    )
    assert posted.outcome is Outcome.OK and posted.message_id
    [message] = slack.messages
    assert message["channel"] == slack.ims["U0BOB"]
    assert [e["action_id"] for e in message["blocks"][-1]["elements"]] == [DONE_ACTION_ID]

    fresh = slack_channel(slack)  # another dispatcher: it has opened no DM
    try:
        nag = await fresh.send(
            step(
                "slack:@U0BOB",
                "Still not done",
                key="nag 1",
                reply_to=posted.message_id,
                **{reminders.NOTICE: True},
            )
        )
        done = await fresh.send(step("slack:@U0BOB", DONE, key="done", edit_of=posted.message_id))
    finally:
        await fresh.close()
    assert nag.outcome is Outcome.OK and done.outcome is Outcome.OK
    assert len(slack.requests_to("conversations.open")) == 1  # the occurrence's only
    reply = slack.messages[1]
    assert (reply["channel"], reply["thread_ts"]) == (message["channel"], message["ts"])
    [edit] = slack.edits
    assert (edit["channel"], edit["ts"]) == (message["channel"], message["ts"])


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("message_not_found", "is gone"),
        ("cant_update_message", "does not let the bot edit"),
        ("edit_window_closed", "can no longer be edited"),
    ],
)
async def test_slack_edit_failures_are_permanent_with_a_sentence(
    slack: FakeSlack, slack_ch: SlackChannel, code: str, words: str
) -> None:
    slack.script(slack_error(code), on="chat.update")
    result = await slack_ch.send(
        step("slack:C0GENERAL", DONE, key="done", edit_of="C0GENERAL/1700000001.000001")
    )
    assert result.outcome is Outcome.PERMANENT and words in (result.error or "")
    assert "C0GENERAL" in (result.error or "")


async def test_slack_edit_of_a_message_the_fake_never_posted(
    slack: FakeSlack, slack_ch: SlackChannel
) -> None:
    result = await slack_ch.send(
        step("slack:C0GENERAL", DONE, key="done", edit_of="C0GENERAL/1700000099.000099")
    )
    assert result.outcome is Outcome.PERMANENT and "is gone" in (result.error or "")


async def test_slack_edit_rate_limited_is_retried(slack: FakeSlack, slack_ch: SlackChannel) -> None:
    slack.script(slack_error("ratelimited", status=429, retry_after=7), on="chat.update")
    result = await slack_ch.send(
        step("slack:C0GENERAL", DONE, key="done", edit_of="C0GENERAL/1700000001.000001")
    )
    assert result.outcome is Outcome.RETRY and result.retry_after == 7


async def test_slack_blocks_without_room_for_done_are_refused_before_asking(
    slack: FakeSlack, slack_ch: SlackChannel
) -> None:
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
    result = await slack_ch.send(
        step("slack:C0GENERAL", "x", key="o", blocks=[section] * MAX_BLOCKS, done_button=41)
    )
    assert result.outcome is Outcome.PERMANENT
    assert f"at most {MAX_BLOCKS - 1} blocks" in (result.error or "")
    assert slack.requests == []
    # the fake refuses what Slack refuses: over 50 blocks
    over = await slack_ch.send(
        step("slack:C0GENERAL", "x", key="p", blocks=[section] * (MAX_BLOCKS + 1))
    )
    assert over.outcome is Outcome.PERMANENT and "invalid_blocks" in (over.error or "")


# --- Discord ------------------------------------------------------------------------


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(DISCORD_TOKEN, bucket_limit=50) as fake:
        fake.add_channel(CHAN)
        fake.add_user(BOB)
        yield fake


@pytest.fixture
async def discord_ch(discord: FakeDiscord) -> AsyncIterator[DiscordChannel]:
    ch = DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url, timeout=2.0)
    yield ch
    await ch.close()


async def run_ladder(channel: DiscordChannel, uri: str) -> tuple[DeliveryResult, ...]:
    """The occurrence's message, one nag and the Done edit, each checked ok."""
    posted = await channel.send(step(uri, "Water the plants", key="occurrence", done_button=41))
    assert posted.outcome is Outcome.OK and posted.message_id
    nag = await channel.send(
        step(uri, "Still not done", key="nag 1", reply_to=posted.message_id, notice=True)
    )
    done = await channel.send(step(uri, DONE, key="done", edit_of=posted.message_id))
    assert nag.outcome is Outcome.OK and done.outcome is Outcome.OK
    return posted, nag, done


async def test_discord_message_nag_and_done_edit_in_a_channel(
    discord: FakeDiscord, discord_ch: DiscordChannel
) -> None:
    posted, nag, done = await run_ladder(discord_ch, f"discord:{CHAN}")
    message, reply = discord.channels[CHAN].messages
    assert posted.message_id == message["id"] and nag.message_id == reply["id"]
    assert reply["message_reference"]["message_id"] == message["id"]
    assert reply["message_reference"]["fail_if_not_exists"] is False
    assert "components" not in discord.requests_to("/messages")[1].json()
    [edit] = discord.edits
    assert (edit["channel_id"], edit["message_id"]) == (CHAN, message["id"])
    assert message["content"] == DONE and message["components"] == []
    assert done.message_id == message["id"]
    [patch] = discord.requests_to(f"PATCH /api/v10/channels/{CHAN}/messages/{message['id']}")
    assert patch.json()["components"] == []


async def test_discord_direct_message_done_row_replaces_the_reminder_row(
    discord: FakeDiscord, discord_ch: DiscordChannel
) -> None:
    posted = await discord_ch.send(
        step(f"discord:@{BOB}", "Water the plants", key="occurrence", done_button=41)
    )
    assert posted.outcome is Outcome.OK
    dm = discord.dms[BOB]
    [message] = discord.channels[dm].messages
    assert message["components"] == [done_row(41)]
    nag = await discord_ch.send(
        step(f"discord:@{BOB}", "Still not done", key="nag 1", reply_to=posted.message_id)
    )
    done = await discord_ch.send(
        step(f"discord:@{BOB}", DONE, key="done", edit_of=posted.message_id)
    )
    assert nag.outcome is Outcome.OK and done.outcome is Outcome.OK
    reply = discord.channels[dm].messages[1]
    assert reply["message_reference"]["message_id"] == message["id"]
    assert reply["components"] == []  # a nag carries no Snooze row
    [edit] = discord.edits
    assert (edit["channel_id"], edit["message_id"]) == (dm, message["id"])
    assert message["components"] == []


async def test_discord_nag_of_a_deleted_message_still_posts(
    discord: FakeDiscord, discord_ch: DiscordChannel
) -> None:
    gone = "1100000000000000999"
    nag = await discord_ch.send(step(f"discord:{CHAN}", "Still not done", key="n", reply_to=gone))
    assert nag.outcome is Outcome.OK
    [reply] = discord.channels[CHAN].messages
    assert reply["message_reference"]["message_id"] == gone


async def test_discord_edit_failures_are_permanent_with_a_sentence(
    discord: FakeDiscord, discord_ch: DiscordChannel
) -> None:
    gone = await discord_ch.send(
        step(f"discord:{CHAN}", DONE, key="d", edit_of="1100000000000000999")
    )
    assert gone.outcome is Outcome.PERMANENT and "is gone" in (gone.error or "")
    url = discord.add_webhook("555", "hook-token", CHAN)
    hook = DiscordWebhookChannel(timeout=2.0, allow_private=True)
    try:
        by_hook = await hook.send(step(f"discord-webhook:{url}", "by a hook", key="h"))
    finally:
        await hook.close()
    theirs = await discord_ch.send(
        step(f"discord:{CHAN}", DONE, key="e", edit_of=str(by_hook.message_id))
    )
    assert theirs.outcome is Outcome.PERMANENT
    assert "posted by someone else" in (theirs.error or "")
    bad = await discord_ch.send(step(f"discord:{CHAN}", DONE, key="f", edit_of="C0/1.2"))
    assert bad.outcome is Outcome.PERMANENT and "not a Discord message id" in (bad.error or "")


async def test_discord_webhook_sends_no_button_and_edits_its_own_message(
    discord: FakeDiscord,
) -> None:
    url = discord.add_webhook("555", "hook-token", CHAN)
    hook = DiscordWebhookChannel(timeout=2.0, allow_private=True)
    uri = f"discord-webhook:{url}"
    try:
        posted = await hook.send(step(uri, "Water the plants", key="o", done_button=41))
        nag = await hook.send(step(uri, "Still", key="n", reply_to=posted.message_id))
        done = await hook.send(step(uri, DONE, key="d", edit_of=posted.message_id))
    finally:
        await hook.close()
    assert {posted.outcome, nag.outcome, done.outcome} == {Outcome.OK}
    sent = [r.json() for r in discord.requests_to("POST /api/webhooks/555")]
    assert all("components" not in s and "message_reference" not in s for s in sent)
    message = discord.channels[CHAN].messages[0]
    assert message["id"] == posted.message_id == done.message_id
    assert message["content"] == DONE
    [edit] = discord.edits
    assert edit["message_id"] == posted.message_id
