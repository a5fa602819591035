"""The "scheduled by" line of each channel: where it goes, and when there is no room."""

from __future__ import annotations

from typing import Any

from core.channels.discord import MAX_CONTENT, credited
from core.channels.slack import MAX_BLOCKS, credit


def test_slack_text_gets_a_last_line() -> None:
    args: dict[str, Any] = {"text": "hi"}
    credit(args, "Ada  Lovelace")
    assert args == {"text": "hi\n_scheduled by @Ada Lovelace_"}


def test_slack_names_with_underscores_are_not_italicised_into_garbage() -> None:
    args: dict[str, Any] = {"text": "hi"}
    credit(args, "ada_l")
    assert args["text"] == "hi\nscheduled by @ada_l"


def test_slack_blocks_get_a_context_block_unless_full() -> None:
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
    args: dict[str, Any] = {"text": "x", "blocks": [section]}
    credit(args, "Ada")
    assert args["blocks"][-1]["type"] == "context" and args["text"] == "x"
    full: dict[str, Any] = {"text": "x", "blocks": [section] * MAX_BLOCKS}
    credit(full, "Ada")
    assert len(full["blocks"]) == MAX_BLOCKS and full["text"] == "x"


def test_discord_leaves_a_full_message_as_it_is() -> None:
    assert credited("x" * MAX_CONTENT, "Ada") == "x" * MAX_CONTENT
    near = "x" * (MAX_CONTENT - 40)
    assert credited(near, "Ada").startswith(near + "\n-# scheduled by")
    assert len(credited(near, "A" * 500)) == len(near)  # a long name does not fit: left out
    assert credited("x", None) == "x" and credited("x", "") == "x"
