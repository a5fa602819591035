"""Duplicates caught on ``/schedule create`` (issue 41): the same text already scheduled
into the same place at about the same time.

The create runs with ``duplicates="refuse"`` and the channel the interaction came
from as ``seen_in`` (:class:`bot.discord_bot.actions.Saving`); when core finds a
duplicate (:class:`core.cases.channel_view.Duplicated`) nothing is saved and the member
is told who already scheduled it, with [Create anyway] and [Cancel]. A button's
custom_id holds at most 100 characters, so the request itself waits here, in memory,
under a random token (``herald:dup:create:<token>``) within :mod:`bot.waiting`'s bounds
(expiring, so many at once and per member, the oldest going first: one member's requests
cannot push out everyone else's). Only the member who asked, in the
server they asked in, may press them; Create anyway runs the same create with
``duplicates="ignore"``. A press after the request expired (or after a restart) says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, cast

import discord

from bot.discord_bot import actions, render
from bot.waiting import WaitingRequests
from core.actors import Principal
from core.cases import Duplicated, SaveWarning
from core.errors import PermissionDenied

EXPIRED = "That request expired: schedule it again."
CANCELLED = "Cancelled: nothing was scheduled."
NOT_YOURS = (
    "These buttons belong to someone else's request: nothing was changed. "
    "Schedule your own with `/schedule create`."
)

#: A create as the command would run it, given how to save.
Create = Callable[[Principal, actions.Saving], Awaitable[actions.Reply]]


#: How a waiting create runs again, for whoever pressed Create anyway.
Again = Callable[[Principal], Awaitable[actions.Reply]]


class Requests(WaitingRequests[Again]):
    """The creates waiting for Create anyway or Cancel (:mod:`bot.waiting`), each
    owned by (server, member), with bot.waiting's bounds."""


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

        token = requests_of(interaction).keep((interaction.guild_id, interaction.user.id), again)
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
    if waiting.owner != (interaction.guild_id, interaction.user.id):
        raise PermissionDenied(NOT_YOURS)
    requests.take(token)  # pressed once: a second press finds it gone
    if choice == "cancel":
        return actions.Reply(CANCELLED)
    try:
        reply = await waiting.value(actor)
    except Exception:
        requests.put_back(token, waiting)  # refused (told alone): the buttons still work
        raise
    return replace(reply, asked=None)
