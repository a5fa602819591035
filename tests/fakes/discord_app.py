"""A fake Discord for a discord.py bot: :class:`~tests.fakes.discord.FakeDiscord`'s REST
API plus what logging in needs, command registration and a minimal gateway.

Extra routes (under ``/api/v10``):

- ``GET /users/@me`` and ``GET /oauth2/applications/@me``: the bot user and its
  application (401 without the bot token).
- ``PUT /applications/{app}/commands`` and ``…/guilds/{guild}/commands``: bulk overwrite;
  the commands are kept in :attr:`FakeDiscordApp.commands` keyed by guild id (None: global).
- ``GET /gateway/bot``: the URL of this server's gateway, ``ws://…/gateway``.
- ``PATCH /channels/{id}/messages/{message}``: edit a message.

The gateway (``GET /gateway``, a websocket) says HELLO, answers IDENTIFY with READY
(no guilds) and acknowledges heartbeats; it never sends anything else. Messages are
stored in the full shape discord.py reads (author, flags, components...).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord import DiscordChannelState, FakeDiscord, _error

APPLICATION_ID = "1300000000000000001"
BOT_USER = {
    "id": APPLICATION_ID,
    "username": "Herald",
    "discriminator": "0",
    "global_name": None,
    "avatar": None,
    "bot": True,
    "flags": 0,
}


class FakeDiscordApp(FakeDiscord):
    """FakeDiscord with login, command sync and a gateway that stays quiet."""

    def __init__(self, token: str = "bot-test-token", **kwargs: Any) -> None:
        super().__init__(token, **kwargs)
        #: guild id (None for global) -> the commands last registered there
        self.commands: dict[str | None, list[dict[str, Any]]] = {}
        #: the gateway payloads the bot sent (IDENTIFY, heartbeats)
        self.gateway_received: list[dict[str, Any]] = []
        #: set when a bot has identified on the gateway
        self.identified = asyncio.Event()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        response = await super()._middleware(request, handler)
        if isinstance(response, web.Response) and response.content_type == "application/json":
            response.charset = None  # discord.py reads JSON only as exactly application/json
        return response

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/api/v10/users/@me", self._me)
        router.add_get("/api/v10/oauth2/applications/@me", self._application)
        router.add_put("/api/v10/applications/{app}/commands", self._put_commands)
        router.add_put("/api/v10/applications/{app}/guilds/{guild}/commands", self._put_commands)
        router.add_get("/api/v10/gateway/bot", self._gateway_bot)
        router.add_get("/gateway", self._gateway)
        router.add_patch("/api/v10/channels/{id}/messages/{message}", self._edit_message)
        super().add_routes(router)

    async def _me(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        return web.json_response(BOT_USER)

    async def _application(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        return web.json_response(
            {
                "id": APPLICATION_ID,
                "name": "Herald",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": {**BOT_USER, "id": "1300000000000000099", "bot": False},
                "verify_key": "0" * 64,
                "flags": 0,
            }
        )

    async def _put_commands(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        guild = request.match_info.get("guild")
        stored = []
        for number, command in enumerate(self.requests[-1].json(), start=1):
            extra = {"guild_id": guild} if guild else {}
            stored.append(
                {
                    "id": str(1_400_000_000_000_000_000 + number),
                    "application_id": request.match_info["app"],
                    "version": "1",
                    "default_member_permissions": None,
                    **command,
                    **extra,
                }
            )
        self.commands[guild] = stored
        return web.json_response(stored)

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "401: Unauthorized", 0)
        return web.json_response(
            {
                "url": f"ws://127.0.0.1:{self.port}/gateway",
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        )

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 45000}}))
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                break
            payload = json.loads(message.data)
            self.gateway_received.append(payload)
            if payload.get("op") == 1:  # heartbeat
                await ws.send_str(json.dumps({"op": 11}))
            elif payload.get("op") == 2:  # identify
                self.identified.set()
                await ws.send_str(json.dumps(self._ready()))
        return ws

    def _ready(self) -> dict[str, Any]:
        return {
            "op": 0,
            "s": 1,
            "t": "READY",
            "d": {
                "v": 10,
                "user": BOT_USER,
                "guilds": [],
                "session_id": "fake-session",
                "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
                "application": {"id": APPLICATION_ID, "flags": 0},
            },
        }

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if isinstance(channel, web.Response):
            return channel
        for message in channel.messages:
            if message["id"] == request.match_info["message"]:
                message.update(self.requests[-1].json())
                return web.json_response(message)
        return _error(404, "Unknown Message", 10008)

    def _store(
        self, channel: DiscordChannelState, payload: dict[str, Any], author: dict[str, Any]
    ) -> dict[str, Any]:
        message = super()._store(channel, payload, author)
        message.update(
            type=0,
            author={"discriminator": "0", "avatar": None, "global_name": None, **author},
            components=payload.get("components", []),
            attachments=[],
            mentions=[],
            mention_roles=[],
            mention_everyone=False,
            pinned=False,
            tts=False,
            timestamp="2026-03-02T12:00:00.000000+00:00",
            edited_timestamp=None,
            flags=payload.get("flags", 0),
        )
        return message
