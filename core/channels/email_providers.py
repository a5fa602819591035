"""The providers ``email:`` goes through (core.channels.failover): an SMTP server, and
two HTTP email APIs, SendGrid and Mailgun.

Why these two: they are the most widely used HTTP email APIs, and both document their
request, answers and errors in a public reference we can build faithful fakes from,
and sign their event webhooks (delivery receipts, /receipts/sendgrid and
/receipts/mailgun):

- SendGrid v3 Mail Send, https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send
  (errors: https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors)
- Mailgun Messages, https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Messages/
  (answers: https://documentation.mailgun.com/docs/mailgun/quickstart-guide/responses)

Every provider sends the same letter (:class:`Letter`): the subject rules of
:func:`subject_for`, the text as ``text/plain`` and, escaped with its line breaks as
``<br>``, as ``text/html`` (no attachments), and a ``Message-ID`` derived from the
job's idempotency key (:func:`message_id`), so a retried delivery, through any
provider, carries the same id and mail clients and archives can spot the duplicate.

How answers are read: a refusal of the *message* (a bad address, a body too large) is
permanent and goes to no other provider; a failure of the *provider* (no connection,
no answer in time, 5xx, a 429 with no Retry-After, and a refusal of Herald's own
credentials, which another provider's may not share) is
:meth:`~core.channels.base.DeliveryResult.unavailable`; a 429 with a Retry-After is a
plain retry, which the failover channel counts as down when the pause is longer than
the dispatcher waits. The API base URLs are the admin's settings
(``HERALD_SENDGRID_API_URL``, ``HERALD_MAILGUN_API_URL``), sent like Slack's through the
shared client's direct pool, not the network guard. No credential is ever put in a
result, a log line or an error sentence.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, parseaddr
from typing import Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import SecretStr

from core import limits
from core.channels.answers import no_answer, not_json, unreachable
from core.channels.base import Delivery, DeliveryResult
from core.channels.failover import Provider
from core.channels.webhook import USER_AGENT, parse_retry_after, reveal, truncate
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable

TlsMode = Literal["starttls", "tls", "none"]
DEFAULT_PORTS: dict[str, int] = {"starttls": 587, "tls": 465, "none": 25}
MAX_SUBJECT = limits.EMAIL_SUBJECT.size
#: The most characters of a provider's own words kept in an error sentence.
MAX_SAID = 300
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


def html_of(text: str) -> str:
    """The HTML part: the text escaped, each line break a ``<br>``."""
    return "<br>\n".join(html.escape(line) for line in text.splitlines())


@dataclass(frozen=True, slots=True)
class Letter:
    """One delivery as every provider sends it."""

    sender: str
    to: str
    subject: str
    text: str
    html: str
    message_id: str
    job_id: int
    key: str

    @classmethod
    def of(cls, delivery: Delivery, sender: str, domain: str) -> Letter:
        # the APIs refuse an empty part: a blank message (never saved) says its subject
        text = delivery.body if delivery.body.strip() else subject_for(delivery)
        return cls(
            sender=sender,
            to=delivery.destination.target,
            subject=subject_for(delivery),
            text=text,
            html=html_of(text),
            message_id=message_id(delivery.idempotency_key, domain),
            job_id=delivery.job_id,
            key=delivery.idempotency_key,
        )

    def headers(self) -> dict[str, str]:
        """The headers Herald adds to each email, Message-ID first."""
        return {
            "Message-ID": self.message_id,
            "Auto-Submitted": "auto-generated",
            "X-Herald-Job": str(self.job_id),
        }


def _domain_of(from_address: str, given: str | None) -> str:
    return given or parseaddr(from_address)[1].rpartition("@")[2] or "herald.invalid"


def _said(text: str) -> str:
    """A provider's own words, on one line and bounded."""
    return truncate(" ".join(text.split()), MAX_SAID)


