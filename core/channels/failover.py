"""A channel kind served by an ordered list of providers (``HERALD_EMAIL_PROVIDERS=
sendgrid,smtp``): each delivery goes to the first provider that is up; a provider that
is down for it (refused connection, timeout, 5xx, a 429 asking for longer than the
dispatcher waits) is skipped for the next one, for this delivery, and marked down for
every dispatcher for a cool-down (a row, :meth:`ChannelStore.mark_provider_down`), so
a burst does not knock on a dead provider once per message. A refusal of the *message*
(a bad address, an unsubscribed number) is the message's answer: no other provider is
asked.

How a burst meets a dead provider, in one process: the shared marks are read at most
once per :data:`HEALTH_TTL` seconds (:class:`ProviderHealth`), and a provider this
process has not heard answer since it started or since its last mark (its cool-down
just ended) is *probed* by one delivery while the others wait for that answer (at most
what asking it themselves would have cost): one request to a dead provider per process
and cool-down, not one per message in flight. A provider this process finds down is
skipped at once, before the next read.

When every provider is down, nothing is asked: the delivery is a retry due when the
first cool-down ends, answered as a 429 with Retry-After so that the dispatcher does not
count the try (:func:`core.dispatcher.verdicts.judge` refunds those). A job's tries count
the providers' refusals of it; a wait for any provider to come back is not one.

A channel with a single provider is not marked down by its own failures: with nothing to
fail over to, a cool-down would only hold every message of the kind back for the whole
cool-down after one 503, where each job's backoff tries again within seconds; it is
retried as any single-provider channel (Slack, a webhook) is. It still skips a provider
another dispatcher (with a longer list) marked down.
"""

from __future__ import annotations

