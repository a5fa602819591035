"""Email through SendGrid and Mailgun, and failover between them and SMTP (issue 36).

The real EmailChannel and its providers, over the shared HTTP client, against local
fakes speaking each API as its reference documents it (tests/fakes/sendgrid.py,
tests/fakes/mailgun.py) and a local SMTP server; through the dispatcher's drain mode
on SQLite and PostgreSQL where what is recorded matters (the attempt's provider and
message id, the providers' shared health). Time is the ManualClock's, the providers'
health reads it too: no sleeps."""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, cast

import pytest
from sendgrid.helpers.mail import CustomArg, Header, Mail

from core.actors import Principal
from core.cases import Herald
from core.channels.base import Outcome
from core.channels.email import EmailChannel, message_id
from core.channels.email_providers import MailgunProvider, SendGridProvider
from core.channels.failover import ProviderHealth
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.http_client import HTTPClient
from core.models import LOCAL_TENANT
from core.send_check import send_warnings
from core.settings import Settings, load_settings
from core.store import Store
from tests.fakes import FakeSMTP, Scripted
from tests.fakes.deliveries import KEY, make_delivery
from tests.fakes.mailgun import FakeMailgun
from tests.fakes.sendgrid import FakeSendGrid

ALICE = "local:alice"
TO = "email:ops@example.com"
FROM = "Herald <herald@example.com>"
SG_KEY = "SG.test-key.0123456789abcdef"
MG_KEY = "key-test-0123456789abcdef"
CONFIG = DispatcherConfig(max_attempts=3, backoff_base=5, backoff_cap=60, max_lateness=3600)
#: The providers' cool-down (HERALD_PROVIDER_COOLDOWN) in these tests, in seconds.
COOLDOWN = 600


@pytest.fixture
async def sendgrid() -> AsyncIterator[FakeSendGrid]:
    async with FakeSendGrid(api_key=SG_KEY) as fake:
        yield fake


@pytest.fixture
async def mailgun() -> AsyncIterator[FakeMailgun]:
    async with FakeMailgun(api_key=MG_KEY, domain="mg.example.com") as fake:
        yield fake


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSMTP]:
    async with FakeSMTP() as fake:
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[HTTPClient]:
    client = HTTPClient()
    yield client
    await client.close()


def email_settings(
    providers: str,
    sendgrid: FakeSendGrid | None = None,
    mailgun: FakeMailgun | None = None,
    smtp: FakeSMTP | None = None,
    **more: str,
) -> Settings:
    """Settings listing ``providers``, with the credentials of each fake given."""
    env: dict[str, str] = {
        "HERALD_EMAIL_PROVIDERS": providers,
        "HERALD_EMAIL_FROM": FROM,
        "HERALD_PROVIDER_COOLDOWN": str(COOLDOWN),
        "HERALD_HTTP_TIMEOUT": "2",
    }
    if sendgrid is not None:
        env |= {"SENDGRID_API_KEY": sendgrid.api_key, "HERALD_SENDGRID_API_URL": sendgrid.api_url}
    if mailgun is not None:
        env |= {
            "MAILGUN_API_KEY": mailgun.api_key,
            "MAILGUN_DOMAIN": mailgun.domain,
            "HERALD_MAILGUN_API_URL": mailgun.api_url,
        }
    if smtp is not None:
        env |= {
            "HERALD_SMTP_HOST": "127.0.0.1",
            "HERALD_SMTP_PORT": str(smtp.port),
            "HERALD_SMTP_TLS": "none",
            "HERALD_SMTP_FROM": FROM,
        }
    return load_settings(**(env | more), _env_file=None)


def health_on(clock: ManualClock) -> ProviderHealth:
    """Provider health on the test's clock (its marks' TTL too)."""
    return ProviderHealth(COOLDOWN, now=clock.now, monotonic=lambda: clock.now().timestamp())


