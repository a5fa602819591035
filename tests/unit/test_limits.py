"""core.limits: the sentences a refusal says, and core's structural check of Slack blocks
agreeing with slack_sdk's own models on every case here (core may not import slack_sdk)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from core import limits, templates
from core.channels import parse_destination
from core.errors import InvalidInput


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(**extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": {"type": "plain_text", "text": "Go"}, **extra}


def actions(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(elements)}


#: (name, blocks, accepted): each accepted by both core and slack_sdk, or by neither.
#: One documented limit slack_sdk does not check (a section field's 2,000 characters,
#: docs.slack.dev section-block "fields") is in STRICTER: core refuses what the model lets by.
SLACK_CASES: list[tuple[str, list[dict[str, Any]], bool]] = [
    ("one section", [section("Hello")], True),
    ("50 blocks", [section(str(i)) for i in range(50)], True),
    ("51 blocks", [section(str(i)) for i in range(51)], False),
    ("3,000-character section", [section("é" * 3000)], True),
    ("3,001-character section", [section("x" * 3001)], False),
    ("ten fields", [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 10}], True),
    (
        "eleven fields",
        [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
        False,
    ),
    (
        "header of 150",
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * 150}}],
        True,
    ),
    (
        "header of 151",
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
        False,
    ),
    ("button value 2,000", [actions(button(action_id="a", value="v" * 2000))], True),
    ("button value 2,001", [actions(button(action_id="a", value="v" * 2001))], False),
    ("action_id 255", [actions(button(action_id="a" * 255, value="1"))], True),
    ("action_id 256", [actions(button(action_id="a" * 256, value="1"))], False),
    (
        "button text 76",
        [actions({**button(action_id="a"), "text": {"type": "plain_text", "text": "b" * 76}})],
        False,
    ),
    (
        "link button",
        [actions(button(action_id="a", url="https://example.com/" + "p" * 2900))],
        True,
    ),
    ("URL of 3,001", [actions(button(action_id="a", url="https://e.com/" + "p" * 2988))], False),
    ("25 buttons", [actions(*[button(action_id=f"a{i}") for i in range(25)])], True),
    ("26 buttons", [actions(*[button(action_id=f"a{i}") for i in range(26)])], False),
    ("block_id 256", [section("x", block_id="b" * 256)], False),
    (
        "context of 10",
        [{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 10}],
        True,
    ),
    (
        "context of 11",
        [{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 11}],
        False,
    ),
    (
        "image",
        [{"type": "image", "image_url": "https://e.com/a.png", "alt_text": "a" * 2000}],
        True,
    ),
    (
        "alt text 2,001",
        [{"type": "image", "image_url": "https://e.com/a.png", "alt_text": "a" * 2001}],
        False,
    ),
    ("divider", [{"type": "divider"}], True),
    ("unknown type", [{"type": "carousel_of_doom", "text": "x"}], False),
    ("no type", [{"text": "x"}], False),
]


STRICTER = [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}]


def sdk_accepts(blocks: list[dict[str, Any]]) -> bool:
    """What slack_sdk's models say (plus the 50 blocks of chat.postMessage, which no
    model checks)."""
    if len(blocks) > limits.SLACK_MESSAGE_BLOCKS.size:
        return False
    for raw in blocks:
        parsed = Block.parse(json.loads(json.dumps(raw)))
        if parsed is None:
            return False
        try:
            parsed.validate_json()
            parsed.to_dict()  # validates every element inside too
        except SlackObjectFormationError:
            return False
    return True


def core_accepts(blocks: list[dict[str, Any]]) -> bool:
    try:  # a conversation Herald adds no block to (no credit line, no Snooze/Done buttons)
        limits.check_message(parse_destination("slack:D0123"), "fallback", {"blocks": blocks})
    except InvalidInput:
        return False
    return True


@pytest.mark.parametrize(
    ("name", "blocks", "accepted"), SLACK_CASES, ids=[c[0] for c in SLACK_CASES]
)
def test_core_and_slack_sdk_agree_on_blocks(
    name: str, blocks: list[dict[str, Any]], accepted: bool
) -> None:
    assert sdk_accepts(blocks) is accepted
    assert core_accepts(blocks) is accepted


def test_core_is_stricter_only_where_the_docs_are() -> None:
    assert sdk_accepts(STRICTER) and not core_accepts(STRICTER)


@pytest.mark.parametrize(
    ("blocks", "sentence"),
    [
        (
            [section(str(i)) for i in range(51)],
            "Slack allows 50 blocks in a message; this message has 51.",
        ),
        (
            [section("x" * 3001)],
            "Slack allows 3,000 characters in a section's text; block 1's text has 3,001.",
        ),
        (
            [section("a"), actions(button(action_id="a", value="v" * 2001))],
            "Slack allows 2,000 characters in a button's value; "
            "block 2's element 1's value has 2,001.",
        ),
    ],
)
def test_a_block_refusal_names_the_limit_and_the_size(
    blocks: list[dict[str, Any]], sentence: str
) -> None:
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(parse_destination("slack:C0123"), "x", {"blocks": blocks})
    assert str(refused.value) == sentence


def test_an_unknown_block_type_is_named() -> None:
    with pytest.raises(
        InvalidInput, match="Slack has no block type 'carousel_of_doom' \\(block 1\\)"
    ):
        limits.check_message(
            parse_destination("slack:C0123"), "x", {"blocks": [{"type": "carousel_of_doom"}]}
        )


def test_discord_text_over_2000_is_refused_in_one_sentence() -> None:
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(parse_destination("discord:123456789012345678"), "x" * 3508)
    assert (
        str(refused.value)
        == "Discord allows 2,000 characters in a message; this message has 3,508."
    )
    limits.check_message(
        parse_destination("webhook:https://example.com/hook"), "x" * 3508
    )  # Herald's 4,000
    limits.check_message(parse_destination("email:ops@example.com"), "x" * 3508)


def embed(**parts: Any) -> dict[str, Any]:
    return parts


@pytest.mark.parametrize(
    ("embeds", "sentence"),
    [
        (
            [embed(title="t" * 256, description="d" * 746 + "é")] * 11,
            "Discord allows 10 embeds in a message; this message has 11.",
        ),
        (
            [embed(description="d" * 3000), embed(description="d" * 3001)],
            "Discord allows 6,000 characters in a message's embeds together; "
            "these embeds have 6,001.",
        ),
        (
            [embed(title="t" * 257)],
            "Discord allows 256 characters in an embed's title; embed 1's title has 257.",
        ),
        (
            [embed(fields=[{"name": "n", "value": "v" * 1025}])],
            "Discord allows 1,024 characters in an embed field's value; "
            "embed 1's field 1 value has 1,025.",
        ),
        (
            [embed(fields=[{"name": "n", "value": "v"}] * 26)],
            "Discord allows 25 fields in an embed; embed 1 has 26.",
        ),
    ],
)
def test_discord_embeds_are_held_to_their_limits(embeds: list[Any], sentence: str) -> None:
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(
            parse_destination("discord-webhook:https://discord.com/api/webhooks/1/t"),
            "x",
            {"embeds": embeds},
        )
    assert str(refused.value) == sentence


def test_embeds_within_every_limit_pass() -> None:
    ten = [embed(title="t" * 256, description="d" * 344)] * 10  # 6,000 together
    room = 2000 - limits.DISCORD_CREDIT_ROOM  # what the "scheduled by" line leaves
    limits.check_message(
        parse_destination("discord:123456789012345678"), "x" * room, {"embeds": ten}
    )


def test_a_template_is_held_to_its_longest_expansion() -> None:
    body = "x" * 1985 + "{date:%A %B}"  # 1,997 as written; up to 2,004 filled in
    assert len(body) <= 2000 and templates.longest_schedule_text(body) == 1985 + len(
        "Wednesday September"
    )
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(
            parse_destination("discord:123456789012345678"), body, {"template": True}
        )
    assert str(refused.value) == (
        "Discord allows 2,000 characters in a message; this message, its variables filled "
        "in, can have 2,004."
    )
    limits.check_message(
        parse_destination("webhook:https://example.com/h"), body, {"template": True}
    )


def test_longest_expansion_bounds_every_real_rendering() -> None:
    from datetime import UTC, datetime, timedelta

    text = "{date:%A %d %B %Y} #{schedule.id} {date} {{literal}}"
    longest = templates.longest_schedule_text(text)
    start = datetime(2026, 1, 1, 12, tzinfo=UTC)
    rendered = [
        templates.render_schedule(
            text, schedule_id=2**63 - 1, occurrence=start + timedelta(days=d), zone="UTC"
        )
        for d in range(800)
    ]
    assert max(len(r) for r in rendered) == longest  # a bound some day reaches


def test_email_subject_and_webhook_username() -> None:
    with pytest.raises(limits.TooLarge, match="RFC 5322"):
        limits.check_message(parse_destination("email:ops@example.com"), "x", {"subject": "s" * 79})
    with pytest.raises(limits.TooLarge, match="80 characters in a webhook's username"):
        limits.check_message(
            parse_destination("discord-webhook:https://discord.com/api/webhooks/1/t"),
            "x",
            {"username": "u" * 81},
        )


def test_every_limit_names_its_source() -> None:
    table = [v for v in vars(limits).values() if isinstance(v, limits.Limit)]
    assert len(table) > 50
    for limit in table:
        assert limit.size > 0
        assert limit.source.startswith(("https://", "README.md#")), limit


def test_text_limit_per_destination_and_clip_for_what_herald_shows() -> None:
    assert limits.text_limit("discord:1").size == 2000
    assert limits.text_limit("discord-webhook:https://x").size == 2000
    assert limits.text_limit("slack:C1") is limits.HERALD_TEXT  # Slack's 40,000 is looser
    assert limits.text_limit("email:a@b.c") is limits.HERALD_TEXT
    assert limits.clip("é" * 2001, limits.DISCORD_CONTENT) == "é" * 1999 + "…"
    assert limits.clip("short", 3) == "sh…" and limits.clip("ok", 3) == "ok"
