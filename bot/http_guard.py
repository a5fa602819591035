"""Limits that keep an HTTP port of Herald's from being held by hostile clients.

``herald run`` serves health, metrics, calendar feeds and Slack's HTTP mode on one port;
whatever happens there must not cost the dispatcher its file descriptors or its loop.
:func:`start_guarded` serves an aiohttp app behind these limits (:class:`HttpLimits`):

- **connections**: at most ``max_connections`` open at once; one more is answered
  ``503 Service Unavailable`` and closed (it never reaches aiohttp): it has
  :data:`REFUSE_LINGER` seconds to read the answer, and while ``max_connections``
  refused ones are still closing, a further one is cut without it;
- **header timeout**: a new connection has ``header_timeout`` seconds to send its first
  request line and headers, however it trickles them;
- **idle timeout**: a keep-alive connection waiting for its next request (or trickling its
  headers) is closed after ``idle_timeout`` seconds (aiohttp's keep-alive timer);
- **body**: each route declares the most it reads (:func:`body_limit`; none by default), a
  larger ``Content-Length`` is answered 413 before any of it is read, and
  :func:`read_body` reads a body within ``max_body`` bytes and ``body_timeout`` seconds.

Refusals are counted and logged at most once every :data:`LOG_EVERY` seconds (a flood
of them must not become a flood of log lines).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from core.settings import Settings

log = logging.getLogger(__name__)

#: Seconds between two log lines about refused connections.
LOG_EVERY = 10.0
#: How long a refused connection may take to read its 503 before it is cut.
REFUSE_LINGER = 1.0
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 20\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n\r\n"
    b"Too many connections"
)
_LIMIT_KEY = web.AppKey("herald_body_limits", dict)
#: Path prefix -> how a refusal under it is answered (status, sentence) -> response;
#: the HTTP API answers in application/problem+json.
_REFUSAL_KEY = web.AppKey("herald_refusal_formats", dict)


@dataclass(frozen=True)
class HttpLimits:
    """The limits of one HTTP port (see the module docstring)."""

    header_timeout: float
    idle_timeout: float
    body_timeout: float
    max_connections: int
    max_body: int

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpLimits:
        return cls(
            header_timeout=settings.http_header_timeout,
            idle_timeout=settings.http_idle_timeout,
            body_timeout=settings.http_body_timeout,
            max_connections=settings.http_max_connections,
            max_body=settings.http_max_body,
        )


class _Refusals:
    """Counts refused connections and slow clients; logs a summary now and then."""

    def __init__(self) -> None:
        self.counts = {"busy": 0, "slow headers": 0}
        self._logged: dict[str, int] = dict.fromkeys(self.counts, 0)
        self._last = 0.0

    def add(self, reason: str, open_now: int) -> None:
        self.counts[reason] += 1
        now = time.monotonic()
        if now - self._last < LOG_EVERY:
            return
        self._last = now
        news = {k: v - self._logged[k] for k, v in self.counts.items() if v > self._logged[k]}
        self._logged = dict(self.counts)
        log.warning(
            "http clients cut off: %s",
            ", ".join(f"{n} {reason}" for reason, n in news.items()),
            extra={"open_connections": open_now},
        )


class ConnectionGate:
    """Makes the protocol of each accepted connection; holds the count of open ones."""

    def __init__(self, limits: HttpLimits, make_handler: Callable[[], RequestHandler]) -> None:
        self.limits = limits
        self.make_handler = make_handler
        #: Connections being served now (refused ones are not counted).
        self.open = 0
        #: Refused connections still reading their 503.
        self.lingering = 0
        self.refusals = _Refusals()

    def __call__(self) -> asyncio.Protocol:
        return _Gated(self)


class _Gated(asyncio.Protocol):
    """One connection: aiohttp's handler behind the cap and the header timeout."""

    def __init__(self, gate: ConnectionGate) -> None:
        self.gate = gate
        self.inner: RequestHandler | None = None
        self.transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""
        self._refused = False
        self._lingering = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though not always a subclass of asyncio.Transport (uvloop's)
        self.transport = transport = cast(asyncio.Transport, transport)
        gate = self.gate
        loop = asyncio.get_running_loop()
        if gate.open >= gate.limits.max_connections:
            self._refused = True
            gate.refusals.add("busy", gate.open)
            transport.write(_BUSY)
            if gate.lingering >= gate.limits.max_connections or not transport.can_write_eof():
                transport.abort()
                return
            transport.write_eof()  # the client reads the 503, then we hang up
            gate.lingering += 1
            self._lingering = True
            self._timer = loop.call_later(REFUSE_LINGER, transport.abort)
            return
        gate.open += 1
        self.inner = gate.make_handler()
        self.inner.connection_made(transport)
        self._timer = loop.call_later(gate.limits.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._timer = None
        if self.transport is not None:
            self.gate.refusals.add("slow headers", self.gate.open)
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return  # refused: whatever it sends is dropped
        if self._timer is not None:  # the first request's headers are not complete yet
            window = self._tail + data
            if b"\r\n\r\n" in window or b"\n\n" in window:
                self._timer.cancel()
                self._timer = None
                self._tail = b""
            else:
                self._tail = window[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self.inner is None:
            return None
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.transport = None
        if self._lingering:
            self.gate.lingering -= 1
        if self._refused:
            return
        self.gate.open -= 1
        if self.inner is not None:
            self.inner.connection_lost(exc)
            self.inner = None


class GuardedSite(web.BaseSite):
    """A TCP site whose connections pass a :class:`ConnectionGate`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, limits: HttpLimits) -> None:
        super().__init__(runner, backlog=max(128, min(limits.max_connections, 4096)))
        self._host = host
        self._port = port
        self.limits = limits
        self.gate: ConnectionGate | None = None
        #: The port bound (the one asked for, or the one picked for 0).
        self.port = port

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self.gate = ConnectionGate(self.limits, server)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self.gate, self._host, self._port, backlog=self._backlog
        )
        if self._server.sockets:
            self.port = self._server.sockets[0].getsockname()[1]


def body_limit(app: web.Application, path: str, max_bytes: int) -> None:
    """Declare that requests to ``path`` may carry up to ``max_bytes`` of body (every
    other route takes none). A ``path`` ending in ``/`` covers every path under it;
    an exact path wins over such a prefix, a longer prefix over a shorter."""
    app[_LIMIT_KEY][path] = max_bytes


def refusal_format(
    app: web.Application, prefix: str, respond: Callable[[int, str], web.Response]
) -> None:
    """Answer a refused body under ``prefix`` with ``respond(status, sentence)``."""
    app[_REFUSAL_KEY][prefix] = respond


def _limit_for(limits: dict[str, int], path: str) -> int:
    if path in limits:
        return limits[path]
    best = -1, 0
    for prefix, size in limits.items():
        if prefix.endswith("/") and path.startswith(prefix) and len(prefix) > best[0]:
            best = len(prefix), size
    return best[1]


def guarded_app() -> web.Application:
    """An aiohttp app whose routes take no request body unless :func:`body_limit` says."""
    app = web.Application(middlewares=[_refuse_large_bodies])
    app[_LIMIT_KEY] = {}
    app[_REFUSAL_KEY] = {}
    return app


@web.middleware
async def _refuse_large_bodies(request: web.Request, handler: Any) -> web.StreamResponse:
    limit = _limit_for(request.app[_LIMIT_KEY], request.path)
    length = request.content_length
    if (length is not None and length > limit) or (limit == 0 and request.body_exists):
        log.warning(
            "http request refused: body over its limit",
            extra={"status": 413, "path": request.path, "remote": request.remote},
        )
        response = _too_large(limit)
        for prefix, respond in request.app[_REFUSAL_KEY].items():
            if request.path.startswith(prefix):
                return respond(413, response.text.strip() if response.text else "")
        return response
    return await handler(request)  # type: ignore[no-any-return]


def _too_large(limit: int) -> web.Response:
    what = f"at most {limit:,} bytes" if limit else "no body"
    return web.Response(status=413, text=f"This address takes {what}.\n")


class BodyRefused(Exception):
    """A request body over its limit or too slow; ``response`` is the answer to give."""

    def __init__(self, response: web.Response, reason: str) -> None:
        super().__init__(reason)
        self.response = response
        self.reason = reason


async def read_body(request: web.Request, limits: HttpLimits) -> bytes:
    """The whole body, read within ``limits.max_body`` bytes and ``limits.body_timeout``
    seconds (a chunked body is counted as it arrives). Raises :class:`BodyRefused`."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.body_timeout):
            while chunk := await request.content.read(64 * 1024):
                size += len(chunk)
                if size > limits.max_body:
                    raise BodyRefused(_too_large(limits.max_body), "body over its limit")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyRefused(
            web.Response(status=408, text="The request body came too slowly.\n"),
            "body too slow",
        ) from None
    return b"".join(chunks)


async def start_guarded(
    app: web.Application,
    host: str,
    port: int,
    limits: HttpLimits,
    *,
    shutdown_timeout: float = 60.0,
) -> tuple[web.AppRunner, GuardedSite]:
    """Serve ``app`` on ``host:port`` behind ``limits``; ``cleanup()`` the runner at
    shutdown (running handlers get ``shutdown_timeout`` s). Raises OSError when the
    address cannot be bound (the runner is cleaned up)."""
    runner = web.AppRunner(
        app,
        access_log=None,
        shutdown_timeout=shutdown_timeout,
        keepalive_timeout=limits.idle_timeout,
        lingering_time=min(limits.body_timeout, 10.0),
        max_headers=64,
    )
    await runner.setup()
    site = GuardedSite(runner, host, port, limits)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return runner, site
