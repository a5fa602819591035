"""Buttons and the Edit form.

Buttons are :class:`discord.ui.DynamicItem`\\ s: their ``custom_id`` carries the action
and the id (``herald:schedule:cancel:12``, ``herald:dead:retry:345``), and the classes
are registered on the client at start-up, so a click on a message posted before a
restart is still handled: a persistent view that needs no state but the custom_id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import ui

from bot.discord_bot import actions, duplicates, render
from bot.discord_bot.interact import NO_MENTIONS, herald_of, member_of, principal_of, report
from core import limits, verbs, views
from core.actors import Principal
from core.models import Schedule

log = logging.getLogger(__name__)

#: The verbs a schedule card's buttons carry (core/verbs.py: those Discord offers on one
#: schedule at its version, with a label): edit, pause, resume, skip, cancel.
SCHEDULE_ACTIONS = tuple(
    v.name for v in verbs.offered(verbs.DISCORD) if v.takes == "schedule_id+version" and v.label
)
#: The alerts' buttons, an admin's decision: the verbs on dead letters Discord offers.
DEAD_ACTIONS = tuple(actions.DECISIONS)
#: How a verb's button looks; others are secondary.
_STYLES = {
    "resume": discord.ButtonStyle.primary,
    "cancel": discord.ButtonStyle.danger,
    "retry": discord.ButtonStyle.primary,
}


def _button(kind: str, action: str, target: int) -> ui.Button[Any]:
    label = verbs.verb(action).label
    style = _STYLES.get(action, discord.ButtonStyle.secondary)
    return ui.Button(label=label, style=style, custom_id=f"herald:{kind}:{action}:{target}")


class ScheduleButton(
    ui.DynamicItem[ui.Button[Any]],
    template=rf"herald:schedule:(?P<action>{'|'.join(SCHEDULE_ACTIONS)}):(?P<id>[0-9]{{1,19}})",
):
    """A verb's button under a schedule card (Edit, Pause, Resume, Cancel); core checks
    who clicks."""

    def __init__(self, action: str, schedule_id: int) -> None:
        super().__init__(_button("schedule", action, schedule_id))
        self.action = action
        self.schedule_id = schedule_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> ScheduleButton:
        return cls(match["action"], int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if self.action == "edit":
            await open_edit_form(interaction, self.schedule_id)
        else:
            await update(
                interaction,
                lambda actor: actions.change(
                    herald_of(interaction), actor, self.action, self.schedule_id
                ),
            )


class DeadLetterButton(
    ui.DynamicItem[ui.Button[Any]],
    template=rf"herald:dead:(?P<action>{'|'.join(DEAD_ACTIONS)}):(?P<id>[0-9]{{1,19}})",
):
    """Retry or Discard under a dead-letter alert. Only admins' clicks act; the alert
    then shows who decided and loses its buttons."""

    def __init__(self, action: str, job_id: int) -> None:
        super().__init__(_button("dead", action, job_id))
        self.action = action
        self.job_id = job_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> DeadLetterButton:
        return cls(match["action"], int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        herald = herald_of(interaction)

        async def decide(actor: Principal) -> actions.Reply:
            verb = await actions.decide_dead_letter(herald, actor, self.job_id, self.action)
            original = interaction.message.content if interaction.message else ""
            return actions.Reply(
                render.decided(original, verb, interaction.user.id, herald.clock.now())
            )

        await update(interaction, decide)


class PageButton(
    ui.DynamicItem[ui.Button[Any]],
    template=(
        r"herald:list:(?P<turn>previous|next):(?P<guild>[0-9]{1,20}):(?P<user>[0-9]{1,20})"
        r":(?P<everyone>[01]):(?P<state>[a-z]{0,16}):(?P<number>[0-9]{1,6})"
    ),
):
    """Previous or Next under a list: the list replaced by that page, for the member
    who asked for it in that server only (core reads it as it reads the list)."""

    def __init__(self, turn: str, page: actions.ListPage) -> None:
        custom_id = (
            f"herald:list:{turn}:{page.guild}:{page.user}:{int(page.everyone)}:"
            f"{page.state or ''}:{page.number}"
        )
        label = "Previous" if turn == "previous" else "Next"
        super().__init__(
            ui.Button(label=label, style=discord.ButtonStyle.secondary, custom_id=custom_id)
        )
        self.page = page

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> PageButton:
        page = actions.ListPage(
            int(match["guild"]),
            int(match["user"]),
            match["everyone"] == "1",
            match["state"] or None,
            int(match["number"]),
        )
        return cls(match["turn"], page)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await update(
            interaction,
            lambda actor: actions.turn_page(herald_of(interaction), actor, self.page),
        )


class DuplicateButton(
    ui.DynamicItem[ui.Button[Any]],
    template=r"herald:dup:(?P<choice>create|cancel):(?P<token>[A-Za-z0-9_-]{1,43})",
):
    """Create anyway or Cancel under a create refused for a duplicate (issue 41,
    :mod:`.duplicates`): the request waits in memory under the token; only the member
    who asked may press them."""

    def __init__(self, choice: str, token: str) -> None:
        create = choice == "create"
        super().__init__(
            ui.Button(
                label="Create anyway" if create else "Cancel",
                style=discord.ButtonStyle.primary if create else discord.ButtonStyle.secondary,
                custom_id=f"herald:dup:{choice}:{token}",
            )
        )
        self.choice = choice
        self.token = token

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> DuplicateButton:
        return cls(match["choice"], match["token"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await update(
            interaction,
            lambda actor: duplicates.press(interaction, actor, self.choice, self.token),
        )


def view_for(reply: actions.Reply) -> ui.View | None:
    """The buttons of a reply as a view that never times out (None without buttons)."""
    if reply.asked is not None:
        view = ui.View(timeout=None)
        view.add_item(DuplicateButton("create", reply.asked))
        view.add_item(DuplicateButton("cancel", reply.asked))
        return view
    if not reply.buttons and not reply.pages:
        return None
    view = ui.View(timeout=None)
    for button in reply.buttons:
        if button.action in DEAD_ACTIONS:
            view.add_item(DeadLetterButton(button.action, button.target))
        else:
            view.add_item(ScheduleButton(button.action, button.target))
    for turn, page in reply.pages:
        view.add_item(PageButton(turn, page))
    return view


Work = Callable[[Principal], Awaitable[actions.Reply]]


async def respond(interaction: discord.Interaction[Any], work: Work) -> None:
    """Run a command: defer at once (ephemeral, "thinking"), run ``work`` with the
    actor id, answer with its reply and buttons; a HeraldError's sentence otherwise."""
    await interaction.response.defer(ephemeral=True, thinking=True)
    try:
        reply = await work(principal_of(interaction))
    except Exception as exc:
        await report(interaction, exc)
        return
    await send(interaction, reply)


