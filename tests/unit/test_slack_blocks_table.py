"""Issue 32: nine bad ``--blocks`` inputs, each refused when the schedule is saved, in one
sentence that names Slack's documented limit (core.limits), and slack_sdk's own models'
verdict on each where they have one. Four were refused before the issue; five were
accepted and failed only at send time (or, for the duplicate ids, when someone clicked).

Each bad input has a twin one step inside the same limit that both core and slack_sdk
accept, so a refusal is the limit's and not a blanket one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from core import limits
from core.channels import parse_destination
from core.errors import InvalidInput


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(action_id: str, **extra: Any) -> dict[str, Any]:
    text = {"type": "plain_text", "text": "Go"}
    return {"type": "button", "text": text, "action_id": action_id, **extra}


def actions(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(elements)}


def plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def confirm(title: int = 5, text: int = 5, yes: int = 3, no: int = 2) -> dict[str, Any]:
    return {
        "title": plain("t" * title),
        "text": plain("x" * text),
        "confirm": plain("y" * yes),
        "deny": plain("n" * no),
    }


def markdown(size: int) -> dict[str, Any]:
    return {"type": "markdown", "text": "m" * size}


CHANNEL, DM = "slack:C0123", "slack:@U0123ABC"
#: (name, destination, blocks, the sentence, slack_sdk's verdict on the blocks one by
#: one: "refuses", "accepts" (only Slack's documentation says no), or None where the
#: limit is the message's, which no slack_sdk model checks).
BAD: list[tuple[str, str, list[dict[str, Any]], str, str | None]] = [
    # refused before issue 32
    (
        "51 blocks",
        "slack:D0123",
        [section(str(i)) for i in range(51)],
        "Slack allows 50 blocks in a message; this message has 51.",
        None,
    ),
    (
        "3,001-character section",
        CHANNEL,
        [section("x" * 3001)],
        "Slack allows 3,000 characters in a section's text; block 1's text has 3,001.",
        "refuses",
    ),
    (
        "button value 2,001",
        CHANNEL,
        [section("a"), actions(button("a", value="v" * 2001))],
        "Slack allows 2,000 characters in a button's value; block 2's element 1's value has 2,001.",
        "refuses",
    ),
    (
        "unknown block type",
        CHANNEL,
        [{"type": "carousel_of_doom"}],
        "Slack has no block type 'carousel_of_doom' (block 1): use section, divider, header, "
        "context, actions, image, rich_text, markdown.",
        "refuses",
    ),
    # accepted before issue 32
    (
        "two blocks with one block_id",
        CHANNEL,
        [section("a", block_id="intro"), section("b", block_id="intro")],
        "Slack block 2 has the block_id 'intro' of block 1: each block_id must be unique in "
        "a message.",
        "accepts",
    ),
    (
        "two buttons with one action_id in one actions block",
        CHANNEL,
        [actions(button("vote"), button("vote"))],
        "Slack block 1's element 2 has the action_id 'vote' of its element 1: each "
        "action_id must be unique in its block.",
        "accepts",
    ),
    (
        "a confirm dialog title of 101",
        CHANNEL,
        [actions(button("go", confirm=confirm(title=101)))],
        "Slack allows 100 characters in a confirm title; "
        "block 1's element 1's confirm title has 101.",
        "refuses",
    ),
    (
        "markdown blocks of 12,001 together",
        CHANNEL,
        [markdown(6000), markdown(6001)],
        "Slack allows 12,000 characters in a message's markdown blocks together; "
        "these have 12,001.",
        "accepts",
    ),
    (
        "50 blocks to a direct message (with Snooze/Done: 51)",
        DM,
        [section(str(i)) for i in range(50)],
        "Slack allows 50 blocks in a message; with the Snooze and Done buttons Herald adds, "
        "this message has 51.",
        None,
    ),
]

#: One step inside each limit of BAD, in the same order: accepted by both.
GOOD: list[tuple[str, list[dict[str, Any]]]] = [
    ("50 blocks", [section(str(i)) for i in range(50)]),
    ("3,000-character section", [section("x" * 3000)]),
    ("button value 2,000", [section("a"), actions(button("a", value="v" * 2000))]),
    ("a known block type", [{"type": "divider"}]),
    ("two block_ids", [section("a", block_id="intro"), section("b", block_id="outro")]),
    ("two action_ids", [actions(button("up"), button("down")), actions(button("up"))]),
    ("a confirm dialog title of 100", [actions(button("go", confirm=confirm(title=100)))]),
    ("markdown blocks of 12,000 together", [markdown(6000), markdown(6000)]),
    ("49 blocks to a direct message", [section(str(i)) for i in range(49)]),
]
GOOD_DESTINATIONS = ["slack:D0123", CHANNEL, CHANNEL, CHANNEL, CHANNEL, CHANNEL, CHANNEL]
GOOD_DESTINATIONS += [CHANNEL, DM]


def sdk_refuses(blocks: list[dict[str, Any]]) -> bool:
    """Whether slack_sdk's models refuse any of ``blocks`` (parsing each, validating it
    and everything inside it)."""
    for raw in json.loads(json.dumps(blocks)):
        parsed = Block.parse(raw)
        if parsed is None:
            return True
        try:
            parsed.validate_json()
            parsed.to_dict()
        except SlackObjectFormationError:
            return True
    return False


@pytest.mark.parametrize(
    ("name", "destination", "blocks", "sentence", "sdk"), BAD, ids=[row[0] for row in BAD]
)
def test_each_bad_input_is_refused_at_save_time_in_one_sentence(
    name: str, destination: str, blocks: list[dict[str, Any]], sentence: str, sdk: str | None
) -> None:
    with pytest.raises(InvalidInput) as refused:
        limits.check_message(parse_destination(destination), "fallback text", {"blocks": blocks})
    assert str(refused.value) == sentence
    if sdk is not None:
        assert sdk_refuses(blocks) is (sdk == "refuses")


@pytest.mark.parametrize(
    ("name", "blocks", "destination"),
    [(n, b, d) for (n, b), d in zip(GOOD, GOOD_DESTINATIONS, strict=True)],
    ids=[row[0] for row in GOOD],
)
def test_one_step_inside_each_limit_is_accepted(
    name: str, blocks: list[dict[str, Any]], destination: str
) -> None:
    limits.check_message(parse_destination(destination), "fallback text", {"blocks": blocks})
    assert not sdk_refuses(blocks)


@pytest.mark.parametrize(
    ("dialog", "sentence"),
    [
        (confirm(text=301), "Slack allows 300 characters in a confirm text; "),
        (confirm(yes=31), "Slack allows 30 characters in a confirm button; "),
        (confirm(no=31), "Slack allows 30 characters in a confirm button; "),
        ({"text": plain("x")}, "Slack block 1's element 1's confirm title must be a text "),
    ],
)
def test_a_confirm_dialog_is_held_to_every_documented_limit(
    dialog: dict[str, Any], sentence: str
) -> None:
    blocks = [actions(button("go", confirm=dialog))]
    with pytest.raises(InvalidInput) as refused:
        limits.check_message(parse_destination(CHANNEL), "x", {"blocks": blocks})
    assert str(refused.value).startswith(sentence)
    limits.check_message(
        parse_destination(CHANNEL), "x", {"blocks": [actions(button("go", confirm=confirm()))]}
    )


def test_a_channel_keeps_one_block_for_the_credit_and_other_conversations_none() -> None:
    fifty = [section(str(i)) for i in range(50)]
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(
            parse_destination("slack:C0123/1700000000.000100"), "x", {"blocks": fifty}
        )
    assert str(refused.value) == (
        'Slack allows 50 blocks in a message; with the "scheduled by" line Herald adds, '
        "this message has 51."
    )
    limits.check_message(parse_destination("slack:C0123"), "x", {"blocks": fifty[:49]})
    limits.check_message(
        parse_destination("slack:D0123"), "x", {"blocks": fifty}
    )  # nothing is added there


def test_a_markdown_blocks_ignored_block_id_clashes_with_nothing() -> None:
    """Slack ignores a markdown block's block_id (docs.slack.dev markdown-block)."""
    blocks = [markdown(10) | {"block_id": "a"}, section("x", block_id="a")]
    limits.check_message(parse_destination(CHANNEL), "x", {"blocks": blocks})


def test_a_discord_channel_message_keeps_room_for_its_credit() -> None:
    room = 2000 - limits.DISCORD_CREDIT_ROOM
    limits.check_message(parse_destination("discord:123456789012345678"), "x" * room)
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(parse_destination("discord:123456789012345678"), "x" * 1990)
    assert str(refused.value) == (
        'Discord allows 2,000 characters in a message; with the "scheduled by" line '
        f"Herald adds (up to {limits.DISCORD_CREDIT_ROOM} characters), this message has "
        f"{1990 + limits.DISCORD_CREDIT_ROOM:,}."
    )
    limits.check_message(
        parse_destination("discord:@123456789012345678"), "x" * 2000
    )  # a DM: no credit
    limits.check_message(
        parse_destination("discord-webhook:https://discord.com/api/webhooks/1/t"), "x" * 2000
    )
