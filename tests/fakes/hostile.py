"""A hostile (or just ordinary) HTTP server on a loopback address of the test's choice,
for the network guard and the calendar fetch limits.

Tests run two of them on the same port, one on 127.0.0.2 standing in for a public
server (the test's guard treats that address as outside) and one on 127.0.0.1 standing
in for something inside the network: whatever reaches the inside one is a leak.

Routes (every request is recorded in :attr:`HostileServer.requests` as ``(path, Host
header)``):

- ``/ok`` answers :attr:`HostileServer.body` (a calendar by default), 200;
- ``/hops/{n}`` redirects to ``/hops/{n-1}``, and ``/hops/0`` to ``/ok``;
- ``/to?url=...`` redirects to that URL;
- ``/secret`` answers 500 with a body and a reason phrase that must never be quoted;
- ``/trickle`` sends one byte every ``trickle_every`` seconds, forever;
- ``/endless`` streams zeros forever (``?declared=N`` first announces N bytes);
- ``/bomb`` a small gzip body that inflates to 64 MB.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
from functools import cache
from typing import Self

from aiohttp import web

SECRET_BODY = "INTERNAL-ONLY admin token 7f3a"
SECRET_REASON = "Internal Vault Sealed"
CALENDAR = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nX-WR-CALNAME:Fetched\r\n"
    "BEGIN:VEVENT\r\nUID:1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;VALUE=DATE:20260501\r\n"
    "SUMMARY:Labour Day\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


class HostileServer:
    def __init__(self, host: str, port: int = 0, *, trickle_every: float = 0.05) -> None:
        self.host = host
        self.port = port
        self.trickle_every = trickle_every
        self.body = CALENDAR.encode()
        self.requests: list[tuple[str, str]] = []
        #: Bytes of body the endless routes managed to write.
        self.sent = 0
        self._runner: web.AppRunner | None = None

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/ok", self._ok)
        app.router.add_route("*", "/hops/{n}", self._hops)
        app.router.add_route("*", "/to", self._to)
        app.router.add_get("/secret", self._secret)
        app.router.add_get("/trickle", self._trickle)
        app.router.add_get("/endless", self._endless)
        app.router.add_get("/bomb", self._bomb)
        app.router.add_post("/{tail:.*}", self._ok)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _record(self, request: web.Request) -> None:
        self.requests.append((request.path_qs, request.headers.get("Host", "")))

    async def _ok(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        return web.Response(body=self.body, content_type="text/calendar")

    async def _hops(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        n = int(request.match_info["n"])
        raise web.HTTPFound("/ok" if n <= 0 else f"/hops/{n - 1}")

    async def _to(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        raise web.HTTPFound(request.query["url"])

    async def _secret(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        return web.Response(status=500, reason=SECRET_REASON, text=SECRET_BODY)

    async def _trickle(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(headers={"Content-Type": "text/calendar"})
        await response.prepare(request)
        while True:  # the client has to give up
            await response.write(b"X")
            await asyncio.sleep(self.trickle_every)

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        headers = {"Content-Type": "text/calendar"}
        if "declared" in request.query:
            headers["Content-Length"] = request.query["declared"]
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        chunk = b"0" * 65536
        while True:
            await response.write(chunk)
            self.sent += len(chunk)

    async def _bomb(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        return web.Response(
            body=_bomb(), headers={"Content-Encoding": "gzip", "Content-Type": "text/calendar"}
        )


@cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
