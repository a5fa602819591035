"""Email (``email:someone@example.com``) over SMTP with aiosmtplib.

One connection per delivery: STARTTLS (``tls="starttls"``, port 587 by default), implicit
TLS (``"tls"``, port 465) or plain (``"none"``, port 25; for local relays and tests). The
``Message-ID`` is derived from the job's idempotency key, so a retried delivery carries the
same id and mail clients and archives can spot the duplicate. The subject is
``options["subject"]`` or the body's first line (cut to 78 characters).

SMTP replies 4xx and connection trouble are retryable; 5xx replies are permanent.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from email.message import EmailMessage
from email.utils import formatdate, parseaddr
from typing import Any, Literal

from pydantic import SecretStr

from core import limits
from core.channels.base import Channel, Delivery, DeliveryResult
from core.channels.webhook import reveal, truncate
from core.destinations import UriSyntax
from core.errors import InvalidInput
from core.ratelimit import RateLimit

TlsMode = Literal["starttls", "tls", "none"]
DEFAULT_PORTS: dict[str, int] = {"starttls": 587, "tls": 465, "none": 25}
MAX_SUBJECT = limits.EMAIL_SUBJECT.size
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")


def _check_address(raw: str, target: str) -> None:
    """One address, without a display name."""
    if not _ADDRESS.match(target):
        raise InvalidInput(f"{raw!r} is not an email address: use email:ops@example.com.")


def message_id(idempotency_key: str, domain: str) -> str:
    """``<herald.KEY@domain>``; a key with characters unfit for a Message-ID is hashed."""
    local = (
        idempotency_key
        if _SAFE_ID.match(idempotency_key)
        else hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:32]
    )
    return f"<herald.{local}@{domain}>"


def subject_for(delivery: Delivery) -> str:
    """``options["subject"]``, else the body's first non-blank line, on one line and at
    most 78 characters (an ellipsis marks a cut); "Scheduled message" when both are empty."""
    given = delivery.options.get("subject")
    text = str(given) if given else ""
    if not text.strip():
        text = next((line for line in delivery.body.splitlines() if line.strip()), "")
    text = " ".join(text.split())
    if len(text) > MAX_SUBJECT:
        text = text[: MAX_SUBJECT - 1].rstrip() + "…"
    return text or "Scheduled message"


class EmailChannel(Channel):
    """Sends each delivery as a plain-text email through one SMTP server.

    ``host`` None means email is not configured: ``send`` then returns a permanent result
    saying so. ``from_address`` may carry a display name (``Herald <bot@example.com>``).
    ``tls_context`` overrides certificate checking (e.g. a private CA). ``timeout`` is
    per SMTP command, in seconds.
    """

    kind = "email"
    uri = UriSyntax(
        "email",
        "email:ops@example.com",
        _check_address,
        settings=(
            "smtp_host",
            "smtp_port",
            "smtp_user",
            "smtp_password",
            "smtp_from",
            "smtp_tls",
        ),
    )
    rate_limit = RateLimit(rate=5.0, burst=5.0)

    def __init__(
        self,
        *,
        host: str | None,
        from_address: str,
        port: int | None = None,
        user: str | None = None,
        password: str | SecretStr | None = None,
        tls: TlsMode = "starttls",
        timeout: float = 30.0,
        tls_context: ssl.SSLContext | None = None,
        message_id_domain: str | None = None,
    ) -> None:
        if tls not in DEFAULT_PORTS:
            raise ValueError(f"tls must be starttls, tls or none, not {tls!r}")
        self._host = host
        self._port = port or DEFAULT_PORTS[tls]
        self._from = from_address
        self._sender = parseaddr(from_address)[1]
        self._user = user
        self._password = reveal(password)
        self._tls: TlsMode = tls
        self._timeout = timeout
        self._tls_context = tls_context
        self._domain = message_id_domain or self._sender.rpartition("@")[2] or "herald.invalid"

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any, health: Any) -> EmailChannel:
        """The channel the settings configure (SMTP only, for now)."""
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            user=settings.smtp_user,
            password=settings.smtp_password,
            from_address=settings.smtp_from,
            tls=settings.smtp_tls,
            timeout=settings.http_timeout,
        )

    def message(self, delivery: Delivery) -> EmailMessage:
        """The email for ``delivery`` (headers and a UTF-8 plain-text body)."""
        msg = EmailMessage()
        msg["From"] = self._from
        msg["To"] = delivery.destination.target
        msg["Subject"] = subject_for(delivery)
        msg["Date"] = formatdate(usegmt=True)
        msg["Message-ID"] = message_id(delivery.idempotency_key, self._domain)
        msg["Auto-Submitted"] = "auto-generated"
        msg["X-Herald-Job"] = str(delivery.job_id)
        msg.set_content(delivery.body)
        return msg

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send one email. Returns ok with the Message-ID; retry for 4xx replies, timeouts
        and connection failures; permanent for 5xx replies and a missing configuration.
        Never raises for what the mail server or the network does."""
        if not self._host:
            return DeliveryResult.permanent(
                "Email is not configured: an admin must set HERALD_SMTP_HOST and HERALD_SMTP_FROM."
            )
        import aiosmtplib  # here, not at import: a command that sends no mail starts faster

        msg = self.message(delivery)
        to = delivery.destination.target
        try:
            responses, _ = await aiosmtplib.send(
                msg,
                sender=self._sender,
                recipients=[to],
                hostname=self._host,
                port=self._port,
                username=self._user,
                password=self._password,
                use_tls=self._tls == "tls",
                start_tls=self._tls == "starttls",
                timeout=self._timeout,
                tls_context=self._tls_context,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            refused = exc.recipients[0] if exc.recipients else None
            code = refused.code if refused else 550
            said = refused.message if refused else "recipient refused"
            return _by_code(code, f"The mail server refused {to}: {code} {said}", "check it")
        except aiosmtplib.SMTPAuthenticationError as exc:
            return _by_code(
                exc.code,
                f"The mail server refused Herald's login: {exc.code} {exc.message}",
                "an admin must check HERALD_SMTP_USER and HERALD_SMTP_PASSWORD",
            )
        except aiosmtplib.SMTPSenderRefused as exc:
            return _by_code(
                exc.code,
                f"The mail server refused the sender {self._sender}: {exc.code} {exc.message}",
                "an admin must check HERALD_SMTP_FROM",
            )
        except aiosmtplib.SMTPResponseException as exc:
            return _by_code(
                exc.code,
                f"The mail server refused the message: {exc.code} {exc.message}",
                "check the message and the recipient",
            )
        except TimeoutError:
            return DeliveryResult.retry(f"The mail server {self._host} did not answer in time.")
        except ssl.SSLError as exc:
            return DeliveryResult.retry(
                f"TLS with the mail server {self._host} failed ({exc.__class__.__name__}); "
                "an admin should check its certificate and the TLS mode."
            )
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPConnectError, OSError) as exc:
            return DeliveryResult.retry(
                f"Could not talk to the mail server {self._host} ({exc.__class__.__name__})."
            )
        except aiosmtplib.SMTPException as exc:  # a missing extension: STARTTLS, AUTH, UTF-8
            return DeliveryResult.permanent(
                f"The mail server {self._host} does not support what Herald needs ({exc}): "
                "an admin must check HERALD_SMTP_HOST, the port and the TLS mode."
            )
        if to in responses and responses[to].code >= 400:
            reply = responses[to]
            return _by_code(reply.code, f"The mail server refused {to}: {reply}", "check it")
        return DeliveryResult.ok(250, msg["Message-ID"])


def _by_code(code: int, what: str, advice: str) -> DeliveryResult:
    """Retry for a 4xx SMTP reply (and anything below 500), permanent for 5xx."""
    text = truncate(" ".join(what.split()), 600)
    if code >= 500:
        return DeliveryResult.permanent(f"{text}; {advice}.", code)
    return DeliveryResult.retry(f"{text}.", code)
