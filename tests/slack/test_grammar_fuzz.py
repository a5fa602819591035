"""Arbitrary slash-command texts: the grammar answers with a command or the domain
error, never anything else; a schedule command then refuses or creates, and a refusal
writes nothing. Texts naming several targets and chains (issue 35) read back as the
recipients they were built from."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.grammar import ME, Create, parse
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
        "or",
        ",",
        "<@U1|alice>",
        "alice@example.com",
        "email:bob@example.org",
        "<mailto:c@example.net|c@example.net>",
        "their time",
        "@bob",
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


#: A target as typed, and what the grammar reads it as.
TARGETS = [
    ("<#C0123|general>", "slack:C0123"),
    ("<#G0SECRET>", "slack:G0SECRET"),
    ("#dev-ops", "#dev-ops"),
    ("#Équipe", "#équipe"),
    ("<@U1|alice>", "slack:@U1"),
    ("<@W0ORG>", "slack:@W0ORG"),
    ("me", ME),
    ("alice@example.com", "email:alice@example.com"),
    ("email:bob@example.org", "email:bob@example.org"),
    ("<mailto:c@example.net|c@example.net>", "email:c@example.net"),
]
target = st.sampled_from(TARGETS)
chain = st.lists(target, min_size=1, max_size=3)
between = st.sampled_from([" ", "  ", ", ", ",", " ,  "])
joiner = st.sampled_from([" or ", " OR ", ", or "])
whens = st.sampled_from(["every weekday at 9am", "tomorrow at 9", "in 5 minutes", "0 9 * * 1-5"])
messages = st.sampled_from(["Stand-up", "Lunch & <@U9> at noon", "their time: 9:30", "x"])


def recipients(command: Create) -> tuple[tuple[str, ...], ...]:
    """The recipients a Create names, whichever form it took (one target keeps the
    fields it had before routing)."""
    if command.targets:
        return command.targets
    if command.person is not None:
        return ((ME if command.person == ME else f"slack:@{command.person}",),)
    if command.channel is not None:
        return ((f"slack:{command.channel}",),)
    if command.channel_name is not None:
        return ((f"#{command.channel_name}",),)
    return ()


@settings(max_examples=CASES // 4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(chain, min_size=1, max_size=8),
    between,
    joiner,
    whens,
    st.booleans(),
    messages,
    st.booleans(),
)
def test_several_targets_and_chains_read_back_as_written(
    chains: list[list[tuple[str, str]]],
    sep: str,
    or_: str,
    when: str,
    theirs: bool,
    message: str,
    quoted: bool,
) -> None:
    typed = sep.join(or_.join(t for t, _ in c) for c in chains)
    when_typed = f"{when} their time" if theirs else when
    tail = f'"{message}" {when_typed}' if quoted else f"{when_typed}: {message}"
    command = parse(f"{typed} {tail}")
    assert isinstance(command, Create)
    assert recipients(command) == tuple(tuple(r for _, r in c) for c in chains)
    assert (command.when, command.text, command.their_time) == (when, message, theirs)
