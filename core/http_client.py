"""The one outbound HTTP client of a process: the webhook, Discord, Discord-webhook and
Slack channels all send through the :class:`HTTPClient` that :func:`core.channels.build_channels`
builds once and hands to each of them.

It is aiohttp, chosen by measurement: in the 2,000-webhook burst over 200 URLs of one
local receiver, a bare aiohttp client sends ~15× what a bare httpx client does with the
same 64 requests in flight (httpcore's pool scans every connection per request).

Two keep-alive pools, each holding up to ``connections`` (``HERALD_CONCURRENCY``) with
at most ``per_host`` to one host:

- **guarded**, for the URLs a member gives (webhooks, Discord webhooks): every new
  connection resolves its host through the network guard (:meth:`Guard.aiohttp_resolver`)
  and connects to exactly the checked addresses. Checked answers are kept ``dns_ttl``
  seconds (aiohttp's DNS cache); a refused or failed look-up is never kept, and a name
  is checked again when its answer expires, so every request goes only where the guard
  allowed.
- **direct**, for the provider APIs the admin configured (``SLACK_API_URL``,
  ``DISCORD_API_URL``): no guard (as before), and proxies from the environment
  (``HTTPS_PROXY``, ``NO_PROXY``) are honoured as httpx did; found once per URL, not
  per request (aiohttp's ``trust_env`` would also read ``~/.netrc`` in a thread for
  every request).

Built once and reused by every request: the TLS context, the guard's resolver, the DNS
answers, the connections. Sessions are opened on first use in the running event loop
(aiohttp binds them to it) and opened again after :meth:`HTTPClient.close`. No cookies
are kept (one member's receiver must not set a cookie another's request carries) and
redirects are never followed.

aiohttp's errors stop here: :meth:`HTTPClient.request` raises :class:`Refused` (the
guard), :class:`TimedOut` or :class:`Unreachable`, or returns an :class:`Answer`.
aiohttp itself is imported on first use, so importing ``core`` does not load it.
"""

from __future__ import annotations

import asyncio
import errno
import json as jsonlib
import logging
import socket
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from core.errors import HeraldError
from core.netguard import Guard, Refused, default_tls, refusal

if TYPE_CHECKING:
    import aiohttp
    import yarl

    from core.settings import Settings

log = logging.getLogger(__name__)

#: Seconds a checked DNS answer is reused by a pool (aiohttp's default).
DNS_TTL = 10.0
#: The most bytes of an answer read (after decompression): a member's webhook URL, or
#: a wrong API URL, could otherwise stream into memory until the timeout. Slack's
#: largest answer Herald asks for (a conversations.list page of 999) is far below it.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


class TimedOut(HeraldError):
    """The request did not finish (connect, send, answer) within its timeout."""


class Unreachable(HeraldError):
    """The request failed in the network or the protocol; ``str()`` says how in a few
    words ("connection refused by 127.0.0.1:9", "name not found: hooks.example"), never
    what a server said (:func:`failure`)."""


@dataclass(frozen=True, slots=True)
class Timeout:
    """Seconds a whole request may take, and its connection."""

    total: float
    connect: float


