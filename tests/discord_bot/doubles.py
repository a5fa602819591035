"""Interaction doubles: just the parts of ``discord.Interaction`` Herald's callbacks use.

An :class:`Interaction` records every answer (``response.defer``, ``send_message``,
``send_modal``, ``followup.send``, ``edit_original_response``) in :attr:`Interaction.log`
so tests can check what the member saw, in order. The client is the adapter's real
:class:`~bot.discord_bot.HeraldClient` (never logged in).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import discord

from bot.discord_bot import DiscordAdapter, HeraldClient
from core.actors import Principal, discord_tenant

GUILD = 700000000000000001
CHANNEL = 700000000000000010
OTHER_CHANNEL = 700000000000000020
BOT = 1300000000000000001
OWNER = 800000000000000001
ADMIN = 900000000000000001  # HERALD_ADMINS=discord:ADMIN (see conftest)
STRANGER = 800000000000000002

SENDER = discord.Permissions(view_channel=True, send_messages=True)
READER = discord.Permissions(view_channel=True)
MANAGER = discord.Permissions(view_channel=True, send_messages=True, manage_guild=True)

_ids = itertools.count(1_500_000_000_000_000_000)


@dataclass
class Answer:
    """One thing the callback did with the interaction."""

    kind: str  # defer, message, modal, followup, edit
    content: str | None = None
    ephemeral: bool = False
    view: Any = None
    modal: Any = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def custom_ids(self) -> list[str]:
        if self.view is None:
            return []
        return [item.custom_id for item in self.view.walk_children()]


@dataclass
class User:
    id: int
    display_name: str = "Ada"
    bot: bool = False
    #: What Herald sent this user by direct message (``Member.send``), and whether their
    #: direct messages are closed (Discord answers 403, code 50007).
    direct: list[str] = field(default_factory=list)
    closed: bool = False

    async def send(self, content: str, **kwargs: Any) -> None:
        if self.closed:
            response = SimpleNamespace(status=403, reason="Forbidden")
            message = "Cannot send messages to this user"
            raise discord.Forbidden(response, {"code": 50007, "message": message})  # type: ignore[arg-type]
        assert kwargs.get("allowed_mentions") is not None  # nobody is pinged by it
        self.direct.append(content)

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"


def who(user_id: int, guild_id: int = GUILD) -> Principal:
    """A Discord member as the use cases know them: in their server's tenant."""
    return Principal(f"discord:{user_id}", discord_tenant(guild_id, user_id))


class Channel:
    """A guild channel whose ``permissions_for`` answers from a table (user id -> perms)."""

    def __init__(
        self,
        channel_id: int,
        guild: Guild,
        perms: dict[int, discord.Permissions],
        name: str | None = None,
    ):
        self.id = channel_id
        self.guild = guild
        self.perms = perms
        self.mention = f"<#{channel_id}>"
        self.name = name or f"chan-{channel_id}"

    def permissions_for(self, obj: Any) -> discord.Permissions:
        return self.perms.get(obj.id, discord.Permissions.none())


class Role:
    def __init__(self, role_id: int, *, mentionable: bool = False) -> None:
        self.id = role_id
        self.mentionable = mentionable


class Guild:
    def __init__(self, guild_id: int = GUILD, roles: list[Role] | None = None) -> None:
        self.id = guild_id
        self.me = User(BOT, "Herald", bot=True)
        self.roles = roles or []
        #: Who ``fetch_member`` finds (``GET /guilds/{id}/members/{user}``): the bot,
        #: OWNER, ADMIN and STRANGER, unless a test changes it.
        self.members: dict[int, User] = {
            u.id: u
            for u in (self.me, User(OWNER, "Ada"), User(ADMIN, "Root"), User(STRANGER, "Sam"))
        }
        #: The channels in discord.py's cache (a server's channels come with the guilds
        #: intent): none unless a test adds them (:meth:`add_channel`).
        self.channels: dict[int, Channel] = {}

    def add_channel(
        self, channel_id: int, perms: dict[int, discord.Permissions], name: str | None = None
    ) -> Channel:
        self.channels[channel_id] = Channel(channel_id, self, perms, name)
        return self.channels[channel_id]

    def get_channel_or_thread(self, channel_id: int, /) -> Channel | None:
        return self.channels.get(channel_id)

    @property
    def text_channels(self) -> list[Channel]:
        return list(self.channels.values())

    def get_member_named(self, name: str, /) -> User | None:
        """A cached member by name (without the members intent, few are cached)."""
        return next((u for u in self.members.values() if u.display_name == name), None)

    async def fetch_member(self, user_id: int, /) -> User:
        """The member, or discord.NotFound (10007 Unknown Member) as discord.py raises."""
        if user_id not in self.members:
            response = SimpleNamespace(status=404, reason="Not Found")
            raise discord.NotFound(response, {"code": 10007, "message": "Unknown Member"})  # type: ignore[arg-type]
        return self.members[user_id]