async def routed(
    store: Store, clock: ManualClock, channel: EmailChannel, settings: Settings
) -> tuple[Herald, Dispatcher]:
    herald = Herald(store, settings, clock, channels={"email": channel})
    await herald.sync_member(Principal(ALICE, LOCAL_TENANT), display_name="Alice")
    dispatcher = Dispatcher(
        store, {"email": channel}, clock=clock, config=CONFIG, rng=random.Random(7)
    )
    return herald, dispatcher


async def send_one(herald: Herald, d: Dispatcher, clock: ManualClock, text: str) -> Any:
    """Schedule ``text`` to TO a minute from now, drain at that minute; its job's
    attempts, newest first."""
    s, _ = await herald.create_schedule(ALICE, to=TO, when="in 1 minute", text=text)
    clock.advance(timedelta(minutes=1))
    await d.drain()
    [job] = await herald.store.schedule_jobs(s.id, limit=10)
    return job, await herald.store.job_attempts([job.id])


# --- each provider, through the dispatcher ---------------------------------------------


@pytest.mark.parametrize("provider", ["sendgrid", "mailgun"])
async def test_each_provider_sends_and_the_attempt_records_its_message_id(
    provider: str,
    store: Store,
    clock: ManualClock,
    http: HTTPClient,
    sendgrid: FakeSendGrid,
    mailgun: FakeMailgun,
) -> None:
    settings = email_settings(provider, sendgrid, mailgun)
    channel = EmailChannel.from_settings(settings, http=http, health=health_on(clock))
    herald, d = await routed(store, clock, channel, settings)
    job, [attempt] = await send_one(herald, d, clock, 'Deploy <today> & "tomorrow"\nRoom 4')

    assert job.state == "delivered"
    fake = sendgrid if provider == "sendgrid" else mailgun
    [mail] = fake.sent
    assert mail.to == ["ops@example.com"]
    assert mail.sender == ("herald@example.com" if provider == "sendgrid" else FROM)
    assert mail.subject == 'Deploy <today> & "tomorrow"'
    assert mail.text == 'Deploy <today> & "tomorrow"\nRoom 4'
    assert mail.html == "Deploy &lt;today&gt; &amp; &quot;tomorrow&quot;<br>\nRoom 4"
    mid = message_id(job.idempotency_key, "example.com")
    assert mail.headers["Message-ID" if provider == "sendgrid" else "Message-Id"] == mid
    assert mail.headers["Auto-Submitted"] == "auto-generated"
    assert mail.variables["herald_job" if provider == "sendgrid" else "herald-job"] == str(job.id)
    [request] = fake.requests
    if provider == "sendgrid":
        assert request.headers["authorization"] == f"Bearer {SG_KEY}"
        assert request.headers["content-type"].startswith("application/json")
        assert attempt.provider_message_id == mail.message_id  # X-Message-Id, as it came
    else:
        basic = base64.b64encode(f"api:{MG_KEY}".encode()).decode()
        assert request.headers["authorization"] == f"Basic {basic}"
        assert request.path == "/v3/mg.example.com/messages"
        assert mail.message_id == mid  # Mailgun keeps the Message-Id given as h:Message-Id
        assert attempt.provider_message_id == mid.strip("<>")  # as its events name it
    assert (attempt.provider, attempt.outcome, attempt.status_code) == (
        provider,
        "ok",
        202 if provider == "sendgrid" else 200,
    )


def test_the_sendgrid_body_has_the_shape_of_sendgrids_own_sdk() -> None:
    """SendGrid's python SDK builds the same Mail Send body (a contract: keys, order of
    the parts, where headers and custom_args go)."""
    provider = SendGridProvider(SG_KEY, from_address=FROM, base_url="http://127.0.0.1:9")
    delivery = make_delivery(TO, "Stand-up\nRoom 4", options={"subject": "Daily"})
    ours = provider.body(delivery)
    sdk = Mail(
        from_email=("herald@example.com", "Herald"),
        to_emails="ops@example.com",
        subject="Daily",
        plain_text_content="Stand-up\nRoom 4",
        html_content="Stand-up<br>\nRoom 4",
    )
    for name, value in ours["headers"].items():
        sdk.header = Header(name, value)
    for name, value in ours["custom_args"].items():
        sdk.custom_arg = CustomArg(name, value)
    assert ours == sdk.get()
    assert ours["headers"]["Message-ID"] == f"<herald.{KEY}@example.com>"
    assert ours["custom_args"] == {"herald_job": "7", "herald_key": KEY}


