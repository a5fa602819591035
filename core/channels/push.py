"""Push (``push:MEMBER``) to a member's registered devices through Firebase Cloud
Messaging HTTP v1. Placeholder of the foundation: FCM comes next."""

from __future__ import annotations

from typing import Any, ClassVar

from core.channels.base import Channel, ChannelStore, Delivery, DeliveryResult
from core.destinations import UriSyntax
from core.errors import InvalidInput


def _check_member(raw: str, target: str) -> None:
    if not target.strip():
        raise InvalidInput(f"{raw!r} names no member: use push:slack:U0123 or push:local:alice.")


class PushChannel(Channel):
    kind: ClassVar[str] = "push"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "push", "push:slack:U0123ABC", _check_member, settings=("fcm_service_account_file",)
    )

    def __init__(self) -> None:
        self.store: ChannelStore | None = None

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any) -> PushChannel:
        return cls()

    def attach(self, store: ChannelStore) -> None:
        self.store = store

    async def send(self, delivery: Delivery) -> DeliveryResult:
        return DeliveryResult.permanent(
            "Push is not configured: an admin must set FCM_SERVICE_ACCOUNT_FILE."
        )