@dataclass(frozen=True, slots=True)
class Answer:
    """A response read in full: status, reason, headers (case-insensitive) and body."""

    status: int
    reason: str
    headers: Mapping[str, str]
    content: bytes
    charset: str | None = None

    @property
    def text(self) -> str:
        """The body as text (its declared charset, else UTF-8; bad bytes replaced)."""
        try:
            return self.content.decode(self.charset or "utf-8", errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON. Raises ValueError when it is not JSON."""
        return jsonlib.loads(self.content)


class HTTPClient:
    """Keep-alive pools shared by every HTTP channel of a process (see the module).

    ``guard`` checks the member-given URLs (by default the guard that refuses internal
    addresses); ``connections`` is the most connections each pool holds, ``per_host``
    the most to one host (0: as many as ``connections``); ``tls`` replaces the default
    trust (tests trust their own CA). The default trust is read now (certifi's roots:
    ~40 ms of CPU), not in the first request, unless ``lazy_tls``: a CLI command, which
    mostly sends nothing, reads it only when it opens a pool.
    """

    def __init__(
        self,
        *,
        guard: Guard | None = None,
        connections: int = 64,
        per_host: int = 0,
        dns_ttl: float = DNS_TTL,
        tls: ssl.SSLContext | None = None,
        lazy_tls: bool = False,
    ) -> None:
        self.guard = guard or Guard()
        self.connections = connections
        self.per_host = per_host
        self.dns_ttl = dns_ttl
        #: built now, not in the first request (unless lazy_tls: then in :meth:`_open`)
        self._tls = tls if tls is not None or lazy_tls else default_tls()
        self._sessions: dict[bool, aiohttp.ClientSession] = {}
        self._timeouts: dict[Timeout, aiohttp.ClientTimeout] = {}
        #: parsed URLs by text, per pool (the guarded ones' literal hosts checked)
        self._urls: dict[bool, dict[str, yarl.URL]] = {True: {}, False: {}}
        self._proxies: dict[yarl.URL, tuple[str | None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        #: How many pools this client has opened (tests: one per policy, reused).
        self.opened = 0

    @classmethod
    def from_settings(cls, settings: Settings, *, lazy_tls: bool = False) -> HTTPClient:
        """The process's client: pools of ``HERALD_CONCURRENCY`` connections, at most
        ``HERALD_HTTP_PER_HOST`` to one host, member URLs through the network guard."""
        return cls(
            guard=settings.network_guard(),
            connections=settings.concurrency,
            per_host=settings.http_per_host,
            lazy_tls=lazy_tls,
        )

    # --- pools ------------------------------------------------------------------------

    def session(self, *, guarded: bool) -> aiohttp.ClientSession:
        """The pool of this policy, opened on first use in the running event loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new loop (tests; a CLI command after another)
            self._sessions = {}
            self._timeouts = {}
            self._loop = loop
        session = self._sessions.get(guarded)
        if session is None or session.closed:
            session = self._sessions[guarded] = self._open(guarded)
            self.opened += 1
        return session

    def _open(self, guarded: bool) -> aiohttp.ClientSession:
        import aiohttp

        if self._tls is None:  # lazy_tls: read once, for every pool after this one too
            self._tls = default_tls()
        connector = aiohttp.TCPConnector(
            limit=self.connections,
            limit_per_host=self.per_host,
            resolver=self.guard.aiohttp_resolver() if guarded else None,
            use_dns_cache=self.dns_ttl > 0,
            ttl_dns_cache=int(self.dns_ttl) if self.dns_ttl > 0 else None,
            ssl=self._tls,
        )
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

    def _timeout(self, timeout: Timeout) -> aiohttp.ClientTimeout:
        found = self._timeouts.get(timeout)
        if found is None:
            import aiohttp

            found = self._timeouts[timeout] = aiohttp.ClientTimeout(
                total=timeout.total, connect=timeout.connect
            )
        return found

    async def close(self) -> None:
        """Close the pools (they open again if used afterwards)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()

    # --- requests ---------------------------------------------------------------------

    def _proxy(self, target: yarl.URL) -> str | None:
        """The environment's proxy for a provider API URL (None: connect directly)."""
        found = self._proxies.get(target)
        if found is None:
            bypass = urllib.request.proxy_bypass(target.raw_host or "")
            proxy = None if bypass else urllib.request.getproxies().get(target.scheme)
            if len(self._proxies) >= 1_000:
                self._proxies.clear()
            found = self._proxies[target] = (proxy,)
        return found[0]

    def _url(self, url: str, guarded: bool) -> yarl.URL:
        """``url`` parsed once per distinct text (aiohttp would parse it per request);
        for the guarded pool, a host written as an IP address is checked here (once:
        the guard's rules do not change), as aiohttp connects to it without asking the
        resolver. Raises Refused for such a host that the guard refuses, or that aiohttp
        would take for an address but is not one."""
        cache = self._urls[guarded]
        found = cache.get(url)
        if found is None:
            import yarl

            found = yarl.URL(url)
            host = found.raw_host or ""
            if guarded and (":" in host or host.replace(".", "").isdigit()):  # aiohttp's test
                try:
                    self.guard.literal(host)
                except ValueError:
                    raise Refused(refusal(host)) from None
            if len(cache) >= 10_000:
                cache.clear()
            cache[url] = found
        return found

    async def request(
        self,
        method: str,
        url: str,
        *,
        guarded: bool,
        timeouts: Timeout,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json: Any = None,
        form: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """Send one request and read its answer in full; never follows a redirect.

        ``guarded``: through the network guard (a member's URL). The body is
        ``content`` (bytes), ``json`` or ``form`` (URL-encoded). Raises Refused when the
        guard refuses the host, TimedOut, or Unreachable for any other failure."""
        import aiohttp

        target = self._url(url, guarded)
        session = self.session(guarded=guarded)
        data: Any = content
        if form is not None:
            data = {k: str(v) for k, v in form.items()}
        try:
            async with session.request(
                method,
                target,
                headers=headers,
                data=data,
                json=json,
                params=params,
                proxy=None if guarded else self._proxy(target),
                timeout=self._timeout(timeouts),
                allow_redirects=False,
            ) as response:
                body = await _read(response, target)
                answer = Answer(
                    response.status,
                    response.reason or "",
                    response.headers,
                    body,
                    response.charset,
                )
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, Refused):
                raise exc.os_error from None
            raise Unreachable(failure(exc, target)) from exc
        except aiohttp.ConnectionTimeoutError as exc:  # a TimeoutError too
            where = _where(target)
            raise TimedOut(f"no connection to {where} within {timeouts.connect:g} s") from exc
        except TimeoutError as exc:  # aiohttp's timeouts are TimeoutErrors
            raise TimedOut(f"timed out after {timeouts.total:g} s") from exc
        except (aiohttp.ClientError, ValueError) as exc:  # InvalidURL is a ValueError too
            raise Unreachable(failure(exc, target)) from exc
        if log.isEnabledFor(logging.DEBUG):
            parts = urlsplit(url)  # the path and query may carry a token
            log.debug(
                "HTTP Request: %s %s://%s/… %s", method, parts.scheme, parts.hostname, answer.status
            )
        return answer


async def _read(response: aiohttp.ClientResponse, target: yarl.URL) -> bytes:
    """The answer's body; Unreachable past :data:`MAX_ANSWER_BYTES`."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise Unreachable(
                f"the answer from {_where(target)} was over {MAX_ANSWER_BYTES:,} bytes"
            )
    return bytes(body)


def _where(target: yarl.URL) -> str:
    """``host:port`` of a request (the scheme's port when the URL names none)."""
    host = target.raw_host or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{target.port}" if target.port is not None else host


#: What the operating system's errors mean, by errno, said of ``host:port``.
_SAID = {
    errno.ECONNREFUSED: "connection refused by {where}",
    errno.ECONNRESET: "connection reset by {where}",
    errno.EHOSTUNREACH: "no route to {where}",
    errno.ENETUNREACH: "no route to {where} (network unreachable)",
    errno.ETIMEDOUT: "no connection to {where} (timed out)",
    errno.ECONNABORTED: "connection to {where} aborted",
    errno.EPIPE: "connection to {where} closed while sending",
}


def failure(exc: BaseException, target: yarl.URL) -> str:
    """A failed request in words, for the delivery log: what happened and with which
    host and port, never an exception's class name nor what a server said."""
    import aiohttp

    where = _where(target)
    if isinstance(exc, aiohttp.ClientConnectorError):
        where = f"{exc.host}:{exc.port}" if exc.port else exc.host
        where = f"[{exc.host}]:{exc.port}" if ":" in exc.host and exc.port else where
        if isinstance(exc, aiohttp.ClientConnectorDNSError) or isinstance(
            exc.os_error, socket.gaierror
        ):
            return f"name not found: {exc.host}"
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            return f"the TLS certificate of {where} was not accepted"
        if isinstance(exc, aiohttp.ClientSSLError):
            return f"the TLS handshake with {where} failed"
        said = _SAID.get(exc.os_error.errno or 0)
        if said is not None:
            return said.format(where=where)
        reason = (exc.os_error.strerror or "").strip().rstrip(".").lower()
        return f"could not connect to {where}" + (f" ({reason})" if reason else "")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return f"{where} closed the connection without answering"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"the answer from {where} was cut off"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{where} did not answer in HTTP"
    if isinstance(exc, aiohttp.ClientOSError):
        said = _SAID.get(exc.errno or 0)
        return said.format(where=where) if said else f"the connection to {where} failed"
    if isinstance(exc, ValueError | aiohttp.InvalidURL):
        return "the URL is not valid"
    return f"the request to {where} failed"
