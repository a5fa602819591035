"""The /schedule grammar as a pure function: command texts in, commands (or a refusal
naming the problem, with an example) out. No Slack, no database."""

from __future__ import annotations

import pytest

from bot.slack.grammar import (
    EXAMPLE,
    HELP,
    Act,
    Create,
    FeedAdd,
    FeedList,
    FeedRemove,
    Help,
    Listing,
    OpenModal,
    Timezone,
    escape,
    parse,
    unescape,
)
from core.errors import InvalidInput

VALID = [
    # the colon form, with and without a channel
    (
        "every weekday at 9am: Standup in 5 minutes!",
        Create("every weekday at 9am", "Standup in 5 minutes!"),
    ),
    (
        "<#C0123|general> every weekday at 9am: Standup in 5 minutes!",
        Create("every weekday at 9am", "Standup in 5 minutes!", "C0123"),
    ),
    ("<#C0123> in 2 seconds: hello", Create("in 2 seconds", "hello", "C0123")),
    ("<#C0123|general> in 2 seconds: hello", Create("in 2 seconds", "hello", "C0123")),
    (
        "<#GPRIV01|secret-room> tomorrow at noon: Lunch",
        Create("tomorrow at noon", "Lunch", "GPRIV01"),
    ),
    ("<#C0123|> tomorrow: x", Create("tomorrow", "x", "C0123")),
    ("tomorrow at 9:30: Coffee", Create("tomorrow at 9:30", "Coffee")),
    ("at 09:30: Stand up: the sequel", Create("at 09:30", "Stand up: the sequel")),
    ("2026-04-01 08:00: April fools", Create("2026-04-01 08:00", "April fools")),
    (
        "RRULE:FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0: Gym",
        Create("RRULE:FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0", "Gym"),
    ),
    ("0 9 * * 1-5: cron standup", Create("0 9 * * 1-5", "cron standup")),
    (
        "every other friday at 17:00 until june 30: Retro",
        Create("every other friday at 17:00 until june 30", "Retro"),
    ),
    ("in 10 minutes:\nline one\nline two", Create("in 10 minutes", "line one\nline two")),
    ("   in 5 minutes:   padded   ", Create("in 5 minutes", "padded")),
    # the message keeps Slack's escaping and its mentions; the time is unescaped
    (
        "in 1 hour: Ping <@U777|ada> &amp; <#C0999|random> &lt;3",
        Create("in 1 hour", "Ping <@U777|ada> &amp; <#C0999|random> &lt;3"),
    ),
    ("<#C0123> mon &amp; wed at 9: x", Create("mon & wed at 9", "x", "C0123")),
    # the /remind form
    (
        '<#C0123|general> "Standup in 5 minutes!" every weekday at 9am',
        Create("every weekday at 9am", "Standup in 5 minutes!", "C0123"),
    ),
    ('"Lunch!" tomorrow at noon', Create("tomorrow at noon", "Lunch!")),
    ("<#C0123> “Curly quotes” in 1 hour", Create("in 1 hour", "Curly quotes", "C0123")),
    ('"He said "hi" twice" in 3 hours', Create("in 3 hours", 'He said "hi" twice')),
    ('"Time: 9:30 sharp" tomorrow at 9', Create("tomorrow at 9", "Time: 9:30 sharp")),
    # sub-commands
    ("", OpenModal()),
    ("   ", OpenModal()),
    ("help", Help()),
    ("HELP me please", Help()),
    ("list", Listing()),
    ("list all", Listing(everyone=True)),
    ("List Everyone", Listing(everyone=True)),
    ("list failed", Listing(state="failed")),
    ("list all Retrying", Listing(everyone=True, state="retrying")),
    ("show 12", Act("show", 12)),
    ("show #12", Act("show", 12)),
    ("edit 3", Act("edit", 3)),
    ("cancel 7", Act("cancel", 7)),
    ("Pause 7", Act("pause", 7)),
    ("resume 7", Act("resume", 7)),
    ("skip 42", Act("skip", 42)),
    ("timezone", Timezone()),
    ("timezone Europe/Berlin", Timezone("Europe/Berlin")),
    ("TIMEZONE America/New_York", Timezone("America/New_York")),
    # a city of several words (core reads it: core.zones.resolve_zone)
    ("timezone new york", Timezone("new york")),
    ("timezone  Sao   Paulo ", Timezone("Sao Paulo")),
    # no space after the colon: the colon glued to a word ends WHEN when it is the only one
    ("in 5 minutes:x", Create("in 5 minutes", "x")),
    ("<#C0123> tomorrow at 9am:Coffee", Create("tomorrow at 9am", "Coffee", "C0123")),
    ("in 5 minutes:Stand up: the sequel", Create("in 5 minutes", "Stand up: the sequel")),
    ("in 5 minutes::tada: party", Create("in 5 minutes", ":tada: party")),
    (
        "daily at 9 except holidays from <https://x.org:8443/h.ics>: Hi",
        Create("daily at 9 except holidays from https://x.org:8443/h.ics", "Hi"),
    ),
    # a link in the time (Slack escapes URLs as <url> or <url|label>) becomes its URL
    (
        "every weekday at 9am except holidays from <https://x.org/h.ics?a=1&amp;b=2>: Hi",
        Create("every weekday at 9am except holidays from https://x.org/h.ics?a=1&b=2", "Hi"),
    ),
    (
        '"Hi" daily at 9 except holidays from <https://x.org/h.ics|x.org/h.ics>',
        Create("daily at 9 except holidays from https://x.org/h.ics", "Hi"),
    ),
    # event feeds
    ("feed list", FeedList()),
    ("feeds", FeedList()),
    ("feed remove 3", FeedRemove(3)),
    ("feed remove #3", FeedRemove(3)),
    ("feed add <https://x.org/t.ics>", FeedAdd("https://x.org/t.ics")),
    (
        "feed add <#C0123|general> https://x.org/t.ics before 1h",
        FeedAdd("https://x.org/t.ics", "1h", "C0123"),
    ),
    (
        "feed add <https://x.org/t.ics|x.org/t.ics> before 15 minutes to <#C0123>: "
        "{event.summary} at {event.start:%H:%M} &amp; more",
        FeedAdd(
            "https://x.org/t.ics",
            "15 minutes",
            "C0123",
            "{event.summary} at {event.start:%H:%M} &amp; more",
        ),
    ),
]

