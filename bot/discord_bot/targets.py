"""The ``to:`` option: several places at once, each a destination or a chain of them.

``to:#ops #dev @alice`` (spaces or commas between targets) gives one schedule with three
recipients; ``to:@alice or alice@example.com`` one recipient that falls back to the
email when the direct message fails for good. A target is a channel (``<#id>``, as
Discord sends a channel picked while typing ``#``, or ``#name``), a member (``<@id>``, a
picked ``@name``; ``me``), a bare id (a channel of this server, else a member) or an
email address (``alice@example.com`` or ``email:alice@example.com``).

Each channel is checked as the ``channel`` option is (the member and the bot can send
there); each member as a reminder's person is (a member of this server, not a bot,
recorded in its tenant). One target naming a person keeps the reminder flow of
:mod:`.reminders` (its heading, and the person told at once).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import discord

from bot.discord_bot import actions, reminders, render
from bot.discord_bot.interact import herald_of, mentions_in, postable
from core.actors import Principal
from core.cases import check_count, wanted_of
from core.errors import InvalidInput, PermissionDenied

_SEPARATORS = re.compile(r"[\s,]+")
_USER = re.compile(r"<@!?(\d{17,20})>")
_CHANNEL = re.compile(r"<#(\d{17,20})>")
_ROLE = re.compile(r"<@&(\d{17,20})>")
_ID = re.compile(r"\d{17,20}")
_EMAIL = re.compile(r"(?:email:)?([^\s@:<>]+@[^\s@<>]+\.[^\s@<>]+)", re.IGNORECASE)
_CHANNEL_NAME = re.compile(r"#([\w-]{1,100})")
_EVERYONE = frozenset({"everyone", "here"})

HOW = (
    "write #channel or @member (pick them from the list Discord shows as you type), `me`, "
    "an id, or an email address; put spaces or commas between them, and `or` between "
    "the steps of a fallback (`@alice or alice@example.com`)."
)


@dataclass(frozen=True)
class Target:
    """One target as typed: ``kind`` is me, user, channel, id, channel_name,
    member_name or email; ``value`` the id, name or address."""

    kind: str
    value: str = ""


def chains(text: str) -> list[list[str]]:
    """The targets of ``to``, in order, each a chain of words (``a or b``).
    InvalidInput for nothing, or an ``or`` with nothing on one side."""
    out: list[list[str]] = []
    joining = False
    for word in (w for w in _SEPARATORS.split(text.strip()) if w):
        if word.lower() == "or":
            if not out or joining:
                raise InvalidInput("`or` goes between two targets: `@alice or alice@example.com`.")
            joining = True
        elif joining:
            out[-1].append(word)
            joining = False
        else:
            out.append([word])
    if joining:
        raise InvalidInput("`or` goes between two targets: `@alice or alice@example.com`.")
    if not out:
        raise InvalidInput(f"Say where to send it: {HOW}")
    return out


def read(word: str) -> Target:
    """What one target is (InvalidInput for a role, or anything Herald cannot read)."""
    if word.lower() == "me":
        return Target("me")
    if match := _USER.fullmatch(word):
        return Target("user", match[1])
    if match := _CHANNEL.fullmatch(word):
        return Target("channel", match[1])
    if _ROLE.fullmatch(word):
        raise InvalidInput(
            f"{word} is a role: Herald sends to channels and to members, not to everyone "
            "in a role. Name the members, or a channel."
        )
    if _ID.fullmatch(word):
        return Target("id", word)
    if match := _EMAIL.fullmatch(word):
        return Target("email", match[1])
    if match := _CHANNEL_NAME.fullmatch(word):
        return Target("channel_name", match[1])
    if word.startswith("@") and len(word) > 1:
        return Target("member_name", word[1:])
    raise InvalidInput(f"Herald cannot tell what {render.clip(word, 60)!r} is: {HOW}")


@dataclass
class Places:
    """Where ``to`` sends: the recipients as core takes them (a destination, or
    ``{"first_of": [...]}`` for a chain) and the member's permissions in each channel."""

    to: list[str | dict[str, list[str]]] = field(default_factory=list)
    perms: list[discord.Permissions] = field(default_factory=list)
    #: The other members it goes to (recorded once every target is checked).
    people: dict[int, Any] = field(default_factory=dict)


async def places(interaction: discord.Interaction[Any], actor: Principal, text: str) -> Places:
    """Every target of ``text`` read, counted (at most as many recipients as core
    allows the actor) and looked up in this server, in order."""
    words = chains(text)
    herald = herald_of(interaction)
    # the shape (each named once, chains of at most 5) and the count, before any lookup
    check_count(await herald.actor(actor), wanted_of([{"first_of": c} for c in words]))
    found = Places()
    for chain in words:
        steps = [await _destination(interaction, read(word), found) for word in chain]
        found.to.append(steps[0] if len(steps) == 1 else {"first_of": steps})
    _once(found.to)
    for person in found.people.values():  # every target is fine: nothing was changed before
        await reminders.record(interaction, person)
    return found


def _once(to: list[str | dict[str, list[str]]]) -> None:
    """Refuse a place named twice (``<#1>`` and ``#general`` may be the same channel)."""
    seen: set[str] = set()
    for step in (d for item in to for d in ([item] if isinstance(item, str) else item["first_of"])):
        if step in seen:
            raise InvalidInput(f"{render.where(step)} is named twice: name each place once.")
        seen.add(step)


