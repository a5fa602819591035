"""What the Slack and Discord channels build for a message sent until done (issue 40),
without a network: the Done button (valid for slack_sdk's models and within Block Kit's
50 blocks; within Discord's documented component limits, and what discord.py itself
would send), the reply of a nag, the edit once done, and a direct message's buttons.

Slack: https://docs.slack.dev/reference/block-kit/blocks/actions-block,
https://docs.slack.dev/reference/methods/chat.update. Discord:
https://discord.com/developers/docs/components/reference#button,
https://discord.com/developers/docs/resources/message#message-reference-structure."""

from __future__ import annotations

import json
from typing import Any

import discord as discordpy
import pytest
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    PlainTextObject,
    SectionBlock,
)

from core import limits, reminders
from core.channels.base import Delivery
from core.channels.discord import (
    DONE_CUSTOM_PREFIX,
    DiscordChannel,
    DiscordWebhookChannel,
    done_row,
)
from core.channels.slack import (
    DONE_ACTION_ID,
    MAX_BLOCKS,
    SlackChannel,
    Unsendable,
    done_actions,
)
from tests.fakes.deliveries import make_delivery

SECTION = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
#: The largest job id a Postgres bigint holds: the longest value and custom_id.
BIGGEST_JOB = 2**63 - 1


def slack_delivery(
    uri: str = "slack:C0GENERAL",
    body: str = "Water the plants",
    *,
    scheduled_by: str | None = None,
    **options: Any,
) -> Delivery:
    delivery = make_delivery(uri, body, options=options, job_id=41)
    delivery.scheduled_by = scheduled_by
    return delivery


def valid_slack_blocks(blocks: list[dict[str, Any]]) -> list[Block]:
    """Each block as slack_sdk parses it, validated, and rendering back the same."""
    assert 0 < len(blocks) <= limits.SLACK_MESSAGE_BLOCKS.size
    parsed = []
    for raw in json.loads(json.dumps(blocks)):
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()  # raises SlackObjectFormationError when out of limits
        assert block.to_dict() == raw
        parsed.append(block)
    limits.check_slack_blocks(blocks)  # Herald's own reading of the same limits
    return parsed


# --- Slack --------------------------------------------------------------------------


def test_slack_done_button_is_an_actions_block_slack_sdk_builds_the_same() -> None:
    block = done_actions(BIGGEST_JOB)
    built = ActionsBlock(
        block_id=f"herald_done:{BIGGEST_JOB}",
        elements=[
            ButtonElement(
                text=PlainTextObject(text="Done"),
                action_id=DONE_ACTION_ID,
                value=str(BIGGEST_JOB),
                style="primary",
            )
        ],
    )
    built.validate_json()
    assert built.to_dict() == block
    assert DONE_ACTION_ID == "herald_done"
    [parsed] = valid_slack_blocks([block])
    assert isinstance(parsed, ActionsBlock)
    [button] = parsed.elements
    assert isinstance(button, ButtonElement) and button.value == str(BIGGEST_JOB)


def test_slack_text_message_gets_sections_then_the_done_button() -> None:
    body = "x" * limits.HERALD_TEXT.size  # more than one section holds
    args = SlackChannel("xoxb-t").payload(slack_delivery(body=body, done_button=41))
    assert args["text"] == body
    *sections, actions = valid_slack_blocks(args["blocks"])
    assert all(isinstance(s, SectionBlock) for s in sections) and len(sections) == 2
    assert "".join(b["text"]["text"] for b in args["blocks"][:-1]) == body
    assert isinstance(actions, ActionsBlock)
    assert args["blocks"][-1] == done_actions(41)
    assert args["blocks"][-1]["block_id"] == "herald_done:41"


def test_slack_blocks_keep_theirs_and_the_credit_comes_last() -> None:
    delivery = slack_delivery(blocks=[SECTION] * 3, done_button=41, scheduled_by="Ada")
    blocks = SlackChannel("xoxb-t").payload(delivery)["blocks"]
    assert [b["type"] for b in blocks] == ["section"] * 3 + ["actions", "context"]
    valid_slack_blocks(blocks)


@pytest.mark.parametrize(
    ("own", "credited", "fits"),
    [
        (MAX_BLOCKS - 1, False, True),
        (MAX_BLOCKS, False, False),
        (MAX_BLOCKS - 2, True, True),
        (MAX_BLOCKS - 1, True, False),
    ],
)
def test_slack_blocks_must_leave_room_for_the_done_button(
    own: int, credited: bool, fits: bool
) -> None:
    delivery = slack_delivery(
        blocks=[SECTION] * own, done_button=41, scheduled_by="Ada" if credited else None
    )
    channel = SlackChannel("xoxb-t")
    if fits:
        blocks = channel.payload(delivery)["blocks"]
        assert len(blocks) == MAX_BLOCKS
        valid_slack_blocks(blocks)
        return
    most = MAX_BLOCKS - (2 if credited else 1)
    with pytest.raises(Unsendable, match=f"at most {most} blocks") as refused:
        channel.payload(delivery)
    assert "the Done button" in str(refused.value)


def test_slack_dm_with_done_button_has_only_the_done_button() -> None:
    args = SlackChannel("xoxb-t").payload(slack_delivery("slack:@U0BOB", done_button=41))
    section, actions = valid_slack_blocks(args["blocks"])
    assert isinstance(section, SectionBlock)
    assert args["blocks"][-1] == done_actions(41)
    assert not any(
        e["action_id"].startswith(reminders.SLACK_ACTION_PREFIX)
        for e in args["blocks"][-1]["elements"]
    )


