"""Delivery receipts: what a provider reports of a message after it accepted it
(Twilio's status callbacks, SendGrid's and Mailgun's event webhooks), each callback's
signature checked by the provider's documented scheme and read into one
:class:`ReceiptReport` per message. Pure: bytes and headers in, a :class:`Callback` (or
a refusal) out. The HTTP side (``/receipts/<provider>``) is :mod:`bot.receipts`; the
store moves the attempt on (:meth:`core.store.Store.take_callback`).

**Replays.** A replay is the same signed request sent again; it is refused (401) and
changes nothing. What "the same" means differs by provider, because each signs
different things:

- *Twilio* signs the URL and every POST parameter, and no time: the same parameters
  always give the same signature, so the callback's identity is its signed content
  (URL + sorted parameters). Twilio's ``I-Twilio-Idempotency-Token`` header is not
  signed: anyone could change it on a copied request, so it cannot be the key.
- *SendGrid* signs the timestamp header and the raw body with ECDSA. ECDSA signatures
  are malleable (``(r, s)`` and ``(r, n - s)`` both verify), so the identity is the
  signed bytes (timestamp + body), never the signature; and a timestamp more than
  :data:`REPLAY_WINDOW` away from now is refused, so a copy can be replayed at most
  within that window, where the seen-digest check stops it.
- *Mailgun* signs ``timestamp + token`` (HMAC-SHA256): the token is the identity, as
  Mailgun's documentation says (cache the tokens), and the timestamp is checked too.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

#: Each provider's name in a sentence, by the name the settings and the log use.
LABELS: dict[str, str] = {
    "smtp": "SMTP",
    "sendgrid": "SendGrid",
    "mailgun": "Mailgun",
    "twilio": "Twilio",
    "vonage": "Vonage",
    "fcm": "Firebase Cloud Messaging",
    "ntfy": "ntfy",
}

#: The providers whose callbacks ``/receipts/<provider>`` takes, and the most body
#: each may post: Twilio's status callback is a form of a few hundred bytes; SendGrid
#: batches events (at most :data:`MAX_EVENTS` taken per post); Mailgun posts one event
#: with the message's headers.
MAX_BODY: dict[str, int] = {"twilio": 64 * 1024, "sendgrid": 2 * 1024 * 1024, "mailgun": 256 * 1024}
#: The most events one SendGrid post may carry.
MAX_EVENTS = 1000
#: How far a signed timestamp (SendGrid, Mailgun) may be from now, either way.
REPLAY_WINDOW = timedelta(minutes=5)
#: The longest message id and failure detail kept (the columns hold 200 and text).
MAX_ID = 200
MAX_DETAIL = 500

#: Twilio's documented meanings of the common delivery errors
#: (https://www.twilio.com/docs/api/errors).
TWILIO_ERRORS: dict[str, str] = {
    "30001": "Queue overflow",
    "30002": "Account suspended",
    "30003": "Unreachable destination handset",
    "30004": "Message blocked",
    "30005": "Unknown destination handset",
    "30006": "Landline or unreachable carrier",
    "30007": "Message filtered",
    "30008": "Unknown error",
}
_TWILIO_FAILED = {"undelivered": "undelivered", "failed": "undelivered"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_DIGITS = re.compile(r"^[0-9]{1,12}$")
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


def provider_label(provider: str) -> str:
    """``twilio`` → ``Twilio`` (an unknown name as it is)."""
    return LABELS.get(provider, provider)


@dataclass(frozen=True, slots=True)
class ReceiptReport:
    """One provider report of one message."""

    provider: str
    #: The provider's id of the message, as its send answer gave it.
    message_id: str
    #: delivered, undelivered or bounced (core.models.Receipt); intermediate statuses
    #: (queued, sent) are not reports.
    status: str
    at: datetime
    #: The provider's words of a failure (its error code and reason); "" for none.
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Callback:
    """A callback whose signature holds, read."""

    provider: str
    #: What identifies this signed request (sha256, hex): taken a second time, it is
    #: a replay (see the module docstring).
    digest: str
    reports: tuple[ReceiptReport, ...]
    #: Events read and left alone (intermediate statuses, engagement events).
    ignored: int = 0


class CallbackRefused(Exception):
    """Not a callback of the provider's (unsigned, forged, stale, another account's):
    answered 401. ``str()`` is a sentence for the log, never a secret."""


class NotConfigured(CallbackRefused):
    """The provider's verification secret is not set (or not usable): every callback is
    refused. ``setting`` names what to set."""

    def __init__(self, setting: str, sentence: str) -> None:
        super().__init__(sentence)
        self.setting = setting


class CallbackMalformed(Exception):
    """Signed by the provider, but not a callback Herald can read: answered 400."""


@dataclass(frozen=True, slots=True)
class ReceiptKeys:
    """What verifies callbacks, read once from the settings (:meth:`from_settings`)."""

    public_url: str | None = None
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    sendgrid_public_key: str | None = None
    mailgun_signing_key: str | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> ReceiptKeys:
        def secret(value: Any) -> str | None:
            return None if value is None else str(value.get_secret_value()) or None

        return cls(
            public_url=settings.public_url or None,
            twilio_account_sid=settings.twilio_account_sid or None,
            twilio_auth_token=secret(settings.twilio_auth_token),
            sendgrid_public_key=settings.sendgrid_webhook_public_key or None,
            mailgun_signing_key=secret(settings.mailgun_webhook_signing_key),
        )


def read_callback(
    provider: str,
    keys: ReceiptKeys,
    *,
    body: bytes,
    headers: Mapping[str, str],
    query: str = "",
    now: datetime,
) -> Callback:
    """Verify one callback of ``provider`` (a name of :data:`MAX_BODY`) and read it.
    ``headers`` as received (any case); ``query`` the request's query string, without
    ``?``. Raises :class:`CallbackRefused` (:class:`NotConfigured`) or
    :class:`CallbackMalformed`."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if provider == "twilio":
        return _twilio(keys, body, lowered, query, now)
    if provider == "sendgrid":
        return _sendgrid(keys, body, lowered, now)
    if provider == "mailgun":
        return _mailgun(keys, body, now)
    raise ValueError(f"no receipts from {provider!r}")


