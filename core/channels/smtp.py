"""Email over SMTP (aiosmtplib), one of the providers ``email:`` goes through
(core.channels.email_providers has the others and the letter they all send).

One connection per delivery: STARTTLS (``tls="starttls"``, port 587 by default), implicit
TLS (``"tls"``, port 465) or plain (``"none"``, port 25; for local relays and tests). A
4xx reply to the recipient or the message is a retry, a 5xx one permanent; the server
unreachable, silent, failing TLS, turning Herald away when it connects, refusing its
login or its sender, or lacking what Herald needs is the provider down (the next
provider of HERALD_EMAIL_PROVIDERS may take the message).
"""

from __future__ import annotations

import ssl
from email.message import EmailMessage
from email.utils import formatdate, parseaddr
from typing import Any, Literal

from pydantic import SecretStr

from core.channels.base import Delivery, DeliveryResult
from core.channels.email_providers import EmailProvider, Letter, domain_of
from core.channels.webhook import reveal, truncate
from core.http_client import HTTPClient

TlsMode = Literal["starttls", "tls", "none"]
DEFAULT_PORTS: dict[str, int] = {"starttls": 587, "tls": 465, "none": 25}


class SmtpProvider(EmailProvider):
    """An SMTP server, one connection per delivery (aiosmtplib): STARTTLS (``tls=
    "starttls"``, port 587 by default), implicit TLS (``"tls"``, 465) or plain
    (``"none"``, 25; for local relays and tests). ``host`` None: not configured.
    ``timeout`` is per SMTP command, in seconds; ``tls_context`` overrides certificate
    checking (a private CA).

    Replies: a 5xx refusal of the recipient or of the message is permanent, a 4xx one a
    retry; the server unreachable, silent, failing TLS, refusing Herald's login or
    sender, or lacking what Herald needs is unavailable (the next provider may work).
    """

    name = "smtp"
    label = "SMTP"
    settings_hint = "HERALD_SMTP_HOST and HERALD_SMTP_FROM"

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
        self._domain = domain_of(from_address, message_id_domain)

    @classmethod
    def from_settings(cls, settings: Any, http: HTTPClient | None) -> SmtpProvider:
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            user=settings.smtp_user,
            password=settings.smtp_password,
            from_address=settings.smtp_from,
            tls=settings.smtp_tls,
            timeout=settings.http_timeout,
            # the HTTP providers' Message-ID domain: the same id whichever one sends it
            message_id_domain=domain_of(settings.sender_address()),
        )

    @property
    def configured(self) -> bool:
        return bool(self._host)

    def message(self, delivery: Delivery) -> EmailMessage:
        """The email for ``delivery`` (headers and a UTF-8 plain-text body: over SMTP,
        Herald sends the text as it always has)."""
        letter = Letter.of(delivery, self._from, self._domain)
        msg = EmailMessage()
        msg["From"] = self._from
        msg["To"] = letter.to
        msg["Subject"] = letter.subject
        msg["Date"] = formatdate(usegmt=True)
        for name, value in letter.headers().items():
            msg[name] = value
        msg.set_content(delivery.body)
        return msg

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send one email. Ok with the Message-ID; see the class for the rest. Never
        raises for what the mail server or the network does."""
        if not self._host:
            return DeliveryResult.permanent(
                f"Email is not configured: an admin must set {self.settings_hint}."
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
            return _down(
                exc.code,
                f"The mail server refused Herald's login: {exc.code} {exc.message}",
                "an admin must check HERALD_SMTP_USER and HERALD_SMTP_PASSWORD",
            )
        except aiosmtplib.SMTPSenderRefused as exc:
            return _down(
                exc.code,
                f"The mail server refused the sender {self._sender}: {exc.code} {exc.message}",
                "an admin must check HERALD_SMTP_FROM",
            )
        except aiosmtplib.SMTPConnectResponseError as exc:  # 4xx/5xx greeting: not serving
            return _down(
                exc.code,
                f"The mail server {self._host} turned Herald away: {exc.code} {exc.message}",
                "try again later",
            )
        except aiosmtplib.SMTPResponseException as exc:
            return _by_code(
                exc.code,
                f"The mail server refused the message: {exc.code} {exc.message}",
                "check the message and the recipient",
            )
        except TimeoutError:
            return DeliveryResult.unavailable(
                f"The mail server {self._host} did not answer in time."
            )
        except ssl.SSLError as exc:
            return DeliveryResult.unavailable(
                f"TLS with the mail server {self._host} failed ({exc.__class__.__name__}); "
                "an admin should check its certificate and the TLS mode."
            )
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPConnectError, OSError) as exc:
            return DeliveryResult.unavailable(
                f"Could not talk to the mail server {self._host} ({exc.__class__.__name__})."
            )
        except aiosmtplib.SMTPException as exc:  # a missing extension: STARTTLS, AUTH, UTF-8
            return DeliveryResult.unavailable(
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


def _down(code: int, what: str, advice: str) -> DeliveryResult:
    """The server refused Herald itself (its login, its sender, any mail now): the
    provider is unavailable, whatever the code."""
    text = truncate(" ".join(what.split()), 600)
    return DeliveryResult.unavailable(f"{text}; {advice}.", code)
