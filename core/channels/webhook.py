"""Signed HTTP webhooks (``webhook:https://...``), following Standard Webhooks.

Each delivery is one ``POST`` of a JSON body::

    {"id": idempotency_key, "schedule_id": 1, "job_id": 2, "text": "...",
     "scheduled_for": "2026-03-02T09:00:00Z", "attempt": 1}

with the headers ``webhook-id`` (the job's idempotency key: the same on every retry, so a
receiver can drop duplicates), ``webhook-timestamp`` (unix seconds), ``Idempotency-Key``
and, when the destination has a signing secret, ``webhook-signature``: ``v1,`` followed by
the base64 HMAC-SHA256 of ``{id}.{timestamp}.{body}``. A secret in the Standard Webhooks
form ``whsec_<base64>`` is base64-decoded first; any other string is used as UTF-8 bytes.
With traces on (:mod:`core.tracing`), a delivery carries the W3C ``traceparent`` of its
send's span, so a receiver can join the trace.

This module also holds the small HTTP helpers the other channels share
(:func:`reveal`, :func:`parse_retry_after`, :func:`truncate`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from pydantic import SecretStr

from core import tracing
from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import (
    Destination,
    UriSyntax,
    owner_url_view,
    redact_url_path,
    url_parts,
)
from core.errors import InvalidInput
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable
from core.netguard import Guard, Refused
from core.ratelimit import RateLimit

#: Longest response body kept in a result's error text, in bytes.
MAX_BODY = 2048
RETRYABLE_STATUS = frozenset({408, 425, 429})
USER_AGENT = "Herald (scheduled messages)"

SecretFor = Callable[[str], str | SecretStr | None]

#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` without building an
#: encoder per call (what ``json.dumps`` does when given options).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def reveal(value: str | SecretStr | None) -> str | None:
    """The plain text of a token or secret given as ``str`` or ``SecretStr``."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return value


def truncate(text: str, limit: int = MAX_BODY) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (an ellipsis marks the cut)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode("utf-8", errors="ignore") + "…"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date).

    Returns None when the header is absent or unreadable; never a negative number.
    ``now`` is the current unix time (defaults to the wall clock).
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def signing_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret: ``whsec_<base64>`` is decoded,
    any other string is taken as UTF-8. Raises ValueError (without the secret in the
    message) when the ``whsec_`` form is not valid base64."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the signing secret starts with whsec_ but is not base64") from None
    return secret.encode("utf-8")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value: ``v1,<base64 HMAC-SHA256>``.
    Raises ValueError for a malformed ``whsec_`` secret."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(signing_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