def test_slack_nag_is_a_thread_reply_in_the_named_channel_without_buttons() -> None:
    channel = SlackChannel("xoxb-t")
    args = channel.payload(slack_delivery(reply_to="C0GENERAL/1700000001.000001"))
    assert (args["channel"], args["thread_ts"]) == ("C0GENERAL", "1700000001.000001")
    assert "blocks" not in args
    dm = channel.payload(
        slack_delivery("slack:@U0BOB", "nag", reply_to="D00000001/1700000001.000001")
    )
    assert (dm["channel"], dm["thread_ts"]) == ("D00000001", "1700000001.000001")
    assert "blocks" not in dm and dm["text"] == "nag"  # no Snooze row, no "asked me"


def test_slack_nag_of_a_thread_destination_goes_to_that_thread() -> None:
    """A reply's ts is no thread: the nag goes under the thread's own message."""
    args = SlackChannel("xoxb-t").payload(
        slack_delivery("slack:C0GENERAL/1600000000.000100", reply_to="C0GENERAL/1700000001.000001")
    )
    assert args["thread_ts"] == "1600000000.000100"


@pytest.mark.parametrize("bad", ["C0GENERAL", "1700000001.000001", "x/y", "C0/1.2"])
def test_slack_reply_to_or_edit_of_that_is_no_message_id_is_refused(bad: str) -> None:
    channel = SlackChannel("xoxb-t")
    with pytest.raises(Unsendable, match="is not a Slack message id"):
        channel.payload(slack_delivery(reply_to=bad))
    with pytest.raises(Unsendable, match="is not a Slack message id"):
        channel.edit_payload(slack_delivery(edit_of=bad))


def test_slack_edit_is_the_text_as_sections_without_buttons() -> None:
    body = "Water the plants\n\n:white_check_mark: Done by <@U0CAROL> at 09:20"
    args = SlackChannel("xoxb-t").edit_payload(
        slack_delivery(body=body, edit_of="C0GENERAL/1700000001.000001", scheduled_by="Ada")
    )
    assert (args["channel"], args["ts"], args["text"]) == (
        "C0GENERAL",
        "1700000001.000001",
        body,
    )
    section, context = valid_slack_blocks(args["blocks"])
    assert isinstance(section, SectionBlock)
    assert [b["type"] for b in args["blocks"]] == ["section", "context"]


def test_slack_notice_dm_still_has_no_buttons() -> None:
    assert reminders.NOTICE == "notice"
    args = SlackChannel("xoxb-t").payload(slack_delivery("slack:@U0BOB", notice=True))
    assert "blocks" not in args


# --- Discord ------------------------------------------------------------------------


def discord_delivery(
    uri: str = "discord:123456789012345678", body: str = "Water the plants", **options: Any
) -> Delivery:
    return make_delivery(uri, body, options=options, job_id=41)


def test_discord_done_row_is_what_discord_py_would_send_within_limits() -> None:
    row = done_row(BIGGEST_JOB)
    assert row["type"] == 1 and len(row["components"]) <= limits.DISCORD_ROW_BUTTONS.size
    [sent] = row["components"]
    assert sent["custom_id"] == f"herald:done:{BIGGEST_JOB}"
    assert sent["custom_id"].startswith(DONE_CUSTOM_PREFIX)
    assert len(sent["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
    assert len(sent["label"]) <= limits.DISCORD_BUTTON_LABEL.size
    model: discordpy.ui.Button[Any] = discordpy.ui.Button(
        label=sent["label"], style=discordpy.ButtonStyle.success, custom_id=sent["custom_id"]
    )
    built = model.to_component_dict()
    assert {k: built.get(k) for k in sent} == sent


def test_discord_channel_message_gets_the_done_row() -> None:
    body = DiscordChannel("t").payload(discord_delivery(done_button=41))
    assert body["components"] == [done_row(41)]
    assert len(body["components"]) <= limits.DISCORD_ACTION_ROWS.size
    assert "message_reference" not in body


def test_discord_dm_done_row_replaces_the_reminder_row() -> None:
    body = DiscordChannel("t").payload(
        discord_delivery("discord:@123456789012345678", done_button=41)
    )
    assert body["components"] == [done_row(41)]


def test_discord_nag_is_a_reply_that_does_not_fail_when_the_message_is_gone() -> None:
    channel = DiscordChannel("t")
    body = channel.payload(discord_delivery(reply_to="1100000000000000000"))
    assert body["message_reference"] == {
        "message_id": "1100000000000000000",
        "fail_if_not_exists": False,
    }
    assert "components" not in body
    dm = channel.payload(
        discord_delivery("discord:@123456789012345678", "nag", reply_to="1100000000000000000")
    )
    assert "components" not in dm and dm["content"] == "nag"


def test_discord_edit_clears_the_components() -> None:
    delivery = discord_delivery(edit_of="1100000000000000000")
    delivery.scheduled_by = "Ada"
    body = DiscordChannel("t").edit_payload(delivery)
    assert body["components"] == []
    assert body["content"].startswith("Water the plants") and "scheduled by" in body["content"]


def test_discord_webhook_carries_no_button_and_no_reference() -> None:
    hook = DiscordWebhookChannel()
    body = hook.payload(
        discord_delivery(
            "discord-webhook:https://discord.com/api/webhooks/1/tok",
            done_button=41,
            reply_to="1100000000000000000",
        )
    )
    assert "components" not in body and "message_reference" not in body
