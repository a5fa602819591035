"""The email channel through its SMTP provider against a local SMTP server (aiosmtpd),
plain, STARTTLS and TLS. (SendGrid, Mailgun and failover: test_email_providers.py.)"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Iterator

import pytest
import trustme

from core.channels.base import Outcome
from core.channels.email import EmailChannel, message_id, subject_for
from tests.fakes import FakeSMTP, unused_port
from tests.fakes.deliveries import KEY, make_delivery

TO = "email:ops@example.com"
FROM = "Herald <herald@example.com>"
PASSWORD = "s3cret-smtp-pass"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


@pytest.fixture(scope="module")
def client_tls(ca: trustme.CA) -> Iterator[ssl.SSLContext]:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    yield context


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSMTP]:
    async with FakeSMTP() as fake:
        yield fake


def plain(smtp: FakeSMTP, **kwargs: object) -> EmailChannel:
    return EmailChannel(
        host="127.0.0.1",
        port=smtp.port,
        from_address=FROM,
        tls="none",
        timeout=2.0,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_plain_text_email_is_delivered(smtp: FakeSMTP) -> None:
    result = await plain(smtp).send(make_delivery(TO, "Stand-up in 5 minutes\nRoom 4"))

    assert result.outcome is Outcome.OK and result.status_code == 250
    [mail] = smtp.messages
    assert mail.mail_from == "herald@example.com" and mail.rcpt_tos == ["ops@example.com"]
    msg = mail.message
    assert msg["From"] == FROM and msg["To"] == "ops@example.com"
    assert msg["Subject"] == "Stand-up in 5 minutes"
    assert msg["Message-ID"] == f"<herald.{KEY}@example.com>" == result.message_id
    assert msg["Auto-Submitted"] == "auto-generated"
    assert msg.get_content().splitlines() == ["Stand-up in 5 minutes", "Room 4"]
    assert not mail.tls


async def test_retried_delivery_keeps_its_message_id(smtp: FakeSMTP) -> None:
    channel = plain(smtp, message_id_domain="herald.example.org")
    smtp.reply("data", "451 4.3.0 Try later")
    first = await channel.send(make_delivery(TO, attempt=1))
    second = await channel.send(make_delivery(TO, attempt=2))
    assert first.outcome is Outcome.RETRY and second.outcome is Outcome.OK
    assert smtp.messages[0].message["Message-ID"] == f"<herald.{KEY}@herald.example.org>"


def test_subject_and_message_id_rules() -> None:
    assert subject_for(make_delivery(TO, "x", options={"subject": "Weekly\r\nreport"})) == (
        "Weekly report"
    )
    long = subject_for(make_delivery(TO, "\n\n" + "word " * 40))
    assert len(long) == 78 and long.endswith("…")
    assert subject_for(make_delivery(TO, "   ")) == "Scheduled message"
    odd = message_id("key with spaces/<>", "example.com")
    assert odd == message_id("key with spaces/<>", "example.com")
    assert odd.startswith("<herald.") and " " not in odd and odd.count("<") == 1


async def test_starttls_with_login(server_tls: ssl.SSLContext, client_tls: ssl.SSLContext) -> None:
    async with FakeSMTP(
        tls_context=server_tls, require_starttls=True, user="herald", password=PASSWORD
    ) as fake:
        channel = EmailChannel(
            host="127.0.0.1",
            port=fake.port,
            from_address=FROM,
            user="herald",
            password=PASSWORD,
            tls="starttls",
            tls_context=client_tls,
            timeout=2.0,
        )
        result = await channel.send(make_delivery(TO, options={"subject": "Hi"}))
    assert result.outcome is Outcome.OK
    [mail] = fake.messages
    assert mail.tls and mail.authenticated and mail.message["Subject"] == "Hi"


async def test_implicit_tls(server_tls: ssl.SSLContext, client_tls: ssl.SSLContext) -> None:
    async with FakeSMTP(tls_context=server_tls, implicit_tls=True) as fake:
        channel = EmailChannel(
            host="127.0.0.1",
            port=fake.port,
            from_address=FROM,
            tls="tls",
            tls_context=client_tls,
            timeout=2.0,
        )
        result = await channel.send(make_delivery(TO))
    assert result.outcome is Outcome.OK and fake.messages[0].tls


async def test_wrong_password_makes_the_provider_unavailable_and_is_never_shown(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="core")
    async with FakeSMTP(tls_context=server_tls, user="herald", password=PASSWORD) as fake:
        channel = EmailChannel(
            host="127.0.0.1",
            port=fake.port,
            from_address=FROM,
            user="herald",
            password="wrong-pass-123",
            tls_context=client_tls,
            timeout=2.0,
        )
        result = await channel.send(make_delivery(TO))
    # Herald's own login, refused: the provider is down (the next one may take it)
    assert result.outcome is Outcome.RETRY and result.down and result.status_code == 535
    assert "HERALD_SMTP_PASSWORD" in (result.error or "")
    assert "wrong-pass-123" not in repr(result) and "wrong-pass-123" not in caplog.text
    assert fake.messages == []


async def test_untrusted_certificate_is_retryable_with_advice(
    server_tls: ssl.SSLContext,
) -> None:
    async with FakeSMTP(tls_context=server_tls) as fake:
        channel = EmailChannel(host="127.0.0.1", port=fake.port, from_address=FROM, timeout=2.0)
        result = await channel.send(make_delivery(TO))
    assert result.outcome is Outcome.RETRY and "certificate" in (result.error or "")


async def test_starttls_not_offered_makes_the_provider_unavailable(smtp: FakeSMTP) -> None:
    channel = EmailChannel(host="127.0.0.1", port=smtp.port, from_address=FROM, timeout=2.0)
    result = await channel.send(make_delivery(TO))
    assert result.outcome is Outcome.RETRY and result.down and "TLS mode" in (result.error or "")


@pytest.mark.parametrize(
    ("stage", "reply", "outcome", "advice"),
    [
        ("rcpt", "550 5.1.1 No such user", Outcome.PERMANENT, "refused ops@example.com"),
        ("rcpt", "450 4.2.1 Mailbox busy", Outcome.RETRY, "Mailbox busy"),
        # Herald's own sender, refused: retried (and the provider down: see below)
        ("mail", "553 5.7.1 Sender not allowed", Outcome.RETRY, "HERALD_SMTP_FROM"),
        ("mail", "421 4.7.0 Too many connections", Outcome.RETRY, "Too many connections"),
        ("data", "554 5.6.0 Message rejected", Outcome.PERMANENT, "refused the message"),
        ("data", "452 4.3.1 Insufficient storage", Outcome.RETRY, "Insufficient storage"),
    ],
)
async def test_smtp_replies_4xx_retry_5xx_permanent(
    smtp: FakeSMTP, stage: str, reply: str, outcome: Outcome, advice: str
) -> None:
    smtp.reply(stage, reply)
    result = await plain(smtp).send(make_delivery(TO))
    assert result.outcome is outcome and result.status_code == int(reply[:3])
    assert advice in (result.error or "") and reply[4:] in (result.error or "")
    # a refusal of the recipient or the message is the message's; of the sender, Herald's
    assert result.down is (stage == "mail")
    assert smtp.messages == []


async def test_stalled_server_times_out_and_is_retryable(smtp: FakeSMTP) -> None:
    smtp.stall_data = True
    channel = EmailChannel(
        host="127.0.0.1", port=smtp.port, from_address=FROM, tls="none", timeout=0.2
    )
    result = await channel.send(make_delivery(TO))
    assert result.outcome is Outcome.RETRY and "did not answer in time" in (result.error or "")
    assert result.down and result.provider == "smtp"


async def test_unreachable_server_is_retryable() -> None:
    channel = EmailChannel(
        host="127.0.0.1", port=unused_port(), from_address=FROM, tls="none", timeout=2.0
    )
    result = await channel.send(make_delivery(TO))
    assert result.outcome is Outcome.RETRY and "Could not talk to" in (result.error or "")
    assert result.down


async def test_not_configured() -> None:
    result = await EmailChannel(host=None, from_address="").send(make_delivery(TO))
    assert result.outcome is Outcome.PERMANENT and "HERALD_SMTP_HOST" in (result.error or "")


def test_bad_tls_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="starttls, tls or none"):
        EmailChannel(host="x", from_address=FROM, tls="ssl")  # type: ignore[arg-type]
