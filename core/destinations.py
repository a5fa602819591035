"""Destination URIs: where a message goes, written ``kind:target``.

Each channel declares its kind's syntax (a :class:`UriSyntax`: the check of a target,
an example, the redaction of secrets, its direct messages and settings) as its
class's ``uri``, in its module in ``core/channels/``; the channel registry
(:func:`core.channels.parse_destination`) reads a URI by those declarations, and the
:class:`Destination` it returns carries its kind's syntax. This module knows no
channel: the channels build on it. Today's kinds:
``slack:C0123`` (optionally ``slack:C0123/1700000000.000100`` for a thread reply),
``slack:@U0123ABC`` (a direct message from the bot to that Slack user),
``discord:123456789012345678``, ``discord:@123456789012345678`` (a direct message to
that Discord user), ``discord-webhook:https://discord.com/api/webhooks/…``
(embeds, custom name and avatar), ``webhook:https://...``, ``email:ops@example.com``,
``apprise:tgram://…``, ``log:`` (the service log) and ``null:`` (discards; for
benchmarks).

A channel may also be named: ``slack:#deploys``, ``discord:#general@<server id>``
(:func:`channel_name`). A name is looked up once, when a schedule is saved, in the
platform's directory (its channel, as a :class:`ChannelDirectory`), and the schedule
keeps the id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from urllib.parse import SplitResult, urlsplit

from core.errors import InvalidInput
from core.scrub import scrub_credentials


@dataclass(frozen=True)
class Destination:
    """A parsed destination: its kind (the URI scheme), the rest, and the syntax its
    channel declares for that kind (not part of its value: two destinations are equal
    when their URIs are)."""

    kind: str
    target: str
    syntax: UriSyntax = field(compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"

    @property
    def is_dm(self) -> bool:
        """Whether this is a direct message from the bot to one person."""
        return self.syntax.direct_messages and self.target.startswith("@")

    @property
    def recipient(self) -> str | None:
        """The member id (``slack:U…``, ``discord:<id>``) a direct message goes to."""
        return f"{self.kind}:{self.target[1:]}" if self.is_dm else None

    def for_owner(self) -> str:
        """The URI as its owner and the admins see it: a webhook's host, port and path,
        with what looks like a secret in it hidden (its query, a token in its path), as
        its channel declares; :meth:`redacted` for a kind that declares no such view."""
        view = self.syntax.owner_view
        return self.redacted() if view is None else view(self)

    def redacted(self) -> str:
        """The URI fit for logs and audit rows: what may carry a secret (a webhook's
        path and query, an Apprise URL) is hidden, as its channel declares."""
        redact = self.syntax.redact
        return str(self) if redact is None else redact(self)


@dataclass(frozen=True)
class UriSyntax:
    """How one kind of destination is written: declared by its channel (the class's
    ``uri``), read by :func:`core.channels.parse_destination` and
    :meth:`Destination.redacted`."""

    #: The URI scheme, the channel's ``kind``.
    kind: str
    #: A destination as people write it, e.g. ``slack:C0123ABC``.
    example: str
    #: Checks a target (what follows ``kind:``); raises InvalidInput in one sentence
    #: that quotes ``raw``, the whole URI as given: ``check(raw, target)``.
    check: Callable[[str, str], None]
    #: The URI fit for logs and audit rows (None: it carries no secret).
    redact: Callable[[Destination], str] | None = None
    #: The URI its owner and the admins see (None: :attr:`redact`'s, as everyone).
    owner_view: Callable[[Destination], str] | None = None
    #: ``kind:@<user id>`` is a direct message from the bot to that person.
    direct_messages: bool = False
    #: The settings the channel reads (fields of :class:`core.settings.Settings`).
    settings: tuple[str, ...] = ()


#: Destination kinds that are a person (their own zone applies with "their time").
PERSON_KINDS = frozenset({"email", "sms", "push"})


def person_of(destination: Destination) -> str | None:
    """The member id a person's destination names (``slack:@U1`` → ``slack:U1``,
    ``push:slack:U1`` → ``slack:U1``: that member's devices, ``email:a@example.com`` as
    itself), or None for a room (a channel, a webhook): whose zone and preferences
    apply to a message sent there."""
    recipient = destination.recipient
    if recipient is not None:
        return recipient
    if destination.kind == "push":
        return destination.target
    if destination.kind in PERSON_KINDS:
        return str(destination)
    return None


# --- channels by name ----------------------------------------------------------------

#: ``#name``, and for Discord ``@<server id>`` after it.
_CHANNEL_NAME = re.compile(r"#([^\s#@/<>]{1,80})(?:@(\S*))?")
#: Kinds whose channels can be named.
NAMED_KINDS = ("slack", "discord")


@dataclass(frozen=True)
class ChannelName:
    """A channel written by name (``slack:#deploys``, ``discord:#general@<server id>``),
    to be looked up: ``name`` without ``#``, in lower case; ``server`` the Discord
    server it was named on (None: not said)."""

    kind: str
    name: str
    server: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}:#{self.name}" + (f"@{self.server}" if self.server else "")


def channel_name(uri: str) -> ChannelName | None:
    """The channel ``uri`` names (``slack:#deploys``, ``discord:#general@123…``), or
    None when it is written some other way (an id, or another kind)."""
    kind, sep, target = uri.strip().partition(":")
    kind = kind.lower()
    if not sep or kind not in NAMED_KINDS:
        return None
    found = _CHANNEL_NAME.fullmatch(target.strip())
    if found is None:
        return None
    server = found.group(2)
    if server is not None and kind != "discord":
        return None
    return ChannelName(kind, found.group(1).lower(), server or None)


@runtime_checkable
class ChannelDirectory(Protocol):
    """The port through which a channel name is looked up: the platform's channel
    (``core.channels.slack.SlackChannel``, ``core.channels.discord.DiscordChannel``)
    asks its API. Implementations raise InvalidInput, in one sentence, when they
    cannot look names up (no token: :func:`names_need_connection`) or the platform
    cannot be asked just now."""

    async def channels_named(self, name: ChannelName) -> list[str]:
        """The ids of the channels named ``name.name`` the bot can see (on
        ``name.server``, for Discord): none, one, or several."""
        ...


@runtime_checkable
class ChannelViewers(Protocol):
    """The port through which Herald asks a platform whether a member can see a
    channel (its agenda is theirs to read): ``core.channels.slack.SlackChannel`` and
    ``core.channels.discord.DiscordChannel`` ask their APIs. Implementations raise
    InvalidInput, in one sentence, when the platform cannot be asked (no token, an
    error), and answer False for a channel of another workspace or server than
    ``tenant``."""

    async def member_sees(self, destination: Destination, user: str, *, tenant: str) -> bool:
        """Whether the platform user ``user`` (``U0123``, a Discord user id) of
        ``tenant`` (``slack:T…``, ``discord:<guild>``) can see the channel
        ``destination``."""
        ...


def names_need_connection(kind: str) -> str:
    """Why a ``#name`` is refused where the platform is not connected."""
    if kind == "discord":
        return (
            "Channel names (discord:#general@<server id>) need Herald's Discord "
            "connection (DISCORD_BOT_TOKEN) to be looked up: use the channel id, e.g. "
            "discord:123456789012345678 (Developer Mode, right-click the channel, "
            "Copy Channel ID)."
        )
    return (
        "Channel names (slack:#deploys) need Herald's Slack connection (SLACK_BOT_TOKEN) "
        "to be looked up: use the channel id, e.g. slack:C0123ABC (the channel's "
        "details, at the bottom)."
    )


def no_channel_named(name: str, hint: str, *, where: str = "", what: str = "public channel") -> str:
    """No channel has that name: the sentence every surface says (Slack's ``/schedule``
    with its own ``hint``)."""
    return (
        f"There is no {what} named `#{name}`{where} that Herald can see: check the "
        f"spelling, or {hint}."
    )


def several_channels_named(name: str, shown: str, hint: str) -> str:
    """More than one channel has that name (``shown`` lists them)."""
    return f"Several channels are named `#{name}` ({shown}): {hint}."


def one_channel(found: ChannelName, ids: list[str]) -> str:
    """The destination of the one channel ``ids`` holds (``slack:C0123``); InvalidInput
    with the sentences of :func:`no_channel_named` and :func:`several_channels_named`."""
    if len(ids) == 1:
        return f"{found.kind}:{ids[0]}"
    if not ids and found.kind == "discord":
        hint = "use its id, e.g. discord:123456789012345678"
        where = f" on Discord server {found.server}"
        raise InvalidInput(no_channel_named(found.name, hint, where=where, what="text channel"))
    if not ids:
        hint = "use its id, e.g. slack:C0123ABC (a private channel is found only by its id)"
        raise InvalidInput(no_channel_named(found.name, hint))
    shown = ", ".join(f"{found.kind}:{i}" for i in ids)
    raise InvalidInput(several_channels_named(found.name, shown, "use the id of the one you mean"))


# --- what several syntaxes share ---------------------------------------------------


def url_parts(raw: str, target: str, example: str) -> SplitResult:
    """``urlsplit`` that turns malformed URLs (bad IPv6 brackets, ports) into InvalidInput."""
    try:
        parts = urlsplit(target)
        _ = parts.hostname, parts.port
    except ValueError as exc:
        raise InvalidInput(f"{raw!r} is not a valid URL ({exc}): use {example}.") from exc
    return parts


def redact_url_path(destination: Destination) -> str:
    """A URL destination with its path and query (which often carry a secret token)
    hidden: ``webhook:https://example.com/…``."""
    try:
        parts = urlsplit(destination.target)
        host = parts.hostname
    except ValueError:
        return f"{destination.kind}:…"
    return f"{destination.kind}:{parts.scheme}://{host}/…"


#: A path segment this long with letters and digits, or this long of token characters
#: alone, is taken for a secret (Slack's and Discord's webhook tokens, UUIDs, keys).
_MIXED_SECRET, _PLAIN_SECRET = 16, 24
_TOKEN_SEGMENT = re.compile(r"[A-Za-z0-9_\-.~=+]+")


def _secret_segment(segment: str) -> bool:
    if len(segment) >= _PLAIN_SECRET and _TOKEN_SEGMENT.fullmatch(segment):
        return True
    letters = any(c.isalpha() for c in segment)
    digits = any(c.isdigit() for c in segment)
    if len(segment) >= _MIXED_SECRET and letters and digits:
        return True
    return scrub_credentials(segment) != segment  # xoxb-…, whsec_…, token=…


def owner_url_view(destination: Destination) -> str:
    """A URL destination as its owner and the admins see it: scheme, host, port and
    path, with each path segment that looks like a secret, the query, the fragment and
    any user info shown as ``…``: ``webhook:https://hooks.slack.com/services/T0/B0/…``,
    ``webhook:http://127.0.0.1:8080/deploy?…``."""
    try:
        parts = urlsplit(destination.target)
        host, port = parts.hostname, parts.port
    except ValueError:
        return redact_url_path(destination)
    if not host:
        return redact_url_path(destination)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    path = "/".join("…" if _secret_segment(s) else s for s in parts.path.split("/"))
    hidden = "?…" if parts.query or parts.fragment else ""
    return f"{destination.kind}:{parts.scheme}://{netloc}{path}{hidden}"


def nothing_after(kind: str) -> Callable[[str, str], None]:
    """The check of a kind that takes no target (``log:``)."""

    def check(raw: str, target: str) -> None:
        if target:
            raise InvalidInput(f"{kind}: takes nothing after the colon; use {kind}: alone.")

    return check