REMIND = [
    # an alias of cancel
    ("delete 3", Act("cancel", 3)),
    ("Remove #3", Act("cancel", 3)),
    # a channel typed as plain text, found by name by the Slack layer
    ("#general every monday: text", Create("every monday", "text", None, "general")),
    ('#General "text" every monday', Create("every monday", "text", None, "general")),
    ("#dev-ops.eu in 5 minutes:x", Create("in 5 minutes", "x", None, "dev-ops.eu")),
    ("#Équipe tomorrow at 9: x", Create("tomorrow at 9", "x", None, "équipe")),
    # /remind's order: every place WHEN may start, earliest first
    (
        "remind #general to drink water at 5pm",
        Create("at 5pm", "drink water", None, "general", (("5pm", "drink water at"),)),
    ),
    (
        "remind <#C1|general> to Standup every monday",
        Create("every monday", "Standup", "C1", None, (("monday", "Standup every"),)),
    ),
    ("remind to stretch tomorrow", Create("tomorrow", "stretch")),
    ("remind #general stretch tomorrow", Create("tomorrow", "stretch", None, "general")),
    ('remind #general to "Lunch!" tomorrow', Create("tomorrow", "Lunch!", None, "general")),
    ("remind <#C1> to every monday: x", Create("every monday", "x", "C1")),
    (
        "remind to line one\nline two in 5 minutes",
        Create(
            "in 5 minutes",
            "line one\nline two",
            alternatives=(("5 minutes", "line one\nline two in"),),
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), REMIND, ids=[repr(t) for t, _ in REMIND])
def test_remind_habits_are_read(text: str, expected: object) -> None:
    assert parse(text) == expected


INVALID = [
    ("<#C0123|general>", "Say when and what"),
    ("<#C0123> tomorrow at 9", 'put ": "'),
    ("tomorrow at 9", 'put ": "'),
    ("every day at 9:30:no space", 'put ": "'),
    (": no time", "Say when before the colon"),
    ("tomorrow at 9:", "message after the colon is empty"),
    ("tomorrow at 9:    ", "message after the colon is empty"),
    ("#gen/eral every weekday at 9am: hi", "is not a Slack channel name"),
    ("#general", "Say when and what"),
    ("frobnicate 3", "Unknown command `frobnicate`. Commands: list, show, edit"),
    ("frobnicate #3", "Unknown command `frobnicate`"),
    ("frobnicate", "Unknown command `frobnicate`"),
    ("cancle 3", "Did you mean `cancel`?"),
    ("lst", "Did you mean `list`?"),
    ("tomorrow", 'put ": "'),  # a time word: the time-format answer
    ("tomorow 9", 'put ": "'),  # a near miss of one too
    ("standup today", 'put ": "'),  # words that are not a command and a number
    ("delete", "Say which schedule"),
    ("remove 3 4", "Say which schedule"),
    ("remind", "Say what to send and when"),
    ("remind #general to water the plants", "Could not find when to send it"),
    ("remind me to water the plants", "Could not find when to send it"),
    ("remind me #general to stretch at 5pm", "name a person or a channel, not both"),
    ("remind <!channel> to stretch at 5pm", "not a group"),
    ("<!subteam^S0123|devs> tomorrow: hi", "not a group"),
    ("<!channel> tomorrow: hi", "not a group"),
    ('"unclosed message tomorrow', "no closing quote"),
    ('"" tomorrow', "quoted message is empty"),
    ('"Lunch!"', "Say when after the quoted message"),
    ("list mine please", "takes nothing, `all`, a state"),
    ("show", "Say which schedule"),
    ("show twelve", "not `twelve`"),
    ("cancel 1 2", "Say which schedule"),
    ("skip -3", "Say which schedule"),
    ("edit", "Say which schedule"),
    ("timezone Europe/Berlin is where I live", "a city or an IANA name"),
    # a glued colon that could be one of two places, or after a clock time: say ": "
    ("in 5 minutes:note:x", 'put ": "'),
    ("in 5 minutes:5 people", 'put ": "'),
    ("RRULE:FREQ=DAILY:x", 'put ": "'),
    ("feed add", "Say which calendar"),
    ("feed add https://x.org/a.ics https://x.org/b.ics", "one feed per calendar"),
    ("feed add https://x.org/a.ics <#C1> <#C2>", "one channel"),
    ("feed add https://x.org/a.ics #general", "into a channel link"),
    ("feed add https://x.org/a.ics soon", "Could not read `soon`"),
    ("feed add https://x.org/a.ics:  ", "template after the colon is empty"),
    ("feed remove", "Say which feed"),
    ("feed subscribe https://x.org/a.ics", "takes `add`, `list` or `remove`"),
    ("feed list all", "takes nothing"),
    ("list dead", "a state (pending, retrying, delivered, failed"),
    ("list failed all", "not `failed all`"),
]


#: Several recipients, chains and "their time" (issue 35); one target reads as before.
ROUTES = [
    (
        "<#C1|ops> <#C2|dev> <@U1|alice> every weekday at 9am: Stand-up",
        Create(
            "every weekday at 9am",
            "Stand-up",
            targets=(("slack:C1",), ("slack:C2",), ("slack:@U1",)),
        ),
    ),
    (
        "#ops #dev every weekday at 9am: Stand-up",
        Create("every weekday at 9am", "Stand-up", targets=(("#ops",), ("#dev",))),
    ),
    (
        "#ops, <#C2>,<@U1> tomorrow: hi",
        Create("tomorrow", "hi", targets=(("#ops",), ("slack:C2",), ("slack:@U1",))),
    ),
    (
        "<@U1|alice> or alice@example.com tomorrow at 9: Deck",
        Create("tomorrow at 9", "Deck", targets=(("slack:@U1", "email:alice@example.com"),)),
    ),
    (
        "<@U1> or email:alice@example.com <#C1> in 5 minutes: x",
        Create(
            "in 5 minutes", "x", targets=(("slack:@U1", "email:alice@example.com"), ("slack:C1",))
        ),
    ),
    (
        "<@U1> OR <mailto:a@example.org|a@example.org> or me tomorrow: x",
        Create("tomorrow", "x", targets=(("slack:@U1", "email:a@example.org", "me"),)),
    ),
    (
        "alice@example.com tomorrow: x",
        Create("tomorrow", "x", targets=(("email:alice@example.com",),)),
    ),
    (
        '<#C1> <#C2> "Lunch!" tomorrow at noon',
        Create("tomorrow at noon", "Lunch!", targets=(("slack:C1",), ("slack:C2",))),
    ),
    (
        "<@U1> <@U2> every weekday at 9am their time: Stand-up",
        Create(
            "every weekday at 9am",
            "Stand-up",
            targets=(("slack:@U1",), ("slack:@U2",)),
            their_time=True,
        ),
    ),
    (
        "<@U1> at 9am Their  Time except holidays from <https://x.org/h.ics>: Hi",
        Create(
            "at 9am except holidays from https://x.org/h.ics", "Hi", person="U1", their_time=True
        ),
    ),
    # one target: exactly as before; "their time" only in WHEN, not in the message
    ("<#C1> tomorrow: their time", Create("tomorrow", "their time", "C1")),
    ("<#C1> or tomorrow: x", Create("or tomorrow", "x", "C1")),
]

ROUTE_REFUSALS = [
    ("<#C1> <#C2>", "Say when and what to send after them"),
    ("<#C1> <!channel> tomorrow: hi", "not a group"),
    ("<#C1> @bob tomorrow: hi", "did not turn `@bob` into a mention"),
    ("<#C1> #gen/eral tomorrow: hi", "is not a Slack channel name"),
    ("<#C1> <#C2> tomorrow at 9", 'put ": "'),
    ("<@U1> their time: hi", "Say the time before"),
]


@pytest.mark.parametrize(("text", "expected"), ROUTES, ids=[repr(t) for t, _ in ROUTES])
def test_several_targets_and_chains_are_read(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("text", "problem"), ROUTE_REFUSALS, ids=[t for t, _ in ROUTE_REFUSALS])
def test_bad_targets_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(text)
    assert problem in str(caught.value)


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[repr(t) for t, _ in VALID])
def test_valid_commands_are_read(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("text", "problem"), INVALID, ids=[repr(t) for t, _ in INVALID])
def test_invalid_commands_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(text)
    assert problem in str(caught.value)


