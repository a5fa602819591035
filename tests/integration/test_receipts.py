"""Delivery receipts (issue 36): providers post to ``/receipts/<provider>`` on the
service's HTTP port, served in process by ``make_http_app`` as ``herald run`` serves it,
and reached with a real HTTP client. Attempts are recorded by the real dispatcher (a
channel that stands in for the provider's send answer, with the provider's message id);
callbacks are signed as each provider signs them (Twilio's by Twilio's own SDK).
Real SQLite and PostgreSQL; an injected clock, drain mode."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import random
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from twilio.request_validator import RequestValidator

from bot.http import Readiness, make_http_app, start_http
from bot.http_guard import HttpLimits
from core.cases import Herald
from core.channels.base import Delivery, DeliveryResult, Outcome
from core.channels.email import EmailChannel
from core.channels.failover import ProviderHealth
from core.channels.sms import SmsChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.http_client import HTTPClient
from core.models import Attempt, Job, ReceiptSeen
from core.settings import Settings, load_settings
from core.store import Settled, Store, Verdict
from tests.fakes import unused_port
from tests.fakes.sendgrid import FakeSendGrid
from tests.fakes.slack_app import FakeSlackApp
from tests.fakes.twilio import TO as TWILIO_TO
from tests.fakes.twilio import FakeTwilio
from tests.slack.conftest import ALERTS, slack_env, workspace
from tests.slack.support import action_ids, text_of, who
from tests.support.channels import RecordingChannel

ALICE = "local:alice"
PUBLIC = "https://herald.example.com"  # what the providers call; the test calls 127.0.0.1
TWILIO_SID = "AC" + "0123456789abcdef" * 2
TWILIO_TOKEN = "twilio-auth-token-of-the-tests"
MAILGUN_KEY = "mailgun-signing-key-of-the-tests"
SENDGRID_KEY = ec.generate_private_key(ec.SECP256R1())
SENDGRID_PUBLIC = base64.b64encode(
    SENDGRID_KEY.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
).decode()
CONFIG = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=60, max_lateness=3600)
PHONE = "+12025550123"
ATTEMPT = Attempt.__table__  # type: ignore[attr-defined]
JOB = Job.__table__  # type: ignore[attr-defined]
SEEN = ReceiptSeen.__table__  # type: ignore[attr-defined]


def message_id(d: Delivery) -> tuple[str, str]:
    """The provider and its id of a message, as each provider's send answer names it:
    Twilio's Message sid, SendGrid's X-Message-Id, Mailgun's id without brackets."""
    if d.destination.kind == "sms":
        return "twilio", f"SM{d.job_id:032x}"
    if d.destination.target.endswith("@mailgun.example"):
        return "mailgun", f"2026.{d.job_id}.herald@mg.example.com"
    return "sendgrid", f"sgid{d.job_id}AbC"


def accepted(d: Delivery) -> DeliveryResult:
    provider, mid = message_id(d)
    return DeliveryResult(Outcome.OK, 202, mid, provider=provider)


def receipt_settings(db_url: str, **extra: str) -> Settings:
    env = {
        "HERALD_DATABASE_URL": db_url,
        "HERALD_ADMINS": "local:root-admin",
        "HERALD_DEFAULT_TZ": "UTC",
        "HERALD_PUBLIC_URL": PUBLIC,
        "TWILIO_ACCOUNT_SID": TWILIO_SID,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "SENDGRID_WEBHOOK_PUBLIC_KEY": SENDGRID_PUBLIC,
        "MAILGUN_WEBHOOK_SIGNING_KEY": MAILGUN_KEY,
        **extra,
    }
    return load_settings(_env_file=None, **{k: v for k, v in env.items() if v})


