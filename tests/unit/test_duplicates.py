"""core.duplicates: texts compared as people read them (case, spaces, the markup of
Slack's and Discord's mentions) and sends within ten minutes of each other, both edges
of the window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import duplicates
from core.duplicates import Duplicate, near, normalise

NINE = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return NINE + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Stand-up in 5 minutes", "  stand-UP in 5   minutes "),
        ("Stand-up\tin 5\nminutes", "stand-up in 5 minutes"),
        ("STRASSE", "straße"),  # case folded, not only lowered
        # Slack: a mention with or without its label, as typed or as sent
        ("<@U0BOB|bob> stand-up", "<@U0BOB> stand-up"),
        ("see <#C0GEN|general>", "see <#C0GEN>"),
        ("<!subteam^S0OPS|@ops> deploy", "<!subteam^S0OPS> deploy"),
        # Slack's broadcasts as markup or as typed
        ("<!here> stand-up", "@here stand-up"),
        ("<!here|here> stand-up", "@here stand-up"),
        ("<!channel> lunch", "@channel lunch"),
        ("<!everyone> lunch", "@everyone lunch"),
        # Discord: a member's nickname mention is the member's
        ("<@!123456> stand-up", "<@123456> stand-up"),
    ],
)
def test_the_same_text_as_read(one: str, other: str) -> None:
    assert normalise(one) == normalise(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Stand-up in 5 minutes", "Retro in 5 minutes"),
        ("Stand-up in 5 minutes", "Stand-up in 15 minutes"),
        ("stand-up", "stand - up"),  # spaces collapse, they do not vanish
        ("<@U0BOB> stand-up", "<@U0ANN> stand-up"),  # another person
        ("<#C0GEN> stand-up", "<@C0GEN> stand-up"),  # a channel is not a person
        ("<@&456> deploy", "<@456> deploy"),  # a Discord role is not a member
        ("<!here> stand-up", "<!channel> stand-up"),
        ("@here stand-up", "stand-up"),
    ],
)
def test_different_texts(one: str, other: str) -> None:
    assert normalise(one) != normalise(other)


def test_normalised_text() -> None:
    assert normalise("  <!here>  Stand-UP with <@U0BOB|Bob>\n") == "@here stand-up with <@u0bob>"
    assert normalise("<@!42> and <@&7> in <#9>") == "<@42> and <@&7> in <#9>"


@pytest.mark.parametrize(
    ("theirs", "found"),
    [
        ([at(0)], True),
        ([at(10)], True),  # ten minutes after: the edge is in
        ([at(-10)], True),  # and before
        ([at(10) + timedelta(microseconds=1)], False),  # just past it: out
        ([at(-10) - timedelta(microseconds=1)], False),
        ([at(30), at(-11)], False),
        ([at(-60), at(9.5)], True),
        ([], False),
    ],
)
def test_near_within_ten_minutes(theirs: list[datetime], found: bool) -> None:
    assert (near([NINE], theirs) is not None) is found


def test_near_names_the_first_of_mine_and_the_send_it_meets() -> None:
    mine = [at(24 * 60), NINE]  # tomorrow's, then today's: looked at in time order
    assert near(mine, [at(24 * 60 + 5), at(3)]) == (NINE, at(3))
    assert near(mine, [at(24 * 60 - 10)]) == (at(24 * 60), at(24 * 60 - 10))
    assert near([], [NINE]) is None
    assert near([NINE], [at(15)], window=timedelta(minutes=15)) == (NINE, at(15))
    assert duplicates.WINDOW == timedelta(minutes=10)


def test_words_name_the_author_the_text_the_place_and_the_id() -> None:
    dup = Duplicate(
        41,
        "slack:U0BOB",
        "Bob",
        "Stand-up   in 5 minutes",
        "slack:C0GEN",
        "every weekday at 09:00 (UTC)",
        NINE,
        NINE,
        own=False,
    )
    assert duplicates.words(dup, "#general") == (
        "Bob already scheduled 'Stand-up in 5 minutes' into #general every weekday at "
        "09:00 (UTC) (id 41)"
    )
    mine = Duplicate(7, "slack:U0ANN", "Ann", "x", "slack:C0GEN", "tomorrow", NINE, NINE, True)
    assert duplicates.words(mine, "#general").startswith("You already scheduled 'x'")


def test_a_long_text_is_quoted_short() -> None:
    text = "word " * 40
    quoted = duplicates.quote(text)
    assert len(quoted) == 60 and quoted.endswith("…") and quoted.startswith("word word")
    assert duplicates.quote("short  one\n") == "short one"
