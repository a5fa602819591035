"""The long tail of services through Apprise (``apprise:`` + an Apprise URL): Microsoft
Teams, Telegram, Matrix, ntfy, Pushover, Mattermost, SMS gateways and about a hundred
more, e.g. ``apprise:tgram://BOT_TOKEN/CHAT_ID`` or ``apprise:ntfy://ntfy.sh/team``.

An optional extra (``pip install 'herald[apprise]'``): without it the channel answers
every delivery with a permanent "not installed" result. Apprise reports only success or
failure, so a failure is retried with backoff and becomes a dead letter when it keeps
failing.

Every HTTP request an Apprise plugin makes goes through the network guard
(:meth:`core.netguard.Guard.urllib3`: Apprise's plugins speak ``requests``), whatever the
scheme: a service URL that points at an internal address is refused where the
connection is opened, and the delivery fails permanently with the guard's sentence. The
generic HTTP kinds (json, xml, form), which name any host, are also checked at schedule
time.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, ClassVar

from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import Destination, UriSyntax
from core.errors import InvalidInput
from core.netguard import Guard
from core.ratelimit import RateLimit

#: Apprise schemes that POST to any host the URL names (so: the SSRF check applies).
GENERIC_HTTP = ("json", "jsons", "xml", "xmls", "form", "forms")


def _apprise() -> Any | None:
    """The apprise module, or None when the extra is not installed."""
    try:
        with warnings.catch_warnings():
            # apprise's plugins import the standard library's deprecated imghdr; they
            # load on the first URL it reads, so read one here, once, quietly
            warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
            import apprise

            apprise.Apprise().add("json://localhost/")
    except ImportError:
        return None
    return apprise


def _check_url(raw: str, target: str) -> None:
    """An Apprise URL: a service's scheme, ``://`` and the rest."""
    scheme, sep, rest = target.partition("://")
    if not sep or not scheme or not rest:
        raise InvalidInput(
            f"{raw!r} is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID "
            "or apprise:ntfy://ntfy.sh/topic."
        )


def _redact(destination: Destination) -> str:
    """Only the service's scheme: the whole URL may be credentials."""
    return f"apprise:{destination.target.partition('://')[0]}://…"


class AppriseChannel(Channel):
    """Sends through Apprise; one Apprise object per delivery (URLs carry the secrets)."""

    kind: ClassVar[str] = "apprise"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "apprise",
        "apprise:tgram://TOKEN/CHAT",
        _check_url,
        redact=_redact,
        settings=("webhook_allow_private",),
    )
    rate_limit: ClassVar[RateLimit] = RateLimit(rate=2.0, burst=5.0)

    def __init__(self, *, allow_private: bool = False, guard: Guard | None = None) -> None:
        self._guard = guard or Guard(allow_private=allow_private)

    async def _refused(self, url: str) -> str | None:
        scheme = url.partition("://")[0].lower()
        if scheme not in GENERIC_HTTP:
            return None
        http_url = ("https" if scheme.endswith("s") else "http") + url[len(scheme) :]
        return await self._guard.refusal(http_url)

    async def validate(self, destination: Destination) -> None:
        """Refuse a URL Apprise does not understand, or that points inside the network."""
        apprise = _apprise()
        if apprise is None:
            raise InvalidInput(
                "apprise: destinations need the Apprise extra: pip install 'herald[apprise]'."
            )
        if not apprise.Apprise().add(destination.target):
            raise InvalidInput(
                f"Apprise does not understand {destination.redacted()}: see the Apprise "
                "wiki for the URL of your service."
            )
        refused = await self._refused(destination.target)
        if refused is not None:
            raise InvalidInput(refused)

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Notify through Apprise: ok, or a retryable failure (Apprise gives no reason)."""
        apprise = _apprise()
        where = delivery.destination.redacted()
        if apprise is None:
            return DeliveryResult.permanent(
                "The Apprise extra is not installed on this dispatcher: "
                "pip install 'herald[apprise]'."
            )
        notifier = apprise.Apprise()
        if not notifier.add(delivery.destination.target):
            return DeliveryResult.permanent(f"Apprise does not understand {where}.")
        refused = await self._refused(delivery.destination.target)
        if refused is not None:
            return DeliveryResult.permanent(refused)
        title = str(delivery.options.get("subject") or "")
        try:
            # in a worker thread that carries the guard's context (Apprise's own
            # threads copy it); its plugins' connections are checked where they open
            with self._guard.urllib3() as refusals:
                sent = await asyncio.to_thread(notifier.notify, body=delivery.body, title=title)
        except Exception as exc:  # noqa: BLE001 - a plugin's failure is a failed try
            return DeliveryResult.retry(f"Apprise failed for {where} ({type(exc).__name__}).")
        if refusals:
            return DeliveryResult.permanent(refusals[0])
        if sent:
            return DeliveryResult.ok()
        return DeliveryResult.retry(f"Apprise could not deliver to {where}.")