# --- what each answer means -------------------------------------------------------------


def _sg(status: int, message: str = "x", **headers: str) -> Scripted:
    return Scripted(status, {"errors": [{"message": message, "field": None}]}, headers=headers)


def _mg(status: int, message: str = "x", **headers: str) -> Scripted:
    return Scripted(status, {"message": message}, headers=headers)


#: X-RateLimit-Reset 20 s after the answer's Date (the rate-limits page of SendGrid's
#: v3 reference).
RESET_IN_20_S = {"Date": "Sat, 05 Dec 2026 19:00:00 GMT", "X-RateLimit-Reset": "1796497220"}

# (answer, outcome, down, retry_after, words in the error)
SENDGRID_ANSWERS = [
    (
        _sg(400, "Does not contain a valid address."),
        Outcome.PERMANENT,
        False,
        None,
        "valid address",
    ),
    (_sg(401, "authorization required"), Outcome.RETRY, True, None, "SENDGRID_API_KEY"),
    (_sg(403, "access forbidden"), Outcome.RETRY, True, None, "SENDGRID_API_KEY"),
    (_sg(413, "too big"), Outcome.PERMANENT, False, None, "too large"),
    (_sg(429, "too many requests", **{"Retry-After": "7"}), Outcome.RETRY, False, 7.0, "429"),
    (_sg(429, "too many requests"), Outcome.RETRY, True, None, "rate limiting"),
    # what SendGrid documents on a 429: when the limit resets, against the answer's Date
    (_sg(429, "too many requests", **RESET_IN_20_S), Outcome.RETRY, False, 20.0, "429"),
    (_sg(500, "internal error"), Outcome.RETRY, True, None, "500"),
    (_sg(503, "unavailable", **{"Retry-After": "30"}), Outcome.RETRY, True, 30.0, "503"),
    (Scripted(404, body="<html>nope</html>"), Outcome.RETRY, True, None, "HERALD_SENDGRID_API_URL"),
]
MAILGUN_ANSWERS = [
    (
        _mg(400, "to parameter is not a valid address"),
        Outcome.PERMANENT,
        False,
        None,
        "valid address",
    ),
    (Scripted(401, body="Forbidden"), Outcome.RETRY, True, None, "MAILGUN_API_KEY"),
    (_mg(403, "Domain is disabled"), Outcome.RETRY, True, None, "MAILGUN_API_KEY"),
    (_mg(404, "Domain not found: mg.example.com"), Outcome.RETRY, True, None, "MAILGUN_DOMAIN"),
    (_mg(413, "too large"), Outcome.PERMANENT, False, None, "too large"),
    (_mg(429, "slow down", **{"Retry-After": "5"}), Outcome.RETRY, False, 5.0, "429"),
    (_mg(429, "slow down"), Outcome.RETRY, True, None, "rate limiting"),
    (_mg(502, "bad gateway"), Outcome.RETRY, True, None, "502"),
    (Scripted(200, body="<html>portal</html>"), Outcome.RETRY, True, None, "not JSON"),
]


