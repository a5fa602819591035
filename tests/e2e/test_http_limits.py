"""``herald run``'s HTTP port under clients that misbehave: slow headers, idle keep-alive
connections, bodies where none belong, too many connections. Raw sockets on 127.0.0.1
speak to the real app (the one ``serve()`` builds) behind its real limits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.http import Readiness, make_http_app, start_http
from bot.http_guard import HttpLimits
from core.clock import SystemClock
from core.dispatcher import Dispatcher
from core.settings import load_settings
from core.store import Store
from tests.fakes.http import unused_port

GET = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
#: Generous bound on how long the server may take to act on a limit of a fraction of a
#: second (a busy 2-core machine); the tests assert the limit acts, not its precision.
WITHIN = 10.0


@dataclass
class Port:
    port: int
    limits: HttpLimits

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def ask(self, request: bytes = GET) -> bytes:
        """Send ``request`` on a new connection; the whole answer (the server closes)."""
        reader, writer = await self.connect()
        writer.write(request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))
        try:
            async with asyncio.timeout(WITHIN):
                return await reader.read()
        finally:
            writer.close()


@pytest.fixture
async def port(sqlite_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Port]:
    values = {
        "HERALD_HTTP_HEADER_TIMEOUT": 0.5,
        "HERALD_HTTP_IDLE_TIMEOUT": 0.5,
        "HERALD_HTTP_BODY_TIMEOUT": 0.5,
        "HERALD_HTTP_MAX_CONNECTIONS": 8,
        **getattr(request, "param", {}),
    }
    settings = load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None, **values)
    store = await Store.open(sqlite_url)
    dispatcher = Dispatcher(store, {}, clock=SystemClock())
    limits = HttpLimits.from_settings(settings)
    number = unused_port()
    runner = await start_http(
        make_http_app(Readiness(store, dispatcher)), "127.0.0.1", number, limits
    )
    try:
        yield Port(number, limits)
    finally:
        await runner.cleanup()
        await store.close()


async def closed_by_server(reader: asyncio.StreamReader) -> float:
    """Seconds until the server closes the connection (reads and drops what it sends)."""
    started = time.monotonic()
    async with asyncio.timeout(WITHIN):
        while await reader.read(4096):
            pass
    return time.monotonic() - started


@pytest.mark.parametrize("port", [{"HERALD_HTTP_IDLE_TIMEOUT": 60}], indirect=True)
async def test_a_client_trickling_its_headers_is_cut_off(port: Port) -> None:
    reader, writer = await port.connect()
    trickle = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000

    async def send_slowly() -> None:
        for byte in trickle:  # one byte every 50 ms: never a whole header block
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)

    sender = asyncio.create_task(send_slowly())
    try:
        await closed_by_server(reader)
        assert not sender.done(), "the headers were sent in full before the cut"
    finally:
        sender.cancel()
        writer.close()
    assert b"200" in await port.ask()  # the port still serves


@pytest.mark.parametrize("port", [{"HERALD_HTTP_IDLE_TIMEOUT": 60}], indirect=True)
async def test_a_connection_that_sends_nothing_is_closed(port: Port) -> None:
    reader, writer = await port.connect()
    try:
        assert await reader.read() == b""  # closed, not answered
    finally:
        writer.close()


@pytest.mark.parametrize("port", [{"HERALD_HTTP_HEADER_TIMEOUT": 60}], indirect=True)
async def test_an_idle_keep_alive_connection_is_closed(port: Port) -> None:
    reader, writer = await port.connect()
    try:
        writer.write(GET)
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(
                b":"
            )[1]
        )
        await reader.readexactly(length)
        await closed_by_server(reader)  # kept alive, then idle past the limit
    finally:
        writer.close()


async def test_beyond_the_cap_a_connection_gets_503_and_the_rest_are_served(port: Port) -> None:
    cap = port.limits.max_connections
    held = [await port.connect() for _ in range(cap)]
    try:
        writer = held[0][1]
        writer.write(GET)  # a held connection is still served
        assert (await held[0][0].readuntil(b"\r\n")).startswith(b"HTTP/1.1 200")
        answer = await port.ask()
        assert answer.startswith(b"HTTP/1.1 503")
        assert b"Retry-After: 1" in answer and answer.endswith(b"Too many connections")
    finally:
        for _, writer in held:
            writer.close()
    deadline = time.monotonic() + WITHIN  # the freed places are given out again
    while not (await port.ask()).startswith(b"HTTP/1.1 200"):
        assert time.monotonic() < deadline, "the closed connections were never counted out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n",
        b"GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n",
    ],
    ids=["length", "chunked", "huge length, never sent"],
)
async def test_a_body_to_a_route_that_takes_none_gets_413(port: Port, request_bytes: bytes) -> None:
    answer = await port.ask(request_bytes)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
    assert answer.endswith(b"This address takes no body.\n")
