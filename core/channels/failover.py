"""A channel kind served by an ordered list of providers (``HERALD_EMAIL_PROVIDERS=
sendgrid,smtp``): each delivery goes to the first provider that is up; a provider that
is down for it (refused connection, timeout, 5xx, a 429 asking for longer than the
dispatcher waits) is skipped for the next one, for this delivery, and marked down for
every dispatcher for a cool-down (a row, :meth:`ChannelStore.mark_provider_down`), so
a burst does not knock on a dead provider once per message. A refusal of the *message*
(a bad address, an unsubscribed number) is the message's answer: no other provider is
asked.

The shared marks are read at most once per :data:`HEALTH_TTL` seconds per process
(:class:`ProviderHealth`); a provider this process finds down is skipped at once, before
the next read.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from core.channels.base import Channel, ChannelStore, Delivery, DeliveryResult, ProviderDown
from core.destinations import Destination
from core.errors import DatabaseError

log = logging.getLogger(__name__)

#: Seconds a process reuses its reading of the shared provider marks.
HEALTH_TTL = 2.0


class Provider(ABC):
    """One provider of a channel kind (SendGrid for ``email:``, Twilio for ``sms:``).

    ``send`` never raises for what the provider or the network does: it returns a
    result, :meth:`DeliveryResult.unavailable` when the provider (not the message) failed.
    """

    #: The name ``HERALD_*_PROVIDERS`` lists, metrics and the delivery log use.
    name: ClassVar[str]
    #: The provider's name in a sentence ("SendGrid").
    label: ClassVar[str]

    @property
    def configured(self) -> bool:
        """Whether its credentials are set (an unconfigured provider is left out)."""
        return True

    @abstractmethod
    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send one delivery through this provider and classify the answer."""

    async def validate(self, destination: Destination, body: str) -> None:  # noqa: B027
        """Check at save time what this provider documents as its limits (raises
        InvalidInput). Default: none beyond the channel's."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""


class ProviderHealth:
    """Which providers are down, as every dispatcher shares it (the store's rows), read
    at most every :data:`HEALTH_TTL` seconds. Without a store (schedule-time checks, a
    unit test) it is this process's own."""

    def __init__(
        self,
        cooldown: float = 60.0,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cooldown = cooldown
        self.store: ChannelStore | None = None
        self._now = now
        self._monotonic = monotonic
        self._down: dict[str, ProviderDown] = {}
        self._read_at: float | None = None

    def now(self) -> datetime:
        return self._now()

    def marked(self, provider: str) -> bool:
        """Whether this process holds ``provider`` as down (it may have come back)."""
        return provider in self._down

    async def down(self) -> dict[str, ProviderDown]:
        """The providers down now, by name."""
        now = self._now()
        if self.store is not None and (
            self._read_at is None or self._monotonic() - self._read_at >= HEALTH_TTL
        ):
            try:
                rows = await self.store.providers_down(now)
            except DatabaseError:
                log.warning("provider health unreadable; using this process's own")
            else:
                self._down = {row.provider: row for row in rows}
                self._read_at = self._monotonic()
        return {name: d for name, d in self._down.items() if d.until > now}

    async def mark_down(self, provider: str, reason: str, retry_after: float | None) -> None:
        """Skip ``provider`` for the cool-down (or its Retry-After, when longer)."""
        seconds = max(self.cooldown, retry_after or 0.0)
        until = self._now() + timedelta(seconds=seconds)
        self._down[provider] = ProviderDown(provider, until, reason)
        log.warning(
            "provider down; skipped for %s s",
            round(seconds),
            extra={"provider": provider, "reason": reason},
        )
        if self.store is not None:
            try:
                await self.store.mark_provider_down(provider, until, reason)
            except DatabaseError:
                log.warning("could not share a provider's health", extra={"provider": provider})

    async def mark_up(self, provider: str) -> None:
        """``provider`` answered after it was marked down."""
        if self._down.pop(provider, None) is None:
            return
        log.info("provider answers again", extra={"provider": provider})
        if self.store is not None:
            try:
                await self.store.mark_provider_up(provider)
            except DatabaseError:
                log.warning("could not share a provider's health", extra={"provider": provider})


class FailoverChannel(Channel):
    """A channel kind whose deliveries go through ``providers`` in order (the
    configured ones), failing over while one is down. With none configured, every
    delivery is a permanent "not configured" result naming ``settings_hint``."""

    #: The variables an admin sets to configure the kind (in the "not configured" sentence).
    settings_hint: ClassVar[str] = ""

    def __init__(self, providers: Sequence[Provider], health: ProviderHealth | None = None) -> None:
        self.providers = [p for p in providers if p.configured]
        self.health = health or ProviderHealth()
        #: A 429 asking for a longer pause than this (seconds) counts as the provider
        #: being down (the dispatcher's HERALD_CLAIM_HORIZON, set by build_channels).
        self.max_rate_wait = 10.0
        #: Called with (provider, outcome) after each provider's answer, and with
        #: (provider, "skipped") when it is passed over as down (metrics).
        self.observe: Callable[[str, str], None] | None = None

    def attach(self, store: ChannelStore) -> None:
        self.health.store = store

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """The first up provider's answer; a provider down for this delivery hands it to
        the next. When every provider is down, a retry due when the first cool-down ends."""
        if not self.providers:
            return DeliveryResult.permanent(
                f"{self.kind}: is not configured: an admin must set {self.settings_hint}."
            )
        down = await self.health.down()
        failures: list[str] = []
        last: DeliveryResult | None = None
        tried = 0
        for provider in self.providers:
            if provider.name in down:
                failures.append(f"{provider.label} is down ({down[provider.name].reason})")
                self._observe(provider.name, "skipped")
                continue
            tried += 1
            result = replace(await self._send(provider, delivery), provider=provider.name)
            self._observe(provider.name, result.outcome.value)
            if not self._is_down(result):
                if self.health.marked(provider.name):
                    await self.health.mark_up(provider.name)
                if failures and result.error is not None:
                    result = replace(result, error=f"{result.error} (after {'; '.join(failures)})")
                return result
            if len(self.providers) > 1:  # alone, it is retried as any channel is
                await self.health.mark_down(
                    provider.name, result.error or "down", result.retry_after
                )
            failures.append(f"{provider.label}: {result.error}")
            last = result
        if tried == 0:
            first = min(d.until for d in down.values() if d.provider in self._names())
            wait = max(1.0, (first - self.health.now()).total_seconds())
            return DeliveryResult.retry(
                f"Every {self.kind} provider is down: {'; '.join(failures)}.", retry_after=wait
            )
        assert last is not None
        if len(self.providers) == 1:
            return last
        return replace(
            last,
            error=f"No {self.kind} provider could take it: {'; '.join(failures)}",
            retry_after=None,
        )

    def _is_down(self, result: DeliveryResult) -> bool:
        """The provider failed, not the message: down, or a 429 asking for a longer
        pause than the dispatcher waits (or for none it says)."""
        if result.down:
            return True
        return result.status_code == 429 and (
            result.retry_after is None or result.retry_after > self.max_rate_wait
        )

    def _names(self) -> set[str]:
        return {p.name for p in self.providers}

    def _observe(self, provider: str, outcome: str) -> None:
        if self.observe is not None:
            self.observe(provider, outcome)

    @staticmethod
    async def _send(provider: Provider, delivery: Delivery) -> DeliveryResult:
        try:
            return await provider.send(delivery)
        except Exception:  # noqa: BLE001 - a provider's bug is that provider's failure
            log.exception("provider raised", extra={"provider": provider.name})
            return DeliveryResult.unavailable(f"Internal error in the {provider.label} provider.")

    async def close(self) -> None:
        for provider in self.providers:
            await provider.close()