@pytest.mark.parametrize(("answer", "outcome", "down", "retry_after", "words"), SENDGRID_ANSWERS)
async def test_sendgrid_answers(
    sendgrid: FakeSendGrid,
    http: HTTPClient,
    answer: Scripted,
    outcome: Outcome,
    down: bool,
    retry_after: float | None,
    words: str,
) -> None:
    sendgrid.script(answer)
    provider = SendGridProvider(SG_KEY, from_address=FROM, base_url=sendgrid.api_url, http=http)
    result = await provider.send(make_delivery(TO))
    assert (result.outcome, result.down, result.status_code) == (outcome, down, answer.status)
    assert result.retry_after == retry_after
    assert words in (result.error or "") and SG_KEY not in (result.error or "")


@pytest.mark.parametrize(("answer", "outcome", "down", "retry_after", "words"), MAILGUN_ANSWERS)
async def test_mailgun_answers(
    mailgun: FakeMailgun,
    http: HTTPClient,
    answer: Scripted,
    outcome: Outcome,
    down: bool,
    retry_after: float | None,
    words: str,
) -> None:
    mailgun.script(answer)
    provider = MailgunProvider(
        MG_KEY, mailgun.domain, from_address=FROM, base_url=mailgun.api_url, http=http
    )
    result = await provider.send(make_delivery(TO))
    assert (result.outcome, result.down, result.status_code) == (outcome, down, answer.status)
    assert result.retry_after == retry_after
    assert words in (result.error or "") and MG_KEY not in (result.error or "")


async def test_the_fakes_check_credentials_as_the_providers_do(
    sendgrid: FakeSendGrid, mailgun: FakeMailgun, http: HTTPClient
) -> None:
    """A wrong key is refused by the fake itself (not a script): the provider is down,
    and the sentence names the setting, never the key."""
    wrong_sg = SendGridProvider("SG.wrong", from_address=FROM, base_url=sendgrid.api_url, http=http)
    wrong_mg = MailgunProvider(
        "key-wrong", mailgun.domain, from_address=FROM, base_url=mailgun.api_url, http=http
    )
    other_domain = MailgunProvider(
        MG_KEY, "mg.other.example", from_address=FROM, base_url=mailgun.api_url, http=http
    )
    sg = await wrong_sg.send(make_delivery(TO))
    mg = await wrong_mg.send(make_delivery(TO))
    domain = await other_domain.send(make_delivery(TO))
    assert sg.down and sg.status_code == 401 and "SENDGRID_API_KEY" in (sg.error or "")
    assert "SG.wrong" not in (sg.error or "")
    assert mg.down and mg.status_code == 401 and "MAILGUN_API_KEY" in (mg.error or "")
    assert "key-wrong" not in (mg.error or "")
    assert domain.down and "mg.other.example" in (domain.error or "")
    assert sendgrid.sent == [] and mailgun.sent == []


async def test_no_connection_and_no_answer_make_the_provider_unavailable(
    sendgrid: FakeSendGrid, mailgun: FakeMailgun, http: HTTPClient
) -> None:
    await sendgrid.refuse_connections()
    refused = await SendGridProvider(
        SG_KEY, from_address=FROM, base_url=sendgrid.api_url, http=http
    ).send(make_delivery(TO))
    assert refused.outcome is Outcome.RETRY and refused.down
    assert "Could not reach SendGrid's API" in (refused.error or "")
    assert "HERALD_SENDGRID_API_URL" in (refused.error or "")

    mailgun.script(Scripted(stall=True))
    silent = await MailgunProvider(
        MG_KEY,
        mailgun.domain,
        from_address=FROM,
        base_url=mailgun.api_url,
        http=http,
        timeout=0.3,
    ).send(make_delivery(TO))
    assert silent.outcome is Outcome.RETRY and silent.down
    assert "did not answer within 0.3 s" in (silent.error or "")


# --- failover ---------------------------------------------------------------------------