async def send(interaction: discord.Interaction[Any], reply: actions.Reply) -> None:
    """Send ``reply`` as an ephemeral follow-up (the interaction is already deferred)."""
    view = view_for(reply)
    extra: dict[str, Any] = {} if view is None else {"view": view}
    await interaction.followup.send(
        reply.text, ephemeral=True, allowed_mentions=NO_MENTIONS, **extra
    )


async def update(interaction: discord.Interaction[Any], work: Work) -> None:
    """Run a button: acknowledge at once, sync the member, run ``work``, then replace
    the message the button is on with the reply (without buttons unless it has some).
    A refusal or error goes to the clicker alone; the message stays as it was."""
    await interaction.response.defer()
    try:
        reply = await work(await member_of(interaction))
    except Exception as exc:
        await report(interaction, exc)
        return
    await interaction.edit_original_response(
        content=reply.text, view=view_for(reply), allowed_mentions=NO_MENTIONS
    )


async def open_edit_form(interaction: discord.Interaction[Any], schedule_id: int) -> None:
    """The Edit button: a form prefilled with the schedule's time and text."""
    try:
        actor = await member_of(interaction)
        found = await herald_of(interaction).show_schedule(actor, schedule_id)
    except Exception as exc:
        await report(interaction, exc)
        return
    await interaction.response.send_modal(EditForm(found.schedule))


