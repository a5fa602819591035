"""Channels that never leave the machine: ``log:`` prints each delivery, ``null:``
discards it (for benchmarks)."""

from __future__ import annotations

import sys
from typing import ClassVar, TextIO

from core.channels.base import Channel, Delivery, DeliveryResult
from core.destinations import UriSyntax, nothing_after


class LogChannel(Channel):
    """Writes each delivery as one line to a stream (the service's stdout by default).

    This is the delivery itself, not a log record: the message text is the point."""

    kind: ClassVar[str] = "log"
    uri: ClassVar[UriSyntax] = UriSyntax("log", "log:", nothing_after("log"))

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    async def send(self, delivery: Delivery) -> DeliveryResult:
        stream = self._stream or sys.stdout
        stamp = delivery.occurrence_at.strftime("%Y-%m-%d %H:%M:%SZ")
        stream.write(
            f"[herald] delivered job {delivery.job_id} (schedule {delivery.schedule_id}, "
            f"due {stamp}, try {delivery.attempt}, key {delivery.idempotency_key}): "
            f"{delivery.body}\n"
        )
        stream.flush()
        return DeliveryResult.ok(message_id=f"log-{delivery.job_id}")


class NullChannel(Channel):
    """Accepts everything and sends nothing."""

    kind: ClassVar[str] = "null"
    uri: ClassVar[UriSyntax] = UriSyntax("null", "null:", nothing_after("null"))

    async def send(self, delivery: Delivery) -> DeliveryResult:
        return DeliveryResult.ok()
