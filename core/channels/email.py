"""Email (``email:someone@example.com``) through the providers ``HERALD_EMAIL_PROVIDERS``
lists, in order (default ``smtp``): an SMTP server, SendGrid or Mailgun
(:mod:`core.channels.email_providers`), failing over from one that is down to the next
(:mod:`core.channels.failover`). A listed provider whose credentials are not set is left
out; with none left, every delivery is refused with a sentence naming what to set.

Whichever provider sends it, an email has the same subject (``options["subject"]`` or the
body's first line, cut to 78 characters), text and ``Message-ID`` (derived from the
job's idempotency key, so a retried delivery carries the same id).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import SecretStr

from core.channels.base import Delivery, DeliveryResult
from core.channels.email_providers import (
    MAX_SUBJECT,
    EmailProvider,
    MailgunProvider,
    SendGridProvider,
    message_id,
    subject_for,
)
from core.channels.failover import FailoverChannel, ProviderHealth
from core.channels.smtp import DEFAULT_PORTS, SmtpProvider, TlsMode
from core.destinations import UriSyntax
from core.errors import InvalidInput
from core.http_client import HTTPClient
from core.ratelimit import RateLimit

__all__ = [
    "DEFAULT_PORTS",
    "MAX_SUBJECT",
    "PROVIDERS",
    "EmailChannel",
    "TlsMode",
    "email_providers",
    "message_id",
    "subject_for",
]

_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")

#: The email providers, by the name ``HERALD_EMAIL_PROVIDERS`` lists.
PROVIDERS: dict[str, type[EmailProvider]] = {
    "smtp": SmtpProvider,
    "sendgrid": SendGridProvider,
    "mailgun": MailgunProvider,
}


def _check_address(raw: str, target: str) -> None:
    """One address, without a display name."""
    if not _ADDRESS.match(target):
        raise InvalidInput(f"{raw!r} is not an email address: use email:ops@example.com.")


def email_providers(settings: Any, http: HTTPClient | None = None) -> list[EmailProvider]:
    """Every provider ``HERALD_EMAIL_PROVIDERS`` lists, in order, configured or not
    (``http``: the shared client; None: each HTTP provider makes its own on first use)."""
    names = [name for name in settings.email_providers.split(",") if name]
    return [PROVIDERS[name].from_settings(settings, http) for name in names]


def not_configured(providers: Sequence[EmailProvider]) -> str:
    """The sentence for email with none of ``providers`` configured, naming what to set
    for each one listed."""
    hints = [f"{p.settings_hint} ({p.label})" for p in providers] or [
        f"{SmtpProvider.settings_hint} (SMTP)"
    ]
    listed = ", ".join(p.name for p in providers) or "none"
    return (
        f"Email is not configured: an admin must set {' or '.join(hints)} "
        f"(HERALD_EMAIL_PROVIDERS lists {listed})."
    )


class EmailChannel(FailoverChannel):
    """Sends each delivery as an email through the first provider that is up.

    ``EmailChannel(providers, health)`` goes through ``providers`` in order. Without
    ``providers``, through one SMTP server (the keywords of :class:`SmtpProvider`:
    ``host`` None means not configured; ``from_address`` may carry a display name).
    """

    kind: ClassVar[str] = "email"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "email",
        "email:ops@example.com",
        _check_address,
        settings=(
            "email_providers",
            "email_from",
            "smtp_host",
            "smtp_port",
            "smtp_user",
            "smtp_password",
            "smtp_from",
            "smtp_tls",
            "sendgrid_api_key",
            "sendgrid_api_url",
            "mailgun_api_key",
            "mailgun_domain",
            "mailgun_api_url",
        ),
    )
    rate_limit: ClassVar[RateLimit] = RateLimit(rate=5.0, burst=5.0)

    def __init__(
        self,
        providers: Sequence[EmailProvider] | None = None,
        health: ProviderHealth | None = None,
        *,
        host: str | None = None,
        from_address: str = "",
        port: int | None = None,
        user: str | None = None,
        password: str | SecretStr | None = None,
        tls: TlsMode = "starttls",
        timeout: float = 30.0,
        tls_context: ssl.SSLContext | None = None,
        message_id_domain: str | None = None,
    ) -> None:
        if providers is None:
            providers = [
                SmtpProvider(
                    host=host,
                    from_address=from_address,
                    port=port,
                    user=user,
                    password=password,
                    tls=tls,
                    timeout=timeout,
                    tls_context=tls_context,
                    message_id_domain=message_id_domain,
                )
            ]
        self._not_configured = not_configured(providers)
        super().__init__(providers, health)

    @classmethod
    def from_settings(
        cls, settings: Any, *, http: HTTPClient | None, health: ProviderHealth | None
    ) -> EmailChannel:
        """The channel the settings configure: the providers ``HERALD_EMAIL_PROVIDERS``
        lists that have their credentials, sharing ``http`` and ``health``."""
        return cls(email_providers(settings, http), health)

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """The first up provider's answer (core.channels.failover); permanent, naming
        the settings to set, when no listed provider is configured."""
        if not self.providers:
            return DeliveryResult.permanent(self._not_configured)
        return await super().send(delivery)