async def test_failover_sendgrid_mailgun_smtp_and_back_after_the_cooldown(
    store: Store,
    clock: ManualClock,
    http: HTTPClient,
    sendgrid: FakeSendGrid,
    mailgun: FakeMailgun,
    smtp: FakeSMTP,
) -> None:
    settings = email_settings("sendgrid,mailgun,smtp", sendgrid, mailgun, smtp)
    channel = EmailChannel.from_settings(settings, http=http, health=health_on(clock))
    assert [p.name for p in channel.providers] == ["sendgrid", "mailgun", "smtp"]
    herald, d = await routed(store, clock, channel, settings)

    # SendGrid refuses connections: Mailgun takes the message, SendGrid is marked down
    await sendgrid.refuse_connections()
    job, [attempt] = await send_one(herald, d, clock, "one")
    assert (job.state, attempt.provider) == ("delivered", "mailgun")
    [down] = await store.providers_down(clock.now())
    assert down.provider == "sendgrid" and "connection refused" in down.reason
    assert down.until > clock.now() + timedelta(seconds=COOLDOWN - 5)

    # SendGrid is back but within its cool-down: not asked; Mailgun answers 503: SMTP
    await sendgrid.accept_connections()
    # another process (its own health, the same database) skips SendGrid too
    other = EmailChannel.from_settings(settings, http=http, health=health_on(clock))
    other.attach(store)
    assert (await other.send(make_delivery(TO))).provider == "mailgun"
    assert sendgrid.requests == []
    mailgun.mode = "unavailable"
    job, [attempt] = await send_one(herald, d, clock, "two")
    assert (job.state, attempt.provider) == ("delivered", "smtp")
    assert sendgrid.requests == [] and [m.message.get_content().strip() for m in smtp.messages] == [
        "two"
    ]
    assert {p.provider for p in await store.providers_down(clock.now())} == {"sendgrid", "mailgun"}

    # after the cool-down, SendGrid is the first again, and its mark is cleared
    clock.advance(timedelta(seconds=COOLDOWN))
    job, [attempt] = await send_one(herald, d, clock, "three")
    assert (job.state, attempt.provider) == ("delivered", "sendgrid")
    assert attempt.provider_message_id == sendgrid.sent[0].message_id
    assert [m.text for m in sendgrid.sent] == ["three"]
    assert len(mailgun.sent) == 2  # "one", and the other process's
    assert not channel.health.marked("sendgrid")


async def test_a_refused_address_is_not_failed_over(
    clock: ManualClock, http: HTTPClient, sendgrid: FakeSendGrid, mailgun: FakeMailgun
) -> None:
    channel = EmailChannel.from_settings(
        email_settings("sendgrid,mailgun", sendgrid, mailgun), http=http, health=health_on(clock)
    )
    sendgrid.bad_addresses.add("ops@example.com")
    result = await channel.send(make_delivery(TO))
    assert (result.outcome, result.provider, result.status_code) == (
        Outcome.PERMANENT,
        "sendgrid",
        400,
    )
    assert "Does not contain a valid address" in (result.error or "")
    assert mailgun.requests == [] and await channel.health.down() == {}


@pytest.mark.parametrize(("retry_after", "provider"), [("3", "sendgrid"), ("3600", "mailgun")])
async def test_a_429_fails_over_only_when_it_asks_for_longer_than_the_dispatcher_waits(
    clock: ManualClock,
    http: HTTPClient,
    sendgrid: FakeSendGrid,
    mailgun: FakeMailgun,
    retry_after: str,
    provider: str,
) -> None:
    channel = EmailChannel.from_settings(
        email_settings("sendgrid,mailgun", sendgrid, mailgun), http=http, health=health_on(clock)
    )
    channel.max_rate_wait = 10.0
    sendgrid.mode, sendgrid.retry_after = "rate_limited", retry_after
    result = await channel.send(make_delivery(TO))
    assert result.provider == provider
    if provider == "sendgrid":  # a short pause: waited for, not failed over
        assert (result.outcome, result.retry_after, result.status_code) == (Outcome.RETRY, 3.0, 429)
        assert mailgun.requests == []
    else:
        assert result.outcome is Outcome.OK and len(mailgun.sent) == 1


