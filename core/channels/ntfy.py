"""ntfy (``ntfy:https://ntfy.example.com/topic``): self-hosted push to a topic URL,
behind the network guard. Placeholder of the foundation."""

from __future__ import annotations

from typing import Any, ClassVar

from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import UriSyntax
from core.errors import InvalidInput


def _check_topic(raw: str, target: str) -> None:
    if not target.startswith(("https://", "http://")):
        raise InvalidInput(f"{raw!r} is not an ntfy topic URL: use ntfy:https://ntfy.sh/team.")


class NtfyChannel(Channel):
    kind: ClassVar[str] = "ntfy"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "ntfy", "ntfy:https://ntfy.sh/team", _check_topic, settings=("webhook_allow_private",)
    )

    def __init__(self, *, http: Any = None, timeout: float = 30.0) -> None:
        self._http = http
        self._timeout = timeout

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any) -> NtfyChannel:
        return cls(http=http, timeout=settings.http_timeout)

    async def send(self, delivery: Delivery) -> DeliveryResult:
        return DeliveryResult.permanent("ntfy is not built yet.")
