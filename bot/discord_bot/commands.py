"""The ``/schedule`` application command group: options, transformers, autocomplete.

Each callback only turns Discord values into primitives and calls
:mod:`bot.discord_bot.actions` through :func:`~bot.discord_bot.components.respond`.
The group's :meth:`ScheduleGroup.interaction_check` runs before every command (servers
only; syncs the member); the channel check runs in the command, because it depends on
the ``channel`` option.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import discord
from discord import app_commands
from discord.app_commands import Choice, Range, Transform

from bot.discord_bot import (
    actions,
    approvals,
    choices,
    duplicates,
    ladders,
    prefs,
    reminders,
    targets,
    templates,
)
from bot.discord_bot.components import respond
from bot.discord_bot.interact import (
    NO_MENTIONS,
    herald_of,
    member_of,
    mentions_in,
    postable,
    principal_of,
    report,
    settings_of,
)
from core import verbs
from core.actors import Principal
from core.errors import HeraldError, InvalidInput
from core.models import STATE_FILTERS
from core.zones import resolve_zone

log = logging.getLogger(__name__)


def _actor(interaction: discord.Interaction[Any]) -> Principal:
    return principal_of(interaction)


class ScheduleId(app_commands.Transformer[Any]):
    """The ``id`` option: the member types a number or picks one of their schedules
    (listed by text and next time); ``#12 · …`` and ``12`` both give 12."""

    async def transform(self, interaction: discord.Interaction[Any], value: Any, /) -> int:
        return choices.parse_schedule_id(str(value))

    async def autocomplete(
        self, interaction: discord.Interaction[Any], value: int | float | str, /
    ) -> list[Choice[int | float | str]]:
        try:
            pairs = await choices.id_choices(
                herald_of(interaction), _actor(interaction), str(value)
            )
        except HeraldError:
            return []
        return [Choice(name=name, value=choice) for name, choice in pairs]


class Zone(app_commands.Transformer[Any]):
    """The ``timezone`` option: a city, an IANA name or an abbreviation, read by
    :func:`core.zones.resolve_zone` (an ambiguous one is refused with its meanings)."""

    async def transform(self, interaction: discord.Interaction[Any], value: Any, /) -> str:
        return resolve_zone(str(value)).key

    async def autocomplete(
        self, interaction: discord.Interaction[Any], value: int | float | str, /
    ) -> list[Choice[int | float | str]]:
        return [Choice(name=z, value=z) for z in choices.zone_choices(str(value))]


async def when_autocomplete(
    interaction: discord.Interaction[Any], current: str
) -> list[Choice[str]]:
    """The ``when`` option: how the typed text will be read (in the command's zone, the
    schedule's when editing, else the member's) and when it first fires."""
    namespace = interaction.namespace
    tz = getattr(namespace, "timezone", None)
    raw_id = getattr(namespace, "id", None)
    schedule_id = None
    if raw_id is not None:
        try:
            schedule_id = choices.parse_schedule_id(str(raw_id))
        except HeraldError:
            schedule_id = None
    try:
        pairs = await choices.when_choices(
            herald_of(interaction),
            _actor(interaction),
            current,
            tz=tz if isinstance(tz, str) else None,
            schedule_id=schedule_id,
        )
    except HeraldError:
        return []
    return [Choice(name=name, value=value) for name, value in pairs]


async def template_autocomplete(
    interaction: discord.Interaction[Any], current: str
) -> list[Choice[str]]:
    """The ``template`` option: this server's templates whose names start with what was
    typed (at most 25, :func:`bot.discord_bot.templates.choices`)."""
    try:
        pairs = await templates.choices(herald_of(interaction), _actor(interaction), current)
    except HeraldError:
        return []
    return [Choice(name=name, value=value) for name, value in pairs]


class AgendaChannel(app_commands.Transformer[Any]):
    """``/schedule list channel:``: a text or announcement channel, or a thread, as the
    interaction resolved it (``AppCommandChannel``, ``AppCommandThread``): with the
    permissions Discord computed for the member there, in the signed interaction."""

    @property
    def type(self) -> discord.AppCommandOptionType:
        return discord.AppCommandOptionType.channel

    @property
    def channel_types(self) -> list[discord.ChannelType]:
        kind = discord.ChannelType
        return [kind.text, kind.news, kind.public_thread, kind.private_thread, kind.news_thread]

    async def transform(self, interaction: discord.Interaction[Any], value: Any, /) -> Any:
        if not isinstance(value, app_commands.AppCommandChannel | app_commands.AppCommandThread):
            raise app_commands.TransformerError(value, self.type, self)
        return value