@dataclass
class Service:
    herald: Herald
    dispatcher: Dispatcher
    client: httpx.AsyncClient
    clock: ManualClock
    sent: list[Delivery]

    @property
    def store(self) -> Store:
        return self.herald.store

    async def send(self, to: Any) -> tuple[int, str]:
        """A schedule to ``to`` due in a minute, sent: (its job id, its provider's id)."""
        schedule, _ = await self.herald.create_schedule(
            ALICE, to=to, when="in 1 minute", text="Your turn"
        )
        self.clock.advance(60)
        assert (await self.dispatcher.drain()).outcomes["delivered"] == 1
        [job] = await self.store.schedule_jobs(schedule.id, limit=10)
        return job.id, message_id(self.sent[-1])[1]

    def count(self, provider: str, status: str) -> float:
        value = self.dispatcher.metrics.registry.get_sample_value(
            "herald_receipts_total", {"provider": provider, "status": status}
        )
        return value or 0.0

    # -- callbacks, signed as each provider signs them --

    async def twilio(
        self, form: dict[str, str], *, token: str = TWILIO_TOKEN, signature: str | None = None
    ) -> httpx.Response:
        if signature is None:
            signature = RequestValidator(token).compute_signature(PUBLIC + "/receipts/twilio", form)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if signature:
            headers["X-Twilio-Signature"] = signature
        return await self.client.post("/receipts/twilio", content=urlencode(form), headers=headers)

    async def sendgrid(
        self, events: Any, *, at: datetime | None = None, body: bytes | None = None
    ) -> httpx.Response:
        raw = body if body is not None else json.dumps(events).encode()
        stamp = str(int((at or self.clock.now()).timestamp()))
        signature = SENDGRID_KEY.sign(stamp.encode() + raw, ec.ECDSA(hashes.SHA256()))
        return await self.client.post(
            "/receipts/sendgrid",
            content=raw,
            headers={
                "Content-Type": "application/json",
                "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
                "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
            },
        )

    async def mailgun(
        self,
        event: dict[str, Any],
        *,
        at: datetime | None = None,
        token: str | None = None,
        key: str = MAILGUN_KEY,
    ) -> httpx.Response:
        stamp = str(int((at or self.clock.now()).timestamp()))
        token = token or secrets.token_hex(25)
        signature = hmac.new(key.encode(), (stamp + token).encode(), hashlib.sha256).hexdigest()
        posted = {
            "signature": {"timestamp": stamp, "token": token, "signature": signature},
            "event-data": event,
        }
        return await self.client.post("/receipts/mailgun", json=posted)

    # -- what the database holds --

    async def schedule_state(self, job_id: int) -> tuple[str, str | None]:
        """The (state, last_outcome) of the job's schedule."""
        async with self.store._read() as conn:
            schedule_id = (
                await conn.execute(sa.select(JOB.c.schedule_id).where(JOB.c.id == job_id))
            ).scalar_one()
        schedule = await self.store.get_schedule(schedule_id)
        assert schedule is not None
        return schedule.state, schedule.last_outcome

    async def rows(self, job_id: int) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
        """The job's (state, step, destination, due_at, last_error) and its attempts'
        (provider, receipt, receipt_detail)."""
        async with self.store._read() as conn:
            job = (
                await conn.execute(
                    sa.select(
                        JOB.c.state, JOB.c.step, JOB.c.destination, JOB.c.due_at, JOB.c.last_error
                    ).where(JOB.c.id == job_id)
                )
            ).one()
            tries = await conn.execute(
                sa.select(ATTEMPT.c.provider, ATTEMPT.c.receipt, ATTEMPT.c.receipt_detail)
                .where(ATTEMPT.c.job_id == job_id)
                .order_by(ATTEMPT.c.id)
            )
            return tuple(job), [tuple(t) for t in tries]

    async def seen(self) -> int:
        async with self.store._read() as conn:
            return int((await conn.execute(sa.select(sa.func.count()).select_from(SEEN))).scalar())