def author(interaction: discord.Interaction[Any], actor: Principal, found: Places) -> Principal:
    """The actor with whom the message may notify: whom the member could in every
    channel it goes to (here, when it goes to none)."""
    perms = found.perms or [interaction.permissions]
    strict = [p for p in perms if not (p.mention_everyone or p.administrator)]
    return replace(actor, mentions=mentions_in(interaction, (strict or perms)[0]))


async def _destination(interaction: discord.Interaction[Any], target: Target, found: Places) -> str:
    """A target as a destination, checked: a channel where the member and the bot can
    send, a member of this server, an email address."""
    if target.kind == "me":
        return f"discord:@{interaction.user.id}"
    if target.kind == "email":
        return f"email:{target.value}"
    if target.kind == "user":
        return await _person(interaction, int(target.value), found)
    guild = interaction.guild
    if guild is None:
        raise PermissionDenied("Herald sends to channels and members from a server channel.")
    if target.kind == "channel_name":
        channel: Any = _named(guild, target.value)
    elif target.kind == "member_name":
        return await _person(interaction, _member_named(guild, target.value), found)
    else:
        channel = guild.get_channel_or_thread(int(target.value))
        if channel is None and target.kind == "id":
            return await _person(interaction, int(target.value), found)
        if channel is None:
            raise InvalidInput(
                f"Herald cannot find <#{target.value}> in this server: pick a channel of "
                "this server from the list Discord shows as you type #."
            )
    channel_id, perms = postable(interaction, channel)
    found.perms.append(perms)
    return actions.destination(channel_id)


async def _person(interaction: discord.Interaction[Any], user: int, found: Places) -> str:
    if user != interaction.user.id and user not in found.people:
        found.people[user] = await reminders.member(interaction, user)
    return f"discord:@{user}"


def _named(guild: Any, name: str) -> Any:
    """This server's text channel called ``name`` (InvalidInput for none or several)."""
    same = [c for c in guild.text_channels if c.name.lower() == name.lower()]
    if len(same) == 1:
        return same[0]
    many = "Several channels are" if same else "No channel is"
    raise InvalidInput(
        f"{many} called #{render.clip(name, 60)} in this server: pick the channel from the "
        "list Discord shows as you type #."
    )


def _member_named(guild: Any, name: str) -> int:
    """The member whose name Discord knows as ``name`` (InvalidInput otherwise)."""
    shown = render.clip(name, 60)
    if name.lower() in _EVERYONE:
        raise InvalidInput(f"@{shown} is everyone in a channel: name the channel (#…) instead.")
    found = guild.get_member_named(name)
    if found is None:
        raise InvalidInput(
            f"Herald cannot tell who @{shown} is: pick the member from the list Discord "
            "shows as you type @, or paste their user id."
        )
    return int(found.id)


def one_person(words: list[list[str]], interaction: discord.Interaction[Any]) -> bool:
    """Whether ``to`` names one person alone (``me``, a mention, a member's id): the
    reminder flow of :mod:`.reminders`."""
    if len(words) != 1 or len(words[0]) != 1:
        return False
    target = read(words[0][0])
    if target.kind == "id":
        guild = interaction.guild
        return guild is None or guild.get_channel_or_thread(int(target.value)) is None
    return target.kind in {"me", "user"}


async def create(
    interaction: discord.Interaction[Any],
    actor: Principal,
    to: str,
    channel: object | None,
    *,
    when: str,
    text: str,
    tz: str | None,
    skip_calendar: str | None,
    their_time: bool = False,
    priority: str | None = None,
    template: str | None = None,
    data: Mapping[str, str] | None = None,
    until_done: Mapping[str, Any] | None = None,
    saving: actions.Saving = actions.AS_ASKED,
) -> actions.Reply:
    """``/schedule create`` with ``to``: one schedule to every target (one person alone:
    a reminder, as before); ``text``, or ``template`` filled in with ``data``;
    ``until_done``: its ladder; ``saving``: private, duplicates, where it was asked."""
    if channel is not None:
        raise InvalidInput(reminders.NOT_BOTH)
    if one_person(chains(to), interaction):
        return await reminders.create(
            interaction,
            actor,
            to,
            channel,
            when,
            text,
            tz,
            skip_calendar,
            their_time,
            priority,
            template=template,
            data=data,
            until_done=until_done,
            saving=saving,
        )
    found = await places(interaction, actor, to)
    return await actions.create(
        herald_of(interaction),
        author(interaction, actor, found),
        to=found.to,
        when=when,
        text=text,
        tz=tz,
        skip=[skip_calendar.strip()] if skip_calendar else [],
        their_time=their_time,
        priority=priority,
        template=template,
        data=data,
        until_done=until_done,
        saving=saving,
    )


async def escalation(interaction: discord.Interaction[Any], text: str) -> list[str]:
    """``escalate_to`` (issue 40): the members and channels an escalation goes to,
    each checked as a target of ``to`` is (a channel where the member and the bot can
    send, a member of this server); [] for ``none`` (the level removed)."""
    if text.strip().lower() in ("none", "off"):
        return []
    words = chains(text)
    if any(len(chain) > 1 for chain in words):
        raise InvalidInput("An escalation goes to every place it names: no `or` there.")
    found = Places()
    to = [await _destination(interaction, read(chain[0]), found) for chain in words]
    _once(list(to))
    for person in found.people.values():
        await reminders.record(interaction, person)
    return to
