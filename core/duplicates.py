"""Duplicates: the same text scheduled twice into one place at about the same time.

Two people schedule the stand-up into #general and nobody notices; Herald says so when
the second is saved. Texts are compared as people read them (:func:`normalise`: case,
runs of spaces, the markup of mentions), times within :data:`WINDOW` of each other.

Pure: no store, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

#: How close two sends of the same text count as one sent twice.
WINDOW = timedelta(minutes=10)
#: How many of each schedule's next sends are compared.
OCCURRENCES = 5

# Slack writes <@U123|bob>, <#C123|general>, <!here>, <!subteam^S1|@ops>; Discord
# <@!123>, <@&456>, <#789>. Each is read as the one thing it names. Its parts are
# bounded (an id, a label): unbounded, a text of 2,000 "<@" took 0.5 s to read (each
# "<" scanned to the end), on the event loop, for every save into its channel.
_SLACK_MENTION = re.compile(r"<([@#!])([^>|<]{1,100})(?:\|[^>]{0,200})?>")
_DISCORD_NICK = re.compile(r"<@!(\d+)>")
_BROADCASTS = {"!here": "@here", "!channel": "@channel", "!everyone": "@everyone"}
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """``text`` as compared: mentions as the id they name (``<@U1|bob>`` and
    ``<@U1>`` alike, ``<!here>`` as ``@here``), case folded, spaces collapsed."""

    def mention(match: re.Match[str]) -> str:
        sigil, target = match.group(1), match.group(2)
        word = _BROADCASTS.get(sigil + target)
        return word if word is not None else f"<{sigil}{target}>"

    text = _DISCORD_NICK.sub(r"<@\1>", text)
    text = _SLACK_MENTION.sub(mention, text)
    return _SPACES.sub(" ", text).strip().casefold()


def near(
    mine: Sequence[datetime], theirs: Sequence[datetime], window: timedelta = WINDOW
) -> tuple[datetime, datetime] | None:
    """The first of ``mine`` within ``window`` of one of ``theirs`` and that one, or
    None."""
    for at in sorted(mine):
        for other in theirs:
            if abs(other - at) <= window:
                return at, other
    return None


@dataclass(frozen=True)
class Duplicate:
    """A schedule already sending the same text to the same place at about the same
    time."""

    schedule_id: int
    owner: str
    #: Its author as people read them (a name, else the id).
    author: str
    body: str
    destination: str
    #: Its time in words ("every weekday at 09:00").
    when: str
    #: The new send it clashes with, and its own.
    at: datetime
    theirs: datetime
    #: Whether the actor is its author.
    own: bool


def quote(body: str, limit: int = 60) -> str:
    """A text shortened for a one-line warning."""
    flat = _SPACES.sub(" ", body).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def words(d: Duplicate, where: str) -> str:
    """ "Bob already scheduled 'Stand-up in 5 minutes' into #general every weekday at
    09:00 (id 41)" (``where``: the destination as the reader reads it)."""
    who = "You" if d.own else d.author
    return f"{who} already scheduled '{quote(d.body)}' into {where} {d.when} (id {d.schedule_id})"