import asyncio
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
#: The longest a provider is marked down for, whatever Retry-After it sent (a day, as
#: HERALD_PROVIDER_COOLDOWN's own bound).
MAX_DOWN_SECONDS = 86_400.0
#: How much of a provider's failure the shared mark keeps as its reason.
REASON_CHARS = 500


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
    at most every :data:`HEALTH_TTL` seconds, and which this process has heard answer.
    Without a store (schedule-time checks, a unit test) it is this process's own.

    The database failing never stops a delivery: an unreadable mark leaves this
    process's own reading (read again after :data:`HEALTH_TTL`), an unwritable one is
    kept here and merged into later readings until it ends (as is one a reading that
    began before the store took it may miss)."""

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
        #: The marks as last read, with this process's own since.
        self._down: dict[str, ProviderDown] = {}
        #: This process's own marks, with the monotonic time the store took each (None:
        #: not yet, or the database failed), kept over readings that may predate them.
        self._own: dict[str, tuple[ProviderDown, float | None]] = {}
        self._read_at: float | None = None
        self._reading = asyncio.Lock()
        #: Providers that answered this process since it started or their last mark.
        self._trusted: set[str] = set()
        #: The probe in flight of each provider not trusted, set when it has answered.
        self._probes: dict[str, asyncio.Event] = {}

    def now(self) -> datetime:
        return self._now()

    def marked(self, provider: str) -> bool:
        """Whether this process holds ``provider`` as down (it may have come back)."""
        return provider in self._down

    def held(self, provider: str) -> ProviderDown | None:
        """``provider``'s mark while its cool-down lasts (None: it may be tried)."""
        mark = self._down.get(provider)
        return mark if mark is not None and mark.until > self._now() else None

    async def down(self) -> dict[str, ProviderDown]:
        """The providers down now, by name."""
        await self.refresh()
        now = self._now()
        return {name: d for name, d in self._down.items() if d.until > now}

    async def refresh(self) -> None:
        """Read the shared marks when this process's reading is :data:`HEALTH_TTL`
        old (one read at a time: deliveries arriving meanwhile wait for it)."""
        if self.store is None or not self._stale():
            return
        async with self._reading:
            if not self._stale():
                return
            started = self._monotonic()
            try:
                rows = await self.store.providers_down(self._now())
            except DatabaseError:
                log.warning("provider health unreadable; using this process's own")
            else:
                self._read(rows, started)
            finally:
                self._read_at = self._monotonic()

    def _stale(self) -> bool:
        return self._read_at is None or self._monotonic() - self._read_at >= HEALTH_TTL

    def _read(self, rows: Sequence[ProviderDown], started: float) -> None:
        """Take the store's marks, read from ``started`` (a provider marked up elsewhere
        loses its mark here), keeping this process's own marks the reading may not hold
        (made as it ran, or never stored) while they last."""
        now = self._now()
        down = {row.provider: row for row in rows}
        for name, (mark, stored) in list(self._own.items()):
            if mark.until <= now or (stored is not None and stored < started):
                del self._own[name]  # over, or the store's reading is the truth
            elif name not in down or down[name].until < mark.until:
                down[name] = mark
        self._down = down
        self._trusted.difference_update(down)  # probed again once its cool-down ends

    async def turn(self, provider: str) -> bool | None:
        """May a delivery go to ``provider`` now? None: it is down (skip it). False:
        yes. True: yes, as its probe (it has not answered this process since its last
        mark or since start): the caller must call :meth:`probed` when the provider
        has answered. Meanwhile other deliveries wait here for that answer."""
        while True:
            if self.held(provider) is not None:
                return None
            if provider in self._trusted:
                return False
            probe = self._probes.get(provider)
            if probe is None:
                self._probes[provider] = asyncio.Event()
                return True
            await probe.wait()

    def probed(self, provider: str) -> None:
        """The probe of ``provider`` is over (answered, failed or cancelled): the
        deliveries waiting look again (the first becomes the next probe when it is
        neither down nor trusted)."""
        probe = self._probes.pop(provider, None)
        if probe is not None:
            probe.set()

    async def answered(self, provider: str, probe: bool = False) -> None:
        """``provider`` answered (not down): trusted here, and a mark on it ends for
        everyone: one this process holds, or, after a probe, one another dispatcher
        may have made since this process last read (a write per probe: at start and
        once per cool-down, not per delivery)."""
        self._trusted.add(provider)
        if provider in self._down or probe:
            await self.mark_up(provider, shared=probe)

    async def mark_down(self, provider: str, reason: str, retry_after: float | None) -> None:
        """Skip ``provider`` for the cool-down (or its Retry-After, when longer). A
        mark this process made (or read) while this delivery was being sent is the same
        outage: it is kept unless this answer asks for a longer pause."""
        now = self._now()
        seconds = min(max(self.cooldown, retry_after or 0.0), MAX_DOWN_SECONDS)
        until = now + timedelta(seconds=seconds)
        self._trusted.discard(provider)
        held = self.held(provider)
        if held is not None and held.until >= now + timedelta(seconds=retry_after or 0.0):
            return
        mark = ProviderDown(provider, until, reason[:REASON_CHARS])
        self._down[provider] = mark
        log.warning(
            "provider down; skipped for %s s",
            round(seconds),
            extra={"provider": provider, "reason": mark.reason},
        )
        if self.store is None:
            return
        self._own[provider] = (mark, None)
        try:
            await self.store.mark_provider_down(provider, until, mark.reason)
        except DatabaseError:
            log.warning("could not share a provider's health", extra={"provider": provider})
        else:
            if self._own.get(provider, (None, None))[0] is mark:
                self._own[provider] = (mark, self._monotonic())

    async def mark_up(self, provider: str, *, shared: bool = False) -> None:
        """``provider`` answered after it was marked down (here, or, with ``shared``,
        perhaps elsewhere): its mark ends for everyone."""
        self._own.pop(provider, None)
        if self._down.pop(provider, None) is not None:
            log.info("provider answers again", extra={"provider": provider})
        elif not shared:
            return
        if self.store is not None:
            try:
                await self.store.mark_provider_up(provider, now=self._now())
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
        the next. When every provider is down, a retry due when the first cool-down
        ends (a 429 with Retry-After: the try is not counted)."""
        if not self.providers:
            return DeliveryResult.permanent(
                f"{self.kind}: is not configured: an admin must set {self.settings_hint}."
            )
        await self.health.refresh()
        failures: list[str] = []
        last: DeliveryResult | None = None
        for provider in self.providers:
            result = await self._through(provider, delivery)
            if result is None:
                held = self.health.held(provider.name)
                why = held.reason if held is not None else "down"
                failures.append(f"{provider.label} is down ({why.rstrip('.')})")
                self._observe(provider.name, "skipped")
                continue
            if not self._is_down(result):
                if failures and result.error is not None:
                    result = replace(result, error=f"{result.error} (after {'; '.join(failures)})")
                return result
            failures.append(f"{provider.label}: {(result.error or 'down').rstrip('.')}")
            last = result
        if last is None:
            return self._all_down()
        if len(self.providers) == 1:
            return last
        return replace(
            last,
            error=f"No {self.kind} provider could take it: {'; '.join(failures)}.",
            retry_after=None,
        )

    async def _through(self, provider: Provider, delivery: Delivery) -> DeliveryResult | None:
        """``provider``'s answer (observed, and its health noted), or None when it is
        down and was not asked."""
        health, name = self.health, provider.name
        alone = len(self.providers) == 1
        probe = False
        if alone:
            if health.held(name) is not None:
                return None
        else:
            turn = await health.turn(name)
            if turn is None:
                return None
            probe = turn
        try:
            result = replace(await self._send(provider, delivery), provider=name)
            self._observe(name, result.outcome.value)
            if not self._is_down(result):
                await health.answered(name, probe)
            elif not alone:  # alone, it is retried as any channel is
                await health.mark_down(name, result.error or "down", result.retry_after)
            return result
        finally:
            if probe:
                health.probed(name)

    def _all_down(self) -> DeliveryResult:
        """Every provider is held down: asked none; due again when the first comes back."""
        now = self.health.now()
        marks = [(p.label, held) for p in self.providers if (held := self.health.held(p.name))]
        wait = max(1.0, min((h.until - now).total_seconds() for _, h in marks)) if marks else 1.0
        why = "; ".join(f"{label}: {held.reason.rstrip('.')}" for label, held in marks)
        return DeliveryResult.retry(
            f"Not sent: every {self.kind} provider is down ({why}); tried again in "
            f"{round(wait)} s, when the first cool-down ends.",
            status_code=429,
            retry_after=wait,
        )

    def _is_down(self, result: DeliveryResult) -> bool:
        """The provider failed, not the message: down, or a 429 asking for a longer
        pause than the dispatcher waits (or for none it says)."""
        if result.down:
            return True
        return result.status_code == 429 and (
            result.retry_after is None or result.retry_after > self.max_rate_wait
        )

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