# --- Twilio ---------------------------------------------------------------------------


def twilio_signature(auth_token: str, url: str, params: list[tuple[str, str]]) -> str:
    """``X-Twilio-Signature`` of a POST to ``url`` with ``params``: base64 of
    HMAC-SHA1(auth token, URL + each parameter's name and value, sorted by name)
    (https://www.twilio.com/docs/usage/webhooks/webhooks-security), as Twilio's own
    ``RequestValidator.compute_signature`` makes it."""
    return base64.b64encode(
        hmac.new(auth_token.encode(), _twilio_signed(url, params).encode(), hashlib.sha1).digest()
    ).decode()


def _twilio_signed(url: str, params: list[tuple[str, str]]) -> str:
    values: dict[str, set[str]] = {}
    for name, value in params:
        values.setdefault(name, set()).add(value)
    return url + "".join(name + v for name in sorted(values) for v in sorted(values[name]))


def _twilio_urls(url: str) -> list[str]:
    """The URL as configured, and with the default port added or removed: Twilio signs
    the URL as it requested it, which may or may not name the port (its SDK tries both)."""
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    userinfo = parts.netloc.rpartition("@")[0]
    userinfo = f"{userinfo}@" if userinfo else ""
    try:
        port = parts.port
    except ValueError:
        return [url]
    urls = [url]
    if port is None and default is not None:
        urls.append(urlunsplit(parts._replace(netloc=f"{userinfo}{host}:{default}")))
    elif port == default:
        urls.append(urlunsplit(parts._replace(netloc=f"{userinfo}{host}")))
    return urls


