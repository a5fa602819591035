"""A small aiohttp server on 127.0.0.1 that records requests and plays scripted answers.

Subclasses add the provider's routes. Every request is recorded (also those answered by a
script) in :attr:`FakeHTTPServer.requests`. :meth:`FakeHTTPServer.script` queues answers
that are played, in order, before the normal behaviour, for requests whose
``"METHOD /path"`` contains ``on``; a :class:`Scripted` answer with ``stall=True`` holds
the request open until the server stops (for client timeout tests: no wall-clock sleep).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import parse_qsl

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorded:
    """One request as the server saw it. Header names are lower case."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode()))

    def params(self) -> dict[str, Any]:
        """The arguments, whichever way they came: JSON body, form body or query."""
        kind = self.headers.get("content-type", "")
        if kind.startswith("application/json") and self.body:
            data = self.json()
            return data if isinstance(data, dict) else {}
        if kind.startswith("application/x-www-form-urlencoded"):
            return {**self.query, **self.form()}
        return dict(self.query)


@dataclass
class Scripted:
    """A canned answer: a status with a JSON or raw body and headers, or a stall."""

    status: int = 200
    json: Any = None
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False


class FakeHTTPServer:
    """Base of the fakes. Use as ``async with Fake() as fake:`` or start()/stop()."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripts: list[tuple[str, deque[Scripted]]] = []
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> Self:
        app = web.Application(middlewares=[self._middleware])
        self.add_routes(app.router)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    def release(self) -> None:
        """Let stalled requests answer (503)."""
        self._release.set()

    async def stop(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- scripting and records ---------------------------------------------------------
    def script(self, *answers: Scripted, on: str = "") -> None:
        """Play ``answers`` (in order) to the next requests whose "METHOD /path"
        contains ``on`` (every request when empty)."""
        self._scripts.append((on, deque(answers)))

    def requests_to(self, fragment: str) -> list[Recorded]:
        """The recorded requests whose "METHOD /path" contains ``fragment``."""
        return [r for r in self.requests if fragment in f"{r.method} {r.path}"]

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Subclasses add the provider's routes here."""

    # -- machinery ---------------------------------------------------------------------
    def _next_script(self, key: str) -> Scripted | None:
        for on, answers in self._scripts:
            if answers and on in key:
                return answers.popleft()
        return None

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(
                request.method,
                request.path,
                dict(request.query),
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        scripted = self._next_script(f"{request.method} {request.path}")
        if scripted is None:
            return await handler(request)
        if scripted.stall:
            await self._release.wait()
            return web.Response(status=503)
        if scripted.json is not None:
            return web.json_response(
                scripted.json, status=scripted.status, headers=scripted.headers
            )
        body = scripted.body.encode() if isinstance(scripted.body, str) else scripted.body
        return web.Response(body=body, status=scripted.status, headers=scripted.headers)


def unused_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
