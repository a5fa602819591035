"""Fetching a calendar URL: one GET revalidating with If-None-Match /
If-Modified-Since (ETag, Last-Modified), through the network guard
(:mod:`core.netguard`), bounded three ways:

- a wall-clock deadline for the whole fetch, redirects and body included, however
  slowly the server trickles (default 20 s);
- a byte cap enforced while streaming (default 5 MB): a ``Content-Length`` over it is
  refused before the body is read, a body that grows past it is cut off there, and a
  compressed body is inflated only up to the cap (no decompression bomb);
- at most 3 redirects, each to an http(s) URL whose host passes the guard.

Every refusal is a :class:`CalendarError` whose message is one sentence naming the
limit or the reason; it never quotes what the server said (body, status text or error
text). The body is only checked to begin as iCalendar text does: reading it is a
worker's job (:class:`core.calendars.CalendarReader`).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from core.calendars.read import CalendarError
from core.netguard import Guard, Refused

REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class FetchLimits:
    """``deadline`` seconds for the whole fetch, ``max_bytes`` of body (after
    decompression), ``max_redirects`` hops."""

    deadline: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 3

    def size(self) -> str:
        """The byte cap in words (``5 MB``, ``64 KB``, ``900 bytes``)."""
        for unit, name in ((1024 * 1024, "MB"), (1024, "KB")):
            if self.max_bytes >= unit:
                return f"{self.max_bytes / unit:g} {name}"
        return f"{self.max_bytes} bytes"


@dataclass(frozen=True)
class Fetched:
    """A fetch's answer: ``body`` None when the server said 304 Not Modified."""

    body: str | None
    etag: str | None
    last_modified: str | None


async def fetch(
    url: str,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    guard: Guard | None = None,
    limits: FetchLimits | None = None,
) -> Fetched:
    """GET ``url`` revalidating with If-None-Match / If-Modified-Since, through the
    network ``guard`` (default: internal addresses refused) and within ``limits``
    (:class:`FetchLimits`: deadline, size, redirects). The body is checked to be
    iCalendar, off the event loop. Raises CalendarError (one sentence, never quoting the
    server) on any failure."""
    if url.startswith("webcal://"):
        url = "https://" + url.removeprefix("webcal://")
    headers = {"Accept": "text/calendar, */*;q=0.5", "User-Agent": "Herald calendar reader"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    answer = await get(url, headers, guard=guard or Guard(), limits=limits or FetchLimits())
    if answer.status == 304:
        return Fetched(None, etag, last_modified)
    if answer.status != 200:
        raise CalendarError(f"Fetching {url} answered HTTP {answer.status}.")
    text = answer.text()
    await asyncio.to_thread(_check_head, text, url)
    return Fetched(text, answer.headers.get("etag"), answer.headers.get("last-modified"))


def _check_head(text: str | bytes, source: str = "the calendar") -> None:
    """The check :func:`fetch` gives a body: it must begin as iCalendar text does
    (``BEGIN:VCALENDAR``); CalendarError if not. Reading it in full is
    :func:`core.calendars.read.parse`, in a calendar worker only, under its deadline:
    parsing 5 MB of events takes 13-16 s, which neither the event loop nor a thread
    beside it (holding the GIL, impossible to stop) may spend."""
    head = text[:64].decode(errors="replace") if isinstance(text, bytes) else text[:64]
    if not head.lstrip("\ufeff \t\r\n").upper().startswith("BEGIN:VCALENDAR"):
        raise CalendarError(f"{source} is not an iCalendar file (no BEGIN:VCALENDAR).")


@dataclass(frozen=True)
class Answer:
    """The final response: its status, headers and (for a 200) body bytes."""

    status: int
    headers: httpx.Headers
    body: bytes

    def text(self) -> str:
        """The body decoded by its declared charset (UTF-8 unless said otherwise)."""
        charset = _charset(self.headers.get("content-type", ""))
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


async def get(
    url: str,
    headers: Mapping[str, str],
    *,
    guard: Guard,
    limits: FetchLimits,
) -> Answer:
    """GET ``url`` within ``limits`` through ``guard``. Raises CalendarError (one
    sentence) for a refused address, a limit passed or a network failure; any other
    status than a redirect is returned for the caller to judge."""
    try:
        async with asyncio.timeout(limits.deadline):
            return await _follow(url, dict(headers), guard, limits)
    except (TimeoutError, httpx.TimeoutException):
        raise CalendarError(
            f"{url} did not finish within {limits.deadline:g} s, the most Herald waits for "
            "a calendar (HERALD_CALENDAR_FETCH_TIMEOUT)."
        ) from None


async def _follow(
    url: str,
    headers: dict[str, str],
    guard: Guard,
    limits: FetchLimits,
) -> Answer:
    headers.setdefault("Accept-Encoding", "gzip, deflate")
    client = guard.client(
        timeout=httpx.Timeout(limits.deadline),
        limits=httpx.Limits(max_connections=4),
    )
    async with client:
        current = url
        for hop in range(limits.max_redirects + 1):
            try:
                async with client.stream("GET", current, headers=headers) as response:
                    status = response.status_code
                    if status not in REDIRECTS:
                        body = await _read(response, url, limits) if status == 200 else b""
                        return Answer(status, response.headers, body)
                    location = response.headers.get("location", "")
                    target = str(response.url.join(location)) if location else ""
            except Refused as exc:
                if hop == 0:
                    raise CalendarError(str(exc)) from None
                raise CalendarError(f"{url} redirects to an internal address: {exc}") from None
            except httpx.TimeoutException:
                raise
            except httpx.HTTPError as exc:
                raise CalendarError(f"Could not fetch {url}: {type(exc).__name__}.") from None
            scheme = urlsplit(target).scheme.lower() if target else ""
            if scheme not in ("http", "https"):
                raise CalendarError(
                    f"{url} redirects to a URL Herald does not follow (only http and https); "
                    "use the calendar's final URL."
                )
            current = target
    raise CalendarError(
        f"{url} redirects more than {limits.max_redirects} times; use the calendar's final URL."
    )


async def _read(response: httpx.Response, url: str, limits: FetchLimits) -> bytes:
    """The body, refused as soon as it is known to pass ``limits.max_bytes``."""
    too_big = CalendarError(
        f"{url} is larger than {limits.size()}, the most Herald reads from a calendar "
        "(HERALD_CALENDAR_MAX_BYTES)."
    )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise too_big
    inflate = _inflater(response.headers.get("content-encoding", ""), url)
    out = bytearray()
    async for raw in response.aiter_raw(_CHUNK):
        if inflate is None:
            out += raw
        else:
            data = inflate.decompress(raw, limits.max_bytes + 1 - len(out))
            out += data
        if len(out) > limits.max_bytes:
            raise too_big
    if inflate is not None:
        out += inflate.flush()
        if len(out) > limits.max_bytes:
            raise too_big
    return bytes(out)


def _inflater(coding: str, url: str) -> zlib._Decompress | None:
    """A decompressor for the ``Content-Encoding`` (None for identity); CalendarError
    for one Herald did not ask for."""
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if coding == "deflate":
        return zlib.decompressobj()
    raise CalendarError(
        f"{url} is sent in a content encoding Herald does not read; "
        "serve it plain or gzip-compressed."
    )


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip('"').strip()
    return "utf-8"