_ID = Transform[int, ScheduleId]
_AGENDA = Transform[Any, AgendaChannel]
#: ``private`` on create and edit (issue 41).
PRIVATE_HELP = "Keep it out of the channel's list (/schedule list channel:): yours to see"
_ZONE = Transform[str, Zone]
_WHEN = Range[str, 1, 500]
_TEXT = Range[str, 1, 2000]
_URL = Range[str, 8, 1000]
#: A template's name (core.render.NAME: at most 64 characters).
_TEMPLATE = Range[str, 1, 64]
#: ``data``: up to 30 values (core.render.MAX_VARIABLES) with their names, well within
#: a string option's 6,000 characters.
_DATA = Range[str, 1, 4000]
#: ``to``: up to 50 targets (a member's most recipients) of about 20 characters each.
#: Discord takes a string option of at most 6,000 characters (max_length, 1 to 6000:
#: https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-structure).
_TO = Range[str, 1, 1200]
_ID_HELP = "The schedule (type to search yours)"
#: ``nag``, ``escalate_after``: a duration (15m, 1h, 90m).
_DURATION = Range[str, 1, 20]
#: ``escalate_to``: up to 5 members or channels (core.until_done.MAX_ESCALATE_TO).
_ESCALATE_TO = Range[str, 1, 300]
#: The ladder's options of create and edit, described (issue 40).
_LADDER_HELP = {
    "until_done": ladders.UNTIL_DONE_HELP,
    "nag": ladders.NAG_HELP,
    "escalate_to": ladders.ESCALATE_TO_HELP,
    "escalate_after": ladders.ESCALATE_AFTER_HELP,
    "escalate2_to": ladders.ESCALATE2_TO_HELP,
    "escalate2_after": ladders.ESCALATE2_AFTER_HELP,
}


def _state_command(word: str, verb: verbs.Verb) -> app_commands.Command[Any, ..., None]:
    """``/schedule <word> id:``: ``verb``'s use case on one schedule, described by the
    table (an alias: "… (as cancel)")."""

    async def change(self: ScheduleGroup, interaction: discord.Interaction[Any], id: _ID) -> None:
        await self._change(interaction, word, id)

    # a method of the group for discord.py (which passes the group as ``self``)
    change.__qualname__ = f"ScheduleGroup.{word}"
    description = verb.summary if word == verb.name else f"{verb.summary} (as {verb.name})"
    command = app_commands.command(name=word, description=description)(change)
    return app_commands.describe(id=_ID_HELP)(command)


