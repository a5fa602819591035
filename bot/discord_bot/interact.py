"""Small helpers every discord.py callback shares: who is acting, where they may post,
answering ephemerally, turning errors into sentences."""

from __future__ import annotations

import logging
from typing import Any, Protocol, cast

import discord
from discord import app_commands

from bot.discord_bot import actions
from core import limits
from core.actors import Mentions, Principal, Surface, discord_tenant
from core.cases import Herald
from core.errors import HeraldError
from core.settings import Settings

log = logging.getLogger(__name__)

SORRY = (
    "Something went wrong on Herald's side and nothing was changed; "
    "the operators can see why in the log. Try again in a moment."
)
#: Replies never ping anyone, whatever a message body contains.
NO_MENTIONS = discord.AllowedMentions.none()


class HasHerald(Protocol):
    """The discord.py client Herald runs (bot.discord_bot.adapter.HeraldClient)."""

    herald: Herald
    settings: Settings


def herald_of(interaction: discord.Interaction[Any]) -> Herald:
    return cast(HasHerald, interaction.client).herald


def settings_of(interaction: discord.Interaction[Any]) -> Settings:
    return cast(HasHerald, interaction.client).settings


def manages_server(interaction: discord.Interaction[Any]) -> bool | None:
    """Whether the member has Manage Server (or Administrator); None outside a server.
    ``interaction.permissions`` is what Discord computed for the member, so no member
    cache (and no privileged intent) is needed."""
    if interaction.guild_id is None:
        return None
    perms = interaction.permissions
    return bool(perms.manage_guild or perms.administrator)


def principal_of(interaction: discord.Interaction[Any]) -> Principal:
    """Who is acting: ``discord:<user id>`` in the server the interaction comes from
    (a direct message's tenant is the user's own)."""
    return Principal(
        actions.actor_id(interaction.user.id),
        discord_tenant(interaction.guild_id, interaction.user.id),
        surface=Surface.DISCORD,
    )


def mentions_in(interaction: discord.Interaction[Any], perms: discord.Permissions) -> Mentions:
    """Whom the member may notify where ``perms`` are theirs: everyone and every role
    with Mention Everyone, else the server's mentionable roles."""
    if perms.mention_everyone or perms.administrator:
        return Mentions(everyone=True)
    guild = interaction.guild
    roles = frozenset(str(r.id) for r in guild.roles if r.mentionable) if guild else frozenset()
    return Mentions(roles=roles)


_THREADS = (
    discord.ChannelType.public_thread,
    discord.ChannelType.private_thread,
    discord.ChannelType.news_thread,
)


def _is_thread(channel: object) -> bool:
    """A thread, cached (``discord.Thread``) or not (a partial channel of a thread type)."""
    return isinstance(channel, discord.Thread) or getattr(channel, "type", None) in _THREADS


def _can_send(perms: discord.Permissions, *, thread: bool) -> bool:
    sends = perms.send_messages_in_threads if thread else perms.send_messages
    return bool(perms.view_channel and sends)


def postable(
    interaction: discord.Interaction[Any], channel: discord.abc.GuildChannel | None
) -> tuple[int, discord.Permissions]:
    """The id of the channel to schedule into (the option, else the current one), once
    both the member and the bot can send messages there (else PermissionDenied), with
    the member's permissions there.

    The current channel uses the permissions Discord computed for this interaction
    (``permissions`` for the member, ``app_permissions`` for the bot); another channel
    is checked with ``channel.permissions_for`` the member and the bot's member."""
    if channel is None or channel.id == interaction.channel_id:
        if interaction.channel_id is None:
            raise app_commands.NoPrivateMessage("Use /schedule in a server channel.")
        thread = _is_thread(interaction.channel)
        member_perms, bot_perms = interaction.permissions, interaction.app_permissions
        target = interaction.channel_id
    else:
        # In a server (the group is guild-only) the user is a Member.
        member = cast(discord.Member, interaction.user)
        me = channel.guild.me
        thread = _is_thread(channel)
        member_perms = channel.permissions_for(member)
        bot_perms = channel.permissions_for(me) if me is not None else discord.Permissions.none()
        target = channel.id
    actions.check_can_post(
        target,
        member_can=_can_send(member_perms, thread=thread),
        bot_can=_can_send(bot_perms, thread=thread),
    )
    return target, member_perms


async def member_of(interaction: discord.Interaction[Any]) -> Principal:
    """Sync the acting member (name; Manage Server when the settings say so), count
    the command against their commands per minute, and return who they are."""
    return await actions.sync_member(
        herald_of(interaction),
        settings_of(interaction),
        principal=principal_of(interaction),
        display_name=interaction.user.display_name,
        manages_server=manages_server(interaction),
    )


def explain(error: BaseException) -> str:
    """The sentence to show for an error raised while handling an interaction."""
    if isinstance(error, HeraldError):
        return str(error)
    cause = error.__cause__ or getattr(error, "original", None)
    if isinstance(cause, HeraldError):
        return str(cause)
    if isinstance(error, app_commands.CheckFailure):
        return str(error)
    if isinstance(error, app_commands.TransformerError):
        return f"Herald cannot use {str(error.value)[:60]!r} for that option; pick from the list."
    return SORRY


async def ephemeral(interaction: discord.Interaction[Any], text: str) -> None:
    """Answer ``text`` to the member only: a response, or a follow-up once answered
    (cut to Discord's 2,000 characters: an error sentence may quote what was typed)."""
    text = limits.clip(text, limits.DISCORD_CONTENT)
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)


async def report(interaction: discord.Interaction[Any], error: BaseException) -> None:
    """Tell the member what went wrong; log what they cannot fix, with the traceback."""
    text = explain(error)
    if text == SORRY:
        log.error(
            "discord interaction failed",
            exc_info=error,
            extra={"user_id": interaction.user.id, "interaction_id": interaction.id},
        )
    try:
        await ephemeral(interaction, text)
    except discord.HTTPException as exc:  # the interaction expired or Discord is down
        log.warning("could not answer a discord interaction", extra={"status": exc.status})
