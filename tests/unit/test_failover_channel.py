"""FailoverChannel and ProviderHealth as pure logic (issue 36, failover): the order of
the providers, a down one skipped for the next and held down for the cool-down, a
refusal of the message never failed over, every provider down (a refunded 429), one
probe of a provider per burst, the metrics' calls, and a database that fails. The
providers here are scripted stand-ins; tests/integration/test_failover.py drives the
real Twilio and Vonage providers against their fakes through the dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from core.channels.base import Delivery, DeliveryResult, Outcome, ProviderDown
from core.channels.failover import HEALTH_TTL, FailoverChannel, Provider, ProviderHealth
from core.errors import DatabaseError
from tests.fakes.deliveries import make_delivery

T = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
TO = "sms:+12025550123"

Script = Callable[[Delivery], DeliveryResult]


def up(delivery: Delivery) -> DeliveryResult:
    return DeliveryResult.ok(201, f"id-{delivery.job_id}")


def refused(delivery: Delivery) -> DeliveryResult:
    return DeliveryResult.unavailable("The provider refused the connection.")


class Scripted(Provider):
    """A provider answering from a script; ``gate`` (when set) holds every answer
    until it opens, as a slow network would."""

    label: ClassVar[str] = "Scripted"

    def __init__(self, name: str, script: Script = up, configured: bool = True) -> None:
        self.name = name  # type: ignore[misc]
        self.label = name.title()  # type: ignore[misc]
        self.script = script
        self._configured = configured
        self.sent: list[Delivery] = []
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()

    @property
    def configured(self) -> bool:
        return self._configured

    async def send(self, delivery: Delivery) -> DeliveryResult:
        self.sent.append(delivery)
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        return self.script(delivery)

    async def asked(self, times: int) -> None:
        """Return once this provider has been asked ``times`` times."""
        while len(self.sent) < times:
            self.arrived.clear()
            await self.arrived.wait()


class Sms(FailoverChannel):
    kind: ClassVar[str] = "sms"


class Clocks:
    def __init__(self) -> None:
        self.at = T
        self.mono = 0.0

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)
        self.mono += seconds


class MemoryStore:
    """The health part of a ChannelStore in memory (the rows' rules: a mark is never
    shortened; marking up ends it now); ``failing`` makes every call a DatabaseError."""

    def __init__(self) -> None:
        self.rows: dict[str, ProviderDown] = {}
        self.failing = False
        self.reads = 0
        self.writes: list[tuple[str, str]] = []
        self.hold: asyncio.Event | None = None
        self.reading = asyncio.Event()

    def _check(self) -> None:
        if self.failing:
            raise DatabaseError("The database at sqlite:///x failed: disk I/O error.")

    async def providers_down(self, now: datetime) -> list[ProviderDown]:
        self.reads += 1
        self._check()
        rows = [row for row in self.rows.values() if row.until > now]
        if self.hold is not None:  # a slow read: its rows are those when it began
            self.reading.set()
            await self.hold.wait()
        return rows

    async def mark_provider_down(self, provider: str, until: datetime, reason: str) -> None:
        self.writes.append(("down", provider))
        self._check()
        held = self.rows.get(provider)
        longest = max(until, held.until) if held is not None else until
        self.rows[provider] = ProviderDown(provider, longest, reason)

    async def mark_provider_up(self, provider: str, now: datetime | None = None) -> None:
        self.writes.append(("up", provider))
        self._check()
        held = self.rows.get(provider)
        if held is not None and now is not None and held.until > now:
            self.rows[provider] = ProviderDown(provider, now, held.reason)

    async def devices_of(self, tenant: str, member_id: str) -> list[object]:
        return []

    async def forget_device(self, tenant: str, device_id: int, reason: str) -> None:
        return None


def channel(
    *providers: Scripted, clocks: Clocks | None = None, store: MemoryStore | None = None
) -> tuple[Sms, list[tuple[str, str]]]:
    clocks = clocks or Clocks()
    health = ProviderHealth(60.0, now=clocks.now, monotonic=clocks.monotonic)
    made = Sms(list(providers), health)
    if store is not None:
        made.attach(store)  # type: ignore[arg-type]
    seen: list[tuple[str, str]] = []
    made.observe = lambda provider, outcome: seen.append((provider, outcome))
    return made, seen


def delivery(n: int = 1) -> Delivery:
    return make_delivery(TO, job_id=n)


# --- order, skip, refusals ------------------------------------------------------------


async def test_the_first_provider_up_takes_it_and_the_result_names_it() -> None:
    first, second = Scripted("twilio"), Scripted("vonage")
    sms, seen = channel(first, second)
    result = await sms.send(delivery())
    assert (result.outcome, result.provider, result.message_id) == (Outcome.OK, "twilio", "id-1")
    assert (len(first.sent), len(second.sent)) == (1, 0)
    assert seen == [("twilio", "ok")]


async def test_a_provider_down_hands_the_delivery_to_the_next_and_is_skipped_after() -> None:
    clocks = Clocks()
    first, second = Scripted("twilio", refused), Scripted("vonage")
    sms, seen = channel(first, second, clocks=clocks)
    result = await sms.send(delivery(1))
    assert (result.outcome, result.provider) == (Outcome.OK, "vonage")
    assert seen == [("twilio", "retry"), ("vonage", "ok")]

    seen.clear()
    for n in range(2, 5):
        assert (await sms.send(delivery(n))).provider == "vonage"
    assert len(first.sent) == 1  # not asked again during its cool-down
    assert seen == [("twilio", "skipped"), ("vonage", "ok")] * 3
    held = sms.health.held("twilio")
    assert held is not None
    assert held.until == T + timedelta(seconds=60)
    assert held.reason == "The provider refused the connection."


async def test_a_refusal_of_the_message_is_not_failed_over() -> None:
    def unsubscribed(delivery: Delivery) -> DeliveryResult:
        return DeliveryResult.permanent("Twilio refused it: 21610 unsubscribed recipient.", 400)

    first, second = Scripted("twilio", unsubscribed), Scripted("vonage")
    sms, seen = channel(first, second)
    result = await sms.send(delivery())
    assert (result.outcome, result.provider, result.status_code) == (
        Outcome.PERMANENT,
        "twilio",
        400,
    )
    assert second.sent == []
    assert sms.health.held("twilio") is None  # the provider answered: it is up
    assert seen == [("twilio", "permanent")]


async def test_a_short_429_is_the_providers_pause_and_a_long_one_is_down() -> None:
    wait = {"s": 5.0}

    def busy(delivery: Delivery) -> DeliveryResult:
        return DeliveryResult.retry("Twilio: too many requests.", 429, retry_after=wait["s"])

    first, second = Scripted("twilio", busy), Scripted("vonage")
    sms, _ = channel(first, second)
    sms.max_rate_wait = 10.0
    result = await sms.send(delivery(1))
    assert (result.status_code, result.retry_after, result.provider) == (429, 5.0, "twilio")
    assert second.sent == []  # waited for, not failed over

    wait["s"] = 300.0  # longer than the dispatcher waits: the provider is down
    result = await sms.send(delivery(2))
    assert (result.outcome, result.provider) == (Outcome.OK, "vonage")
    held = sms.health.held("twilio")
    assert held is not None
    assert held.until == T + timedelta(seconds=300)  # its Retry-After, over the cool-down


async def test_a_provider_that_raises_is_down_for_that_delivery() -> None:
    def broken(delivery: Delivery) -> DeliveryResult:
        raise KeyError("sid")

    sms, seen = channel(Scripted("twilio", broken), Scripted("vonage"))
    result = await sms.send(delivery())
    assert result.provider == "vonage"
    assert seen == [("twilio", "retry"), ("vonage", "ok")]


async def test_unconfigured_providers_are_left_out_and_none_is_a_clear_refusal() -> None:
    sms, _ = channel(Scripted("twilio", configured=False), Scripted("vonage"))
    assert [p.name for p in sms.providers] == ["vonage"]
    Sms.settings_hint = "TWILIO_ACCOUNT_SID (HERALD_SMS_PROVIDERS)"
    try:
        none, _ = channel(Scripted("twilio", configured=False))
        result = await none.send(delivery())
    finally:
        Sms.settings_hint = ""
    assert result.outcome is Outcome.PERMANENT
    assert result.error == (
        "sms: is not configured: an admin must set TWILIO_ACCOUNT_SID (HERALD_SMS_PROVIDERS)."
    )


# --- every provider down ------------------------------------------------------------------


async def test_every_provider_tried_and_down_is_a_counted_retry_saying_each() -> None:
    first, second = Scripted("twilio", refused), Scripted("vonage", refused)
    sms, seen = channel(first, second)
    result = await sms.send(delivery())
    assert result.outcome is Outcome.RETRY
    assert result.retry_after is None  # the job's own backoff: the providers were asked
    assert result.error == (
        "No sms provider could take it: Twilio: The provider refused the connection; "
        "Vonage: The provider refused the connection."
    )
    assert seen == [("twilio", "retry"), ("vonage", "retry")]


async def test_every_provider_held_down_asks_none_and_the_try_is_refunded() -> None:
    clocks = Clocks()
    first, second = Scripted("twilio", refused), Scripted("vonage", refused)
    sms, seen = channel(first, second, clocks=clocks)
    await sms.send(delivery(1))
    clocks.advance(15)
    seen.clear()
    result = await sms.send(delivery(2))
    assert (len(first.sent), len(second.sent)) == (1, 1)  # nobody asked
    assert seen == [("twilio", "skipped"), ("vonage", "skipped")]
    # a 429 with Retry-After: verdicts.judge does not count the try
    assert (result.outcome, result.status_code, result.provider) == (Outcome.RETRY, 429, None)
    assert result.retry_after == 45.0  # when the first cool-down ends
    assert result.error == (
        "Not sent: every sms provider is down (Twilio: The provider refused the connection; "
        "Vonage: The provider refused the connection); tried again in 45 s, when the first "
        "cool-down ends."
    )


async def test_after_the_cool_down_the_provider_is_probed_and_trusted_again() -> None:
    clocks = Clocks()
    state = {"down": True}

    def flaky(delivery: Delivery) -> DeliveryResult:
        return refused(delivery) if state["down"] else up(delivery)

    first, second = Scripted("twilio", flaky), Scripted("vonage")
    sms, _ = channel(first, second, clocks=clocks)
    assert (await sms.send(delivery(1))).provider == "vonage"
    state["down"] = False
    clocks.advance(59)
    assert (await sms.send(delivery(2))).provider == "vonage"  # still cooling down
    clocks.advance(1)
    assert (await sms.send(delivery(3))).provider == "twilio"  # the probe: answered
    assert sms.health.marked("twilio") is False
    assert (await sms.send(delivery(4))).provider == "twilio"


# --- one provider -------------------------------------------------------------------------


async def test_a_single_provider_is_retried_as_any_channel_and_never_held_down() -> None:
    only = Scripted("twilio", refused)
    sms, seen = channel(only)
    for n in (1, 2):
        result = await sms.send(delivery(n))
        assert (result.outcome, result.provider, result.retry_after) == (
            Outcome.RETRY,
            "twilio",
            None,
        )
        assert result.error == "The provider refused the connection."
    assert len(only.sent) == 2
    assert sms.health.held("twilio") is None
    assert seen == [("twilio", "retry")] * 2


# --- a burst ------------------------------------------------------------------------------


async def test_a_burst_probes_a_dead_provider_once() -> None:
    first, second = Scripted("twilio", refused), Scripted("vonage")
    first.gate = asyncio.Event()  # the first answer takes a while
    sms, seen = channel(first, second)
    sends = [asyncio.create_task(sms.send(delivery(n))) for n in range(20)]
    await first.asked(1)
    first.gate.set()
    results = await asyncio.gather(*sends)
    assert len(first.sent) == 1
    assert [r.provider for r in results] == ["vonage"] * 20
    assert seen.count(("twilio", "skipped")) == 19


async def test_a_burst_waits_for_the_probe_of_a_provider_that_is_up() -> None:
    first, second = Scripted("twilio"), Scripted("vonage")
    first.gate = asyncio.Event()
    sms, _ = channel(first, second)
    sends = [asyncio.create_task(sms.send(delivery(n))) for n in range(10)]
    await first.asked(1)
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(first.sent) == 1  # the others wait for its answer ...
    first.gate.set()
    results = await asyncio.gather(*sends)
    assert [r.provider for r in results] == ["twilio"] * 10  # ... then all go, in parallel
    assert second.sent == []


async def test_a_cancelled_probe_hands_the_probe_to_a_waiting_delivery() -> None:
    first, second = Scripted("twilio"), Scripted("vonage")
    first.gate = asyncio.Event()
    sms, _ = channel(first, second)
    probe = asyncio.create_task(sms.send(delivery(1)))
    waiter = asyncio.create_task(sms.send(delivery(2)))
    await first.asked(1)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    await first.asked(2)
    first.gate.set()
    assert (await waiter).provider == "twilio"


async def test_deliveries_in_flight_when_a_trusted_provider_dies_mark_it_once() -> None:
    store = MemoryStore()
    state = {"down": False}

    def dying(delivery: Delivery) -> DeliveryResult:
        return refused(delivery) if state["down"] else up(delivery)

    first, second = Scripted("twilio", dying), Scripted("vonage")
    sms, _ = channel(first, second, store=store)
    await sms.send(delivery(0))  # trusted now
    state["down"] = True
    first.gate = asyncio.Event()
    sends = [asyncio.create_task(sms.send(delivery(n))) for n in range(1, 6)]
    await first.asked(6)
    first.gate.set()
    results = await asyncio.gather(*sends)
    assert [r.provider for r in results] == ["vonage"] * 5
    assert store.writes.count(("down", "twilio")) == 1  # one outage, one mark


# --- the shared marks ---------------------------------------------------------------------


async def test_marks_are_read_once_per_ttl_and_another_dispatchers_mark_is_skipped() -> None:
    clocks, store = Clocks(), MemoryStore()
    first, second = Scripted("twilio"), Scripted("vonage")
    sms, _ = channel(first, second, clocks=clocks, store=store)
    await asyncio.gather(*(sms.send(delivery(n)) for n in range(5)))
    assert store.reads == 1  # one read for the burst
    store.rows["twilio"] = ProviderDown("twilio", T + timedelta(seconds=60), "elsewhere: 503")
    clocks.advance(HEALTH_TTL - 0.1)
    assert (await sms.send(delivery(6))).provider == "twilio"  # not read yet
    clocks.advance(0.1)
    assert (await sms.send(delivery(7))).provider == "vonage"
    assert store.reads == 2


async def test_a_failing_database_never_stops_a_delivery() -> None:
    clocks, store = Clocks(), MemoryStore()
    store.failing = True
    first, second = Scripted("twilio", refused), Scripted("vonage")
    sms, _ = channel(first, second, clocks=clocks, store=store)
    assert (await sms.send(delivery(1))).provider == "vonage"  # read and mark failed
    assert store.reads == 1
    assert (await sms.send(delivery(2))).provider == "vonage"  # no read: within the TTL
    assert store.reads == 1
    clocks.advance(HEALTH_TTL)
    store.failing = False  # readable again, and the mark it refused is not there ...
    assert (await sms.send(delivery(3))).provider == "vonage"
    assert len(first.sent) == 1  # ... but this process kept it
    clocks.advance(60)
    assert (await sms.send(delivery(4))).provider == "vonage"  # probed again, still down
    assert len(first.sent) == 2
    assert "twilio" in store.rows  # shared this time


async def test_a_reading_that_began_before_a_mark_was_stored_keeps_the_mark() -> None:
    clocks, store = Clocks(), MemoryStore()
    health = ProviderHealth(60.0, now=clocks.now, monotonic=clocks.monotonic)
    health.store = store  # type: ignore[assignment]
    store.hold = asyncio.Event()
    reading = asyncio.create_task(health.refresh())
    await store.reading.wait()
    clocks.mono += 0.1
    await health.mark_down("twilio", "refused", None)  # stored while the read runs
    store.hold.set()
    await reading
    assert health.held("twilio") is not None  # the older reading did not erase it
    store.hold = None
    clocks.advance(HEALTH_TTL + 0.5)
    await health.refresh()
    assert health.held("twilio") is not None  # now the store's row holds it
    store.rows.clear()  # marked up elsewhere (its row ended)
    clocks.advance(HEALTH_TTL + 0.5)
    await health.refresh()
    assert health.held("twilio") is None  # the store's reading is the truth
