"""Skipped reminders told to their author on Discord (issue 37; the batching is
:mod:`bot.skip_notices`'): the owner of a schedule of a server this bot serves (or of
their own direct messages with it) gets a direct message, sent with no allowed mention
and its mentions escaped (telling the author must not ping anyone), within one Discord
message (:data:`core.limits.DISCORD_CONTENT`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection

import discord
import discord.utils

from bot.skip_notices import SkipNotices as _SkipNotices
from core import limits

#: A Discord user id (a snowflake): what an owner ``discord:…`` must name.
_USER = re.compile(r"[0-9]{1,20}")
MESSAGE_CHARS = limits.DISCORD_CONTENT.size


def owner_here(owner: str, tenant: str, guilds: Collection[int]) -> int | None:
    """The Discord user id of a schedule's ``owner`` when the schedule is of a server
    this bot serves (``guilds``: DISCORD_GUILD_IDS; empty: any server) or of the
    owner's own direct messages with the bot, else None."""
    user = owner.removeprefix("discord:")
    if user == owner or not _USER.fullmatch(user) or not tenant.startswith("discord:"):
        return None
    place = tenant.removeprefix("discord:")
    if place.startswith("@"):
        return int(user) if place[1:] == user else None
    if not _USER.fullmatch(place):
        return None
    return int(user) if not guilds or int(place) in guilds else None


class SkipNotices(_SkipNotices[int]):
    """Discord's: ``post(user_id, text)``; ``guilds`` the servers served
    (DISCORD_GUILD_IDS; empty: any). Closed direct messages (403) are only logged."""

    def __init__(
        self, post: Callable[[int, str], Awaitable[None]], guilds: Collection[int], window: float
    ) -> None:
        super().__init__(
            post,
            lambda owner, tenant: owner_here(owner, tenant, guilds),
            window=window,
            most=MESSAGE_CHARS,
            escape=discord.utils.escape_mentions,
            quiet=(discord.HTTPException,),
            name="herald-discord-skips",
        )