def test_there_are_at_least_forty_command_texts() -> None:
    assert len(VALID) + len(INVALID) >= 40


@pytest.mark.parametrize("text", ["tomorrow at 9", "<#C0123> tomorrow at 9", ": x"])
def test_refusals_show_an_example_that_works(text: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(text)
    assert "/schedule" in str(caught.value)
    assert isinstance(
        parse(EXAMPLE.removeprefix("/schedule ").replace("#general", "<#C1>")), Create
    )


def test_escaping_round_trips_and_neutralises_mentions() -> None:
    raw = "a <!channel> & <@U1> > b"
    assert unescape(escape(raw)) == raw
    assert "<" not in escape(raw) and ">" not in escape(raw)


def test_user_text_in_a_refusal_is_escaped() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse("show <!here>")
    assert "<!here>" not in str(caught.value)


def test_help_documents_every_sub_command() -> None:
    for word in ("list", "show", "edit", "cancel", "pause", "resume", "skip", "timezone"):
        assert f"`{word}" in HELP or f" `{word} " in HELP or f"`/schedule {word}" in HELP
    assert '"MESSAGE" WHEN' in HELP and "WHEN: MESSAGE" in HELP
    assert "except holidays from https://" in HELP
    assert "/schedule feed add URL" in HELP and "`/schedule feed remove ID`" in HELP