def _twilio(
    keys: ReceiptKeys, body: bytes, headers: Mapping[str, str], query: str, now: datetime
) -> Callback:
    if not keys.twilio_auth_token:
        raise NotConfigured("TWILIO_AUTH_TOKEN", "TWILIO_AUTH_TOKEN is not set.")
    if not keys.twilio_account_sid:
        raise NotConfigured("TWILIO_ACCOUNT_SID", "TWILIO_ACCOUNT_SID is not set.")
    if not keys.public_url:
        raise NotConfigured(
            "HERALD_PUBLIC_URL",
            "HERALD_PUBLIC_URL is not set: Twilio signs the URL it posts to, which is "
            "HERALD_PUBLIC_URL/receipts/twilio.",
        )
    signature = headers.get("x-twilio-signature", "")
    if not signature:
        raise CallbackRefused("The callback carries no X-Twilio-Signature.")
    settings_header = headers.get("x-twilio-webhooks-signature-settings", "").lower()
    if "algorithm=" in settings_header and "algorithm=hmac_sha1" not in settings_header:
        raise CallbackRefused(
            "The callback is signed with a shared key (X-Twilio-Webhooks-Signature-"
            "Settings); Herald checks the Auth Token's HMAC-SHA1 signature only."
        )
    try:
        params = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=200
        )
    except (UnicodeDecodeError, ValueError):
        raise CallbackRefused("The callback's body is not a form Twilio signs.") from None
    url = keys.public_url.rstrip("/") + "/receipts/twilio" + (f"?{query}" if query else "")
    signed = None
    for candidate in _twilio_urls(url):
        if hmac.compare_digest(
            twilio_signature(keys.twilio_auth_token, candidate, params).encode(),
            signature.encode("utf-8", "replace"),
        ):
            signed = _twilio_signed(candidate, params)
            break
    if signed is None:
        raise CallbackRefused("The X-Twilio-Signature does not match the callback.")
    form = dict(params)
    if form.get("AccountSid") != keys.twilio_account_sid:
        raise CallbackRefused("The callback is of another Twilio account than TWILIO_ACCOUNT_SID.")
    digest = hashlib.sha256(signed.encode()).hexdigest()
    status = form.get("MessageStatus", form.get("SmsStatus", ""))
    if status == "delivered":
        receipt, detail = "delivered", ""
    elif status in _TWILIO_FAILED:
        receipt, detail = _TWILIO_FAILED[status], _twilio_detail(status, form.get("ErrorCode", ""))
    else:  # queued, sending, sent, accepted, read, …: not a receipt
        return Callback("twilio", digest, (), ignored=1)
    sid = form.get("MessageSid", form.get("SmsSid", ""))
    if not re.fullmatch(r"[A-Za-z0-9]{2,64}", sid):
        raise CallbackMalformed("The callback has no MessageSid Herald can read.")
    return Callback("twilio", digest, (ReceiptReport("twilio", sid, receipt, now, detail),))


def _twilio_detail(status: str, code: str) -> str:
    """'30003 Unreachable destination handset' (Twilio's documented meaning)."""
    if not _DIGITS.match(code):
        return "" if status == "undelivered" else "failed to send"
    said = f"{code} {TWILIO_ERRORS[code]}" if code in TWILIO_ERRORS else f"error {code}"
    return said if status == "undelivered" else f"failed to send: {said}"


# --- SendGrid -------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _sendgrid_key(text: str) -> Any:
    """The Event Webhook's verification key (base64 DER SubjectPublicKeyInfo, as
    SendGrid's Mail Settings show it; PEM armour tolerated); None if it is not one.
    (cryptography is imported here, not with the module: core.views reads this
    module's labels, and every command that shows a schedule would load it.)"""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    lines = [ln for ln in text.strip().splitlines() if not ln.startswith("-----")]
    try:
        key = serialization.load_der_public_key(base64.b64decode("".join(lines), validate=True))
    except (ValueError, binascii.Error, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, ec.EllipticCurvePublicKey) else None


