"""core.receipts: each provider's signature checked as the provider documents it, with
the providers' own SDKs as oracles (Twilio's RequestValidator signs, SendGrid's
EventWebhook verifies), and callbacks read into reports: what is a receipt, what is
intermediate, what is bounded."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from sendgrid.helpers.eventwebhook import EventWebhook
from twilio.request_validator import RequestValidator

from core.receipts import (
    CallbackMalformed,
    CallbackRefused,
    NotConfigured,
    ReceiptKeys,
    ReceiptReport,
    read_callback,
    sendgrid_verifies,
    twilio_signature,
)

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
PUBLIC = "https://herald.example.com"
SID = "AC" + "ab" * 16
TOKEN = "12345678901234567890123456789012"
KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_KEY = ec.generate_private_key(ec.SECP256R1())
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def public(key: ec.EllipticCurvePrivateKey) -> str:
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(der).decode()


KEYS = ReceiptKeys(
    public_url=PUBLIC,
    twilio_account_sid=SID,
    twilio_auth_token=TOKEN,
    sendgrid_public_key=public(KEY),
    mailgun_signing_key="mailgun-key",
)


def twilio(form: dict[str, str], *, url: str = PUBLIC + "/receipts/twilio", **kw: Any) -> Any:
    signature = RequestValidator(TOKEN).compute_signature(url, form)
    headers = {"x-twilio-signature": signature, **kw.pop("headers", {})}
    return read_callback(
        "twilio",
        kw.pop("keys", KEYS),
        body=urlencode(form).encode(),
        headers=headers,
        now=NOW,
        **kw,
    )


def form(status: str, **more: str) -> dict[str, str]:
    return {"AccountSid": SID, "MessageSid": "SM" + "0" * 32, "MessageStatus": status, **more}


def sign_sendgrid(body: bytes, stamp: str, key: ec.EllipticCurvePrivateKey = KEY) -> str:
    return base64.b64encode(key.sign(stamp.encode() + body, ec.ECDSA(hashes.SHA256()))).decode()


def sendgrid(events: Any, *, at: datetime = NOW, keys: ReceiptKeys = KEYS) -> Any:
    body = json.dumps(events).encode()
    stamp = str(int(at.timestamp()))
    headers = {
        "X-Twilio-Email-Event-Webhook-Signature": sign_sendgrid(body, stamp),
        "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
    }
    return read_callback("sendgrid", keys, body=body, headers=headers, now=NOW)


def mailgun(event: dict[str, Any], *, at: datetime = NOW, token: str = "a" * 50) -> Any:
    stamp = str(int(at.timestamp()))
    signature = hmac.new(b"mailgun-key", (stamp + token).encode(), hashlib.sha256).hexdigest()
    body = json.dumps(
        {
            "signature": {"timestamp": stamp, "token": token, "signature": signature},
            "event-data": event,
        }
    ).encode()
    return read_callback("mailgun", KEYS, body=body, headers={}, now=NOW)


# --- Twilio: the SDK signs, we verify -----------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        form("delivered"),
        form("undelivered", ErrorCode="30003", Body="Grüße ✓ & more=yes", Empty=""),
        {f"P{i:03d}": str(i) * (i % 7) for i in range(60)},
    ],
)
def test_our_twilio_signature_is_the_sdks(params: dict[str, str]) -> None:
    url = PUBLIC + "/receipts/twilio?tenant=a%20b"
    ours = twilio_signature(TOKEN, url, list(params.items()))
    assert ours == RequestValidator(TOKEN).compute_signature(url, params)


def test_a_twilio_callback_signed_by_the_sdk_is_taken_and_a_changed_one_refused() -> None:
    callback = twilio(form("undelivered", ErrorCode="30003"))
    assert callback.reports == (
        ReceiptReport(
            "twilio", "SM" + "0" * 32, "undelivered", NOW, "30003 Unreachable destination handset"
        ),
    )
    signature = RequestValidator(TOKEN).compute_signature(
        PUBLIC + "/receipts/twilio", form("undelivered", ErrorCode="30003")
    )
    changed = urlencode(form("delivered", ErrorCode="30003")).encode()
    with pytest.raises(CallbackRefused, match="does not match"):
        read_callback(
            "twilio", KEYS, body=changed, headers={"X-Twilio-Signature": signature}, now=NOW
        )


def test_twilio_signs_the_public_url_with_or_without_its_port_and_with_its_query() -> None:
    assert twilio(form("delivered"), url=PUBLIC + ":443/receipts/twilio").reports
    assert twilio(form("delivered"), url=PUBLIC + "/receipts/twilio?a=1", query="a=1").reports
    with pytest.raises(CallbackRefused):  # the request's own URL behind a proxy is not it
        twilio(form("delivered"), url="http://127.0.0.1:8080/receipts/twilio")
    with pytest.raises(CallbackRefused):
        twilio(form("delivered"), url=PUBLIC + "/receipts/twilio?a=1")  # query not sent


def test_twilio_statuses() -> None:
    assert twilio(form("delivered")).reports[0].status == "delivered"
    failed = twilio(form("failed", ErrorCode="30008")).reports[0]
    assert (failed.status, failed.detail) == ("undelivered", "failed to send: 30008 Unknown error")
    assert twilio(form("undelivered", ErrorCode="21610")).reports[0].detail == "error 21610"
    assert twilio(form("undelivered", ErrorCode="x" * 99)).reports[0].detail == ""
    for status in ("queued", "sending", "sent", "accepted", "read", "whatever"):
        callback = twilio(form(status))
        assert (callback.reports, callback.ignored) == ((), 1)


def test_twilio_refusals() -> None:
    with pytest.raises(CallbackRefused, match="another Twilio account"):
        twilio({**form("delivered"), "AccountSid": "AC" + "0" * 32})
    with pytest.raises(CallbackRefused, match="no X-Twilio-Signature"):
        read_callback(
            "twilio", KEYS, body=urlencode(form("delivered")).encode(), headers={}, now=NOW
        )
    with pytest.raises(CallbackRefused, match="shared key"):
        twilio(
            form("delivered"),
            headers={"X-Twilio-Webhooks-Signature-Settings": "key=k1,algorithm=HMAC_SHA256"},
        )
    with pytest.raises(CallbackMalformed):
        twilio({**form("delivered"), "MessageSid": "SM/../x"})
    for missing, setting in (
        ({"twilio_auth_token": None}, "TWILIO_AUTH_TOKEN"),
        ({"twilio_account_sid": None}, "TWILIO_ACCOUNT_SID"),
        ({"public_url": None}, "HERALD_PUBLIC_URL"),
    ):
        with pytest.raises(NotConfigured) as refused:
            twilio(form("delivered"), keys=dataclasses.replace(KEYS, **missing))
        assert refused.value.setting == setting


def test_a_twilio_replay_is_the_same_signed_content_whatever_its_idempotency_token() -> None:
    one = twilio(form("delivered"), headers={"I-Twilio-Idempotency-Token": "t1"})
    two = twilio(form("delivered"), headers={"I-Twilio-Idempotency-Token": "t2"})
    assert one.digest == two.digest
    assert twilio(form("sent")).digest != one.digest


# --- SendGrid: SendGrid's SDK and our verifier agree --------------------------------------


def malleated(signature: str) -> str:
    """The same ECDSA signature as (r, n - s): it verifies as well."""
    r, s = decode_dss_signature(base64.b64decode(signature))
    return base64.b64encode(encode_dss_signature(r, P256_ORDER - s)).decode()


def test_sendgrids_sdk_and_our_verifier_agree() -> None:
    sdk = EventWebhook()
    key = sdk.convert_public_key_to_ecdsa(public(KEY))
    body = json.dumps([{"event": "delivered", "sg_message_id": "abc.def"}])
    stamp = "1772452800"
    good = sign_sendgrid(body.encode(), stamp)
    cases = [
        (body, good, stamp, True),
        (body, malleated(good), stamp, True),
        (body.replace("delivered", "bounce"), good, stamp, False),
        (body, good, "1772452801", False),
        (body, sign_sendgrid(body.encode(), stamp, OTHER_KEY), stamp, False),
    ]
    for payload, signature, timestamp, valid in cases:
        assert sdk.verify_signature(payload, signature, timestamp, key) is valid
        assert sendgrid_verifies(public(KEY), payload.encode(), signature, timestamp) is valid
    assert not sendgrid_verifies(public(KEY), body.encode(), "not base64!", stamp)
    assert not sendgrid_verifies("not a key", body.encode(), good, stamp)


def test_a_malleated_sendgrid_signature_is_still_a_replay() -> None:
    body = json.dumps([{"event": "delivered", "sg_message_id": "abc.def"}]).encode()
    stamp = str(int(NOW.timestamp()))
    good = sign_sendgrid(body, stamp)
    digests = {
        read_callback(
            "sendgrid",
            KEYS,
            body=body,
            headers={
                "X-Twilio-Email-Event-Webhook-Signature": signature,
                "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
            },
            now=NOW,
        ).digest
        for signature in (good, malleated(good))
    }
    assert len(digests) == 1


def test_sendgrid_events() -> None:
    at = int((NOW - timedelta(seconds=30)).timestamp())
    callback = sendgrid(
        [
            {"event": "processed", "sg_message_id": "m1.x"},
            {"event": "deferred", "sg_message_id": "m1.x", "response": "421 later"},
            {"event": "delivered", "sg_message_id": "m1.filter.0", "timestamp": at},
            {
                "event": "bounce",
                "type": "bounce",
                "sg_message_id": "m2.y",
                "status": "5.1.1",
                "reason": "550 no\nsuch user",
            },
            {"event": "bounce", "type": "blocked", "sg_message_id": "m3.y", "reason": "blocked"},
            {"event": "dropped", "sg_message_id": "m4.y", "reason": "Bounced Address"},
            {"event": "delivered", "sg_message_id": "x" * 300 + ".y"},
            {"event": "delivered"},
            "not an event",
            {"event": "click", "sg_message_id": "m1.x"},
        ]
    )
    assert [(r.message_id, r.status, r.detail) for r in callback.reports] == [
        ("m1", "delivered", ""),
        ("m2", "bounced", "5.1.1 550 no such user"),
        ("m3", "undelivered", "blocked: blocked"),
        ("m4", "undelivered", "dropped: Bounced Address"),
    ]
    assert callback.reports[0].at == datetime.fromtimestamp(at, UTC)
    assert callback.ignored == 6


def test_sendgrid_refusals() -> None:
    with pytest.raises(CallbackRefused, match="replay"):
        sendgrid([], at=NOW - timedelta(minutes=5, seconds=1))
    with pytest.raises(CallbackRefused, match="replay"):
        sendgrid([], at=NOW + timedelta(minutes=5, seconds=1))
    assert sendgrid([], at=NOW - timedelta(minutes=4)).reports == ()
    for stamp in ("999999999999", "-1", "1e9", ""):
        with pytest.raises(CallbackRefused):
            read_callback(
                "sendgrid",
                KEYS,
                body=b"[]",
                headers={
                    "X-Twilio-Email-Event-Webhook-Signature": sign_sendgrid(b"[]", stamp),
                    "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
                },
                now=NOW,
            )
    with pytest.raises(NotConfigured, match="not a base64 ECDSA public key"):
        sendgrid([], keys=ReceiptKeys(sendgrid_public_key="bm90IGEga2V5"))
    with pytest.raises(NotConfigured, match="SENDGRID_WEBHOOK_PUBLIC_KEY is not set"):
        sendgrid([], keys=ReceiptKeys())
    with pytest.raises(CallbackMalformed, match="at most 1,000"):
        sendgrid([{}] * 1001)


# --- Mailgun ------------------------------------------------------------------------------


def mailgun_event(event: str, **more: Any) -> dict[str, Any]:
    return {
        "event": event,
        "timestamp": NOW.timestamp(),
        "message": {"headers": {"message-id": "<20260302.1@mg.example.com>"}},
        **more,
    }


def test_mailgun_events() -> None:
    [delivered] = mailgun(mailgun_event("delivered")).reports
    assert (delivered.message_id, delivered.status) == ("20260302.1@mg.example.com", "delivered")
    permanent = mailgun_event(
        "failed",
        severity="permanent",
        reason="bounce",
        **{"delivery-status": {"code": 550, "message": "x" * 900}},
    )
    [bounced] = mailgun(permanent).reports
    assert bounced.status == "bounced" and len(bounced.detail) == 500
    assert bounced.detail.startswith("550 xxx")
    temporary = mailgun(mailgun_event("failed", severity="temporary"))
    assert (temporary.reports, temporary.ignored) == ((), 1)
    assert mailgun(mailgun_event("opened")).ignored == 1
    with pytest.raises(CallbackMalformed, match="too long"):
        mailgun(mailgun_event("delivered", message={"headers": {"message-id": "m" * 201}}))


def test_mailgun_refusals_and_the_token_as_the_replay_key() -> None:
    with pytest.raises(CallbackRefused, match="replay"):
        mailgun(mailgun_event("delivered"), at=NOW - timedelta(minutes=6))
    body = json.dumps({"signature": {"timestamp": "1", "token": "t", "signature": "0" * 64}})
    with pytest.raises(CallbackRefused):
        read_callback("mailgun", KEYS, body=body.encode(), headers={}, now=NOW)
    with pytest.raises(CallbackRefused, match="not JSON"):
        read_callback("mailgun", KEYS, body=b"token=x", headers={}, now=NOW)
    # the token is what Mailgun signs with the time: its identity, whatever the event
    one = mailgun(mailgun_event("delivered"), token="b" * 50)
    two = mailgun(mailgun_event("failed", severity="permanent"), token="b" * 50)
    assert one.digest == two.digest