class Response:
    def __init__(self, log: list[Answer]) -> None:
        self.log = log
        self._done = False

    def is_done(self) -> bool:
        return self._done

    def _answer(self, answer: Answer) -> None:
        if self._done:
            raise discord.InteractionResponded(None)  # type: ignore[arg-type]
        self._done = True
        self.log.append(answer)

    async def defer(self, *, ephemeral: bool = False, thinking: bool = False) -> None:
        self._answer(Answer("defer", ephemeral=ephemeral, options={"thinking": thinking}))

    async def send_message(
        self, content: str | None = None, *, ephemeral: bool = False, view: Any = None, **kw: Any
    ) -> None:
        self._answer(Answer("message", content, ephemeral, view, options=kw))

    async def send_modal(self, modal: discord.ui.Modal) -> None:
        self._answer(Answer("modal", modal=modal))

    async def edit_message(
        self, *, content: str | None = None, view: Any = None, **kw: Any
    ) -> None:
        self._answer(Answer("edit", content, view=view, options=kw))

    async def autocomplete(self, choices: list[discord.app_commands.Choice[Any]]) -> None:
        assert len(choices) <= 25, "Discord takes at most 25 choices"
        for choice in choices:
            assert 1 <= len(choice.name) <= 100 and len(str(choice.value)) <= 100, choice
        self._answer(Answer("autocomplete", options={"choices": choices}))

    @property
    def choices(self) -> list[tuple[str, Any]]:
        [answer] = [a for a in self.log if a.kind == "autocomplete"]
        return [(c.name, c.value) for c in answer.options["choices"]]


class Followup:
    def __init__(self, log: list[Answer], response: Response) -> None:
        self.log = log
        self.response = response

    async def send(
        self, content: str | None = None, *, ephemeral: bool = False, view: Any = None, **kw: Any
    ) -> None:
        assert self.response.is_done(), "a follow-up before the interaction was answered"
        self.log.append(Answer("followup", content, ephemeral, view, options=kw))


class Interaction:
    """A stand-in for ``discord.Interaction`` in a server channel."""

    def __init__(
        self,
        client: HeraldClient,
        user_id: int = OWNER,
        *,
        permissions: discord.Permissions = SENDER,
        app_permissions: discord.Permissions = SENDER,
        channel: Any = None,
        guild: Guild | None = None,
        namespace: dict[str, Any] | None = None,
        message: discord.Message | None = None,
        data: dict[str, Any] | None = None,
        display_name: str = "Ada",
    ) -> None:
        self.id = next(_ids)
        self.client = client
        self._state = client._connection
        self.user = User(user_id, display_name)
        self.guild = guild if guild is not None else Guild()
        self.guild_id: int | None = self.guild.id
        self.channel = channel if channel is not None else Channel(CHANNEL, self.guild, {})
        self.channel_id: int | None = self.channel.id
        self.permissions = permissions
        self.app_permissions = app_permissions
        self.namespace = SimpleNamespace(**(namespace or {}))
        self.message = message
        self.data = data or {}
        self.log: list[Answer] = []
        self.response = Response(self.log)
        self.followup = Followup(self.log, self.response)

    async def edit_original_response(
        self, *, content: str | None = None, view: Any = None, **kw: Any
    ) -> None:
        assert self.response.is_done(), "edit_original_response before an answer"
        self.log.append(Answer("edit", content, view=view, options=kw))

    @property
    def last(self) -> Answer:
        return self.log[-1]


def in_dm(interaction: Interaction) -> Interaction:
    interaction.guild = None  # type: ignore[assignment]
    interaction.guild_id = None
    return interaction


def message_with(client: HeraldClient, view: discord.ui.View, content: str = "") -> discord.Message:
    """A real ``discord.Message`` carrying ``view``'s buttons, as Discord would send it back."""
    return message_from(client, {"content": content, "components": view.to_components()})


def message_from(client: HeraldClient, payload: dict[str, Any]) -> discord.Message:
    data = {
        "id": str(next(_ids)),
        "channel_id": str(CHANNEL),
        "type": 0,
        "content": "",
        "author": {"id": str(BOT), "username": "Herald", "discriminator": "0", "avatar": None},
        "embeds": [],
        "attachments": [],
        "mentions": [],
        "mention_roles": [],
        "mention_everyone": False,
        "pinned": False,
        "tts": False,
        "timestamp": "2026-03-02T12:00:00.000000+00:00",
        "edited_timestamp": None,
        "flags": 0,
        "components": [],
        **payload,
    }
    channel = client.get_partial_messageable(int(data["channel_id"]))
    return discord.Message(state=client._connection, channel=channel, data=data)  # type: ignore[arg-type]


async def click(client: HeraldClient, interaction: Interaction, custom_id: str) -> None:
    """Deliver a button click to ``client`` the way discord.py does for a gateway
    INTERACTION_CREATE, then wait for the handler to finish."""
    interaction.data = {"custom_id": custom_id, "component_type": 2}
    store = client._connection._view_store
    await _settle(lambda: store.dispatch_view(2, custom_id, interaction))  # type: ignore[arg-type]


async def submit(
    client: HeraldClient, interaction: Interaction, modal: discord.ui.Modal, **values: str
) -> None:
    """Submit ``modal`` (as sent with ``send_modal``) with text input ``values`` by
    custom_id, the way discord.py handles a MODAL_SUBMIT, and wait for the handler."""
    store = client._connection._view_store
    store.add_view(modal)  # what send_modal does
    components = [
        {"type": 18, "component": {"type": 4, "custom_id": key, "value": value}}
        for key, value in values.items()
    ]
    interaction.data = {"custom_id": modal.custom_id, "components": components}
    await _settle(
        lambda: store.dispatch_modal(modal.custom_id, interaction, components, {})  # type: ignore[arg-type]
    )


async def _settle(dispatch: Callable[[], None]) -> None:
    before = set(asyncio.all_tasks())
    dispatch()
    spawned = set(asyncio.all_tasks()) - before
    assert spawned, "discord.py handled nothing"
    await asyncio.gather(*spawned)


def command(adapter: DiscordAdapter, name: str) -> discord.app_commands.Command[Any, ..., Any]:
    """``/schedule <name>`` as registered on the adapter's command tree."""
    group = adapter.client.tree.get_command("schedule")
    assert isinstance(group, discord.app_commands.Group)
    found = group.get_command(name)
    assert isinstance(found, discord.app_commands.Command)
    return found
