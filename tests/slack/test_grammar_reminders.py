"""``/schedule me …`` and ``/schedule @someone …``: reminders by direct message.

Slack sends a mention in command text as ``<@U0123|name>`` (or ``<@U0123>``) because the
manifest turns escaping on (``should_escape: true``; https://api.slack.com/interactivity/
slash-commands#creating_commands, "Escape channels, users, and links")."""

from __future__ import annotations

import pytest

from bot.slack.grammar import ME, Create, parse
from core.errors import InvalidInput

VALID = [
    ("me in 10 minutes: stretch", Create("in 10 minutes", "stretch", person=ME)),
    ("ME tomorrow at 9: call mum", Create("tomorrow at 9", "call mum", person=ME)),
    ("me in 5 minutes:tea", Create("in 5 minutes", "tea", person=ME)),
    ('me "drink water" every day at 3pm', Create("every day at 3pm", "drink water", person=ME)),
    (
        "<@U0BOB|bob> tomorrow at 9: send the deck",
        Create("tomorrow at 9", "send the deck", person="U0BOB"),
    ),
    ("<@W0ORG> in 1 hour: hi", Create("in 1 hour", "hi", person="W0ORG")),
    # /remind's own order, to yourself or to someone
    (
        "remind me to stretch at 5pm",
        Create("at 5pm", "stretch", alternatives=(("5pm", "stretch at"),), person=ME),
    ),
    (
        "remind <@U0BOB|bob> to send the deck tomorrow at 9",
        Create(
            "tomorrow at 9",
            "send the deck",
            alternatives=(("at 9", "send the deck tomorrow"), ("9", "send the deck tomorrow at")),
            person="U0BOB",
        ),
    ),
    # /remind's order with WHEN first (issue 33): the reading up to the first "to" first
    (
        "remind me in 20 minutes to drink water",
        Create(
            "in 20 minutes",
            "drink water",
            alternatives=(("20 minutes to drink water", "in"),),
            person=ME,
        ),
    ),
    ("remind me tomorrow to call the bank", Create("tomorrow", "call the bank", person=ME)),
    # a word that only starts with "me" is a time, not a person
    ("meeting time: x", None),
    # yourself and a channel: two recipients (issue 35), no longer a refusal
    (
        "me <#C0123> tomorrow: hi",
        Create("tomorrow", "hi", targets=(("me",), ("slack:C0123",))),
    ),
    (
        "<@U0BOB|bob> at 9am their time: hi",
        Create("at 9am", "hi", person="U0BOB", their_time=True),
    ),
]


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[t for t, _ in VALID])
def test_reminders_are_read(text: str, expected: Create | None) -> None:
    if expected is None:
        found = parse(text)
        assert isinstance(found, Create) and found.person is None
        return
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("me", "Say when and what to remind"),
        ("<@U0BOB|bob>", "Say when and what to remind"),
        ("me tomorrow at 9", 'put ": "'),
        ("@bob tomorrow: hi", "did not turn `@bob` into a mention"),
        ("<!here> in 5 minutes: hi", "not a group"),
    ],
)
def test_bad_reminders_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        parse(text)