class HttpEmailProvider(Provider):
    """What SendGrid and Mailgun share: the request through the shared client, the
    sentences for no connection or no answer, and the reading of a status that means
    the provider, not the message, failed."""

    #: The settings that configure it (said when it is not configured).
    settings_hint: ClassVar[str]
    #: The setting naming its credentials, said when they are refused.
    key_setting: ClassVar[str]
    #: The setting of its base URL.
    url_setting: ClassVar[str]

    def __init__(
        self,
        *,
        from_address: str,
        base_url: str,
        http: HTTPClient | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        message_id_domain: str | None = None,
    ) -> None:
        self._from = from_address
        self._base = base_url.rstrip("/")
        self.http = http or HTTPClient(lazy_tls=True)
        self._timeouts = Timeout(timeout, min(connect_timeout, timeout))
        self._domain = _domain_of(from_address, message_id_domain)

    async def close(self) -> None:
        await self.http.close()

    def letter(self, delivery: Delivery) -> Letter:
        return Letter.of(delivery, self._from, self._domain)

    async def _post(self, url: str, **body: Any) -> Answer | DeliveryResult:
        """POST ``body`` (``json=`` or ``form=``) with :meth:`_headers`; the answer, or
        the unavailable result of a failed request."""
        try:
            return await self.http.request(
                "POST", url, guarded=False, timeouts=self._timeouts, headers=self._headers(), **body
            )
        except TimedOut:
            return DeliveryResult.unavailable(
                no_answer(self.label, url, self._timeouts.total, self.url_setting)
            )
        except Unreachable as exc:
            return DeliveryResult.unavailable(
                unreachable(self.label, url, str(exc), self.url_setting)
            )

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _provider_failed(self, answer: Answer, url: str, said: str) -> DeliveryResult | None:
        """The result of an answer that says the provider (or Herald's settings for it)
        failed, not the message; None for a refusal of the message."""
        status = answer.status
        words = f" ({said})" if said else ""
        if status in (401, 403):
            return DeliveryResult.unavailable(
                f"{self.label} refused Herald's credentials ({status}){words}: an admin must "
                f"check {self.key_setting}.",
                status,
            )
        if status == 429:
            wait = parse_retry_after(answer.headers.get("retry-after"))
            sentence = f"{self.label} is rate limiting Herald (429){words}."
            if wait is None:
                return DeliveryResult.unavailable(sentence, status)
            return DeliveryResult.retry(sentence, status, wait)
        if status >= 500 or status in (404, 405, 408) or 300 <= status < 400:
            wait = parse_retry_after(answer.headers.get("retry-after"))
            hint = f": check {self.url_setting}" if status < 500 and status != 408 else ""
            answered = f"{self.label} answered {status} {answer.reason}".rstrip()
            return DeliveryResult.unavailable(f"{answered}{words}{hint}.", status, wait)
        return None


class SendGridProvider(HttpEmailProvider):
    """SendGrid's v3 Mail Send (``POST /v3/mail/send``, a bearer API key)."""

    name = "sendgrid"
    label = "SendGrid"
    settings_hint = "SENDGRID_API_KEY"
    key_setting = "SENDGRID_API_KEY"
    url_setting = "HERALD_SENDGRID_API_URL"

    def __init__(self, api_key: str | SecretStr | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._key = reveal(api_key)

    @classmethod
    def from_settings(cls, settings: Any, http: HTTPClient | None) -> SendGridProvider:
        return cls(
            settings.sendgrid_api_key,
            from_address=settings.sender_address(),
            base_url=settings.sendgrid_api_url,
            http=http,
            timeout=settings.http_timeout,
        )

    @property
    def configured(self) -> bool:
        return bool(self._key)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}", "User-Agent": USER_AGENT}

    def body(self, delivery: Delivery) -> dict[str, Any]:
        """The Mail Send JSON body for ``delivery``."""
        letter = self.letter(delivery)
        name, address = parseaddr(letter.sender)
        sender = {"email": address, "name": name} if name else {"email": address}
        return {
            "personalizations": [{"to": [{"email": letter.to}]}],
            "from": sender,
            "subject": letter.subject,
            # text/plain first, then text/html, as the reference requires
            "content": [
                {"type": "text/plain", "value": letter.text},
                {"type": "text/html", "value": letter.html},
            ],
            "headers": letter.headers(),
            # echoed in the event webhook's events, beside sg_message_id
            "custom_args": {"herald_job": str(letter.job_id), "herald_key": letter.key},
        }

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """202: ok with SendGrid's ``X-Message-Id``; 400/413: permanent, with SendGrid's
        words; 401/403, 429 without Retry-After, 5xx, no connection: unavailable."""
        url = f"{self._base}/v3/mail/send"
        answer = await self._post(url, json=self.body(delivery))
        if isinstance(answer, DeliveryResult):
            return answer
        if 200 <= answer.status < 300:
            return DeliveryResult.ok(answer.status, answer.headers.get("x-message-id"))
        said = _said(_sendgrid_errors(answer))
        failed = self._provider_failed(answer, url, said)
        if failed is not None:
            return failed
        to = delivery.destination.target
        if answer.status == 413:
            return DeliveryResult.permanent(
                f"SendGrid refused the email to {to} as too large (413){_with(said)}.", 413
            )
        if said or answer.status == 400:
            return DeliveryResult.permanent(
                f"SendGrid refused the email to {to} ({answer.status}){_with(said)}: check the "
                "address and the message.",
                answer.status,
            )
        kind = answer.headers.get("content-type", "")
        return DeliveryResult.permanent(
            not_json(self.label, url, answer.status, kind, self.url_setting), answer.status
        )


