"""Duplicates caught on ``/schedule create`` (issue 41): the same text already scheduled
into the same place at about the same time.

The create runs with ``duplicates="refuse"`` and the channel the interaction came
from as ``seen_in`` (:class:`bot.discord_bot.actions.Saving`); when core finds a
duplicate (:class:`core.cases.channel_view.Duplicated`) nothing is saved and the member
is told who already scheduled it, with [Create anyway] and [Cancel]. A button's
custom_id holds at most 100 characters, so the request itself waits here, in memory,
under a random token (``herald:dup:create:<token>``) for :data:`EXPIRES` seconds, at
most :data:`KEPT` at once and :data:`PER_MEMBER` of one member (the oldest go first:
one member's requests cannot push out everyone else's). Only the member who asked, in the
server they asked in, may press them; Create anyway runs the same create with
``duplicates="ignore"``. A press after the request expired (or after a restart) says so.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import discord

from bot.discord_bot import actions, render
from core.actors import Principal
from core.cases import Duplicated, SaveWarning
from core.errors import PermissionDenied

#: How long a request waits for Create anyway, in seconds.
EXPIRES = 15 * 60.0
#: Requests kept at once.
KEPT = 1_000
#: Requests of one member (in one server) kept at once.
PER_MEMBER = 20
EXPIRED = "That request expired: schedule it again."
CANCELLED = "Cancelled: nothing was scheduled."
NOT_YOURS = (
    "These buttons belong to someone else's request: nothing was changed. "
    "Schedule your own with `/schedule create`."
)

#: A create as the command would run it, given how to save.
Create = Callable[[Principal, actions.Saving], Awaitable[actions.Reply]]


@dataclass(frozen=True)
class Waiting:
    """A create refused for a duplicate, waiting for its author: who asked (in which
    server), how to run it again, and since when (monotonic seconds)."""

    guild: int | None
    user: int
    again: Callable[[Principal], Awaitable[actions.Reply]]
    since: float


class Requests:
    """The creates waiting for Create anyway or Cancel, by token."""

    def __init__(
        self,
        *,
        expires: float = EXPIRES,
        kept: int = KEPT,
        per_member: int = PER_MEMBER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.expires = expires
        self.kept = kept
        self.per_member = per_member
        self.clock = clock
        self._waiting: dict[str, Waiting] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def keep(
        self, guild: int | None, user: int, again: Callable[[Principal], Awaitable[actions.Reply]]
    ) -> str:
        """Keep a request; its token (22 URL-safe characters)."""
        self._forget_expired()
        theirs = [t for t, w in self._waiting.items() if (w.guild, w.user) == (guild, user)]
        for old in theirs[: max(0, len(theirs) - self.per_member + 1)]:
            del self._waiting[old]
        while len(self._waiting) >= self.kept:
            self._waiting.pop(next(iter(self._waiting)))
        token = secrets.token_urlsafe(16)
        self._waiting[token] = Waiting(guild, user, again, self.clock())
        return token

    def find(self, token: str) -> Waiting | None:
        """The request ``token`` names, None once expired (or never kept here)."""
        self._forget_expired()
        return self._waiting.get(token)

    def take(self, token: str) -> Waiting | None:
        """The request, no longer kept (pressed once: a second press finds nothing)."""
        found = self.find(token)
        self._waiting.pop(token, None)
        return found

    def put_back(self, token: str, waiting: Waiting) -> None:
        """Keep a request taken again (its Create anyway was refused), as it was."""
        self._waiting[token] = waiting
        self._waiting = dict(sorted(self._waiting.items(), key=lambda kv: kv[1].since))

    def _forget_expired(self) -> None:
        now = self.clock()
        for token, waiting in list(self._waiting.items()):
            if now - waiting.since < self.expires:
                break  # kept in order: the rest are younger
            del self._waiting[token]


class HasRequests:
    """The client holding the waiting requests (bot.discord_bot.adapter.HeraldClient)."""

    requests: Requests


def requests_of(interaction: discord.Interaction[Any]) -> Requests:
    return cast(HasRequests, interaction.client).requests


def asked_in(interaction: discord.Interaction[Any]) -> str | None:
    """The channel the interaction came from, as a destination (Discord signed it)."""
    channel = interaction.channel_id
    return actions.destination(channel) if channel is not None else None


async def checked(
    interaction: discord.Interaction[Any], actor: Principal, create: Create, *, private: bool
) -> actions.Reply:
    """Run ``create`` refusing duplicates; on one, what was found (a "⚠️ …" line each)
    and Create anyway / Cancel, the request kept for the member who asked."""
    seen_in = asked_in(interaction)
    try:
        return await create(actor, actions.Saving(private, "refuse", seen_in))
    except Duplicated as refused:
        anyway = actions.Saving(private, "ignore", seen_in)

        async def again(clicker: Principal) -> actions.Reply:
            return await create(clicker, anyway)

        token = requests_of(interaction).keep(interaction.guild_id, interaction.user.id, again)
        return actions.Reply(render.fit(warning(refused.found)), asked=token)


def warning(found: Sequence[SaveWarning]) -> str:
    """What a refused create says: each duplicate found, then the choice."""
    lines = [f"⚠️ {w.text}." for w in found]
    lines.append("Nothing is scheduled yet: **Create anyway**, or **Cancel**.")
    return "\n".join(lines)


async def press(
    interaction: discord.Interaction[Any], actor: Principal, choice: str, token: str
) -> actions.Reply:
    """Create anyway or Cancel: the member who asked only (PermissionDenied for anyone
    else, the request still waiting); an expired request says so."""
    requests = requests_of(interaction)
    waiting = requests.find(token)
    if waiting is None:
        return actions.Reply(EXPIRED)
    if (waiting.user, waiting.guild) != (interaction.user.id, interaction.guild_id):
        raise PermissionDenied(NOT_YOURS)
    requests.take(token)  # pressed once: a second press finds it gone
    if choice == "cancel":
        return actions.Reply(CANCELLED)
    try:
        reply = await waiting.again(actor)
    except Exception:
        requests.put_back(token, waiting)  # refused (told alone): the buttons still work
        raise
    return replace(reply, asked=None)