async def serve(
    store: Store,
    settings: Settings,
    clock: ManualClock,
    channels: dict[str, Any] | None = None,
    port: int | None = None,
) -> AsyncIterator[Service]:
    """The service's HTTP app on ``port`` and a dispatcher sending through ``channels``
    (default: channels that stand in for the providers' send answers)."""
    sent: list[Delivery] = []

    def script(d: Delivery) -> DeliveryResult:
        sent.append(d)
        return accepted(d)

    channels = channels or {
        "sms": RecordingChannel(script, kind="sms"),
        "email": RecordingChannel(script, kind="email"),
    }
    herald = Herald(store, settings, clock)
    dispatcher = Dispatcher(store, channels, clock=clock, config=CONFIG, rng=random.Random(7))
    port = port or unused_port()
    runner = await start_http(
        make_http_app(Readiness(store, dispatcher), herald),
        "127.0.0.1",
        port,
        HttpLimits.from_settings(settings),
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield Service(herald, dispatcher, client, clock, sent)
    finally:
        await runner.cleanup()


@pytest.fixture
async def service(store: Store, db_url: str, clock: ManualClock) -> AsyncIterator[Service]:
    async for s in serve(store, receipt_settings(db_url), clock):
        yield s


def twilio_form(sid: str, status: str, **more: str) -> dict[str, str]:
    return {
        "AccountSid": TWILIO_SID,
        "MessageSid": sid,
        "SmsSid": sid,
        "MessageStatus": status,
        "SmsStatus": status,
        "From": "+15550000000",
        "To": PHONE,
        "ApiVersion": "2010-04-01",
        **more,
    }


def sendgrid_event(mid: str, event: str, at: datetime, **more: Any) -> dict[str, Any]:
    return {
        "email": "bob@example.com",
        "timestamp": int(at.timestamp()),
        "event": event,
        "sg_event_id": secrets.token_urlsafe(16),
        "sg_message_id": f"{mid}.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0",
        **more,
    }


def mailgun_event(mid: str, event: str, at: datetime, **more: Any) -> dict[str, Any]:
    return {
        "event": event,
        "timestamp": at.timestamp(),
        "id": secrets.token_urlsafe(16),
        "recipient": "carol@mailgun.example",
        "message": {"headers": {"message-id": mid, "to": "carol@mailgun.example"}},
        **more,
    }


# --- receipts move attempts, once ------------------------------------------------------


async def test_a_twilio_receipt_moves_the_attempt_once_and_never_backwards(
    service: Service,
) -> None:
    job_id, sid = await service.send(f"sms:{PHONE}")
    before = await service.rows(job_id)
    assert before[1] == [("twilio", None, None)]

    # a message Herald does not know: 200 (no retry storm), said, nothing changes
    unknown = await service.twilio(twilio_form("SM" + "f" * 32, "undelivered", ErrorCode="30005"))
    assert unknown.status_code == 200
    assert unknown.json()["unknown"] == 1 and "unknown to Herald" in unknown.json()["note"]
    assert await service.rows(job_id) == before

    sent = await service.twilio(twilio_form(sid, "sent"))
    assert (sent.status_code, sent.json()["ignored"]) == (200, 1)
    assert (await service.rows(job_id))[1] == [("twilio", None, None)]

    delivered = await service.twilio(twilio_form(sid, "delivered"))
    assert delivered.status_code == 200 and delivered.json()["applied"] == 1
    job, tries = await service.rows(job_id)
    assert tries == [("twilio", "delivered", None)]
    assert job[0] == "delivered"

    # out of order: undelivered after delivered, sent after delivered: nothing moves
    late = await service.twilio(twilio_form(sid, "undelivered", ErrorCode="30003"))
    assert late.status_code == 200 and late.json()["duplicate"] == 1
    assert (await service.twilio(twilio_form(sid, "sent", RawDlrDoneDate="2603021201"))).is_success
    job, tries = await service.rows(job_id)
    assert tries == [("twilio", "delivered", None)] and job[0] == "delivered"
    assert service.count("twilio", "delivered") == 1
    assert service.count("twilio", "undelivered") == 2  # reported (unknown, late): no change

    # the same signed callback again is a replay: refused, nothing recorded
    seen = await service.seen()
    replay = await service.twilio(twilio_form(sid, "delivered"))
    assert replay.status_code == 401
    assert await service.seen() == seen
    assert service.count("twilio", "delivered") == 1

    # the digests go with the delivery log's retention
    service.clock.advance(timedelta(days=31))
    assert (await service.dispatcher.housekeeping())["receipts_seen"] == seen
    assert await service.seen() == 0


async def test_a_sendgrid_batch_and_a_mailgun_event(service: Service) -> None:
    first, sg1 = await service.send("email:bob@example.com")
    second, sg2 = await service.send("email:dan@example.com")
    third, mg = await service.send("email:carol@mailgun.example")
    now = service.clock.now()
    batch = [
        sendgrid_event(sg1, "processed", now),
        sendgrid_event(sg1, "deferred", now, response="400 try again later", attempt="1"),
        sendgrid_event(sg1, "delivered", now, response="250 OK"),
        sendgrid_event(sg2, "open", now),
        sendgrid_event(sg2, "delivered", now - timedelta(seconds=30), response="250 OK"),
        sendgrid_event(sg1, "delivered", now),  # twice in one batch: once
    ]
    answer = await service.sendgrid(batch)
    assert answer.status_code == 200
    assert {k: answer.json()[k] for k in ("applied", "duplicate", "ignored")} == {
        "applied": 2,
        "duplicate": 1,
        "ignored": 3,
    }
    assert (await service.rows(first))[1] == [("sendgrid", "delivered", None)]
    assert (await service.rows(second))[1] == [("sendgrid", "delivered", None)]

    temporary = mailgun_event(mg, "failed", now, severity="temporary", reason="generic")
    assert (await service.mailgun(temporary)).json()["ignored"] == 1
    assert (await service.mailgun(mailgun_event(mg, "delivered", now))).json()["applied"] == 1
    assert (await service.rows(third))[1] == [("mailgun", "delivered", None)]

    # signed, but not events Herald can read: 400, nothing recorded
    seen = await service.seen()
    assert (await service.sendgrid(None, body=b'{"event": "delivered"}')).status_code == 400
    assert (await service.sendgrid(None, body=b"not json")).status_code == 400
    many = await service.sendgrid([{"event": "open"}] * 1001)
    assert many.status_code == 400 and "at most 1,000" in many.json()["error"]
    assert await service.seen() == seen
    too_big = await service.client.post("/receipts/twilio", content=b"x" * (65 * 1024))
    assert too_big.status_code == 413


# --- a failed receipt fails the recipient ----------------------------------------------


async def test_an_undelivered_sms_falls_back_to_the_chains_next_step(service: Service) -> None:
    job_id, sid = await service.send([{"first_of": [f"sms:{PHONE}", "email:bob@example.com"]}])
    at = service.clock.now()
    answer = await service.twilio(twilio_form(sid, "undelivered", ErrorCode="30003"))
    assert answer.status_code == 200
    (state, step, destination, due, error), tries = await service.rows(job_id)
    assert (state, step, destination, due) == ("retrying", 1, "email:bob@example.com", at)
    assert error == (
        "Twilio reported it undelivered: 30003 Unreachable destination handset. "
        "Falling back to the next step (step 2)."
    )
    assert tries == [("twilio", "undelivered", "30003 Unreachable destination handset")]
    assert service.count("twilio", "undelivered") == 1
    # the one-off had ended; it is live again while its job waits at the next step
    assert await service.schedule_state(job_id) == ("active", "retrying")
    fallbacks = service.dispatcher.metrics.registry.get_sample_value(
        "herald_fallbacks_total", {"channel": "sms"}
    )
    assert fallbacks == 1

    # the next step is due now: the dispatcher sends it by email
    assert (await service.dispatcher.drain()).outcomes["delivered"] == 1
    assert str(service.sent[-1].destination) == "email:bob@example.com"
    (state, step, *_), tries = await service.rows(job_id)
    assert (state, step) == ("delivered", 1)
    assert [t[0] for t in tries] == ["twilio", "sendgrid"]
    assert await service.schedule_state(job_id) == ("completed", "delivered")
    # a late "delivered" of the SMS changes nothing: its attempt has its receipt
    late = await service.twilio(twilio_form(sid, "delivered"))
    assert late.json()["duplicate"] == 1


async def test_a_bounce_without_a_next_step_is_a_dead_letter_in_the_providers_words(
    service: Service,
) -> None:
    bob, sg = await service.send("email:bob@example.com")
    carol, mg = await service.send("email:carol@mailgun.example")
    now = service.clock.now()
    bounce = sendgrid_event(
        sg, "bounce", now, type="bounce", status="5.1.1", reason="550 5.1.1 No such user"
    )
    assert (await service.sendgrid([bounce])).json()["applied"] == 1
    failed = mailgun_event(
        mg,
        "failed",
        now,
        severity="permanent",
        reason="bounce",
        **{"delivery-status": {"code": 550, "message": "5.1.1 Mailbox does not exist"}},
    )
    assert (await service.mailgun(failed)).json()["applied"] == 1

    (state, *_, error), tries = await service.rows(bob)
    assert state == "dead"
    assert error == "SendGrid reported it bounced: 5.1.1 550 5.1.1 No such user."
    assert tries == [("sendgrid", "bounced", "5.1.1 550 5.1.1 No such user")]
    (state, *_, error), tries = await service.rows(carol)
    assert state == "dead"
    assert error == "Mailgun reported it bounced: 550 5.1.1 Mailbox does not exist (bounce)."
    assert await service.schedule_state(bob) == ("completed", "failed")

    letters = await service.herald.dead_letters(ALICE)
    assert sorted(x.job_id for x in letters) == [bob, carol]
    assert service.count("sendgrid", "bounced") == service.count("mailgun", "bounced") == 1

    # a cancelled schedule's bounced step does not go on to the next one
    daily, _ = await service.herald.create_schedule(
        ALICE,
        to=[{"first_of": ["email:erin@example.com", f"sms:{PHONE}"]}],
        when="every day at 9am",
        text="Daily",
    )
    now = service.clock.now()
    service.clock.advance((now + timedelta(days=1)).replace(hour=9, minute=0, second=30) - now)
    assert (await service.dispatcher.drain()).outcomes["delivered"] == 1
    erin = next(j for j in await service.store.schedule_jobs(daily.id, limit=10) if j.attempts)
    await service.herald.cancel_schedule(ALICE, daily.id)
    late = sendgrid_event(message_id(service.sent[-1])[1], "bounce", service.clock.now())
    assert (await service.sendgrid([late])).json()["applied"] == 1
    (state, step, *_), _ = await service.rows(erin.id)
    assert (state, step) == ("dead", 0)
    assert await service.schedule_state(erin.id) == ("cancelled", "failed")


# --- refusals: 401 and nothing changes --------------------------------------------------


async def test_forged_unsigned_stale_and_replayed_callbacks_are_refused(
    service: Service,
) -> None:
    sms, sid = await service.send(f"sms:{PHONE}")
    mail, sg = await service.send("email:bob@example.com")
    gun, mg = await service.send("email:carol@mailgun.example")
    before = [await service.rows(j) for j in (sms, mail, gun)]
    now = service.clock.now()
    failed = twilio_form(sid, "undelivered", ErrorCode="30003")

    forged = await service.twilio(failed, token="not-the-auth-token")
    unsigned = await service.twilio(failed, signature="")
    changed = await service.twilio(
        failed,
        signature=RequestValidator(TWILIO_TOKEN).compute_signature(
            PUBLIC + "/receipts/twilio", twilio_form(sid, "delivered")
        ),
    )
    other_account = await service.twilio({**failed, "AccountSid": "AC" + "9" * 32})
    bounce = [sendgrid_event(sg, "bounce", now, type="bounce", reason="550 no")]
    stale_sendgrid = await service.sendgrid(bounce, at=now - timedelta(minutes=6))
    future_sendgrid = await service.sendgrid(bounce, at=now + timedelta(minutes=6))
    raw = json.dumps(bounce).encode()
    swapped = await service.client.post(  # signed body, another body sent
        "/receipts/sendgrid",
        content=raw.replace(b"550 no", b"550 NO"),
        headers={
            "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(
                SENDGRID_KEY.sign(
                    str(int(now.timestamp())).encode() + raw, ec.ECDSA(hashes.SHA256())
                )
            ).decode(),
            "X-Twilio-Email-Event-Webhook-Timestamp": str(int(now.timestamp())),
        },
    )
    no_sendgrid_headers = await service.client.post("/receipts/sendgrid", content=raw)
    dead = mailgun_event(mg, "failed", now, severity="permanent")
    stale_mailgun = await service.mailgun(dead, at=now - timedelta(minutes=6))
    wrong_key = await service.mailgun(dead, key="another-key")
    unsigned_mailgun = await service.client.post("/receipts/mailgun", json={"event-data": dead})
    refused = [
        forged,
        unsigned,
        changed,
        other_account,
        stale_sendgrid,
        future_sendgrid,
        swapped,
        no_sendgrid_headers,
        stale_mailgun,
        wrong_key,
        unsigned_mailgun,
    ]
    assert [r.status_code for r in refused] == [401] * len(refused)
    assert [await service.rows(j) for j in (sms, mail, gun)] == before
    assert await service.seen() == 0

    # a taken Mailgun token again, even with other event-data: a replay
    token = secrets.token_hex(25)
    first = await service.mailgun(mailgun_event(mg, "delivered", now), token=token)
    assert first.status_code == 200
    again = await service.mailgun(dead, token=token)
    assert again.status_code == 401
    assert (await service.rows(gun))[1] == [("mailgun", "delivered", None)]
    assert (await service.rows(gun))[0][0] == "delivered"
    # a SendGrid post sent again (same timestamp, same body): a replay
    delivered = [sendgrid_event(sg, "delivered", now)]
    body = json.dumps(delivered).encode()
    assert (await service.sendgrid(delivered, body=body)).status_code == 200
    assert (await service.sendgrid(delivered, body=body)).status_code == 401
    assert service.count("sendgrid", "delivered") == 1