@functools.lru_cache(maxsize=1024)
def iso_z(moment: datetime) -> str:
    """``moment`` in UTC as ``YYYY-MM-DDTHH:MM:SSZ`` (naive datetimes are taken as UTC).
    Remembered for the last thousand moments: a burst's jobs share a few."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _check_url(raw: str, target: str) -> None:
    """An http(s) URL with a host."""
    parts = url_parts(raw, target, "webhook:https://example.com/hook")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{raw!r} is not a webhook URL: use webhook:https://example.com/hook.")


class WebhookChannel(Channel):
    """POSTs each delivery to the destination URL, signed when it has a secret.

    ``secret_for`` maps a target URL to its signing secret (or None: unsigned).
    Timeouts: ``connect_timeout`` to open the connection, ``timeout`` for the whole
    request. Redirects are never followed. ``clock`` returns unix seconds (tests).
    Requests go through ``http``, the process's shared client (:mod:`core.http_client`;
    by default one of its own), whose guarded pool checks every connection with its
    network guard: internal addresses are refused where the socket is opened. Without
    ``http``, that guard is ``guard`` (by default the one with ``allow_private``).
    """

    kind = "webhook"
    #: A webhook's path and query often carry a secret token.
    uri = UriSyntax(
        "webhook",
        "webhook:https://example.com/hook",
        _check_url,
        redact=redact_url_path,
        owner_view=owner_url_view,
        settings=("webhook_secrets", "webhook_allow_private"),
    )
    rate_limit = RateLimit(rate=10.0, burst=10.0)

    def __init__(
        self,
        secret_for: SecretFor | None = None,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        user_agent: str = USER_AGENT,
        clock: Callable[[], float] = time.time,
        allow_private: bool = False,
        guard: Guard | None = None,
        http: HTTPClient | None = None,
    ) -> None:
        self._secret_for = secret_for
        self.http = http or HTTPClient(guard=guard or Guard(allow_private=allow_private))
        self._guard = self.http.guard
        self._timeout = timeout
        self._limits = Timeout(timeout, connect_timeout)
        self._clock = clock
        #: the headers every delivery carries (each adds its id, time and signature)
        self._headers = {"User-Agent": user_agent, "Content-Type": "application/json"}

    async def close(self) -> None:
        """Close the HTTP connection pools."""
        await self.http.close()

    def body(self, delivery: Delivery) -> bytes:
        """The JSON body sent for ``delivery`` (compact, UTF-8)."""
        payload = {
            "id": delivery.idempotency_key,
            "schedule_id": delivery.schedule_id,
            "job_id": delivery.job_id,
            "text": delivery.body,
            "scheduled_for": iso_z(delivery.occurrence_at),
            "attempt": delivery.attempt,
        }
        return _encode(payload).encode("utf-8")

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """POST the delivery. Returns ok for 2xx; retry for 408/425/429/5xx, timeouts and
        network errors (with the receiver's ``Retry-After``); permanent for redirects,
        other 4xx and a bad URL or secret. Never raises for what the receiver does."""
        url = delivery.destination.target
        if not url.lower().startswith(("http://", "https://")):
            where = delivery.destination.redacted()
            return DeliveryResult.permanent(f"{where} is not an http(s) URL: fix the destination.")
        secret = reveal(self._secret_for(url)) if self._secret_for else None
        body = self.body(delivery)
        timestamp = int(self._clock())
        msg_id = delivery.idempotency_key
        headers = {
            **self._headers,
            "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "Idempotency-Key": msg_id,
        }
        if tracing.on:  # the send's span, for a receiver to join its trace
            tracing.inject(headers)
        if secret:
            try:
                headers["webhook-signature"] = sign(secret, msg_id, timestamp, body)
            except ValueError as exc:
                return DeliveryResult.permanent(
                    f"The signing secret of {delivery.destination.redacted()} cannot be "
                    f"used: {exc}; set it again as whsec_<base64> or as plain text."
                )
        try:
            # aiohttp's total timeout covers the whole request: connect, send, answer
            answer = await self.http.request(
                "POST", url, guarded=True, timeouts=self._limits, headers=headers, content=body
            )
        except Refused as exc:  # the guard, where the connection was opened
            return DeliveryResult.permanent(str(exc))
        except TimedOut as exc:  # "timed out after 10 s", "no connection to … within 5 s"
            where = delivery.destination.redacted()
            return DeliveryResult.retry(f"{where}: {exc}.")
        except Unreachable as exc:  # "connection refused by 127.0.0.1:9", …
            where = delivery.destination.redacted()
            return DeliveryResult.retry(f"Could not reach {where}: {exc}.")
        if 200 <= answer.status < 300:  # the common case: no words needed
            return DeliveryResult.ok(answer.status)
        return self._classify(answer, delivery.destination.redacted(), secret)

    async def validate(self, destination: Destination) -> None:
        """Refuse, at schedule time, a URL whose host is an internal address (each
        delivery's connection is checked again)."""
        refused = await self._guard.refusal(destination.target)
        if refused is not None:
            raise InvalidInput(refused)

    def _classify(self, response: Answer, where: str, secret: str | None) -> DeliveryResult:
        status = response.status
        if 200 <= status < 300:
            return DeliveryResult.ok(status)
        text = response.text if response.content else ""
        if secret:
            text = text.replace(secret, "[secret]")
        detail = f": {truncate(text.strip())}" if text.strip() else "."
        answer = f"{where} answered {status} {response.reason}".rstrip()
        if 300 <= status < 400:
            target = urlsplit(response.headers.get("location", ""))
            moved = f" to {target.scheme}://{target.hostname}/…" if target.hostname else ""
            return DeliveryResult.permanent(
                f"{answer} (a redirect{moved}); Herald does not follow redirects: "
                "update the destination to the final URL.",
                status,
            )
        if status in RETRYABLE_STATUS or status >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"), self._clock())
            return DeliveryResult.retry(f"{answer}{detail}", status, retry_after)
        hint = " Check the URL and what the receiver expects" + (
            ", and its signing secret." if status in (401, 403) else "."
        )
        return DeliveryResult.permanent(f"{answer}{detail}{hint}", status)
