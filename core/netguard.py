"""The one network guard for every outbound URL a member gives (webhooks, Discord
webhooks, calendars, ``apprise:`` services).

Members hand Herald URLs, so Herald refuses to connect to addresses inside the network
it runs in (server-side request forgery): loopback, private, link-local (cloud metadata
at 169.254.169.254), shared, reserved and multicast addresses, also when wrapped in an
IPv6 form. An admin can allow them with ``HERALD_WEBHOOK_ALLOW_PRIVATE=true``.

The check happens where the connection is opened, not before: a host name is resolved
once, every address of the answer is checked, and the socket is connected to one of
those very addresses (TLS still sends the URL's host name as SNI and the request keeps
its ``Host`` header). A DNS answer that changes between a check and the connection
(DNS rebinding) therefore cannot reach inside. One :class:`Guard` plugs into each HTTP
stack Herald uses:

- httpx: :meth:`Guard.transport` (an httpcore network backend that resolves and checks);
- aiohttp: :meth:`Guard.aiohttp_resolver` (an ``aiohttp.abc.AbstractResolver``), plus
  :meth:`Guard.literal` for hosts written as IP addresses, which aiohttp connects to
  without asking the resolver (:mod:`core.http_client` does both);
- requests / urllib3 (Apprise's plugins, in worker threads): :meth:`Guard.urllib3`, a
  context within which urllib3's connections are checked the same way.

A refusal is :class:`Refused`; its message is one sentence that names the host only:
nothing an internal server said, and not the internal address a name resolved to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from core.errors import HeraldError

if TYPE_CHECKING:
    import httpx
    from aiohttp.abc import AbstractResolver

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Resolves ``(host, port)`` to IP address strings (blocking; raises socket.gaierror).
Lookup = Callable[[str, int], Sequence[str]]

ALLOW_SETTING = "HERALD_WEBHOOK_ALLOW_PRIVATE"
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class Refused(HeraldError, OSError):
    """A connection the guard refused. Also an OSError, so that the HTTP stacks treat
    it as a connection that could not be made (urllib3 and aiohttp wrap it)."""


def is_internal(ip: Address) -> bool:
    """Loopback, private, link-local, shared, reserved, multicast or unspecified, also
    as an IPv4-mapped, NAT64, 6to4 or Teredo IPv6 address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip.teredo is not None:
            embedded = ip.teredo[1]
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and is_internal(embedded):
            return True
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED)
    )


def system_lookup(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for ``host`` (TCP)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Guard:
    """Which addresses Herald may connect to for a member's URL.

    ``allow_private`` lets every address through (the admin's choice). ``lookup``
    resolves names (the system resolver unless given: tests answer what they like);
    ``internal`` says which addresses are inside (tests may treat one loopback address
    as outside to stand in for a public server).
    """

    allow_private: bool = False
    lookup: Lookup | None = None
    internal: Callable[[Address], bool] = is_internal

    # --- the check, once per connection ----------------------------------------------

    def _checked(self, host: str, answers: Sequence[str]) -> list[Address]:
        addresses = []
        for answer in answers:
            ip = ipaddress.ip_address(answer.split("%", 1)[0])
            if not self.allow_private and self.internal(ip):
                raise Refused(refusal(host))
            addresses.append(ip)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} has no address")
        return addresses

    def addresses(self, host: str, port: int) -> list[Address]:
        """Resolve ``host`` once and check every address (blocking). Raises Refused
        when one is internal, socket.gaierror when the name does not resolve."""
        ip = _literal(host)
        answers = [str(ip)] if ip is not None else (self.lookup or system_lookup)(host, port)
        return self._checked(host, answers)

    def literal(self, host: str) -> Address:
        """``host`` written as an IP address (``[...]`` allowed), checked. Raises
        Refused when it is internal, ValueError when it is not an address."""
        ip = _literal(host)
        if ip is None:
            raise ValueError(f"{host} is not an IP address")
        return self._checked(host, [str(ip)])[0]

    async def resolve(self, host: str, port: int) -> list[Address]:
        """:meth:`addresses` without blocking the event loop."""
        ip = _literal(host)
        if ip is not None:
            return self._checked(host, [str(ip)])
        if self.lookup is not None:
            return self._checked(host, self.lookup(host, port))
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return self._checked(host, [str(info[4][0]) for info in infos])

    async def refusal(self, url: str, schemes: Sequence[str] = ("http", "https")) -> str | None:
        """Why ``url`` may not be used (a sentence), or None. For schedule-time checks;
        the connection is checked again when it is made. A host that does not resolve
        is left to the connection (it fails there)."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return "The URL is malformed; fix the destination."
        if parts.scheme.lower() not in schemes:
            return f"Only {' and '.join(schemes)} URLs are allowed here; fix the destination."
        if not host:
            return "The URL has no host; fix the destination."
        try:
            await self.resolve(host, port)
        except Refused as exc:
            return str(exc)
        except (OSError, UnicodeError):
            return None
        return None

    # --- httpx ----------------------------------------------------------------------

    def transport(
        self, limits: httpx.Limits | None = None, *, verify: ssl.SSLContext | None = None
    ) -> httpx.AsyncBaseTransport:
        """An httpx transport whose every connection goes through this guard.
        ``verify`` replaces the default TLS trust (tests trust their own CA)."""
        import httpcore
        import httpx

        backend, transport = _httpx_classes()
        limits = limits or httpx.Limits()
        pool = httpcore.AsyncConnectionPool(
            ssl_context=verify or default_tls(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend(self),
        )
        return transport(pool)

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An httpx client through this guard that never follows redirects (callers
        that follow some do so hop by hop, each through the guard)."""
        import httpx

        limits = kwargs.pop("limits", None)
        verify = kwargs.pop("verify", None)
        return httpx.AsyncClient(
            transport=self.transport(limits, verify=verify), follow_redirects=False, **kwargs
        )

    # --- aiohttp --------------------------------------------------------------------

    def aiohttp_resolver(self) -> AbstractResolver:
        """An aiohttp resolver that answers only checked addresses: give it to
        ``aiohttp.TCPConnector(resolver=...)``; aiohttp then connects to exactly those
        addresses and keeps the URL's host for SNI and ``Host``. aiohttp never asks it
        about a host written as an IP address: check those with :meth:`literal`."""
        return _aiohttp_resolver_class()(self)

    # --- urllib3 (Apprise) ----------------------------------------------------------

    @contextmanager
    def urllib3(self) -> Iterator[list[str]]:
        """Within this block (this context, and the threads that copy it, as
        ``asyncio.to_thread`` and Apprise do) urllib3 connects only to addresses this
        guard allows. Yields a list that collects the refusals' sentences (urllib3's
        callers turn a refused connection into their own failure)."""
        _install_urllib3()
        scope = _Scope(self)
        token = _URLLIB3_SCOPE.set(scope)
        try:
            yield scope.refused
        finally:
            _URLLIB3_SCOPE.reset(token)


