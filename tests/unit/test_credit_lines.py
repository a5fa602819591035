"""The "scheduled by" line of each channel: where it goes, and that it is never left
out (issue 32, finding 6): a message with no room for it is not sent without it."""

from __future__ import annotations

from typing import Any

import pytest

from core import limits
from core.channels.discord import MAX_CONTENT, credited
from core.channels.slack import MAX_BLOCKS, NoRoomForCredit, credit


def test_slack_text_gets_a_last_line() -> None:
    args: dict[str, Any] = {"text": "hi"}
    credit(args, "Ada  Lovelace")
    assert args == {"text": "hi\n_scheduled by @Ada Lovelace_"}


def test_slack_names_with_underscores_are_not_italicised_into_garbage() -> None:
    args: dict[str, Any] = {"text": "hi"}
    credit(args, "ada_l")
    assert args["text"] == "hi\nscheduled by @ada_l"


def test_slack_blocks_get_a_context_block_and_a_full_message_is_not_sent_without_it() -> None:
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
    args: dict[str, Any] = {"text": "x", "blocks": [section]}
    credit(args, "Ada")
    assert args["blocks"][-1]["type"] == "context" and args["text"] == "x"
    most: dict[str, Any] = {"text": "x", "blocks": [section] * (MAX_BLOCKS - 1)}
    credit(most, "Ada")
    assert len(most["blocks"]) == MAX_BLOCKS
    full: dict[str, Any] = {"text": "x", "blocks": [section] * MAX_BLOCKS}
    with pytest.raises(NoRoomForCredit, match="at most 49 blocks"):
        credit(full, "Ada")  # was: sent without its credit


def test_discord_keeps_the_line_within_2000_characters() -> None:
    room = MAX_CONTENT - limits.DISCORD_CREDIT_ROOM  # what a saved message may have
    body = "x" * room
    line = credited(body, "A" * 500)[len(body) :]  # a long name is clipped, not dropped
    assert line.startswith("\n-# scheduled by @\u200b") and line.endswith("…")
    assert len(body) + len(line) <= MAX_CONTENT
    escaped = credited(body, "*" * 100)  # escapes are counted in the room
    assert len(escaped) <= MAX_CONTENT and escaped.endswith("\\*…")
    near = "x" * (MAX_CONTENT - 25)  # saved before limits kept room: the name gives way
    assert credited(near, "Ada Lovelace") == near + "\n-# scheduled by @\u200bAda L…"
    full = credited("x" * MAX_CONTENT, "Ada")  # no room at all: over 2,000, refused
    assert len(full) > MAX_CONTENT and "scheduled by" in full
    assert credited("x", None) == "x" and credited("x", "") == "x"
