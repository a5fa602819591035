"""Provider failover end to end (issue 36): bursts of jobs through the real Dispatcher
(drain mode, an injected clock) and the real SMS and email channels, over HTTP, to the
local fakes of Twilio and Vonage, SendGrid and Mailgun, on SQLite and PostgreSQL.

A burst meets a primary refusing connections: it is asked once, not once per job, and
every job goes through the secondary, its attempt naming it; then the primary answers
503: the same; it recovers, and after the cool-down (the clock moved) the next burst
goes to it again. A refusal of one message by the primary is that message's dead letter
and the secondary hears nothing of it. Two dispatchers on one database share the mark:
the second never asks the dead primary. Every provider down: nobody asked, the try not
counted, sent when the first comes back. Metrics count each provider's answers and
skips (herald_provider_deliveries_total)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from core.actors import Principal
from core.cases import Herald
from core.channels.base import Channel
from core.channels.email import EmailChannel
from core.channels.failover import ProviderHealth
from core.channels.sms import SmsChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.http_client import HTTPClient
from core.metrics import Metrics
from core.models import LOCAL_TENANT
from core.settings import Settings, load_settings
from core.store import Store
from tests.fakes.mailgun import FakeMailgun
from tests.fakes.sendgrid import FakeSendGrid
from tests.fakes.twilio import FakeTwilio
from tests.fakes.vonage import FakeVonage

ALICE = "local:alice"
#: The jobs of a burst, each to its own number (SMS is paced per number).
N = 8
NUMBERS = [f"+120255501{n:02d}" for n in range(1, N + 1)]  # 555-01XX: fiction's range
ADDRESSES = [f"person{n}@example.com" for n in range(1, N + 1)]
COOLDOWN = 300.0
CONFIG = DispatcherConfig(max_attempts=4, backoff_base=5, backoff_cap=60, max_lateness=3600)


@pytest.fixture
async def twilio() -> AsyncIterator[FakeTwilio]:
    async with FakeTwilio() as fake:
        yield fake


@pytest.fixture
async def vonage() -> AsyncIterator[FakeVonage]:
    async with FakeVonage() as fake:
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[HTTPClient]:
    client = HTTPClient(lazy_tls=True)
    yield client
    await client.close()


def env_settings(**env: str) -> Settings:
    return load_settings(
        _env_file=None,
        HERALD_PROVIDER_COOLDOWN=str(COOLDOWN),
        HERALD_HTTP_TIMEOUT="10",  # refused connections answer at once: no test waits on it
        **env,
    )


def sms_settings(twilio: FakeTwilio, vonage: FakeVonage) -> Settings:
    return env_settings(HERALD_SMS_PROVIDERS="twilio,vonage", **twilio.env(), **vonage.env())


class Side:
    """One dispatcher (as one process): its own channel, provider health (on the
    test's clock, its reading's age too), metrics registry, and store."""

    def __init__(
        self, store: Store, clock: ManualClock, make: Any, settings: Settings, http: HTTPClient
    ) -> None:
        self.registry = CollectorRegistry()
        self.health = ProviderHealth(
            COOLDOWN, now=clock.now, monotonic=lambda: clock.now().timestamp()
        )
        self.channel: Channel = make(settings, http=http, health=self.health)
        self.kind = self.channel.kind
        self.dispatcher = Dispatcher(
            store,
            {self.kind: self.channel},
            clock=clock,
            config=CONFIG,
            rng=random.Random(7),
            metrics=Metrics(self.registry),
        )

    def count(self, provider: str, outcome: str) -> int:
        labels = {"channel": self.kind, "provider": provider, "outcome": outcome}
        value = self.registry.get_sample_value("herald_provider_deliveries_total", labels)
        return int(value or 0)


async def burst(
    herald: Herald, clock: ManualClock, side: Side, destinations: Sequence[str], text: str
) -> list[tuple[Any, list[Any]]]:
    """One job per destination, due in a minute; the clock moved there; ``side``
    drains. Each job with its attempts, oldest first."""
    ids = []
    for to in destinations:
        s, _ = await herald.create_schedule(ALICE, to=to, when="in 1 minute", text=text)
        ids.append(s.id)
    clock.advance(timedelta(seconds=61))
    await side.dispatcher.drain()
    out = []
    for schedule_id in ids:
        [job] = await herald.store.schedule_jobs(schedule_id, limit=10)
        attempts = await herald.store.job_attempts([job.id])
        out.append((job, sorted(attempts, key=lambda a: a.id)))
    return out


def sms_to(numbers: Sequence[str] = NUMBERS) -> list[str]:
    return [f"sms:{n}" for n in numbers]


# --- one dispatcher: refused, 503, recovered --------------------------------------------


async def test_a_burst_asks_a_dead_primary_once_and_comes_back_to_it_after_the_cooldown(
    store: Store,
    clock: ManualClock,
    settings: Settings,
    twilio: FakeTwilio,
    vonage: FakeVonage,
    http: HTTPClient,
) -> None:
    herald = Herald(store, settings, clock)
    side = Side(store, clock, SmsChannel.from_settings, sms_settings(twilio, vonage), http)

    # Twilio refuses connections: asked once; every job goes through Vonage
    await twilio.refuse()
    jobs = await burst(herald, clock, side, sms_to(), "refused")
    assert [job.state for job, _ in jobs] == ["delivered"] * N
    assert [[a.provider for a in attempts] for _, attempts in jobs] == [["vonage"]] * N
    assert sorted(m.params["to"] for m in vonage.messages) == sorted(n[1:] for n in NUMBERS)
    assert (side.count("twilio", "retry"), side.count("twilio", "skipped")) == (1, N - 1)
    assert side.count("vonage", "ok") == N
    [mark] = await store.providers_down(clock.now())
    assert mark.provider == "twilio"
    assert mark.until == clock.now() + timedelta(seconds=COOLDOWN)

    # after the cool-down it listens again but answers 503: asked once (a probe), then
    # skipped again
    await twilio.accept()
    twilio.mode = "503"
    clock.advance(timedelta(seconds=COOLDOWN))
    jobs = await burst(herald, clock, side, sms_to(), "503")
    assert [[a.provider for a in attempts] for _, attempts in jobs] == [["vonage"]] * N
    assert len(twilio.requests) == 1 and twilio.messages == []
    assert (side.count("twilio", "retry"), side.count("twilio", "skipped")) == (2, 2 * (N - 1))
    assert [m.provider for m in await store.providers_down(clock.now())] == ["twilio"]

    # recovered: within the cool-down it is still skipped ...
    twilio.mode = "ok"
    jobs = await burst(herald, clock, side, sms_to(NUMBERS[:1]), "cooling")
    assert [a.provider for a in jobs[0][1]] == ["vonage"]
    assert twilio.requests[1:] == []
    # ... and after it, the burst goes to Twilio again, every attempt naming it
    clock.advance(timedelta(seconds=COOLDOWN))
    jobs = await burst(herald, clock, side, sms_to(), "recovered")
    assert [[a.provider for a in attempts] for _, attempts in jobs] == [["twilio"]] * N
    sids = {m.sid for m in twilio.messages}
    assert {attempts[0].provider_message_id for _, attempts in jobs} == sids
    assert len(sids) == N
    assert len(vonage.messages) == 2 * N + 1  # nothing more through the secondary
    assert side.count("twilio", "ok") == N
    assert await store.providers_down(clock.now()) == []


# --- two dispatchers ----------------------------------------------------------------------


async def test_two_dispatchers_share_the_mark_and_the_second_never_asks_the_dead_primary(
    db_url: str,
    store: Store,
    clock: ManualClock,
    settings: Settings,
    twilio: FakeTwilio,
    vonage: FakeVonage,
    http: HTTPClient,
) -> None:
    herald = Herald(store, settings, clock)
    config = sms_settings(twilio, vonage)
    other = await Store.open(db_url)  # the second dispatcher's own connections
    try:
        first = Side(store, clock, SmsChannel.from_settings, config, http)
        second = Side(other, clock, SmsChannel.from_settings, config, http)
        twilio.mode = "503"

        jobs = await burst(herald, clock, first, sms_to(), "first")
        assert [[a.provider for a in attempts] for _, attempts in jobs] == [["vonage"]] * N
        assert len(twilio.requests) == 1  # the first dispatcher's probe

        jobs = await burst(herald, clock, second, sms_to(), "second")
        assert [[a.provider for a in attempts] for _, attempts in jobs] == [["vonage"]] * N
        assert len(twilio.requests) == 1  # the second read the mark before its first job
        assert (second.count("twilio", "retry"), second.count("twilio", "skipped")) == (0, N)
        assert second.count("vonage", "ok") == N
    finally:
        await other.close()


# --- a refusal of the message ---------------------------------------------------------


async def test_a_refused_address_is_its_dead_letter_and_the_secondary_hears_nothing(
    db_url: str, store: Store, clock: ManualClock, http: HTTPClient
) -> None:
    async with FakeSendGrid() as sendgrid, FakeMailgun() as mailgun:
        config = env_settings(
            HERALD_EMAIL_PROVIDERS="sendgrid,mailgun",
            HERALD_EMAIL_FROM="Herald <herald@example.com>",
            SENDGRID_API_KEY=sendgrid.api_key,
            HERALD_SENDGRID_API_URL=sendgrid.api_url,
            MAILGUN_API_KEY=mailgun.api_key,
            MAILGUN_DOMAIN=mailgun.domain,
            HERALD_MAILGUN_API_URL=mailgun.api_url,
            HERALD_DATABASE_URL=db_url,
            HERALD_DEFAULT_TZ="UTC",
        )
        side = Side(store, clock, EmailChannel.from_settings, config, http)
        herald = Herald(store, config, clock, channels={"email": side.channel})
        await herald.sync_member(Principal(ALICE, LOCAL_TENANT), display_name="Alice")
        sendgrid.bad_addresses.add(ADDRESSES[2])

        jobs = await burst(herald, clock, side, [f"email:{a}" for a in ADDRESSES], "hello")
        states = [job.state for job, _ in jobs]
        assert states == ["delivered"] * 2 + ["dead"] + ["delivered"] * (N - 3)
        dead, attempts = jobs[2]
        [attempt] = attempts
        assert (attempt.outcome, attempt.provider, attempt.status_code) == (
            "permanent",
            "sendgrid",
            400,
        )
        assert dead.last_error == attempt.error
        assert mailgun.sent == [] and mailgun.requests == []  # never failed over
        assert [[a.provider for a in attempts] for _, attempts in jobs] == [["sendgrid"]] * N
        assert sorted(m.to[0] for m in sendgrid.sent) == sorted(
            a for a in ADDRESSES if a != ADDRESSES[2]
        )
        assert await store.providers_down(clock.now()) == []  # it answered: it is up
        assert (side.count("sendgrid", "ok"), side.count("sendgrid", "permanent")) == (N - 1, 1)


# --- every provider down ------------------------------------------------------------------


async def test_every_provider_down_asks_nobody_more_and_counts_no_try_until_one_is_back(
    store: Store,
    clock: ManualClock,
    settings: Settings,
    twilio: FakeTwilio,
    vonage: FakeVonage,
    http: HTTPClient,
) -> None:
    herald = Herald(store, settings, clock)
    side = Side(store, clock, SmsChannel.from_settings, sms_settings(twilio, vonage), http)
    await twilio.refuse()
    vonage.mode = "503"

    jobs = await burst(herald, clock, side, sms_to(), "nobody")
    assert [job.state for job, _ in jobs] == ["retrying"] * N
    assert len(vonage.requests) == 1  # one probe of each, by one job or two
    assert (side.count("twilio", "retry"), side.count("vonage", "retry")) == (1, 1)
    asked = [job for job, attempts in jobs if attempts[0].provider is not None]
    waited = [(job, attempts[0]) for job, attempts in jobs if attempts[0].provider is None]
    # the job that probed a provider asked it (a try: counted); the others asked nobody
    assert 1 <= len(asked) <= 2 and len(asked) + len(waited) == N
    for job, attempt in waited:
        # a 429 with Retry-After: the try is refunded, due when the cool-down ends
        assert (attempt.outcome, attempt.status_code) == ("retry", 429)
        assert (attempt.error or "").startswith(
            "Not sent: every sms provider is down (Twilio: Could not reach Twilio's API"
        )
        assert "; Vonage: Vonage failed (HTTP 503)); tried again in 300 s" in (attempt.error or "")
        assert job.attempts == 0
        assert job.due_at == clock.now() + timedelta(seconds=COOLDOWN)
    assert [job.attempts for job in asked] == [1] * len(asked)

    # Vonage comes back; at the cool-down's end every job goes through it
    vonage.mode = "ok"
    clock.advance(timedelta(seconds=COOLDOWN))
    await side.dispatcher.drain()
    for job, _ in jobs:
        [now] = await store.schedule_jobs(job.schedule_id, limit=10)
        assert now.state == "delivered"
    assert len(vonage.messages) == N