async def test_a_provider_without_its_secret_refuses_everything_and_says_so_once(
    store: Store, db_url: str, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    settings = receipt_settings(db_url, TWILIO_AUTH_TOKEN="", SENDGRID_WEBHOOK_PUBLIC_KEY="")
    caplog.set_level(logging.WARNING, logger="bot.receipts")
    async for service in serve(store, settings, clock):
        job_id, sid = await service.send(f"sms:{PHONE}")
        form = twilio_form(sid, "delivered")
        # signed with the token Twilio has: Herald cannot check it, so refuses it
        answers = [await service.twilio(form), await service.twilio(form)]
        answers += [await service.sendgrid([]), await service.sendgrid([])]
        assert [a.status_code for a in answers] == [401] * 4
        assert (await service.rows(job_id))[1] == [("twilio", None, None)]
        unknown = await service.client.post("/receipts/vonage", content=b"status=delivered")
        assert unknown.status_code == 404
        # Mailgun is configured: a signed event Herald cannot read is a 400
        unreadable = await service.client.post(
            "/receipts/mailgun",
            json={
                "signature": {
                    "timestamp": (stamp := str(int(clock.now().timestamp()))),
                    "token": "t" * 50,
                    "signature": hmac.new(
                        MAILGUN_KEY.encode(), (stamp + "t" * 50).encode(), hashlib.sha256
                    ).hexdigest(),
                },
                "event-data": {"event": "delivered", "message": {}},
            },
        )
        assert unreadable.status_code == 400
        assert unreadable.json()["error"] == "The event names no message-id."
    said = [r.getMessage() for r in caplog.records if "not set" in r.getMessage()]
    assert said == [
        "delivery receipts of Twilio refused: TWILIO_AUTH_TOKEN is not set.",
        "delivery receipts of SendGrid refused: SENDGRID_WEBHOOK_PUBLIC_KEY is not set.",
    ]
    assert not any(TWILIO_TOKEN in r.getMessage() for r in caplog.records)


# --- the real path: our SMS and email channels, the providers' fakes ---------------------


async def test_twilio_and_sendgrid_fakes_report_on_what_our_channels_sent(
    store: Store, db_url: str, clock: ManualClock
) -> None:
    """Twilio's fake creates the message our SMS channel sends, with its StatusCallback
    at HERALD_PUBLIC_URL/receipts/twilio, and posts its status there, signed; the
    chain's email step goes through SendGrid's fake, whose X-Message-Id the event
    webhook names."""
    port = unused_port()
    http = HTTPClient(lazy_tls=True)
    async with FakeTwilio() as twilio, FakeSendGrid() as sendgrid:
        settings = receipt_settings(
            db_url,
            HERALD_PUBLIC_URL=f"http://127.0.0.1:{port}",
            HERALD_EMAIL_PROVIDERS="sendgrid",
            HERALD_EMAIL_FROM="herald@example.com",
            SENDGRID_API_KEY=sendgrid.api_key,
            HERALD_SENDGRID_API_URL=sendgrid.api_url,
            **twilio.env(),
        )
        health = ProviderHealth(now=clock.now, monotonic=lambda: clock.now().timestamp())
        channels: dict[str, Any] = {
            "sms": SmsChannel.from_settings(settings, http=http, health=health),
            "email": EmailChannel.from_settings(settings, http=http, health=health),
        }
        try:
            async for service in serve(store, settings, clock, channels, port):
                schedule, _ = await service.herald.create_schedule(
                    ALICE,
                    to=[{"first_of": [f"sms:{TWILIO_TO}", "email:bob@example.com"]}],
                    when="in 1 minute",
                    text="Your turn",
                )
                clock.advance(60)
                assert (await service.dispatcher.drain()).outcomes["delivered"] == 1
                [job] = await store.schedule_jobs(schedule.id, limit=10)
                [sms] = twilio.messages
                callback = sms.status_callback
                assert callback == f"http://127.0.0.1:{port}/receipts/twilio"
                assert (await service.rows(job.id))[1] == [("twilio", None, None)]

                forged = await twilio.post_status_callback(
                    callback, sms, "undelivered", error_code="30003", auth_token="x"
                )
                assert forged[0] == 401
                assert (await twilio.post_status_callback(callback, sms, "sent"))[0] == 200
                status, _ = await twilio.post_status_callback(
                    callback, sms, "undelivered", error_code="30006"
                )
                assert status == 200
                (state, step, destination, *_), tries = await service.rows(job.id)
                assert (state, step, destination) == ("retrying", 1, "email:bob@example.com")
                assert tries == [("twilio", "undelivered", "30006 Landline or unreachable carrier")]

                assert (await service.dispatcher.drain()).outcomes["delivered"] == 1
                [mail] = sendgrid.sent
                event = sendgrid_event(mail.message_id, "delivered", clock.now())
                assert (await service.sendgrid([event])).json()["applied"] == 1
                (state, step, *_), tries = await service.rows(job.id)
                assert (state, step) == ("delivered", 1)
                assert tries[-1] == ("sendgrid", "delivered", None)
        finally:
            for channel in channels.values():
                await channel.close()
            await http.close()


# --- a receipt's dead letter is announced as the dispatcher's -----------------------------


async def test_a_receipts_dead_letter_reaches_the_outcome_observer_as_the_dispatchers_do(
    service: Service,
) -> None:
    """The dispatcher's outcome observer (``herald run``'s fan-out to the chat adapters'
    alert channels) hears of a dead letter a receipt made, as of the dispatcher's own:
    a dead Verdict of the job as a claim reads it, in the provider's words."""
    heard: list[Settled] = []
    service.dispatcher.observer = heard.append
    bob, sg = await service.send("email:bob@example.com")
    [delivered] = heard
    assert (delivered.state, delivered.job.id) == ("delivered", bob)
    bounce = sendgrid_event(sg, "bounce", service.clock.now(), reason="550 5.1.1 No such user")
    assert (await service.sendgrid([bounce])).json()["applied"] == 1

    [dead] = heard[1:]
    assert isinstance(dead, Verdict)
    assert (dead.state, dead.attempt, dead.next_step) == ("dead", None, None)
    assert dead.error == "SendGrid reported it bounced: 550 5.1.1 No such user."
    assert dead.job == delivered.job  # the claim's reading: schedule, body, zone, owner
    assert (dead.job.body, dead.job.destination) == ("Your turn", "email:bob@example.com")

    # the same bounce again (another event id): a duplicate, not announced twice; a
    # failure that moves the job to its chain's next step is no dead letter
    again = sendgrid_event(sg, "bounce", service.clock.now(), reason="550 5.1.1 No such user")
    assert (await service.sendgrid([again])).json()["duplicate"] == 1
    chain, sid = await service.send([{"first_of": [f"sms:{PHONE}", "email:dan@example.com"]}])
    heard.clear()
    assert (await service.twilio(twilio_form(sid, "undelivered", ErrorCode="30003"))).is_success
    assert (await service.rows(chain))[0][0] == "retrying"
    assert heard == []
    assert (await service.dispatcher.drain()).outcomes["delivered"] == 1  # its email step

    # an observer's failure is logged: the receipt is taken all the same (200)
    def broken(item: Settled) -> None:
        raise RuntimeError("an adapter's bug")

    sms, sid = await service.send(f"sms:{PHONE}")
    service.dispatcher.observer = broken
    answer = await service.twilio(twilio_form(sid, "undelivered", ErrorCode="30005"))
    assert answer.status_code == 200 and answer.json()["applied"] == 1
    assert (await service.rows(sms))[0][0] == "dead"


async def test_a_receipts_dead_letter_is_posted_to_the_slack_alert_channel(
    db_url: str, clock: ManualClock
) -> None:
    """As ``herald run`` wires it: the Slack adapter's ``on_finished`` is the dispatcher's
    observer, and a bounce's dead letter is posted to the alert channel with the
    provider's words (a Slack member's schedule: the channel hears of its own tenant's)."""
    extra = {
        "HERALD_PUBLIC_URL": PUBLIC,
        "SENDGRID_WEBHOOK_PUBLIC_KEY": SENDGRID_PUBLIC,
    }
    async with FakeSlackApp() as slack:
        workspace(slack)
        async with slack_env(slack, db_url, clock, extra) as env:
            settings = receipt_settings(db_url)
            async for service in serve(env.herald.store, settings, clock):
                service.dispatcher.observer = env.adapter.on_finished
                schedule, _ = await env.herald.create_schedule(
                    who("U1"), to="email:bob@example.com", when="in 1 minute", text="Your turn"
                )
                clock.advance(60)
                assert (await service.dispatcher.drain()).outcomes["delivered"] == 1
                [job] = await env.herald.store.schedule_jobs(schedule.id, limit=10)
                sg = message_id(service.sent[-1])[1]
                bounce = sendgrid_event(sg, "bounce", clock.now(), reason="550 No such user")
                assert (await service.sendgrid([bounce])).json()["applied"] == 1

                await slack.until(lambda: any(m["channel"] == ALERTS for m in slack.messages))
                [posted] = [m for m in slack.messages if m["channel"] == ALERTS]
                shown = text_of(posted)
                assert f"Dead letter {job.id}" in shown
                assert "SendGrid reported it bounced: 550 No such user." in shown
                assert action_ids(posted) == ["herald_dead_retry", "herald_dead_discard"]