def message_field_size(schedule: Schedule) -> int:
    """How long a message the form's field takes: what every destination allows, at
    most what a Discord text input holds (4,000)."""
    most = min(limits.text_limit(d).size for d in schedule.destinations)
    return min(limits.DISCORD_TEXT_INPUT.size, most)


def kept_message_note(schedule: Schedule, holds: int) -> str:
    """What the form says instead of a message field that cannot hold the message."""
    size = len(schedule.body)
    return limits.clip(
        f"**Message** ({size:,} characters) stays as it is: this form holds {holds:,}. "
        f"Change it with `/schedule edit id:{schedule.id} message:` (a shorter text) or "
        f"`herald edit {schedule.id} --text`.\n{render.quote(schedule.body, 400)}",
        limits.DISCORD_TEXT_DISPLAY,
    )


class EditForm(ui.Modal):
    """Edit a schedule's time (read in its own zone) and text. The custom_id carries the
    version it was opened at, so a change made meanwhile is refused, not overwritten."""

    def __init__(self, schedule: Schedule) -> None:
        assert schedule.id is not None
        super().__init__(
            title=f"Edit schedule #{schedule.id}",
            custom_id=f"herald:schedule:form:{schedule.id}:{schedule.version}",
            timeout=3600,
        )
        self.schedule_id = schedule.id
        self.version = schedule.version
        self.was_when = schedule.expression
        self.was_text = schedule.body
        self.when: ui.TextInput[Any] = ui.TextInput(
            default=schedule.expression[: limits.DISCORD_TEXT_INPUT.size],
            max_length=limits.DISCORD_TEXT_INPUT.size,
            custom_id="when",
        )
        zone = limits.clip(f"in {schedule.timezone}", limits.DISCORD_LABEL_DESCRIPTION)
        self.add_item(ui.Label(text="When", description=zone, component=self.when))
        holds = message_field_size(schedule)
        self.text: ui.TextInput[Any] | None = None
        used = views.template_of(schedule)
        if used is not None:  # its text is its template's: not a message to edit here
            note = (
                f"Sends template `{used['name']}` v{used['version']}: change its values "
                "with `/schedule edit id: data:`, or give it its own text with "
                "`template:none message:`."
            )
            self.add_item(ui.TextDisplay(limits.clip(note, limits.DISCORD_TEXT_DISPLAY)))
        elif len(schedule.body) <= holds:
            self.text = ui.TextInput(
                default=schedule.body,
                max_length=holds,
                style=discord.TextStyle.paragraph,
                custom_id="text",
            )
            self.add_item(ui.Label(text="Message", component=self.text))
        else:  # shown, never cut: saving a shortened copy would lose the rest
            self.add_item(ui.TextDisplay(kept_message_note(schedule, holds)))

    async def on_submit(self, interaction: discord.Interaction[Any], /) -> None:
        herald = herald_of(interaction)

        async def work(_: Principal) -> actions.Reply:
            actor = await member_of(interaction)
            return await actions.edit_from_form(
                herald,
                actor,
                self.schedule_id,
                version=self.version,
                when=self.when.value,
                text=self.was_text if self.text is None else self.text.value,
                was_when=self.was_when,
                was_text=self.was_text,
            )

        await respond(interaction, work)

    async def on_error(  # type: ignore[override]  # Modal's own signature
        self, interaction: discord.Interaction[Any], error: Exception, /
    ) -> None:
        await report(interaction, error)