def _with(said: str) -> str:
    return f": {said}" if said else ""


def _sendgrid_errors(answer: Answer) -> str:
    """``errors[].message`` of a SendGrid error answer, joined ("" when there is none)."""
    try:
        data = answer.json()
    except ValueError:
        return ""
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return ""
    said = []
    for error in errors[:5]:
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            where = error.get("field")
            said.append(
                f"{error['message']} ({where})" if isinstance(where, str) else error["message"]
            )
    return "; ".join(said)


class MailgunProvider(HttpEmailProvider):
    """Mailgun's Messages API (``POST /v3/{domain}/messages``, Basic ``api:KEY``)."""

    name = "mailgun"
    label = "Mailgun"
    settings_hint = "MAILGUN_API_KEY and MAILGUN_DOMAIN"
    key_setting = "MAILGUN_API_KEY"
    url_setting = "HERALD_MAILGUN_API_URL"

    def __init__(self, api_key: str | SecretStr | None, domain: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        key = reveal(api_key)
        self._sending_domain = domain
        self._auth = (
            "Basic " + base64.b64encode(f"api:{key}".encode()).decode("ascii") if key else None
        )

    @classmethod
    def from_settings(cls, settings: Any, http: HTTPClient | None) -> MailgunProvider:
        return cls(
            settings.mailgun_api_key,
            settings.mailgun_domain,
            from_address=settings.sender_address(),
            base_url=settings.mailgun_api_url,
            http=http,
            timeout=settings.http_timeout,
        )

    @property
    def configured(self) -> bool:
        return bool(self._auth and self._sending_domain)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": self._auth or "", "User-Agent": USER_AGENT}

    def form(self, delivery: Delivery) -> dict[str, str]:
        """The Messages form fields for ``delivery``."""
        letter = self.letter(delivery)
        fields = {
            "from": letter.sender,
            "to": letter.to,
            "subject": letter.subject,
            "text": letter.text,
            "html": letter.html,
        }
        headers = letter.headers()
        # Mailgun takes the Message-Id as h:Message-Id and answers it as the id
        fields["h:Message-Id"] = headers.pop("Message-ID")
        fields.update({f"h:{name}": value for name, value in headers.items()})
        fields["v:herald-job"] = str(letter.job_id)
        fields["v:herald-key"] = letter.key
        return fields

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """200: ok with the answer's ``id`` (without its angle brackets); 400/413:
        permanent; 401/403, 404 (the domain), 429 without Retry-After, 5xx, no
        connection: unavailable."""
        domain = quote(self._sending_domain or "", safe="")
        url = f"{self._base}/v3/{domain}/messages"
        answer = await self._post(url, form=self.form(delivery))
        if isinstance(answer, DeliveryResult):
            return answer
        data = _json(answer)
        said = _said(str(data.get("message", ""))) if data is not None else ""
        if answer.status == 200 and data is not None and isinstance(data.get("id"), str):
            return DeliveryResult.ok(200, data["id"].strip().strip("<>"))
        if answer.status == 404 and data is not None:
            return DeliveryResult.unavailable(
                f"Mailgun does not know the sending domain {self._sending_domain} "
                f"(404{', ' + said if said else ''}): an admin must check MAILGUN_DOMAIN and "
                "HERALD_MAILGUN_API_URL (a domain in the EU region is served by "
                "https://api.eu.mailgun.net).",
                404,
            )
        failed = self._provider_failed(answer, url, said)
        if failed is not None:
            return failed
        to = delivery.destination.target
        if answer.status == 413:
            return DeliveryResult.permanent(
                f"Mailgun refused the email to {to} as too large (413){_with(said)}.", 413
            )
        if data is None or answer.status < 400:  # a 2xx or 4xx page that is not Mailgun's
            kind = answer.headers.get("content-type", "")
            return DeliveryResult.unavailable(
                not_json(self.label, url, answer.status, kind, self.url_setting), answer.status
            )
        return DeliveryResult.permanent(
            f"Mailgun refused the email to {to} ({answer.status}){_with(said)}: check the "
            "address and the message.",
            answer.status,
        )


def _json(answer: Answer) -> dict[str, Any] | None:
    try:
        data = answer.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class SmtpProvider(Provider):
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
        self._domain = _domain_of(from_address, message_id_domain)

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
