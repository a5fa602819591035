"""The webhook channel against a local receiver that checks Standard Webhooks signatures."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from email.utils import formatdate

import pytest

from core.channels.base import Outcome
from core.channels.webhook import WebhookChannel, parse_retry_after, sign
from core.destinations import Destination
from tests.fakes import Scripted, WebhookReceiver, unused_port
from tests.fakes.deliveries import KEY, make_delivery

RAW_SECRET = "correct horse battery staple"
WHSEC = "whsec_" + base64.b64encode(b"sixteen byte key").decode()


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(secret=WHSEC) as fake:
        yield fake


@pytest.fixture
async def channel(receiver: WebhookReceiver) -> AsyncIterator[WebhookChannel]:
    secrets = {receiver.hook_url: WHSEC}
    ch = WebhookChannel(secrets.get, timeout=2.0, connect_timeout=1.0, allow_private=True)
    yield ch
    await ch.close()


async def test_signed_delivery_is_accepted(
    receiver: WebhookReceiver, channel: WebhookChannel
) -> None:
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}", "Hello ✓"))

    assert result.outcome is Outcome.OK and result.status_code == 200
    [got] = receiver.received
    assert got.verified is True
    assert got.payload == {
        "id": KEY,
        "schedule_id": 3,
        "job_id": 7,
        "text": "Hello ✓",
        "scheduled_for": "2026-03-02T09:00:00Z",
        "attempt": 1,
    }
    headers = got.request.headers
    assert headers["webhook-id"] == KEY == headers["idempotency-key"]
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 60
    assert headers["webhook-signature"].startswith("v1,")
    assert headers["content-type"] == "application/json"


async def test_raw_secret_is_used_as_text() -> None:
    async with WebhookReceiver(secret=RAW_SECRET) as fake:
        ch = WebhookChannel(lambda url: RAW_SECRET, allow_private=True)
        try:
            result = await ch.send(make_delivery(f"webhook:{fake.hook_url}"))
        finally:
            await ch.close()
    assert result.outcome is Outcome.OK
    assert fake.received[0].verified is True


async def test_wrong_secret_fails_verification_and_is_permanent() -> None:
    async with WebhookReceiver(secret=WHSEC) as fake:
        ch = WebhookChannel(lambda url: "not-the-secret", allow_private=True)
        try:
            result = await ch.send(make_delivery(f"webhook:{fake.hook_url}"))
        finally:
            await ch.close()
    assert fake.received[0].verified is False
    assert result.outcome is Outcome.PERMANENT and result.status_code == 401
    assert "signing secret" in (result.error or "")


async def test_unsigned_when_destination_has_no_secret() -> None:
    async with WebhookReceiver() as fake:
        ch = WebhookChannel(allow_private=True)
        try:
            result = await ch.send(make_delivery(f"webhook:{fake.hook_url}"))
        finally:
            await ch.close()
    assert result.outcome is Outcome.OK
    assert "webhook-signature" not in fake.requests[0].headers
    assert fake.requests[0].headers["webhook-id"] == KEY


async def test_retry_carries_the_same_webhook_id(
    receiver: WebhookReceiver, channel: WebhookChannel
) -> None:
    receiver.script(Scripted(status=503, body="down for maintenance"))
    uri = f"webhook:{receiver.hook_url}"

    first = await channel.send(make_delivery(uri, attempt=1))
    second = await channel.send(make_delivery(uri, attempt=2))

    assert first.outcome is Outcome.RETRY and first.status_code == 503
    assert "down for maintenance" in (first.error or "")
    assert second.outcome is Outcome.OK
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert ids == [KEY, KEY]
    assert [r.json()["attempt"] for r in receiver.requests] == [1, 2]
    assert [r.json()["id"] for r in receiver.requests] == [KEY, KEY]
    assert receiver.received[0].verified is True


@pytest.mark.parametrize(
    ("retry_after", "expected"), [("7", 7.0), ("0.5", 0.5), ("soon", None), (None, None)]
)
async def test_429_is_retried_after_retry_after_seconds(
    receiver: WebhookReceiver,
    channel: WebhookChannel,
    retry_after: str | None,
    expected: float | None,
) -> None:
    headers = {"Retry-After": retry_after} if retry_after else {}
    receiver.script(Scripted(status=429, headers=headers))
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}"))
    assert result.outcome is Outcome.RETRY and result.status_code == 429
    assert result.retry_after == expected


async def test_retry_after_as_http_date(receiver: WebhookReceiver) -> None:
    now = float(int(time.time()))
    ch = WebhookChannel(lambda url: WHSEC, clock=lambda: now, allow_private=True)
    later = formatdate(now + 120, usegmt=True)
    receiver.script(Scripted(status=503, headers={"Retry-After": later}))
    try:
        result = await ch.send(make_delivery(f"webhook:{receiver.hook_url}"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY and result.retry_after == 120.0


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502, 503, 504])
async def test_retryable_statuses(
    receiver: WebhookReceiver, channel: WebhookChannel, status: int
) -> None:
    receiver.script(Scripted(status=status))
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}"))
    assert result.outcome is Outcome.RETRY and result.status_code == status


@pytest.mark.parametrize("status", [400, 403, 404, 410, 413, 422])
async def test_other_4xx_are_permanent(
    receiver: WebhookReceiver, channel: WebhookChannel, status: int
) -> None:
    receiver.script(Scripted(status=status, json={"error": "nope"}))
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}"))
    assert result.outcome is Outcome.PERMANENT and result.status_code == status
    assert '{"error": "nope"}' in (result.error or "")
    assert "/hooks/herald" not in (result.error or "")  # the path may carry a token


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_redirects_are_not_followed(
    receiver: WebhookReceiver, channel: WebhookChannel, status: int
) -> None:
    receiver.script(
        Scripted(status=status, headers={"Location": f"{receiver.url}/elsewhere?token=abc"})
    )
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}"))
    assert result.outcome is Outcome.PERMANENT and result.status_code == status
    assert "does not follow redirects" in (result.error or "")
    assert "token=abc" not in (result.error or "")
    assert len(receiver.requests) == 1


async def test_stalled_receiver_times_out_and_is_retryable(receiver: WebhookReceiver) -> None:
    receiver.script(Scripted(stall=True))
    ch = WebhookChannel(lambda url: WHSEC, timeout=0.2, connect_timeout=0.2, allow_private=True)
    try:
        result = await ch.send(make_delivery(f"webhook:{receiver.hook_url}"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY
    assert result.error == "webhook:http://127.0.0.1/…: timed out after 0.2 s."


async def test_unreachable_receiver_is_retryable() -> None:
    """The error says what happened, with the host and port, in words: no exception's
    class name (it said "ClientConnectorError")."""
    ch = WebhookChannel(allow_private=True)
    port = unused_port()
    try:
        result = await ch.send(make_delivery(f"webhook:http://127.0.0.1:{port}/h"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY and result.status_code is None
    assert result.error == (
        f"Could not reach webhook:http://127.0.0.1/…: connection refused by 127.0.0.1:{port}."
    )


async def test_unknown_host_is_named() -> None:
    """A name that does not resolve (``.invalid`` never does) is said as such."""
    ch = WebhookChannel(allow_private=True)
    try:
        result = await ch.send(make_delivery("webhook:https://hooks.invalid/x?token=abc"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY
    assert result.error == (
        "Could not reach webhook:https://hooks.invalid/…: name not found: hooks.invalid."
    )


async def test_response_body_is_truncated_to_2_kb(
    receiver: WebhookReceiver, channel: WebhookChannel
) -> None:
    receiver.script(Scripted(status=500, body="é" * 10_000))
    result = await channel.send(make_delivery(f"webhook:{receiver.hook_url}"))
    error = result.error or ""
    assert result.outcome is Outcome.RETRY
    assert error.endswith("…")
    body_part = error.split(": ", 1)[1]
    assert len(body_part.encode()) <= 2048


async def test_secret_never_leaks_into_results_or_logs(
    receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    receiver.script(Scripted(status=400, body=f"you sent secret {RAW_SECRET}!"))
    ch = WebhookChannel(lambda url: RAW_SECRET, allow_private=True)
    bad = WebhookChannel(lambda url: "whsec_***not base64***", allow_private=True)
    try:
        echoed = await ch.send(make_delivery(f"webhook:{receiver.hook_url}"))
        malformed = await bad.send(make_delivery(f"webhook:{receiver.hook_url}"))
    finally:
        await ch.close()
        await bad.close()
    assert echoed.outcome is Outcome.PERMANENT
    assert RAW_SECRET not in repr(echoed) and "[secret]" in (echoed.error or "")
    assert malformed.outcome is Outcome.PERMANENT
    assert "not base64" in (malformed.error or "") and "***" not in (malformed.error or "")
    assert RAW_SECRET not in caplog.text and "***not base64***" not in caplog.text
    assert "HTTP Request: POST" in caplog.text and "/hooks/herald" not in caplog.text


async def test_only_http_and_https() -> None:
    ch = WebhookChannel(allow_private=True)
    delivery = make_delivery("webhook:https://example.com/h")
    ftp = replace(
        delivery, destination=Destination("webhook", "ftp://example.com/h", WebhookChannel.uri)
    )
    try:
        result = await ch.send(ftp)
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "http(s)" in (result.error or "")


def test_signature_matches_the_standard_webhooks_example() -> None:
    # The example from the Standard Webhooks specification's reference libraries.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert (
        sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
        == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )


def test_parse_retry_after() -> None:
    assert parse_retry_after("  12 ") == 12.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 60) == 60.0
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("") is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://100.64.0.1/hook",
    ],
)
async def test_internal_addresses_are_refused_unless_allowed(url: str) -> None:
    from core.channels import parse_destination
    from core.errors import InvalidInput

    ch = WebhookChannel()
    try:
        result = await ch.send(make_delivery(f"webhook:{url}"))
        assert result.outcome is Outcome.PERMANENT
        assert "internal address" in (result.error or "")
        assert "HERALD_WEBHOOK_ALLOW_PRIVATE" in (result.error or "")
        with pytest.raises(InvalidInput, match="internal address"):
            await ch.validate(parse_destination(f"webhook:{url}"))
    finally:
        await ch.close()
