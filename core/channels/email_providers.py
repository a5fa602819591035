"""The providers ``email:`` goes through (core.channels.failover): two HTTP email APIs,
SendGrid and Mailgun, beside SMTP (core.channels.smtp); and the letter they all send.

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
``<br>``, as ``text/html`` (no attachments; over SMTP, core.channels.smtp, the text
alone, as before), and a ``Message-ID`` derived from the job's idempotency key
(:func:`message_id`). Neither API takes an idempotency key of its own: a send whose
answer was lost may be sent again, and the same ``Message-ID``, through any provider,
lets mail clients and archives spot the duplicate. The job's id and key also travel
as SendGrid ``custom_args`` and Mailgun ``v:`` variables, which their event webhooks
echo; the attempt records the id each provider names the message by (SendGrid's
``X-Message-Id``; Mailgun's ``id``, without its angle brackets).

How answers are read: a refusal of the *message* (a bad address, a body too large) is
permanent and goes to no other provider; a failure of the *provider* (no connection,
no answer in time, 5xx, a 429 asking for no pause, and a refusal of Herald's own
credentials, which another provider's may not share) is
:meth:`~core.channels.base.DeliveryResult.unavailable`; a 429 with a pause is a
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
from abc import abstractmethod
from dataclasses import dataclass
from email.utils import parseaddr, parsedate_to_datetime
from typing import Any, ClassVar
from urllib.parse import quote

from pydantic import SecretStr

from core import limits
from core.channels.answers import no_answer, not_json, unreachable
from core.channels.base import Delivery, DeliveryResult
from core.channels.failover import Provider
from core.channels.webhook import USER_AGENT, parse_retry_after, reveal, truncate
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable

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


class EmailProvider(Provider):
    """A provider of ``email:``, made from the settings."""

    #: The settings that configure it (said when none listed is configured).
    settings_hint: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_settings(cls, settings: Any, http: HTTPClient | None) -> EmailProvider:
        """The provider the settings configure (``http``: the shared client; None: one
        of its own, opened on first use)."""


def domain_of(from_address: str, given: str | None = None) -> str:
    """The domain of Message-IDs: ``given``, else the sender's."""
    return given or parseaddr(from_address)[1].rpartition("@")[2] or "herald.invalid"


def _said(text: str) -> str:
    """A provider's own words, on one line and bounded."""
    return truncate(" ".join(text.split()), MAX_SAID)


class HttpEmailProvider(EmailProvider):
    """What SendGrid and Mailgun share: the request through the shared client, the
    sentences for no connection or no answer, and the reading of a status that means
    the provider, not the message, failed."""

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
        self._domain = domain_of(from_address, message_id_domain)

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

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The headers of every request (its credentials)."""

    def _pause(self, answer: Answer) -> float | None:
        """Seconds the answer asks Herald to wait (``Retry-After``; a date in it is read
        against the answer's own ``Date``, not this machine's clock); None: it asks none."""
        return parse_retry_after(answer.headers.get("retry-after"), _answered_at(answer))

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
            wait = self._pause(answer)
            sentence = f"{self.label} is rate limiting Herald (429){words}."
            if wait is None:
                return DeliveryResult.unavailable(sentence, status)
            return DeliveryResult.retry(sentence, status, wait)
        if status >= 500 or status in (404, 405, 408) or 300 <= status < 400:
            wait = self._pause(answer)
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

    def _pause(self, answer: Answer) -> float | None:
        """``Retry-After``, else what SendGrid documents on a 429: ``X-RateLimit-Reset``
        (unix time the limit resets), read against the answer's ``Date``
        (https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/rate-limits)."""
        wait = super()._pause(answer)
        reset, at = answer.headers.get("x-ratelimit-reset", ""), _answered_at(answer)
        if wait is not None or at is None or not reset.strip().isdigit():
            return wait
        return max(0.0, float(reset) - at)

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


def _answered_at(answer: Answer) -> float | None:
    """The answer's ``Date`` as unix time (None: none, or unreadable)."""
    try:
        return parsedate_to_datetime(answer.headers.get("date", "")).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


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
