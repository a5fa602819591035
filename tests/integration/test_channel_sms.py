"""The sms: channel against local fakes of Twilio's Messages API and Vonage's SMS API
(tests/fakes/twilio.py, tests/fakes/vonage.py), through our real HTTP client: numbers
checked at save time, each provider's answers classified, and the dispatcher sending
through Twilio, failing over to Vonage while Twilio is down and back after the
cool-down (ProviderHealth on the injected clock), on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from twilio.request_validator import RequestValidator

from core.cases import Herald
from core.channels import parse_destination
from core.channels.base import Outcome
from core.channels.failover import ProviderHealth
from core.channels.sms import SmsChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.http_client import HTTPClient
from core.settings import Settings, load_settings
from tests.fakes import Scripted
from tests.fakes.deliveries import KEY, make_delivery
from tests.fakes.twilio import ACCOUNT_SID, AUTH_TOKEN, FROM, TO, FakeTwilio, signature
from tests.fakes.vonage import API_SECRET, FakeVonage

ALICE = "local:alice"
PUBLIC = "https://herald.example.org"
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


def sms_settings(*fakes: Any, providers: str = "twilio", **extra: str) -> Settings:
    env = {"HERALD_SMS_PROVIDERS": providers, "HERALD_PUBLIC_URL": PUBLIC}
    for fake in fakes:
        env.update(fake.env())
    return load_settings(_env_file=None, **{**env, **extra})


def channel_of(settings: Settings, http: HTTPClient, health: ProviderHealth | None = None):
    return SmsChannel.from_settings(settings, http=http, health=health or ProviderHealth())


# --- numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("sms:+1555", "is not a phone number: write it in E.164"),
        ("sms:+15551234567", "is not a phone number"),  # no area code 555
        ("sms:12025550123", "is not a phone number"),  # no +: no country
        ("sms:+33 6 12 34 56 78", "is not written in E.164: write it sms:+33612345678."),
        ("sms:+1-202-555-0123", "write it sms:+12025550123."),
        ("sms:+4915112345678x", "is not a phone number"),
        ("sms:" + "+1" * 40, "is not a phone number"),
    ],
)
def test_a_number_not_in_e164_or_of_no_country_is_refused(uri: str, said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_destination(uri)
    assert said in str(refused.value)
    assert str(refused.value).startswith(repr(uri))


@pytest.mark.parametrize("number", [TO, "+33612345678", "+4915112345678", "+14155552671"])
def test_valid_numbers_are_taken_as_written(number: str) -> None:
    assert str(parse_destination(f"sms:{number}")) == f"sms:{number}"


# --- the fake's signature is Twilio's (the contract the receipts rely on) ---------------


def test_twilios_request_validator_accepts_the_fakes_signature(twilio: FakeTwilio) -> None:
    url = f"{PUBLIC}/receipts/twilio?tenant=a"
    params = {"MessageSid": "SM" + "a" * 32, "MessageStatus": "delivered", "To": TO}
    validator = RequestValidator(AUTH_TOKEN)
    assert validator.validate(url, params, signature(AUTH_TOKEN, url, params))
    assert not validator.validate(url, params, signature("not-the-token", url, params))
    assert not validator.validate(
        url, {**params, "MessageStatus": "failed"}, signature(AUTH_TOKEN, url, params)
    )


# --- Twilio ------------------------------------------------------------------------------


async def test_twilio_creates_the_message_with_its_status_callback(
    twilio: FakeTwilio, http: HTTPClient
) -> None:
    channel = channel_of(sms_settings(twilio), http)
    result = await channel.send(make_delivery(f"sms:{TO}", "Stand-up in 5 minutes ✓"))

    [sent] = twilio.messages
    assert (result.outcome, result.status_code, result.provider) == (Outcome.OK, 201, "twilio")
    assert result.message_id == sent.sid and sent.sid.startswith("SM") and len(sent.sid) == 34
    assert sent.form == {
        "To": TO,
        "From": FROM,
        "Body": "Stand-up in 5 minutes ✓",
        "StatusCallback": f"{PUBLIC}/receipts/twilio",
    }
    [request] = twilio.requests
    basic = base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
    assert request.headers["authorization"] == f"Basic {basic}"
    assert request.headers["content-type"].startswith("application/x-www-form-urlencoded")


async def test_a_messaging_service_sends_without_from_nor_callback_without_public_url(
    twilio: FakeTwilio, http: HTTPClient
) -> None:
    env = {**twilio.env(), "TWILIO_FROM": "MG" + "0" * 32}
    settings = load_settings(_env_file=None, **env)
    result = await channel_of(settings, http).send(make_delivery(f"sms:{TO}"))
    assert result.outcome is Outcome.OK
    [sent] = twilio.messages
    assert sent.form == {
        "To": TO,
        "MessagingServiceSid": "MG" + "0" * 32,
        "Body": "Stand-up in 5 minutes",
    }
    assert sent.resource["status"] == "accepted"


@pytest.mark.parametrize(
    ("mode", "retry_after", "outcome", "down", "status", "said"),
    [
        ("503", None, Outcome.RETRY, True, 503, "Twilio failed (Twilio 20500)"),
        ("429", "3", Outcome.RETRY, False, 429, "rate limiting"),
        ("429", None, Outcome.RETRY, True, 429, "rate limiting"),
        ("unsubscribed", None, Outcome.PERMANENT, False, 400, "has opted out (replied STOP)"),
        ("invalid", None, Outcome.PERMANENT, False, 400, "not a valid phone number (21211)"),
        ("not-mobile", None, Outcome.PERMANENT, False, 400, "not a mobile number"),
    ],
)
async def test_twilios_answers_are_classified(
    twilio: FakeTwilio,
    http: HTTPClient,
    mode: str,
    retry_after: str | None,
    outcome: Outcome,
    down: bool,
    status: int,
    said: str,
) -> None:
    twilio.mode, twilio.retry_after = mode, retry_after
    result = await channel_of(sms_settings(twilio), http).send(make_delivery(f"sms:{TO}"))
    assert (result.outcome, result.down, result.status_code) == (outcome, down, status)
    assert said in (result.error or "")
    assert result.retry_after == (float(retry_after) if retry_after else None)


async def test_refused_credentials_are_the_provider_down_and_never_shown(
    twilio: FakeTwilio, http: HTTPClient
) -> None:
    settings = sms_settings(twilio, TWILIO_AUTH_TOKEN="wrong-token-0123456789")
    result = await channel_of(settings, http).send(make_delivery(f"sms:{TO}"))
    assert (result.outcome, result.down, result.status_code) == (Outcome.RETRY, True, 401)
    assert result.error == (
        "Twilio refused Herald's credentials (Twilio 20003): an admin must check "
        "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN."
    )
    assert "wrong-token" not in result.error and AUTH_TOKEN not in result.error


async def test_a_refused_connection_or_a_page_that_is_not_twilios_is_the_provider_down(
    twilio: FakeTwilio, http: HTTPClient
) -> None:
    channel = channel_of(sms_settings(twilio), http)
    await twilio.refuse()
    refused = await channel.send(make_delivery(f"sms:{TO}"))
    assert (refused.outcome, refused.down) == (Outcome.RETRY, True)
    assert "Could not reach Twilio's API" in (refused.error or "")
    assert "HERALD_TWILIO_API_URL" in (refused.error or "")
    await twilio.accept()
    twilio.script(
        Scripted(status=200, body="<html>portal</html>", headers={"Content-Type": "text/html"})
    )
    page = await channel.send(make_delivery(f"sms:{TO}"))
    assert (page.outcome, page.down) == (Outcome.RETRY, True)
    assert "not JSON: check HERALD_TWILIO_API_URL" in (page.error or "")


async def test_not_configured_says_what_to_set(http: HTTPClient) -> None:
    result = await channel_of(load_settings(_env_file=None), http).send(make_delivery(f"sms:{TO}"))
    assert result.outcome is Outcome.PERMANENT
    assert "TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM" in (result.error or "")


# --- Vonage ------------------------------------------------------------------------------


async def test_vonage_sends_ucs2_text_as_unicode_to_the_number_without_plus(
    vonage: FakeVonage, http: HTTPClient
) -> None:
    channel = channel_of(sms_settings(vonage, providers="vonage"), http)
    result = await channel.send(make_delivery(f"sms:{TO}", "Привет ✓"))
    [sent] = vonage.messages
    assert (result.outcome, result.provider, result.message_id) == (
        Outcome.OK,
        "vonage",
        sent.message_id,
    )
    assert sent.params["to"] == TO[1:] and sent.params["type"] == "unicode"
    assert (sent.params["text"], sent.params["client-ref"]) == ("Привет ✓", KEY)
    plain = await channel.send(make_delivery(f"sms:{TO}", "Stand-up at 9 {room B}"))
    assert plain.outcome is Outcome.OK and "type" not in vonage.messages[-1].params


@pytest.mark.parametrize(
    ("mode", "outcome", "down", "said"),
    [
        ("throttled", Outcome.RETRY, False, "throttling"),
        ("barred", Outcome.PERMANENT, False, "the number is barred (status 7)"),
        ("demo", Outcome.PERMANENT, False, "demo mode"),
        ("internal", Outcome.RETRY, True, "Vonage failed (status 5"),
        ("503", Outcome.RETRY, True, "Vonage failed (HTTP 503)"),
    ],
)
async def test_vonages_statuses_are_classified(
    vonage: FakeVonage, http: HTTPClient, mode: str, outcome: Outcome, down: bool, said: str
) -> None:
    vonage.mode = mode
    channel = channel_of(sms_settings(vonage, providers="vonage"), http)
    result = await channel.send(make_delivery(f"sms:{TO}"))
    assert (result.outcome, result.down) == (outcome, down)
    assert said in (result.error or "")


async def test_vonages_refused_credentials_name_the_settings_not_the_secret(
    vonage: FakeVonage, http: HTTPClient
) -> None:
    settings = sms_settings(vonage, providers="vonage", VONAGE_API_SECRET="bad-secret-xyz")
    result = await channel_of(settings, http).send(make_delivery(f"sms:{TO}"))
    assert (result.outcome, result.down) == (Outcome.RETRY, True)
    assert "VONAGE_API_KEY and VONAGE_API_SECRET" in (result.error or "")
    assert "bad-secret" not in (result.error or "") and API_SECRET not in (result.error or "")


# --- through the dispatcher, on SQLite and PostgreSQL ------------------------------------


class Steps:
    """A schedule to ``sms:`` sent by one drain at each step of the injected clock."""

    def __init__(self, herald: Herald, clock: ManualClock, channel: SmsChannel) -> None:
        self.herald, self.clock, self.channel = herald, clock, channel
        self.dispatcher = Dispatcher(
            herald.store, {"sms": channel}, clock=clock, config=CONFIG, rng=random.Random(7)
        )

    async def send(self, text: str, to: str = TO) -> Any:
        """Schedule ``text`` a minute ahead, move the clock there, drain; the job's
        latest attempt."""
        s, _ = await self.herald.create_schedule(
            ALICE, to=f"sms:{to}", when="in 1 minute", text=text
        )
        self.clock.advance(timedelta(seconds=61))
        await self.dispatcher.drain()
        detail = await self.herald.show_schedule(ALICE, s.id)
        [job] = detail.jobs
        return job, detail.attempts[-1]


def health_on(clock: ManualClock, cooldown: float = 60.0) -> ProviderHealth:
    return ProviderHealth(cooldown, now=clock.now, monotonic=lambda: clock.now().timestamp())


async def test_a_text_goes_through_twilio_and_the_attempt_names_its_sid(
    herald: Herald, clock: ManualClock, twilio: FakeTwilio, http: HTTPClient
) -> None:
    steps = Steps(herald, clock, channel_of(sms_settings(twilio), http, health_on(clock)))
    job, attempt = await steps.send("Stand-up in 5 minutes")
    [sent] = twilio.messages
    assert job.state == "delivered"
    assert (attempt.outcome, attempt.provider, attempt.provider_message_id) == (
        "ok",
        "twilio",
        sent.sid,
    )
    assert sent.status_callback == f"{PUBLIC}/receipts/twilio"


async def test_a_text_over_ten_segments_is_refused_when_saved(herald: Herald) -> None:
    with pytest.raises(InvalidInput, match=r"needs 12 SMS segments \(UCS-2, because of '✓'\)"):
        await herald.create_schedule(ALICE, to=f"sms:{TO}", when="in 1 minute", text="✓" * 800)


async def test_failover_to_vonage_while_twilio_is_down_and_back_after_the_cooldown(
    herald: Herald,
    clock: ManualClock,
    twilio: FakeTwilio,
    vonage: FakeVonage,
    http: HTTPClient,
) -> None:
    settings = sms_settings(twilio, vonage, providers="twilio,vonage")
    steps = Steps(herald, clock, channel_of(settings, http, health_on(clock, cooldown=300)))

    # Twilio refuses connections: Vonage takes the text, Twilio is marked down
    await twilio.refuse()
    job, attempt = await steps.send("one")
    assert (job.state, attempt.provider) == ("delivered", "vonage")
    assert attempt.provider_message_id == vonage.messages[-1].message_id
    [mark] = await herald.store.providers_down(clock.now())
    assert mark.provider == "twilio" and "Could not reach Twilio's API" in mark.reason

    # listening again, but answering 503: within the cool-down it is not even asked
    await twilio.accept()
    twilio.mode = "503"
    job, attempt = await steps.send("two")
    assert (job.state, attempt.provider) == ("delivered", "vonage")
    assert twilio.requests == []

    # after the cool-down it is asked again, answers 503, and is marked down again
    clock.advance(timedelta(seconds=300))
    job, attempt = await steps.send("three")
    assert (job.state, attempt.provider) == ("delivered", "vonage")
    assert len(twilio.requests) == 1 and twilio.messages == []
    assert [m.provider for m in await herald.store.providers_down(clock.now())] == ["twilio"]

    # recovered: after the next cool-down Twilio takes the text again
    twilio.mode = "ok"
    clock.advance(timedelta(seconds=300))
    job, attempt = await steps.send("four")
    [sent] = twilio.messages
    assert (job.state, attempt.provider, attempt.provider_message_id) == (
        "delivered",
        "twilio",
        sent.sid,
    )
    assert await herald.store.providers_down(clock.now()) == []
    assert [m.params["text"] for m in vonage.messages] == ["one", "two", "three"]


async def test_an_unsubscribed_recipient_is_permanent_and_not_failed_over(
    herald: Herald,
    clock: ManualClock,
    twilio: FakeTwilio,
    vonage: FakeVonage,
    http: HTTPClient,
) -> None:
    settings = sms_settings(twilio, vonage, providers="twilio,vonage")
    steps = Steps(herald, clock, channel_of(settings, http, health_on(clock)))
    twilio.opted_out.add(TO)
    job, attempt = await steps.send("Are you there?")
    assert (job.state, attempt.outcome, attempt.provider) == ("dead", "permanent", "twilio")
    assert "has opted out (replied STOP)" in (attempt.error or "")
    assert vonage.requests == []  # the message's answer: no other provider is asked
    assert await herald.store.providers_down(clock.now()) == []


def test_the_rate_limit_is_one_message_a_second_per_number() -> None:
    assert (SmsChannel.rate_limit.rate, SmsChannel.rate_limit.burst) == (1.0, 1.0)
