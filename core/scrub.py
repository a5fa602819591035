"""Secrets out of text that operators see: URLs reduced to their scheme and host.

Calendar URLs, like webhook URLs, often carry their secret in the query (``?token=``),
in the user info (``https://user:pass@``) or in the path (``/private-<key>/basic.ics``,
Herald's own ``/calendar/<token>.ics``). So an error stored on a calendar, a log line,
a metric or a console cell names a URL as ``https://host/…`` only.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s<>\"'`]+")
#: Punctuation that ends a sentence rather than the URL before it.
_TRAILING = ".,:;!?)]}"


def redact_url(url: str) -> str:
    """``https://host[:port]/…``: user info, path, query and fragment hidden."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
        parts = None
    if parts is None or not parts.scheme or not host:
        scheme = url.partition("://")[0] if "://" in url else ""
        return f"{scheme}://…" if scheme.isalnum() else "…"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    hidden = parts.path not in ("", "/") or parts.query or parts.fragment
    return f"{parts.scheme}://{netloc}{'/…' if hidden else ''}"


def scrub(text: str) -> str:
    """``text`` with every URL in it redacted (:func:`redact_url`)."""

    def one(found: re.Match[str]) -> str:
        url, tail = found.group(0), ""
        while url and url[-1] in _TRAILING:
            url, tail = url[:-1], url[-1] + tail
        return redact_url(url) + tail

    return _URL.sub(one, text)


def calendar_source(source: str) -> str:
    """A calendar's source fit for a screen: an upload's ``file:<name>`` as it is, a
    URL redacted."""
    return source if source.startswith("file:") else redact_url(source)
