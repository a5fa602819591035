"""Secrets out of text that operators see: URLs reduced to their scheme and host,
credential-shaped strings and configured secrets replaced by ``***``.

Calendar URLs, like webhook URLs, often carry their secret in the query (``?token=``),
in the user info (``https://user:pass@``) or in the path (``/private-<key>/basic.ics``,
Herald's own ``/calendar/<token>.ics``). So an error stored on a calendar, a log line,
a metric or a console cell names a URL as ``https://host/…`` only. Texts that come
back from providers go through a :class:`Scrubber` before they are stored or shown.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus, urlsplit

if TYPE_CHECKING:
    from core.settings import Settings

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s<>\"'`]+")
#: Punctuation that ends a sentence rather than the URL before it.
_TRAILING = ".,:;!?)]}"
#: Shorter configured values are not hunted in texts (they would match ordinary words);
#: the settings refuse none, so this only guards against a placeholder such as "x".
MIN_SECRET = 6


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


# --- secrets in texts that come back from providers ------------------------------------
#
# A provider's error body, an SMTP reply, an exception or a traceback may echo what
# Herald sent: its token, its password, a signed URL. Such a text is scrubbed before it
# is stored in an attempt, shown, posted to an alert channel or logged: of every
# configured secret (:class:`Scrubber`) and of anything shaped like a credential
# (:func:`scrub`), whatever the configuration says.

#: Where a secret was.
HIDDEN = "***"


@dataclass(frozen=True)
class SecretParts:
    """Marks a ``SecretStr`` setting whose value holds several secrets (``Annotated[
    SecretStr | None, SecretParts(split)]``): ``split(value)`` gives the secrets to hunt,
    instead of the value as a whole (e.g. the secrets of ``PREFIX=SECRET`` pairs)."""

    split: Callable[[str], Iterable[str]]


_TOKEN_CHARS = r"[A-Za-z0-9\-._~+/]"
#: Credential-shaped strings, one alternation (one pass over the text); each named group
#: is a kind, replaced by :func:`_credential`.
_CREDENTIALS = re.compile(
    "|".join(
        (
            # Slack tokens (bot, user, app-level, config, refresh) and webhook secrets
            r"(?P<prefix>\b(?:xox[abeoprs](?:\.xox[bp])?|xapp|whsec|gh[pousr]|github_pat)"
            r"[-_])[A-Za-z0-9\-_+/=]{6,}",
            # JWTs and Discord bot tokens: three dot-separated base64url parts
            r"(?P<dotted>(?<![\w.-])(?:eyJ[\w-]{6,}|[\w-]{23,30})\.[\w-]{6,}\.[\w-]{20,})",
            # Authorization values: "Bearer …", "Bot …", "Basic …", "Token …"
            r"(?P<scheme>\b(?-i:Bearer|bearer|BEARER|Bot|Basic|basic|BASIC|Token)\s+)"
            rf"(?P<credential>{_TOKEN_CHARS}+=*)",
            # SMTP AUTH lines echoed back: "AUTH PLAIN <base64>", "AUTH LOGIN <base64>"
            r"(?P<auth>\bAUTH\s+(?:PLAIN|LOGIN|XOAUTH2|OAUTHBEARER)\s+)[A-Za-z0-9+/=]{4,}",
            # key=value / "key": "value" pairs whose key names a secret
            r"(?P<key>\b(?:password|passwd|pwd|secret|client_secret|token|access_token"
            r"|refresh_token|api[_-]?key|apikey|signature|sig)[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"'&,;<>]+",
        )
    ),
    re.IGNORECASE,
)


def _credential(found: re.Match[str]) -> str:
    groups = found.groupdict()
    if groups["prefix"]:
        return groups["prefix"] + HIDDEN
    if groups["dotted"]:
        return HIDDEN
    if groups["scheme"]:
        value = groups["credential"]
        # "Basic authentication failed" is English; a credential is long or not a word
        if len(value) < 20 and value.isalpha():
            return found.group(0)
        return groups["scheme"] + HIDDEN
    if groups["auth"]:
        return groups["auth"] + HIDDEN
    return groups["key"] + HIDDEN


def scrub_credentials(text: str) -> str:
    """``text`` without credential-shaped strings (Slack, Discord and bearer tokens, JWTs,
    webhook secrets, SMTP AUTH data, ``password=…`` pairs) and with every URL redacted
    (:func:`redact_url`: user info, path and query hidden)."""
    return scrub(_CREDENTIALS.sub(_credential, text))


#: Texts up to this long are scrubbed once and remembered, up to this many.
_CACHED_CHARS, _CACHED_TEXTS = 120, 4096


class Scrubber:
    """Removes configured secrets, in the forms a provider may echo them (as they are,
    URL-encoded, base64), then credential-shaped strings (:func:`scrub_credentials`).

    Build it once with :meth:`from_settings`; ``Scrubber()`` knows no configured secret
    and still removes everything credential-shaped.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) < MIN_SECRET:
                continue
            raw = secret.encode("utf-8")
            encoded = (base64.b64encode(raw), base64.urlsafe_b64encode(raw))
            forms.update((secret, quote(secret, safe=""), quote_plus(secret, safe="")))
            forms.update(form.decode("ascii") for form in encoded)
            forms.update(form.decode("ascii").rstrip("=") for form in encoded)
        #: Longest first, so a secret that contains another goes whole.
        self._secrets = (
            re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)))
            if forms
            else None
        )
        self._seen: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Scrubber:
        """Every secret of ``settings`` (:meth:`Settings.secret_values`), and SMTP
        ``AUTH PLAIN``'s base64 blob of the user and password."""
        secrets = settings.secret_values()
        if settings.smtp_password is not None:
            password = settings.smtp_password.get_secret_value()
            for login in {settings.smtp_user or "", ""}:
                blob = base64.b64encode(f"\0{login}\0{password}".encode()).decode("ascii")
                secrets.extend((blob, blob.rstrip("=")))
        return cls(secrets)

    def __call__(self, text: str) -> str:
        if len(text) <= _CACHED_CHARS:
            # log lines repeat the same short texts (events, kinds, worker ids): a scan
            # costs microseconds, a look-up a fraction of one
            done = self._seen.get(text)
            if done is None:
                if len(self._seen) >= _CACHED_TEXTS:
                    self._seen.clear()
                done = self._seen[text] = self._scrub(text)
            return done
        return self._scrub(text)

    def _scrub(self, text: str) -> str:
        if self._secrets is not None:
            text = self._secrets.sub(HIDDEN, text)
        return scrub_credentials(text)
