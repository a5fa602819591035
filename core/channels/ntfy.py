"""ntfy (``ntfy:https://ntfy.example.com/topic``): a push notification published to a
topic of an ntfy server (https://docs.ntfy.sh/publish/), self-hosted or ntfy.sh.

The destination is the topic's full URL, always (``ntfy:https://ntfy.sh/team``): a bare
topic is not taken, so that a schedule never goes to the public ntfy.sh by surprise.
A topic is a password of sorts (anyone who knows it can read it), so logs show the
server only (``ntfy:https://ntfy.sh/…``).

Each delivery is one ``POST`` of the text to the topic URL, through the shared HTTP
client's guarded pool (the URL is a member's: internal addresses are refused, at save
time and again where the connection is opened), with ``Title`` (the ``subject`` option
or the first line); ntfy's default priority (a schedule's own priority, when schedules
have one, is the natural ``X-Priority``). Header values outside ASCII are sent
RFC 2047-encoded, which ntfy decodes. ntfy has no idempotency key: a retry after an
answer that was lost may publish twice.

Answers: 2xx ok (the message id is the JSON answer's ``id``), 429 and 5xx retried
(``Retry-After`` obeyed), any other 4xx permanent.
"""

from __future__ import annotations

import re
from email.header import Header
from typing import Any, ClassVar

from core.channels.base import Channel, Delivery, DeliveryResult
from core.channels.email import subject_for
from core.channels.webhook import USER_AGENT, parse_retry_after, truncate
from core.destinations import Destination, UriSyntax, owner_url_view, redact_url_path, url_parts
from core.errors import InvalidInput
from core.http_client import HTTPClient, TimedOut, Timeout, Unreachable
from core.netguard import Refused
from core.ratelimit import RateLimit

#: ntfy's topic names (its server's ``topicRegex``).
_TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")
EXAMPLE = "ntfy:https://ntfy.sh/team-alerts"


def _check_topic(raw: str, target: str) -> None:
    """An http(s) URL whose path is one topic name."""
    if not target.startswith(("https://", "http://")):
        raise InvalidInput(f"{raw!r} is not an ntfy topic URL: use {EXAMPLE}.")
    parts = url_parts(raw, target, EXAMPLE)
    if not parts.hostname or parts.query or parts.fragment or parts.username:
        raise InvalidInput(f"{raw!r} is not an ntfy topic URL: use {EXAMPLE}.")
    topic = parts.path.strip("/")
    if not _TOPIC.match(topic):
        raise InvalidInput(
            f"{raw!r} does not end in an ntfy topic (letters, digits, - and _, at most "
            f"64): use {EXAMPLE}."
        )


def _header(value: str) -> str:
    """A header value: ASCII as is, anything else RFC 2047-encoded (ntfy decodes it)."""
    value = " ".join(value.split())
    if value.isascii():
        return value
    return Header(value, "utf-8").encode(maxlinelen=10_000)


class NtfyChannel(Channel):
    """Publishes each delivery to its ntfy topic URL (see the module)."""

    kind: ClassVar[str] = "ntfy"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "ntfy",
        EXAMPLE,
        _check_topic,
        redact=redact_url_path,
        owner_view=owner_url_view,
        settings=("webhook_allow_private",),
    )
    #: ntfy.sh lets a visitor publish in bursts of 60, then one every 5 seconds.
    rate_limit = RateLimit(rate=0.2, burst=60.0)

    def __init__(self, *, http: HTTPClient | None = None, timeout: float = 30.0) -> None:
        self.http = http or HTTPClient()
        self._limits = Timeout(timeout, min(timeout, 5.0))

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any) -> NtfyChannel:
        return cls(http=http, timeout=settings.http_timeout)

    async def close(self) -> None:
        await self.http.close()

    async def validate(self, destination: Destination) -> None:
        """Refuse, at save time, a topic URL on an internal address."""
        refused = await self.http.guard.refusal(destination.target)
        if refused is not None:
            raise InvalidInput(refused)

    def headers(self, delivery: Delivery) -> dict[str, str]:
        headers = {
            "User-Agent": USER_AGENT,
            "Content-Type": "text/plain; charset=utf-8",
            "Title": _header(subject_for(delivery)),
        }
        return headers

    async def send(self, delivery: Delivery) -> DeliveryResult:
        where = delivery.destination.redacted()
        try:
            answer = await self.http.request(
                "POST",
                delivery.destination.target,
                guarded=True,
                timeouts=self._limits,
                headers=self.headers(delivery),
                content=delivery.body.encode("utf-8"),
            )
        except Refused as exc:
            return DeliveryResult.permanent(str(exc))
        except TimedOut as exc:
            return DeliveryResult.retry(f"{where}: {exc}.")
        except Unreachable as exc:
            return DeliveryResult.retry(f"Could not reach {where}: {exc}.")
        status = answer.status
        if 200 <= status < 300:
            try:
                data = answer.json()
            except ValueError:
                data = None
            found = data.get("id") if isinstance(data, dict) else None
            return DeliveryResult.ok(status, str(found) if found else None)
        text = answer.text.strip() if answer.content else ""
        said = f"{where} answered {status} {answer.reason}".rstrip()
        said += f": {truncate(text, 300)}" if text else "."
        if status == 429 or status >= 500:
            wait = parse_retry_after(answer.headers.get("retry-after"))
            return DeliveryResult.retry(said, status, wait)
        hint = (
            " The topic is protected: ntfy access tokens are not supported; use a topic "
            "anyone may publish to."
            if status in (401, 403)
            else " Check the topic URL."
        )
        return DeliveryResult.permanent(said + hint, status)
