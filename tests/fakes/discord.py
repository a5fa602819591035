"""A fake Discord REST API (v10): channel messages as a bot, and channel webhooks.

Routes (under ``/api/v10`` and, for webhooks, also ``/api``):

- ``POST /channels/{id}/messages`` with ``Authorization: Bot <token>``: 401 without it,
  404 ``Unknown Channel`` (10003), 403 ``Missing Access`` (50001) or ``Missing Permissions``
  (50013), 400 for an empty or too long message or a nonce over 25 characters; a repeated
  ``nonce`` with ``enforce_nonce`` returns the message already created. Rate limits per
  channel bucket with the real headers, and 429 ``{"retry_after", "global"}`` when spent.
- ``GET /channels/{id}``: the channel (https://discord.com/developers/docs/resources/
  channel#channel-object: ``type``, ``guild_id``, ``parent_id``,
  ``permission_overwrites`` with ``allow``/``deny`` as strings), or 401/403/404 as above.
- ``GET /guilds/{id}`` (https://discord.com/developers/docs/resources/guild#get-guild):
  the server with ``owner_id`` and ``roles`` (each role's ``permissions`` a string;
  @everyone's id is the server's); ``GET /guilds/{id}/roles`` the roles alone.
- ``GET /guilds/{id}/members/{user}`` (…/guild#get-guild-member): the member and its
  role ids, 404 ``Unknown Member`` (10007) for someone not on the server.
- ``GET /channels/{id}/thread-members/{user}`` (…/channel#get-thread-member): a thread
  member, 404 ``Unknown Member`` (10007) when the user is not in that thread.
- ``GET /guilds/{id}/channels`` (https://discord.com/developers/docs/resources/guild#
  get-guild-channels): the server's text channels the bot can view, with their names;
  404 ``Unknown Guild`` (10004) for another server.
- ``POST /users/@me/channels {"recipient_id"}`` (https://discord.com/developers/docs/
  resources/user#create-dm): the DM channel (type 1) with a user added with
  :meth:`FakeDiscord.add_user`, the same one each time; 404 ``Unknown User`` (10013)
  for anyone else. A message to a user who takes no DMs from the bot is refused with
  403 ``Cannot send messages to this user`` (50007), as Discord does.
- ``POST|GET /webhooks/{id}/{token}``: execute (``?wait=true`` returns the message, else
  204) or read a webhook; 404 ``Unknown Webhook`` (10015), 401 ``Invalid Webhook Token``.
  Components are dropped, as Discord drops them from a webhook no application owns.
- ``PATCH /webhooks/{id}/{token}/messages/{message}``: edit a message the webhook sent
  (recorded in :attr:`FakeDiscord.edits`).

Time for the rate limits comes from ``clock`` (monotonic seconds), so tests can move it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import FakeHTTPServer


@dataclass
class DiscordChannelState:
    id: str
    can_view: bool = True
    can_send: bool = True
    #: A DM channel: the user it is with (None for a server channel).
    recipient: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    window_start: float = 0.0
    used: int = 0
    #: Its name on the server (``chan-<id>`` when not given).
    name: str | None = None
    #: Its server (None: the fake's own), type (0 text; 10, 11, 12 threads) and, for a
    #: thread, its channel.
    guild_id: str | None = None
    type: int = 0
    parent_id: str | None = None
    #: Discord's overwrites: ``{"id", "type" (0 role, 1 member), "allow", "deny"}``.
    overwrites: list[dict[str, Any]] = field(default_factory=list)
    #: A thread's members (user ids).
    thread_members: set[str] = field(default_factory=set)


def _error(status: int, message: str, code: int, **extra: Any) -> web.Response:
    return web.json_response({"message": message, "code": code, **extra}, status=status)


class FakeDiscord(FakeHTTPServer):
    """A guild with one bot token, some channels and some webhooks."""

    def __init__(
        self,
        token: str = "bot-test-token",
        *,
        bucket_limit: int = 5,
        bucket_window: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        guild_id: str = "700000000000000001",
    ) -> None:
        super().__init__()
        self.token = token
        #: The server every channel belongs to.
        self.guild_id = guild_id
        self.bucket_limit = bucket_limit
        self.bucket_window = bucket_window
        self.clock = clock
        self.channels: dict[str, DiscordChannelState] = {}
        #: webhook id -> (token, channel id)
        self.webhooks: dict[str, tuple[str, str]] = {}
        self._ids = itertools.count(1_100_000_000_000_000_000)
        #: user id -> whether they take direct messages from the bot.
        self.users: dict[str, bool] = {}
        #: user id -> their DM channel's id.
        self.dms: dict[str, str] = {}
        #: Every edit: the JSON plus ``channel_id`` and ``message_id``.
        self.edits: list[dict[str, Any]] = []
        #: The server's owner, its roles (role id -> permissions; @everyone's id is the
        #: server's: View Channel and Send Messages unless a test changes it) and its
        #: members (user id -> their role ids).
        self.owner_id = "1"
        self.roles: dict[str, int] = {guild_id: (1 << 10) | (1 << 11)}
        self.members: dict[str, list[str]] = {}

    def add_member(self, user_id: str, *roles: str) -> None:
        """A member of the server, with ``roles`` (role ids, each added to the server's
        roles with no permission unless it is there already)."""
        for role in roles:
            self.roles.setdefault(role, 0)
        self.members[user_id] = list(roles)

    def overwrite(self, channel_id: str, target: str, *, allow: int = 0, deny: int = 0) -> None:
        """A permission overwrite on a channel for a role or a member (a member when
        ``target`` is one of :attr:`members`, else a role)."""
        kind = 1 if target in self.members else 0
        self.channels[channel_id].overwrites.append(
            {"id": target, "type": kind, "allow": str(allow), "deny": str(deny)}
        )

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v10"

    def add_channel(
        self,
        channel_id: str,
        *,
        can_view: bool = True,
        can_send: bool = True,
        name: str | None = None,
        guild_id: str | None = None,
        type: int = 0,
        parent_id: str | None = None,
    ) -> DiscordChannelState:
        self.channels[channel_id] = DiscordChannelState(
            channel_id,
            can_view,
            can_send,
            name=name,
            guild_id=guild_id,
            type=type,
            parent_id=parent_id,
        )
        return self.channels[channel_id]

    def add_webhook(self, webhook_id: str, token: str, channel_id: str) -> str:
        """Register a webhook posting into ``channel_id``; returns its URL."""
        if channel_id not in self.channels:
            self.add_channel(channel_id)
        self.webhooks[webhook_id] = (token, channel_id)
        return f"{self.url}/api/webhooks/{webhook_id}/{token}"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """All messages created, in every channel."""
        return [m for c in self.channels.values() for m in c.messages]

    def add_user(self, user_id: str, *, takes_dms: bool = True) -> None:
        self.users[user_id] = takes_dms

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/api/v10/users/@me/channels", self._create_dm)
        router.add_post("/api/v10/channels/{id}/messages", self._create_message)
        router.add_get("/api/v10/channels/{id}", self._get_channel)
        router.add_get("/api/v10/channels/{id}/thread-members/{user}", self._thread_member)
        router.add_get("/api/v10/guilds/{id}", self._guild)
        router.add_get("/api/v10/guilds/{id}/roles", self._guild_roles)
        router.add_get("/api/v10/guilds/{id}/members/{user}", self._guild_member)
        router.add_get("/api/v10/guilds/{id}/channels", self._guild_channels)
        for prefix in ("/api/v10", "/api"):
            router.add_route("*", prefix + "/webhooks/{id}/{token}", self._webhook)
            router.add_patch(
                prefix + "/webhooks/{id}/{token}/messages/{message}", self._edit_webhook_message
            )
        router.add_patch("/api/v10/channels/{id}/messages/{message}", self._edit_message)

    # -- bot routes ----------------------------------------------------------------------
    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bot {self.token}"

    def _channel(self, request: web.Request) -> DiscordChannelState | web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        channel = self.channels.get(request.match_info["id"])
        if channel is None:
            return _error(404, "Unknown Channel", 10003)
        if not channel.can_view:
            return _error(403, "Missing Access", 50001)
        return channel

    async def _create_dm(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        payload = self.requests[-1].json()
        user = str((payload or {}).get("recipient_id", ""))
        if user not in self.users:
            return _error(404, "Unknown User", 10013)
        channel_id = self.dms.get(user)
        if channel_id is None:
            channel_id = self.dms[user] = str(next(self._ids))
            self.channels[channel_id] = DiscordChannelState(channel_id, recipient=user)
        return web.json_response(
            {"id": channel_id, "type": 1, "recipients": [{"id": user, "username": "someone"}]}
        )

    async def _get_channel(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if isinstance(channel, web.Response):
            return channel
        if channel.recipient is not None:  # a DM: no server
            return web.json_response(
                {"id": channel.id, "type": 1, "recipients": [{"id": channel.recipient}]}
            )
        shown: dict[str, Any] = {
            "id": channel.id,
            "type": channel.type,
            "name": channel.name or f"chan-{channel.id}",
            "guild_id": channel.guild_id or self.guild_id,
            "parent_id": channel.parent_id,
        }
        if channel.type not in (10, 11, 12):  # a thread has no overwrites of its own
            shown["permission_overwrites"] = channel.overwrites
        return web.json_response(shown)

    async def _thread_member(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if isinstance(channel, web.Response):
            return channel
        user = request.match_info["user"]
        if channel.type not in (10, 11, 12) or user not in channel.thread_members:
            return _error(404, "Unknown Member", 10007)
        return web.json_response(
            {
                "id": channel.id,
                "user_id": user,
                "join_timestamp": "2026-03-02T12:00:00.000000+00:00",
                "flags": 0,
            }
        )

    def _roles(self) -> list[dict[str, Any]]:
        return [
            {
                "id": role,
                "name": "@everyone" if role == self.guild_id else f"role-{role}",
                "color": 0,
                "hoist": False,
                "position": position,
                "permissions": str(permissions),
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
            for position, (role, permissions) in enumerate(self.roles.items())
        ]

    def _server(self, request: web.Request) -> web.Response | None:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        if request.match_info["id"] != self.guild_id:
            return _error(404, "Unknown Guild", 10004)
        return None

    async def _guild(self, request: web.Request) -> web.Response:
        refused = self._server(request)
        if refused is not None:
            return refused
        return web.json_response(
            {
                "id": self.guild_id,
                "name": "Fake server",
                "owner_id": self.owner_id,
                "roles": self._roles(),
                "emojis": [],
                "features": [],
            }
        )

    async def _guild_roles(self, request: web.Request) -> web.Response:
        refused = self._server(request)
        return refused if refused is not None else web.json_response(self._roles())

    async def _guild_member(self, request: web.Request) -> web.Response:
        refused = self._server(request)
        if refused is not None:
            return refused
        user = request.match_info["user"]
        if user not in self.members:
            return _error(404, "Unknown Member", 10007)
        return web.json_response(
            {
                "user": {"id": user, "username": f"user-{user}", "discriminator": "0"},
                "nick": None,
                "roles": self.members[user],
                "joined_at": "2026-03-01T12:00:00.000000+00:00",
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
        )

    async def _guild_channels(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        if request.match_info["id"] != self.guild_id:
            return _error(404, "Unknown Guild", 10004)
        return web.json_response(
            [
                {
                    "id": c.id,
                    "type": 0,
                    "name": c.name or f"chan-{c.id}",
                    "guild_id": self.guild_id,
                }
                for c in self.channels.values()
                if c.recipient is None and c.can_view and c.guild_id in (None, self.guild_id)
            ]
        )

    def _bucket_headers(self, channel: DiscordChannelState) -> tuple[dict[str, str], float]:
        now = self.clock()
        if now - channel.window_start >= self.bucket_window:
            channel.window_start, channel.used = now, 0
        reset_after = max(0.0, channel.window_start + self.bucket_window - now)
        remaining = max(0, self.bucket_limit - channel.used - 1)
        headers = {
            "X-RateLimit-Limit": str(self.bucket_limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": "f4k3bucket",
        }
        return headers, reset_after

    async def _create_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if isinstance(channel, web.Response):
            return channel
        if not channel.can_send:
            return _error(403, "Missing Permissions", 50013)
        if channel.recipient is not None and not self.users.get(channel.recipient, False):
            return _error(403, "Cannot send messages to this user", 50007)
        headers, reset_after = self._bucket_headers(channel)
        if channel.used >= self.bucket_limit:
            headers["X-RateLimit-Remaining"] = "0"
            headers["Retry-After"] = str(int(reset_after) + 1)
            headers["X-RateLimit-Scope"] = "user"
            body = {
                "message": "You are being rate limited.",
                "retry_after": reset_after,
                "global": False,
            }
            return web.json_response(body, status=429, headers=headers)
        channel.used += 1
        payload = self.requests[-1].json()
        invalid = _check_content(payload)
        if invalid is not None:
            return invalid
        nonce = payload.get("nonce")
        if nonce is not None and len(str(nonce)) > 25:
            return _error(
                400,
                "Invalid Form Body",
                50035,
                errors={"nonce": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH"}]}},
            )
        if nonce is not None and payload.get("enforce_nonce"):
            for existing in channel.messages:
                if existing.get("nonce") == nonce:
                    return web.json_response(existing, headers=headers)
        reference = payload.get("message_reference")
        if isinstance(reference, dict) and reference.get("fail_if_not_exists", True):
            if not any(m["id"] == str(reference.get("message_id")) for m in channel.messages):
                return _form_error("message_reference", "REPLIES_UNKNOWN_MESSAGE")
        message = self._store(channel, payload, {"id": BOT_ID, "username": "Herald", "bot": True})
        return web.json_response(message, headers=headers)

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if isinstance(channel, web.Response):
            return channel
        found = _find(channel, request.match_info["message"])
        if found is None:
            return _error(404, "Unknown Message", 10008)
        if found["author"]["id"] != BOT_ID:
            return _error(403, "Cannot edit a message authored by another user", 50005)
        return self._edit(channel, found, self.requests[-1].json())

    def _edit(
        self, channel: DiscordChannelState, message: dict[str, Any], payload: dict[str, Any]
    ) -> web.Response:
        invalid = _check_components(payload.get("components") or [])
        if invalid is not None:
            return invalid
        if len(str(payload.get("content") or "")) > 2000:
            return _form_error("content", "BASE_TYPE_MAX_LENGTH")
        for key in ("content", "components", "embeds"):
            if key in payload:
                message[key] = payload[key]
        self.edits.append({**payload, "channel_id": channel.id, "message_id": message["id"]})
        return web.json_response(message)

    def _store(
        self, channel: DiscordChannelState, payload: dict[str, Any], author: dict[str, Any]
    ) -> dict[str, Any]:
        message = {
            "id": str(next(self._ids)),
            "channel_id": channel.id,
            "content": payload.get("content", ""),
            "embeds": payload.get("embeds", []),
            "components": payload.get("components", []),
            "nonce": payload.get("nonce"),
            "author": author,
        }
        if payload.get("message_reference") is not None:
            message["message_reference"] = {
                "channel_id": channel.id,
                **payload["message_reference"],
            }
        channel.messages.append(message)
        return message

    # -- webhooks ------------------------------------------------------------------------
    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        webhook_id, token = request.match_info["id"], request.match_info["token"]
        if webhook_id not in self.webhooks:
            return _error(404, "Unknown Webhook", 10015)
        known_token, channel_id = self.webhooks[webhook_id]
        if token != known_token:
            return _error(401, "Invalid Webhook Token", 50027)
        if request.method == "GET":
            return web.json_response(
                {"id": webhook_id, "type": 1, "channel_id": channel_id, "token": token}
            )
        payload = self.requests[-1].json()
        invalid = _check_content(payload)
        if invalid is not None:
            return invalid
        author = {
            "id": webhook_id,
            "username": payload.get("username") or "Captain Hook",
            "avatar_url": payload.get("avatar_url"),
            "bot": True,
        }
        # a webhook no application owns: Discord drops its interactive components
        payload = {k: v for k, v in payload.items() if k != "components"}
        message = self._store(self.channels[channel_id], payload, author)
        if request.query.get("wait") == "true":
            return web.json_response(message)
        return web.Response(status=204)

    async def _edit_webhook_message(self, request: web.Request) -> web.Response:
        webhook_id, token = request.match_info["id"], request.match_info["token"]
        if webhook_id not in self.webhooks:
            return _error(404, "Unknown Webhook", 10015)
        known_token, channel_id = self.webhooks[webhook_id]
        if token != known_token:
            return _error(401, "Invalid Webhook Token", 50027)
        channel = self.channels[channel_id]
        found = _find(channel, request.match_info["message"])
        if found is None or found["author"]["id"] != webhook_id:
            return _error(404, "Unknown Message", 10008)
        payload = {k: v for k, v in self.requests[-1].json().items() if k != "components"}
        return self._edit(channel, found, payload)


#: The author id of the bot's own messages.
BOT_ID = "1"


def _find(channel: DiscordChannelState, message_id: str) -> dict[str, Any] | None:
    return next((m for m in channel.messages if m["id"] == message_id), None)


def _form_error(field: str, code: str) -> web.Response:
    return _error(400, "Invalid Form Body", 50035, errors={field: {"_errors": [{"code": code}]}})


def _check_components(rows: Any) -> web.Response | None:
    """Discord's limits on a message's action rows and their buttons (other kinds of
    component pass unchecked)."""
    if not isinstance(rows, list) or len(rows) > 5:
        return _form_error("components", "BASE_TYPE_BAD_LENGTH")
    for row in rows:
        if not isinstance(row, dict) or row.get("type") != 1:
            continue
        inside = row.get("components")
        if not isinstance(inside, list) or not 1 <= len(inside) <= 5:
            return _form_error("components", "BASE_TYPE_BAD_LENGTH")
        for button in inside:
            if not isinstance(button, dict) or button.get("type") != 2 or "url" in button:
                continue
            if not 1 <= len(str(button.get("custom_id") or "")) <= 100:
                return _form_error("components", "BASE_TYPE_BAD_LENGTH")
            if len(str(button.get("label") or "")) > 80:
                return _form_error("components", "BASE_TYPE_MAX_LENGTH")
    return None


def _check_content(payload: dict[str, Any]) -> web.Response | None:
    invalid = _check_components(payload.get("components") or [])
    if invalid is not None:
        return invalid
    content = str(payload.get("content") or "")
    if not content and not payload.get("embeds"):
        return _error(400, "Cannot send an empty message", 50006)
    if len(content) > 2000:
        return _error(
            400,
            "Invalid Form Body",
            50035,
            errors={"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH"}]}},
        )
    return None
