"""A scripted delivery channel for dispatcher tests: it records every delivery and
answers from a script. It stands in for the outside world (a provider), not for
anything of ours."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import ClassVar

from core.channels.base import Channel, Delivery, DeliveryResult
from core.ratelimit import UNLIMITED, RateLimit

Script = Callable[[Delivery], DeliveryResult]


class RecordingChannel(Channel):
    kind: ClassVar[str] = "log"
    rate_limit: ClassVar[RateLimit] = UNLIMITED

    def __init__(self, script: Script | None = None, kind: str | None = None) -> None:
        self.script = script or (lambda d: DeliveryResult.ok(200, f"msg-{d.job_id}"))
        if kind is not None:
            self.kind = kind  # type: ignore[misc]
        self.deliveries: list[Delivery] = []
        self.arrived = asyncio.Event()

    async def send(self, delivery: Delivery) -> DeliveryResult:
        self.deliveries.append(delivery)
        self.arrived.set()
        return self.script(delivery)

    def per_key(self) -> Counter[str]:
        return Counter(d.idempotency_key for d in self.deliveries)