def sendgrid_verifies(public_key: str, body: bytes, signature: str, timestamp: str) -> bool:
    """Whether ``signature`` (base64 DER ECDSA, SHA-256) signs ``timestamp + body``
    under ``public_key`` (https://www.twilio.com/docs/sendgrid/for-developers/
    tracking-events/getting-started-event-webhook-security-features)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = _sendgrid_key(public_key)
    if key is None or len(signature) > 512:
        return False
    try:
        raw = base64.b64decode(signature, validate=True)
        key.verify(raw, timestamp.encode() + body, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True


def _sendgrid(
    keys: ReceiptKeys, body: bytes, headers: Mapping[str, str], now: datetime
) -> Callback:
    if not keys.sendgrid_public_key:
        raise NotConfigured(
            "SENDGRID_WEBHOOK_PUBLIC_KEY", "SENDGRID_WEBHOOK_PUBLIC_KEY is not set."
        )
    if _sendgrid_key(keys.sendgrid_public_key) is None:
        raise NotConfigured(
            "SENDGRID_WEBHOOK_PUBLIC_KEY",
            "SENDGRID_WEBHOOK_PUBLIC_KEY is not a base64 ECDSA public key: copy the "
            "verification key from SendGrid's Mail Settings (Signed Event Webhook).",
        )
    signature = headers.get("x-twilio-email-event-webhook-signature", "")
    timestamp = headers.get("x-twilio-email-event-webhook-timestamp", "")
    if not signature or not timestamp:
        raise CallbackRefused("The callback carries no signature and timestamp headers.")
    _fresh(timestamp, now)
    if not sendgrid_verifies(keys.sendgrid_public_key, body, signature, timestamp):
        raise CallbackRefused("The Event Webhook signature does not match the callback.")
    digest = hashlib.sha256(timestamp.encode() + b"\n" + body).hexdigest()
    try:
        events = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise CallbackMalformed("The events are not JSON.") from None
    if not isinstance(events, list):
        raise CallbackMalformed("The events are not a JSON array.")
    if len(events) > MAX_EVENTS:
        raise CallbackMalformed(f"The post carries {len(events):,} events: at most {MAX_EVENTS:,}.")
    reports: list[ReceiptReport] = []
    for event in events:
        report = _sendgrid_event(event, now) if isinstance(event, dict) else None
        if report is not None:
            reports.append(report)
    return Callback("sendgrid", digest, tuple(reports), ignored=len(events) - len(reports))


def _sendgrid_event(event: dict[str, Any], now: datetime) -> ReceiptReport | None:
    """One event of a batch: delivered, bounce (bounced; a block: undelivered) and
    dropped (undelivered) are receipts; processed, deferred (SendGrid tries again) and
    engagement events are not."""
    kind = event.get("event")
    if kind == "delivered":
        status, detail = "delivered", ""
    elif kind == "bounce":
        blocked = event.get("type") == "blocked"
        status = "undelivered" if blocked else "bounced"
        words = " ".join(_text(event.get(k)) for k in ("status", "reason") if event.get(k))
        detail = f"blocked: {words}" if blocked else words
    elif kind == "dropped":
        status, detail = "undelivered", f"dropped: {_text(event.get('reason'))}".rstrip(": ")
    else:
        return None
    raw = event.get("sg_message_id")
    message_id = raw.split(".", 1)[0] if isinstance(raw, str) else ""
    if not message_id or len(message_id) > MAX_ID:
        return None
    return ReceiptReport(
        "sendgrid", message_id, status, _event_time(event.get("timestamp"), now), _text(detail)
    )


# --- Mailgun --------------------------------------------------------------------------


def mailgun_signature(signing_key: str, timestamp: str, token: str) -> str:
    """Mailgun's webhook signature: hex HMAC-SHA256(signing key, timestamp + token)
    (https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/
    #securing-webhooks)."""
    return hmac.new(signing_key.encode(), (timestamp + token).encode(), hashlib.sha256).hexdigest()


def _mailgun(keys: ReceiptKeys, body: bytes, now: datetime) -> Callback:
    if not keys.mailgun_signing_key:
        raise NotConfigured(
            "MAILGUN_WEBHOOK_SIGNING_KEY", "MAILGUN_WEBHOOK_SIGNING_KEY is not set."
        )
    try:
        posted = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise CallbackRefused("The callback is not JSON: it carries no signature.") from None
    signed = posted.get("signature") if isinstance(posted, dict) else None
    if not isinstance(signed, dict):
        raise CallbackRefused("The callback carries no signature.")
    timestamp, token, signature = (signed.get(k) for k in ("timestamp", "token", "signature"))
    if not (
        isinstance(timestamp, str | int)
        and isinstance(token, str)
        and 0 < len(token) <= 200
        and isinstance(signature, str)
        and _HEX64.match(signature)
    ):
        raise CallbackRefused("The callback's signature is not Mailgun's.")
    timestamp = str(timestamp)
    _fresh(timestamp, now)
    expected = mailgun_signature(keys.mailgun_signing_key, timestamp, token)
    if not hmac.compare_digest(expected, signature.lower()):
        raise CallbackRefused("The Mailgun signature does not match the callback.")
    digest = hashlib.sha256(b"mailgun token\n" + token.encode()).hexdigest()
    event = posted.get("event-data")
    if not isinstance(event, dict):
        raise CallbackMalformed("The callback has no event-data.")
    report = _mailgun_event(event, now)
    return Callback("mailgun", digest, () if report is None else (report,), int(report is None))


def _mailgun_event(event: dict[str, Any], now: datetime) -> ReceiptReport | None:
    """delivered; failed for good (severity permanent): bounced. A temporary failure
    (Mailgun tries again) and other events are not receipts."""
    kind = event.get("event")
    if kind == "delivered":
        status, detail = "delivered", ""
    elif kind == "failed" and event.get("severity") == "permanent":
        status = "bounced"
        said = event.get("delivery-status")
        said = said if isinstance(said, dict) else {}
        words = [_text(said.get("code")), _text(said.get("message") or said.get("description"))]
        if event.get("reason"):
            words.append(f"({_text(event.get('reason'))})")
        detail = " ".join(w for w in words if w)
    else:
        return None
    message = event.get("message")
    headers = message.get("headers") if isinstance(message, dict) else None
    raw = headers.get("message-id") if isinstance(headers, dict) else None
    if not isinstance(raw, str):
        raise CallbackMalformed("The event names no message-id.")
    message_id = raw.strip().strip("<>")
    if not message_id or len(message_id) > MAX_ID:
        raise CallbackMalformed("The event's message-id is empty or too long.")
    return ReceiptReport(
        "mailgun", message_id, status, _event_time(event.get("timestamp"), now), _text(detail)
    )


# --- shared ---------------------------------------------------------------------------


def _fresh(timestamp: str, now: datetime) -> None:
    """Refuse a signed timestamp further than :data:`REPLAY_WINDOW` from ``now``."""
    if not _DIGITS.match(timestamp):
        raise CallbackRefused("The callback's timestamp is not a Unix time.")
    off = abs(int(timestamp) - now.timestamp())  # numbers: year 33658 is no datetime
    if off > REPLAY_WINDOW.total_seconds():
        raise CallbackRefused(
            f"The callback's timestamp is {off:.0f} s from now: more than "
            f"{REPLAY_WINDOW.total_seconds():.0f} s is refused as a replay."
        )


def _event_time(value: Any, now: datetime) -> datetime:
    """The provider's time of the event when it is a plausible one, else ``now``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            at = datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return now
        if now - timedelta(days=30) <= at <= now + REPLAY_WINDOW:
            return at
    return now


def _text(value: Any) -> str:
    """A provider's words, one line, at most :data:`MAX_DETAIL` characters."""
    if value is None:
        return ""
    text = _CONTROL.sub(" ", str(value)).strip()
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"