class ScheduleGroup(
    app_commands.Group,
    name="schedule",
    description="Send a message later, once or on a rule, in your time zone",
    guild_only=True,
):
    """``/schedule …``. Replies are ephemeral; every action goes through core."""

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        """Servers only; records the member (and Manage Server, when that makes admins)."""
        if interaction.guild_id is None:
            raise app_commands.NoPrivateMessage(
                "Herald's /schedule works in server channels, not in direct messages."
            )
        await member_of(interaction)
        return True

    @app_commands.command(description="Schedule a message in this channel or another")
    @app_commands.describe(
        when='When to send: "tomorrow at 9am", "every weekday at 09:00", "0 9 * * 1-5"',
        message="What to send (up to 2,000 characters), or pick a template instead",
        template=templates.TEMPLATE_HELP,
        data=templates.DATA_HELP,
        channel="Where to send it (default: this channel)",
        timezone="The zone to read the time in (default: yours, see /schedule timezone)",
        skip_calendar="An iCalendar (.ics) URL, e.g. public holidays: nothing is sent on "
        "the dates of its events",
        to=reminders.TO_HELP,
        # a boolean option; a command may have 25 options, each description at most 100
        # characters (https://discord.com/developers/docs/interactions/application-commands#application-command-object-application-command-option-structure)
        their_time="Send at that hour in each person's own zone (channels keep yours)",
        urgent="Admins and operators: before anything else waiting, through quiet hours",
        **_LADDER_HELP,
        private=PRIVATE_HELP,
    )
    @app_commands.autocomplete(when=when_autocomplete, template=template_autocomplete)
    async def create(
        self,
        interaction: discord.Interaction[Any],
        when: _WHEN,
        message: _TEXT | None = None,
        template: _TEMPLATE | None = None,
        data: _DATA | None = None,
        channel: discord.TextChannel | None = None,
        timezone: _ZONE | None = None,
        skip_calendar: _URL | None = None,
        to: _TO | None = None,
        their_time: bool = False,
        urgent: bool = False,
        until_done: bool | None = None,
        nag: _DURATION | None = None,
        escalate_to: _ESCALATE_TO | None = None,
        escalate_after: _DURATION | None = None,
        escalate2_to: _ESCALATE_TO | None = None,
        escalate2_after: _DURATION | None = None,
        private: bool = False,
    ) -> None:
        async def work(actor: Principal, saving: actions.Saving) -> actions.Reply:
            text, name, values = templates.content(message, template, data)
            levels = [(escalate_to, escalate_after), (escalate2_to, escalate2_after)]
            spec = await ladders.from_options(interaction, actor, until_done, nag, levels)
            ladder = spec if isinstance(spec, dict) else None
            if name is not None:
                await templates.check_known(herald_of(interaction), actor, name)
            priority = await prefs.urgency(herald_of(interaction), actor, urgent)
            if to is not None:  # several places, or one person (a reminder by DM)
                return await targets.create(
                    interaction,
                    actor,
                    to,
                    channel,
                    when=when,
                    text=text,
                    tz=timezone,
                    skip_calendar=skip_calendar,
                    their_time=their_time,
                    priority=priority,
                    template=name,
                    data=values,
                    until_done=ladder,
                    saving=saving,
                )
            target, perms = postable(interaction, channel)
            # whom the message may notify: whom the member could, in that channel
            author = replace(actor, mentions=mentions_in(interaction, perms))
            return await actions.create(
                herald_of(interaction),
                author,
                channel_id=target,
                when=when,
                text=text,
                tz=timezone,
                skip=[skip_calendar.strip()] if skip_calendar else [],
                their_time=their_time,
                priority=priority,
                template=name,
                data=values,
                until_done=ladder,
                saving=saving,
            )

        await respond(
            interaction,
            lambda actor: duplicates.checked(interaction, actor, work, private=private),
        )

    @app_commands.command(
        name="list", description="Your active and paused schedules, or a channel's (channel:)"
    )
    @app_commands.describe(
        everyone="Everyone's (operators and admins)",
        state="Only these: what happened (delivered, failed...) or active, paused...",
        channel="Instead: what everyone scheduled into this channel (one you can see)",
    )
    @app_commands.choices(state=[Choice(name=s, value=s) for s in STATE_FILTERS])
    async def list_(
        self,
        interaction: discord.Interaction[Any],
        everyone: bool = False,
        state: str | None = None,
        channel: _AGENDA | None = None,
    ) -> None:
        if channel is not None:
            if everyone or state is not None:
                await respond(interaction, _agenda_alone)
                return
            # Discord computed the member's permissions there, in the signed interaction
            seen = bool(channel.permissions.view_channel)
            await respond(
                interaction,
                lambda actor: actions.agenda(herald_of(interaction), actor, channel.id, seen=seen),
            )
            return
        await respond(
            interaction,
            lambda actor: actions.list_schedules(
                herald_of(interaction),
                actor,
                page=actions.ListPage(
                    interaction.guild_id or 0, interaction.user.id, everyone, state
                ),
            ),
        )

    @app_commands.command(description="One schedule: when, where, next and latest sends")
    @app_commands.describe(id="The schedule (type to search yours)")
    async def show(self, interaction: discord.Interaction[Any], id: _ID) -> None:
        await respond(interaction, lambda actor: actions.show(herald_of(interaction), actor, id))

    @app_commands.command(description="Change a schedule's time, message or places")
    @app_commands.describe(
        id="The schedule (type to search yours)",
        when="A new time, read in the schedule's zone",
        message="A new message",
        channel="A new channel",
        to="New places instead of all of them: #channels, @members, emails; `or` for fallbacks",
        template="Send this template instead (none, with a message: its own text again)",
        data="New values for its template: name=value, spaces between",
        **{**_LADDER_HELP, "until_done": "True: send it until done; False: plainly again"},
        private="True: out of the channel's list (yours to see); False: in it again",
    )
    @app_commands.autocomplete(when=when_autocomplete, template=template_autocomplete)
    async def edit(
        self,
        interaction: discord.Interaction[Any],
        id: _ID,
        when: _WHEN | None = None,
        message: _TEXT | None = None,
        channel: discord.TextChannel | None = None,
        to: _TO | None = None,
        template: _TEMPLATE | None = None,
        data: _DATA | None = None,
        until_done: bool | None = None,
        nag: _DURATION | None = None,
        escalate_to: _ESCALATE_TO | None = None,
        escalate_after: _DURATION | None = None,
        escalate2_to: _ESCALATE_TO | None = None,
        escalate2_after: _DURATION | None = None,
        private: bool | None = None,
    ) -> None:
        async def work(actor: Principal) -> actions.Reply:
            if to is not None and channel is not None:
                raise InvalidInput(reminders.NOT_BOTH)
            levels = [(escalate_to, escalate_after), (escalate2_to, escalate2_after)]
            ladder = await ladders.from_options(
                interaction, actor, until_done, nag, levels, schedule_id=id
            )
            name, values = templates.edited(template, data)
            if name is not None and name != templates.NONE:
                await templates.check_known(herald_of(interaction), actor, name)
            if to is not None:
                found = await targets.places(interaction, actor, to)
                return await actions.edit(
                    herald_of(interaction),
                    targets.author(interaction, actor, found),
                    id,
                    when=when,
                    text=message,
                    to=found.to,
                    template=name,
                    data=values,
                    until_done=ladder,
                    private=private,
                )
            target, perms = (None, interaction.permissions)
            if channel is not None:
                target, perms = postable(interaction, channel)
            # a new text notifies whom the editor could (in the new channel, or here)
            author = replace(actor, mentions=mentions_in(interaction, perms))
            return await actions.edit(
                herald_of(interaction),
                author,
                id,
                when=when,
                text=message,
                channel_id=target,
                template=name,
                data=values,
                until_done=ladder,
                private=private,
            )

        await respond(interaction, work)

    async def _change(self, interaction: discord.Interaction[Any], verb: str, id: int) -> None:
        """A verb of core/verbs.py (by its name or an alias) on schedule ``id``."""
        await respond(
            interaction, lambda actor: actions.change(herald_of(interaction), actor, verb, id)
        )

    # /schedule pause, resume, skip, cancel (and its aliases, delete and remove, as
    # /remind and other reminder bots say it): one command per word of core/verbs.py
    for _verb in verbs.offered(verbs.DISCORD, verbs.STATE_VERBS):
        for _word in _verb.words:
            vars()[_word] = _state_command(_word, _verb)
    del _verb, _word

    @app_commands.command(description="Show or set the time zone your times are read in")
    @app_commands.describe(zone="A city or an IANA zone, e.g. Berlin or Europe/Berlin")
    async def timezone(
        self, interaction: discord.Interaction[Any], zone: _ZONE | None = None
    ) -> None:
        await respond(
            interaction, lambda actor: actions.timezone(herald_of(interaction), actor, zone)
        )

    @app_commands.command(
        name="prefs", description="How Herald reaches you: place, who may remind you, quiet hours"
    )
    @app_commands.describe(
        place=f"Where reminders to you go: {prefs.PLACE_HELP}",
        accept="Who may schedule reminders to you",
        block="A member whose reminders you refuse",
        unblock="A member to take off your block list",
        quiet_start="When your quiet hours start, e.g. 22:00 (off: none)",
        quiet_end="When they end, e.g. 08:00",
        quiet_days="Quiet all day: sat, sun / weekends (off: none)",
        tenant="Admins: this server's defaults instead of yours",
        hold_channels="Admins, with tenant: hold channel messages in quiet hours too",
        notices="A direct message when a message you scheduled fails (default on)",
    )
    @app_commands.choices(
        accept=[Choice(name=name, value=value) for value, name in prefs.ACCEPT_CHOICES.items()]
    )
    async def prefs_(
        self,
        interaction: discord.Interaction[Any],
        place: Range[str, 1, 300] | None = None,
        accept: str | None = None,
        block: discord.User | None = None,
        unblock: discord.User | None = None,
        quiet_start: Range[str, 1, 10] | None = None,
        quiet_end: Range[str, 1, 10] | None = None,
        quiet_days: Range[str, 1, 60] | None = None,
        tenant: bool = False,
        hold_channels: bool | None = None,
        notices: bool | None = None,
    ) -> None:
        async def work(actor: Principal) -> actions.Reply:
            return await prefs.prefs(
                herald_of(interaction),
                actor,
                user_id=interaction.user.id,
                tenant=tenant,
                place=place,
                accept=accept,
                block=[block.id] if block is not None else [],
                unblock=[unblock.id] if unblock is not None else [],
                quiet_start=quiet_start,
                quiet_end=quiet_end,
                quiet_days=quiet_days,
                hold_channels=hold_channels,
                notices=notices,
            )

        await respond(interaction, work)

    feed = app_commands.Group(
        name="feed", description="Admins: a reminder before each event of an iCalendar feed"
    )

    @feed.command(name="add", description="Post a reminder before each event of a calendar")
    @app_commands.describe(
        calendar="The https:// URL of an iCalendar (.ics) feed",
        before="How long before each event: 10m, 1h, 1d (default 10m)",
        channel="Where to post the reminders (default: this channel)",
        template="The reminder, e.g. {event.summary} at {event.start:%H:%M}",
        timezone="The zone for times in the reminder (default: yours)",
    )
    async def feed_add(
        self,
        interaction: discord.Interaction[Any],
        calendar: _URL,
        before: Range[str, 1, 20] = "10m",
        channel: discord.TextChannel | None = None,
        template: Range[str, 1, 1000] | None = None,
        timezone: _ZONE | None = None,
    ) -> None:
        async def work(actor: Principal) -> actions.Reply:
            return await actions.feed_add(
                herald_of(interaction),
                actor,
                channel_id=postable(interaction, channel)[0],
                calendar=calendar,
                before=before,
                template=template,
                tz=timezone,
            )

        await respond(interaction, work)

    @feed.command(name="list", description="The event feeds")
    async def feed_list(self, interaction: discord.Interaction[Any]) -> None:
        await respond(interaction, lambda actor: actions.feed_list(herald_of(interaction), actor))

    @feed.command(name="remove", description="Stop a feed (its waiting reminders are cancelled)")
    @app_commands.describe(id="The feed's number (see /schedule feed list)")
    async def feed_remove(
        self, interaction: discord.Interaction[Any], id: Range[int, 1, None]
    ) -> None:
        await respond(
            interaction, lambda actor: actions.feed_remove(herald_of(interaction), actor, id)
        )

    @app_commands.command(
        name="templates", description="This server's templates: their values and who uses them"
    )
    @app_commands.describe(
        template="One template, previewed (type to search)",
        data="Sample values for the preview: name=value, spaces between",
    )
    @app_commands.autocomplete(template=template_autocomplete)
    async def templates_(
        self,
        interaction: discord.Interaction[Any],
        template: _TEMPLATE | None = None,
        data: _DATA | None = None,
    ) -> None:
        async def work(actor: Principal) -> actions.Reply:
            text = await templates.templates_reply(herald_of(interaction), actor, template, data)
            return actions.Reply(text)

        await respond(interaction, work)

    @app_commands.command(
        name="approvals", description="Messages waiting for approval: approvers decide them here"
    )
    async def approvals_(self, interaction: discord.Interaction[Any]) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            text, view = await approvals.pending(herald_of(interaction), _actor(interaction))
        except Exception as exc:
            await report(interaction, exc)
            return
        extra: dict[str, Any] = {} if view is None else {"view": view}
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS, **extra)

    @app_commands.command(name="help", description="What Herald can do and how to say when")
    async def help_(self, interaction: discord.Interaction[Any]) -> None:
        default_tz = settings_of(interaction).default_tz

        async def work(_: Principal) -> actions.Reply:
            return actions.help_reply(default_tz)

        await respond(interaction, work)


async def _agenda_alone(_: Principal) -> actions.Reply:
    raise InvalidInput(
        "`channel:` lists what everyone scheduled into that channel: leave out "
        "`everyone:` and `state:` with it."
    )


class HeraldTree(app_commands.CommandTree[Any]):
    """The command tree; a failed check or option gets its sentence, ephemerally."""

    async def on_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError, /
    ) -> None:
        await report(interaction, error)
