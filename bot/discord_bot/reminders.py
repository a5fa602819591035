"""Reminders in Discord: ``/schedule create to:me`` or ``to:@someone`` (a direct message
from the bot, :mod:`core.reminders`) and the Snooze and Done buttons under a delivered
reminder.

Another person is reminded only when Discord says they are a member of this server
(``Guild.fetch_member``: ``GET /guilds/{guild}/members/{user}``, no privileged intent,
https://discord.com/developers/docs/resources/guild#get-guild-member) and not a bot;
Herald then records them as a member of the server's tenant, which is what core checks.

The buttons are :class:`discord.ui.DynamicItem`\\ s (``herald:reminder:15m:42``),
registered on the client at start-up, so they work on reminders sent before a restart.
A click in a direct message carries no server: core then checks that the clicker is the
person the reminder was sent to.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import discord
from discord import ui

from bot.discord_bot import actions, render
from bot.discord_bot.components import update
from bot.discord_bot.interact import NO_MENTIONS, herald_of
from core import reminders
from core.actors import Principal
from core.cases import Herald
from core.errors import InvalidInput, PermissionDenied

log = logging.getLogger(__name__)

_MENTION = re.compile(r"<@!?(\d{17,20})>")
_ID = re.compile(r"\d{17,20}")
TO_HELP = "#channels, @members, me, emails; `or` between fallbacks (one member: a reminder by DM)"
NOT_BOTH = "Give the places in `to` (e.g. `to:#ops #dev @alice`) or one `channel`, not both."


def read_to(text: str, me: int) -> int:
    """The user id ``to`` names: ``me``, a mention ``<@id>`` or a bare id."""
    raw = text.strip()
    if raw.lower() == "me":
        return me
    if match := _MENTION.fullmatch(raw):
        return int(match.group(1))
    if _ID.fullmatch(raw):
        return int(raw)
    raise InvalidInput(
        f"Herald cannot tell who {render.clip(raw, 60)!r} is: write `me`, mention the "
        "member (@name) or paste their user id."
    )


async def recipient(interaction: discord.Interaction[Any], to: str) -> tuple[int, Any]:
    """The user to remind, and the server member when it is someone else (None for
    the member typing): a member of this server, recorded in its tenant.
    PermissionDenied for anyone else."""
    user = read_to(to, interaction.user.id)
    if user == interaction.user.id:
        return user, None
    found = await member(interaction, user)
    await record(interaction, found)
    return user, found


async def member(interaction: discord.Interaction[Any], user: int) -> Any:
    """The server member ``user``, not a bot (PermissionDenied for anyone else)."""
    guild = interaction.guild
    if guild is None or interaction.guild_id is None:
        raise PermissionDenied("Herald reminds other people only from a server they are in.")
    try:
        found = await guild.fetch_member(user)
    except discord.NotFound:
        raise PermissionDenied(
            f"<@{user}> is not a member of this server: Herald reminds members of the "
            "server you type in."
        ) from None
    if found.bot:
        raise PermissionDenied(f"<@{user}> is a bot: Herald reminds people.")
    return found


async def record(interaction: discord.Interaction[Any], found: Any) -> None:
    """Record a member (of :func:`member`) in this server's tenant, so core lets the
    member typing remind them."""
    await herald_of(interaction).sync_member(
        Principal(actions.actor_id(found.id), f"discord:{interaction.guild_id}"),
        display_name=found.display_name,
    )


async def create(
    interaction: discord.Interaction[Any],
    actor: Principal,
    to: str,
    channel: object | None,
    when: str,
    text: str,
    tz: str | None,
    skip_calendar: str | None,
    their_time: bool = False,
    priority: str | None = None,
    *,
    template: str | None = None,
    data: Mapping[str, str] | None = None,
    until_done: Mapping[str, Any] | None = None,
    saving: actions.Saving = actions.AS_ASKED,
) -> actions.Reply:
    """``/schedule create`` with ``to`` naming one person: refuse a channel alongside
    it, find the person, schedule the reminder (with ``their_time``, at that hour in
    the person's zone; with ``until_done``, its ladder; ``saving`` as it says)."""
    if channel is not None:
        raise InvalidInput(NOT_BOTH)
    user_id, found = await recipient(interaction, to)
    skip = [skip_calendar.strip()] if skip_calendar else []
    reply = await remind(
        herald_of(interaction),
        actor,
        user_id=user_id,
        when=when,
        text=text,
        tz=tz,
        skip=skip,
        their_time=their_time,
        priority=priority,
        template=template,
        data=data,
        until_done=until_done,
        saving=saving,
    )
    if found is None:
        return reply
    return replace(reply, text=render.fit(reply.text + await tell(found, interaction.user.id)))


async def tell(member: Any, asker: int) -> str:
    """Tell a member at once, by direct message, that someone scheduled a reminder for
    them (the reminder itself says so again when it comes). A line for the asker's
    reply when Discord refused it."""
    try:
        await member.send(
            f"<@{asker}> scheduled a reminder for you: Herald will send it here, in this "
            "direct message.",
            allowed_mentions=NO_MENTIONS,
        )
    except discord.HTTPException as exc:
        log.info("could not tell a reminded member", extra={"code": exc.code})
        return (
            f"\nHerald could not tell them now (Discord refused a direct message, code "
            f"{exc.code}: their direct messages may be closed), so the reminder may not "
            "reach them either."
        )
    return ""


async def remind(
    herald: Herald,
    actor: Principal,
    *,
    user_id: int,
    when: str,
    text: str,
    tz: str | None = None,
    skip: list[str] | None = None,
    their_time: bool = False,
    priority: str | None = None,
    template: str | None = None,
    data: Mapping[str, str] | None = None,
    until_done: Mapping[str, Any] | None = None,
    saving: actions.Saving = actions.AS_ASKED,
) -> actions.Reply:
    """Schedule a reminder by direct message to ``user_id`` (the actor or a member):
    ``text``, or ``template`` filled in with ``data``; ``until_done``: its ladder;
    ``saving``: private, duplicates, where it was asked (its warnings are said)."""
    schedule, created = await herald.create_schedule(
        actor,
        to=f"discord:@{user_id}",
        when=when,
        text=text,
        tz=tz,
        skip=skip or (),
        their_time=their_time,
        priority=priority,
        until_done=until_done,
        **actions.templated(template, data),
        **saving.kwargs(),
    )
    mine = actor.id == actions.actor_id(user_id)
    whom = "you" if mine else f"<@{user_id}>"
    if created:
        heading = f"Reminder for {whom} scheduled (a direct message from Herald"
        heading += ")." if mine else "; they will see that you asked)."
    else:
        heading = f"Reminder for {whom} already scheduled."
    card = render.card(schedule, actions.warned(heading, schedule), read_back=created)
    card += await actions.held_note(herald, actor, schedule)
    return actions.Reply(render.fit(card), actions.buttons_for(schedule))


async def press(
    herald: Herald,
    actor: Principal,
    schedule_id: int,
    choice: str,
    *,
    message_id: int,
    original: str,
) -> actions.Reply:
    """A reminder's button: snooze or done; the reminder's text again, with what was
    done instead of the buttons."""
    if choice == reminders.DONE:
        await herald.finish_reminder(actor, schedule_id)
        note = "✅ Done."
    else:
        snoozed = await herald.snooze_reminder(
            actor, schedule_id, choice, message=f"discord:{message_id}"
        )
        at = snoozed.schedule.next_run_at
        when = render.stamp(at) if at is not None else "later"
        note = f"💤 Snoozed: Herald reminds you again {when} (#{snoozed.schedule.id})."
    return actions.Reply(render.fit(f"{original}\n-# {note}" if original else note))


class ReminderButton(
    ui.DynamicItem[ui.Button[Any]],
    template=r"herald:reminder:(?P<choice>15m|1h|tomorrow|done):(?P<id>[0-9]{1,19})",
):
    """Snooze 15 min, 1 h, tomorrow, or Done under a delivered reminder (core's
    channel posts the same custom_ids, :func:`core.channels.discord.reminder_row`)."""

    def __init__(self, choice: str, schedule_id: int) -> None:
        super().__init__(
            ui.Button(
                label=reminders.label(choice),
                style=discord.ButtonStyle.success
                if choice == reminders.DONE
                else discord.ButtonStyle.secondary,
                custom_id=reminders.discord_custom_id(choice, schedule_id),
            )
        )
        self.choice = choice
        self.schedule_id = schedule_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> ReminderButton:
        return cls(match["choice"], int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        message = interaction.message
        original = message.content if message is not None else ""
        message_id = message.id if message is not None else interaction.id

        async def work(actor: Principal) -> actions.Reply:
            return await press(
                herald_of(interaction),
                actor,
                self.schedule_id,
                self.choice,
                message_id=message_id,
                original=original,
            )

        await update(interaction, work)