async def test_sendgrids_documented_rate_limit_reset_is_a_pause_not_an_outage(
    clock: ManualClock, http: HTTPClient, sendgrid: FakeSendGrid, mailgun: FakeMailgun
) -> None:
    channel = EmailChannel.from_settings(
        email_settings("sendgrid,mailgun", sendgrid, mailgun), http=http, health=health_on(clock)
    )
    sendgrid.mode, sendgrid.retry_after, sendgrid.rate_limit_reset = "rate_limited", None, 5
    result = await channel.send(make_delivery(TO))
    assert (result.outcome, result.provider, result.down) == (Outcome.RETRY, "sendgrid", False)
    assert result.retry_after is not None and 4.0 <= result.retry_after <= 6.0
    assert mailgun.requests == []


# --- configuration ----------------------------------------------------------------------


async def test_unconfigured_providers_are_left_out_and_none_says_what_to_set(
    http: HTTPClient, smtp: FakeSMTP
) -> None:
    only_smtp = EmailChannel.from_settings(
        email_settings("sendgrid,smtp", smtp=smtp), http=http, health=None
    )
    assert [p.name for p in only_smtp.providers] == ["smtp"]

    none = EmailChannel.from_settings(email_settings("sendgrid,mailgun"), http=http, health=None)
    result = await none.send(make_delivery(TO))
    assert result.outcome is Outcome.PERMANENT
    assert result.error == (
        "Email is not configured: an admin must set SENDGRID_API_KEY (SendGrid) or "
        "MAILGUN_API_KEY and MAILGUN_DOMAIN (Mailgun) (HERALD_EMAIL_PROVIDERS lists "
        "sendgrid, mailgun)."
    )


class _NoWorkers:
    async def running_workers(self) -> list[Any]:
        return []


@pytest.mark.parametrize(
    ("env", "destination", "warning"),
    [
        ({}, TO, "No SMTP server is configured (HERALD_SMTP_HOST): email cannot be sent."),
        (
            {"HERALD_EMAIL_PROVIDERS": "sendgrid,mailgun", "MAILGUN_API_KEY": "k"},
            TO,
            "No email provider HERALD_EMAIL_PROVIDERS lists is configured (set SENDGRID_API_KEY "
            "for SendGrid; or MAILGUN_API_KEY and MAILGUN_DOMAIN for Mailgun): email cannot "
            "be sent.",
        ),
        ({"HERALD_EMAIL_PROVIDERS": "sendgrid,smtp", "SENDGRID_API_KEY": "SG.k"}, TO, None),
        (
            {"HERALD_SMS_PROVIDERS": "twilio,vonage", "TWILIO_ACCOUNT_SID": "AC1"},
            "sms:+15551234567",
            "No SMS provider is configured (set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and "
            "TWILIO_FROM, or VONAGE_API_KEY, VONAGE_API_SECRET and VONAGE_FROM, as "
            "HERALD_SMS_PROVIDERS lists them): SMS cannot be sent.",
        ),
        (
            {
                "HERALD_SMS_PROVIDERS": "twilio,vonage",
                "VONAGE_API_KEY": "k",
                "VONAGE_API_SECRET": "s",
                "VONAGE_FROM": "Herald",
            },
            "sms:+15551234567",
            None,
        ),
        (
            {},
            "push:local:alice",
            "No Firebase service account is configured (FCM_SERVICE_ACCOUNT_FILE): push "
            "cannot be sent.",
        ),
        ({"FCM_SERVICE_ACCOUNT_FILE": "sa.json"}, "push:local:alice", None),
    ],
)
async def test_send_warnings_follow_each_kinds_providers(
    clock: ManualClock, env: dict[str, str], destination: str, warning: str | None
) -> None:
    settings = load_settings(_env_file=None, **env)
    said = await send_warnings(cast(Store, _NoWorkers()), settings, destination, now=clock.now())
    assert said[:-1] == ([warning] if warning else [])
    assert said[-1].startswith("No dispatcher has reported")
