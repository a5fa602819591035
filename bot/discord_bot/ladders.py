"""Messages sent until done on Discord (issue 40, :mod:`core.until_done`): the
``until_done``, ``nag`` and ``escalate…`` options of ``/schedule create`` and ``edit``,
and the Done button under each occurrence's message.

The button is posted by core's channel (``custom_id`` ``herald:done:<job id>``,
:data:`core.channels.discord.DONE_CUSTOM_PREFIX`) and handled here as a
:class:`discord.ui.DynamicItem`, so a click on a message sent before a restart is
handled too. Core decides who may press it (:meth:`core.cases.Herald.mark_done`): the
click says where it came from (``seen_in``: the channel, or the clicker's direct
messages) and only someone who sees the message there, its author or staff may. The
message is then edited by the dispatcher ("✅ Done by …"), so the click is only
acknowledged; a refusal, or a Done someone pressed first, is told to the clicker alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import discord
from discord import ui

from bot.discord_bot import targets
from bot.discord_bot.interact import ephemeral, herald_of, member_of, report
from core import until_done
from core.actors import ActorRef
from core.cases import Herald
from core.channels.discord import DONE_CUSTOM_PREFIX
from core.errors import InvalidInput
from core.store import Done

#: What turns a nag or an escalation level off in ``/schedule edit``.
OFF = frozenset({"off", "none", "no"})
#: The options' descriptions (Discord: at most 100 characters each).
UNTIL_DONE_HELP = "Post it with a Done button; nag and escalate until someone presses it"
NAG_HELP = "Until done: a reply every so often until Done, e.g. 15m (5m at least; off: none)"
ESCALATE_TO_HELP = "Until done: @members or #channels told when nobody pressed Done in time"
ESCALATE_AFTER_HELP = "Until done: how long after the message to escalate, e.g. 1h"
ESCALATE2_TO_HELP = "Until done: a second escalation, later (none: remove it)"
ESCALATE2_AFTER_HELP = "Until done: how long after the message the second one comes, e.g. 2h"

#: A level as given: its destinations (already read; [] to remove it; None: not
#: given) and its delay (None: not given).
Given = tuple[list[str] | None, str | None]


def ladder(
    on: bool | None,
    nag: str | None,
    levels: Sequence[Given] = (),
    *,
    was: until_done.UntilDone | None = None,
) -> dict[str, Any] | bool | None:
    """The ``until_done`` argument of ``create_schedule``/``edit_schedule`` from the
    options: None (nothing said: no change, or not until done), False (``until_done:
    False``: send it plainly again) or the ladder as core reads it. Options left out
    keep what the schedule had (``was``, editing); ``nag:off`` stops nags and
    ``escalate_to:none`` removes that level and any after it. InvalidInput, in one
    sentence, for options that contradict each other or a level half given."""
    given = nag is not None or any(to is not None or after is not None for to, after in levels)
    if on is False:
        if given:
            raise InvalidInput(
                "`until_done:False` sends the message plainly: leave out `nag` and `escalate…`."
            )
        return False
    if not on and not given:
        return None
    interval: str | int | None = None
    if was is not None and was.nag is not None:
        interval = int(was.nag.total_seconds())
    if nag is not None:
        interval = None if nag.strip().lower() in OFF else nag.strip()
    kept: list[dict[str, Any]] = []
    before = list(was.levels) if was is not None else []
    for n, (to, after) in enumerate(levels):
        old = before[n] if n < len(before) else None
        if to == []:  # removed: and every level after it
            break
        if to is None and after is None:
            if old is None:
                continue
            kept.append({"to": list(old.to), "after": int(old.after.total_seconds())})
            continue
        name = "escalate" if n == 0 else f"escalate{n + 1}"
        if n > len(kept):
            raise InvalidInput(
                f"`{name}_to` comes after the escalation before it: give that first."
            )
        targets = to if to is not None else (list(old.to) if old is not None else None)
        delay = after if after is not None else (int(old.after.total_seconds()) if old else None)
        if targets is None:
            raise InvalidInput(f"Say whom to escalate to: `{name}_to:@lead` (members or channels).")
        if delay is None:
            raise InvalidInput(f"Say when to escalate: `{name}_after:1h`.")
        kept.append({"to": targets, "after": delay})
    return {"nag": interval, "escalate": kept}


async def from_options(
    interaction: discord.Interaction[Any],
    actor: ActorRef,
    on: bool | None,
    nag: str | None,
    levels: Sequence[tuple[str | None, str | None]],
    *,
    schedule_id: int | None = None,
) -> dict[str, Any] | bool | None:
    """:func:`ladder` from the command's options: each ``escalate…_to`` read as ``to``
    is (:func:`bot.discord_bot.targets.escalation`); editing (``schedule_id``), the
    options left out keep the schedule's ladder."""
    read: list[Given] = []
    for to, after in levels:
        read.append((None if to is None else await targets.escalation(interaction, to), after))
    was = None
    if schedule_id is not None and on is not False:
        found = await herald_of(interaction).show_schedule(actor, schedule_id)
        was = until_done.of_options(found.schedule.options)
    return ladder(on, nag, read, was=was)


def seen_in(interaction: discord.Interaction[Any]) -> str:
    """Where a Done click came from: the channel (``discord:<channel id>``), or in a
    direct message the clicker's own (``discord:@<user id>``)."""
    if interaction.guild_id is None:
        return f"discord:@{interaction.user.id}"
    return f"discord:{interaction.channel_id}"


def already(done: Done) -> str:
    """What a Done pressed too late says: who did it first, at what time (a Discord
    timestamp: each reader sees their own clock)."""
    return f"Already done by {until_done.mention(done.by)} at <t:{int(done.at.timestamp())}:t>."


async def press_done(herald: Herald, actor: ActorRef, job_id: int, where: str) -> str | None:
    """The Done button: the occurrence is done and its ladder stops (the dispatcher
    edits the message). Returns what to tell the clicker alone (someone was first), or
    None. Refusals propagate as HeraldErrors (PermissionDenied, NotFound)."""
    done = await herald.mark_done(actor, job_id, seen_in=where)
    return already(done) if done.already else None


class DoneButton(
    ui.DynamicItem[ui.Button[Any]],
    template=re.escape(DONE_CUSTOM_PREFIX) + r"(?P<id>[0-9]{1,19})",
):
    """Done under an occurrence's message (core's channel posts it)."""

    def __init__(self, job_id: int) -> None:
        super().__init__(
            ui.Button(
                label="Done",
                style=discord.ButtonStyle.success,
                custom_id=f"{DONE_CUSTOM_PREFIX}{job_id}",
            )
        )
        self.job_id = job_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> DoneButton:
        return cls(int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await interaction.response.defer()  # a deferred update: the dispatcher edits it
        try:
            actor = await member_of(interaction)
            said = await press_done(
                herald_of(interaction), actor, self.job_id, seen_in(interaction)
            )
        except Exception as exc:
            await report(interaction, exc)
            return
        if said is not None:
            await ephemeral(interaction, said)
