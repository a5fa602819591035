"""The fake Slack of :mod:`tests.fakes.slack_app` with Socket Mode: ``apps.connections.open``
(answered for the app-level token) hands out ``ws://…/socket``, where the app's
WebSocket connects; :meth:`FakeSlackSocket.push` sends it an envelope and the app's
acknowledgement lands in :attr:`FakeSlackSocket.acks`."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_app import FakeSlackApp


class FakeSlackSocket(FakeSlackApp):
    def __init__(self, *args: Any, app_token: str = "xapp-1-test-app-token", **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.app_token = app_token
        #: Envelope acknowledgements the app sent back, in order.
        self.acks: list[dict[str, Any]] = []
        self.connected = asyncio.Event()
        self._sockets: list[web.WebSocketResponse] = []
        self._envelopes = itertools.count(1)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/socket", self._socket)
        super().add_routes(router)

    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.match_info["method"] != "apps.connections.open":
            return await super()._dispatch(request)
        auth = self.requests[-1].headers.get("authorization", "")
        if auth.removeprefix("Bearer ").strip() != self.app_token:
            return self._error("invalid_auth")
        ws_url = self.url.replace("http://", "ws://") + "/socket"
        return self._answer({"ok": True, "url": ws_url})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": 1})
        self.connected.set()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                self.acks.append(message.json())
                self._notify()
        return ws

    async def push(self, kind: str, payload: dict[str, Any]) -> str:
        """Send an envelope of ``kind`` (``slash_commands``, ``interactive``,
        ``events_api``) to the connected app; returns its envelope id."""
        envelope_id = f"env-{next(self._envelopes)}"
        await self._sockets[-1].send_json(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "accepts_response_payload": kind != "events_api",
                "payload": payload,
            }
        )
        return envelope_id

    async def stop(self) -> None:
        for ws in self._sockets:
            await ws.close()
        await super().stop()