def refusal(host: str) -> str:
    """The sentence of a refused host."""
    return (
        f"{host} is an internal address; Herald connects only to public addresses "
        f"(an admin can allow internal ones with {ALLOW_SETTING}=true)."
    )


# --- httpx plumbing ------------------------------------------------------------------


@lru_cache(maxsize=1)
def default_tls() -> ssl.SSLContext:
    """One TLS context for every pool, aiohttp's (core.http_client) and httpx's: the
    system's defaults with certifi's roots, as httpx builds it (``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` replace the roots)."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


@lru_cache(maxsize=1)
def _httpx_classes() -> tuple[Callable[[Guard], Any], Callable[[Any], httpx.AsyncBaseTransport]]:
    """Built on first use, so importing core does not import httpx (only calendar
    fetches use it; a command that fetches nothing starts faster)."""
    import httpcore
    import httpx

    class GuardedBackend(httpcore.AsyncNetworkBackend):
        """httpcore's asyncio backend, connecting only to the addresses the guard
        checked. httpcore still starts TLS with the origin's host name (SNI, certificate
        check)."""

        def __init__(self, guard: Guard) -> None:
            self._guard = guard
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> httpcore.AsyncNetworkStream:
            try:
                async with asyncio.timeout(timeout):
                    addresses = await self._guard.resolve(host, port)
            except TimeoutError as exc:
                raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
            except (socket.gaierror, UnicodeError) as exc:
                raise httpcore.ConnectError(f"{host} does not resolve") from exc
            failure: Exception | None = None
            for ip in addresses:
                try:
                    return await self._inner.connect_tcp(
                        str(ip),
                        port,
                        timeout=timeout,
                        local_address=local_address,
                        socket_options=socket_options,
                    )
                except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                    failure = exc
            assert failure is not None
            raise failure

        async def connect_unix_socket(
            self,
            path: str,
            timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
            socket_options: Any = None,
        ) -> httpcore.AsyncNetworkStream:
            raise Refused("Herald does not connect to local sockets for a member's URL.")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    class PoolTransport(httpx.AsyncHTTPTransport):
        """httpx's own transport over a pool we built (httpx takes no network backend)."""

        def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:  # noqa: D107
            # httpx's __init__ would build a second pool and TLS context, unused:
            # handle_async_request and aclose only use ``_pool``.
            self._pool = pool

    return GuardedBackend, PoolTransport


# --- aiohttp plumbing ----------------------------------------------------------------


@lru_cache(maxsize=1)
def _aiohttp_resolver_class() -> Callable[[Guard], AbstractResolver]:
    """Built on first use, so importing core does not import aiohttp."""
    from aiohttp.abc import AbstractResolver, ResolveResult

    class GuardedResolver(AbstractResolver):
        def __init__(self, guard: Guard) -> None:
            self._guard = guard

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            addresses = await self._guard.resolve(host, port)
            wanted = {socket.AF_INET: 4, socket.AF_INET6: 6}.get(family)
            return [
                ResolveResult(
                    hostname=host,
                    host=str(ip),
                    port=port,
                    family=socket.AF_INET6 if ip.version == 6 else socket.AF_INET,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
                for ip in addresses
                if wanted in (None, ip.version)
            ]

        async def close(self) -> None:
            return None

    return GuardedResolver


# --- urllib3 plumbing ----------------------------------------------------------------


@dataclass
class _Scope:
    guard: Guard
    refused: list[str] = field(default_factory=list)


_URLLIB3_SCOPE: ContextVar[_Scope | None] = ContextVar("herald_netguard_urllib3", default=None)
_INSTALL = threading.Lock()


def _install_urllib3() -> None:
    """Wrap urllib3's ``create_connection`` once: outside a :meth:`Guard.urllib3`
    block it behaves exactly as before."""
    from urllib3.util import connection

    with _INSTALL:
        if getattr(connection.create_connection, "herald_guarded", False):
            return
        original = connection.create_connection

        def create_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
            scope = _URLLIB3_SCOPE.get()
            if scope is None:
                return original(address, *args, **kwargs)
            host, port = address
            try:
                addresses = scope.guard.addresses(host, port)
            except Refused as exc:
                scope.refused.append(str(exc))
                raise
            failure: OSError | None = None
            for ip in addresses:
                try:
                    return original((str(ip), port), *args, **kwargs)
                except OSError as exc:
                    failure = exc
            assert failure is not None
            raise failure

        create_connection.herald_guarded = True  # type: ignore[attr-defined]
        connection.create_connection = create_connection
