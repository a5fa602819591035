"""The ``webhook:`` channel's settings: the secrets it signs requests with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from core.scrub import SecretParts


def _pair_secrets(value: str) -> Iterator[str]:
    """The secrets of ``URL_PREFIX=SECRET`` pairs (the prefixes are not secret)."""
    for pair in value.split(","):
        yield pair.partition("=")[2].strip()


class WebhookSettings(BaseModel):
    """``HERALD_WEBHOOK_SECRETS`` (a base of :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    #: Signing secrets for webhooks: ``URL_PREFIX=SECRET`` pairs, comma-separated; the
    #: longest matching prefix wins (Standard Webhooks ``whsec_...`` secrets).
    webhook_secrets: Annotated[SecretStr | None, SecretParts(_pair_secrets)] = Field(
        default=None, alias="HERALD_WEBHOOK_SECRETS"
    )

    def webhook_secret_for(self, url: str) -> str | None:
        """The signing secret of the longest ``HERALD_WEBHOOK_SECRETS`` prefix of ``url``."""
        if self.webhook_secrets is None:
            return None
        best: tuple[int, str] | None = None
        for pair in self.webhook_secrets.get_secret_value().split(","):
            prefix, sep, secret = pair.strip().partition("=")
            if sep and url.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), secret)
        return best[1] if best else None
