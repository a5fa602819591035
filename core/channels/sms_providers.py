"""The providers ``sms:`` goes through (core.channels.sms): Twilio's Programmable
Messaging and Vonage's SMS API, each spoken directly over the process's shared HTTP
client (:mod:`core.http_client`; their APIs are the admin's choice, so not through the
network guard), each answer classified for failover (core.channels.failover):

- **ok**, with the provider's id of the message (Twilio's ``sid``, Vonage's
  ``message-id``), which its delivery receipts name;
- **permanent**, a refusal of the *message* (a number that is not a phone's, a
  recipient who replied STOP): no other provider is asked;
- **unavailable**, the provider failed (refused connection, timeout, 5xx, an answer
  that is not its API's) or refused *our account* (bad credentials, a sender it does
  not know, no credit): the next provider may take the message;
- **retry** with a short ``Retry-After`` (a 429 asking for less than the dispatcher
  waits): the same provider, later.

No sentence carries a credential: they name the settings to check.

Neither API takes an idempotency key on a send (Vonage's ``client-ref`` is only
repeated in its receipts): a request whose answer was lost (a timeout) may have been
sent, and its retry, or the next provider, sends it again. Herald accepts that rare
duplicate rather than lose a message; the attempt's provider and id say which was
accepted.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, ClassVar

from pydantic import SecretStr

from core import sms_text
from core.channels.answers import no_answer, not_json, unreachable
from core.channels.base import Delivery, DeliveryResult
from core.channels.failover import Provider
from core.channels.webhook import USER_AGENT, parse_retry_after, reveal
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable
from core.limits import clip

log = logging.getLogger(__name__)

#: The most characters of a provider's own words of an error Herald repeats.
SAID = 200
#: Seconds to wait after Vonage's "throttled" (status 1), which says no Retry-After:
#: its default throughput is 30 requests per second per account, so a second frees it.
VONAGE_THROTTLE_WAIT = 1.0


async def _post(
    http: HTTPClient,
    url: str,
    form: dict[str, str],
    *,
    timeouts: Timeout,
    headers: dict[str, str],
    label: str,
    setting: str,
) -> Answer | DeliveryResult:
    """POST ``form`` to a provider's API: its answer, or the unavailable result of a
    request that got none."""
    try:
        return await http.request(
            "POST",
            url,
            guarded=False,
            timeouts=timeouts,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers},
            form=form,
        )
    except TimedOut:
        return DeliveryResult.unavailable(no_answer(label, url, timeouts.total, setting))
    except Unreachable as exc:
        return DeliveryResult.unavailable(unreachable(label, url, str(exc), setting))


def _json_of(answer: Answer, label: str, url: str, setting: str) -> dict[str, Any] | DeliveryResult:
    """The answer's JSON object; unavailable when it is not JSON (a wrong API URL, a
    proxy's page: no message of ours was judged)."""
    try:
        data = answer.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        kind = answer.headers.get("Content-Type", "")
        return DeliveryResult.unavailable(
            not_json(label, url, answer.status, kind, setting), answer.status
        )
    return data


def _rate_limited(answer: Answer, sentence: str) -> DeliveryResult:
    """A 429: retried after its Retry-After (FailoverChannel holds the provider down
    when that is longer than the dispatcher waits); without one, the provider is down
    for the cool-down."""
    wait = parse_retry_after(answer.headers.get("Retry-After"))
    if wait is None:
        return DeliveryResult.unavailable(sentence, 429)
    return DeliveryResult.retry(sentence, 429, retry_after=wait)


# --- Twilio ---------------------------------------------------------------------------

_TWILIO_CREDENTIALS = (
    "Twilio refused Herald's credentials ({code}): an admin must check "
    "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN."
)
#: Twilio's error codes (https://www.twilio.com/docs/api/errors) that refuse the
#: *message*: permanent, never failed over. ``{to}`` is the number.
TWILIO_PERMANENT: dict[int, str] = {
    21610: (
        "The recipient {to} has opted out (replied STOP) of messages from this sender "
        "(Twilio 21610): nothing is sent to them until they text START to it."
    ),
    21211: "Twilio says {to} is not a valid phone number (21211): check the number.",
    21614: (
        "{to} is not a mobile number (Twilio 21614) and cannot receive SMS: use a mobile number."
    ),
    21612: "Twilio cannot route a message from this sender to {to} (21612): use another number.",
    21617: "The text is over Twilio's 1,600 characters (21617): shorten it.",
    21602: "The message is empty (Twilio 21602): give it some text.",
}
#: Codes that refuse *our account or sender*: another provider may send it.
TWILIO_ACCOUNT: dict[int, str] = {
    20003: _TWILIO_CREDENTIALS,
    20404: _TWILIO_CREDENTIALS,
    20005: "Twilio's account is suspended or closed (20005): an admin must check it.",
    21606: "Twilio cannot send from TWILIO_FROM ({code}): an admin must set one of its numbers.",
    21659: "TWILIO_FROM is not a number of the Twilio account ({code}): an admin must fix it.",
    21212: "TWILIO_FROM is not a valid phone number ({code}): an admin must fix it.",
    21408: (
        "The Twilio account may not send to {to}'s country ({code}): an admin must "
        "enable it in Twilio's geographic permissions."
    ),
    30002: "Twilio's account is suspended ({code}): an admin must check it.",
}


class TwilioProvider(Provider):
    """Twilio's Programmable Messaging: creates a Message resource
    (``POST {api}/2010-04-01/Accounts/{sid}/Messages.json``, HTTP Basic
    ``sid:auth_token``, form ``To``, ``From`` or ``MessagingServiceSid``, ``Body``,
    ``StatusCallback``;
    https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).
    A sender starting with ``MG`` is a Messaging Service. With ``public_url`` set,
    Twilio reports each message's fate to ``{public_url}/receipts/twilio``."""

    name: ClassVar[str] = "twilio"
    label: ClassVar[str] = "Twilio"

    def __init__(
        self,
        *,
        account_sid: str | None,
        auth_token: str | SecretStr | None,
        sender: str | None,
        http: HTTPClient,
        api_url: str = "https://api.twilio.com",
        public_url: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self._sid = account_sid or ""
        token = reveal(auth_token) or ""
        self._sender = sender or ""
        self.http = http
        self._url = f"{api_url.rstrip('/')}/2010-04-01/Accounts/{self._sid}/Messages.json"
        self._callback = f"{public_url.rstrip('/')}/receipts/twilio" if public_url else None
        self._timeouts = Timeout(timeout, connect_timeout)
        basic = base64.b64encode(f"{self._sid}:{token}".encode()).decode()
        self._headers = {"Authorization": f"Basic {basic}"}
        self._configured = bool(self._sid and token and self._sender)

    @property
    def configured(self) -> bool:
        return self._configured

    def form(self, delivery: Delivery) -> dict[str, str]:
        """The Message resource's create parameters for ``delivery``."""
        sender = "MessagingServiceSid" if self._sender.startswith("MG") else "From"
        form = {"To": delivery.destination.target, sender: self._sender, "Body": delivery.body}
        if self._callback is not None:
            form["StatusCallback"] = self._callback
        return form

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Create the message: ok with its ``sid``; see the module for the rest."""
        answer = await _post(
            self.http,
            self._url,
            self.form(delivery),
            timeouts=self._timeouts,
            headers=self._headers,
            label="Twilio",
            setting="HERALD_TWILIO_API_URL",
        )
        if isinstance(answer, DeliveryResult):
            return answer
        data = _json_of(answer, "Twilio", self._url, "HERALD_TWILIO_API_URL")
        if isinstance(data, DeliveryResult):
            return data
        if answer.status in (200, 201) and isinstance(data.get("sid"), str) and data["sid"]:
            return DeliveryResult.ok(answer.status, data["sid"])
        return self._failure(answer, data, delivery.destination.target)

    def _failure(self, answer: Answer, data: dict[str, Any], to: str) -> DeliveryResult:
        status = answer.status
        code = data.get("code") if isinstance(data.get("code"), int) else None
        said = clip(" ".join(str(data.get("message") or "").split()), SAID)
        detail = f"Twilio {code}" if code is not None else f"HTTP {status}"
        if status == 429 or code == 20429:
            return _rate_limited(answer, f"Twilio is rate limiting Herald ({detail}).")
        if code in TWILIO_PERMANENT:
            return DeliveryResult.permanent(TWILIO_PERMANENT[code].format(to=to), status)
        if code in TWILIO_ACCOUNT or status in (401, 403):
            found = TWILIO_ACCOUNT.get(code or 0, _TWILIO_CREDENTIALS)
            return DeliveryResult.unavailable(found.format(code=detail, to=to), status)
        if status >= 500:
            return DeliveryResult.unavailable(f"Twilio failed ({detail}): {said}", status)
        if 400 <= status < 500:
            return DeliveryResult.permanent(
                f"Twilio refused the message ({detail}): {said}", status
            )
        return DeliveryResult.retry(f"Twilio answered HTTP {status} ({detail}).", status)


# --- Vonage ---------------------------------------------------------------------------

_VONAGE_CREDENTIALS = (
    "Vonage refused Herald's credentials (status {code}): an admin must check "
    "VONAGE_API_KEY and VONAGE_API_SECRET."
)
#: The SMS API's ``status`` codes (https://developer.vonage.com/en/messaging/sms/guides/
#: troubleshooting-sms) that refuse the *message*: permanent. ``{to}`` is the number.
VONAGE_PERMANENT: dict[str, str] = {
    "2": "Vonage says a parameter is missing (status 2, {said}): check the message and number.",
    "3": "Vonage refused the message's parameters (status 3, {said}): check the number {to}.",
    "6": "Vonage could not process the message to {to} (status 6, {said}): check the number.",
    "7": "Vonage will not send to {to}: the number is barred (status 7).",
    "12": "The text is too long for Vonage (status 12): shorten it.",
    "22": "Vonage does not know the network of {to} (status 22): check the number.",
    "29": (
        "Vonage's account is in demo mode and {to} is not on its test numbers "
        "(status 29): an admin must add it or top up the account."
    ),
    "33": "The number {to} is deactivated (Vonage status 33): use another number.",
}
#: Codes that refuse *our account or sender*, or are Vonage's own trouble: another
#: provider may send it.
VONAGE_ACCOUNT: dict[str, str] = {
    "4": _VONAGE_CREDENTIALS,
    "14": _VONAGE_CREDENTIALS,
    "32": _VONAGE_CREDENTIALS,
    "5": "Vonage failed (status 5, internal error).",
    "8": "Vonage's account is barred (status 8): an admin must contact Vonage.",
    "9": "Vonage's account has no credit left (status 9): an admin must top it up.",
    "10": "Vonage refused the connection: too many binds (status 10).",
    "11": "Vonage's account is not enabled for the SMS API over HTTP (status 11).",
    "15": (
        "Vonage will not send from VONAGE_FROM (status 15, sender not allowed): an "
        "admin must set a Vonage number of the account."
    ),
    "23": "Vonage refused the callback URL (status 23): an admin must check HERALD_PUBLIC_URL.",
}


class VonageProvider(Provider):
    """Vonage's SMS API (https://developer.vonage.com/en/api/sms): ``POST
    {api}/sms/json`` with ``api_key``, ``api_secret``, ``from``, ``to`` (E.164 without
    "+"), ``text``, and ``type=unicode`` when the text needs UCS-2 (else Vonage would
    send it as GSM-7 and garble it); ``client-ref`` carries the job's idempotency key
    (Vonage's receipts repeat it). The answer is HTTP 200 with one ``messages`` entry
    per part, each with its ``status``."""

    name: ClassVar[str] = "vonage"
    label: ClassVar[str] = "Vonage"

    def __init__(
        self,
        *,
        api_key: str | None,
        api_secret: str | SecretStr | None,
        sender: str | None,
        http: HTTPClient,
        api_url: str = "https://rest.nexmo.com",
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self._key = api_key or ""
        self._secret = reveal(api_secret) or ""
        self._sender = (sender or "").removeprefix("+")
        self.http = http
        self._url = f"{api_url.rstrip('/')}/sms/json"
        self._timeouts = Timeout(timeout, connect_timeout)

    @property
    def configured(self) -> bool:
        return bool(self._key and self._secret and self._sender)

    def form(self, delivery: Delivery) -> dict[str, str]:
        """The SMS API's parameters for ``delivery`` (with the credentials)."""
        form = {
            "api_key": self._key,
            "api_secret": self._secret,
            "from": self._sender,
            "to": delivery.destination.target.removeprefix("+"),
            "text": delivery.body,
            "client-ref": delivery.idempotency_key[:100],
        }
        if sms_text.encoding(delivery.body) == sms_text.UCS2:
            form["type"] = "unicode"
        return form

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send the text: ok with the first part's ``message-id``."""
        answer = await _post(
            self.http,
            self._url,
            self.form(delivery),
            timeouts=self._timeouts,
            headers={},
            label="Vonage",
            setting="HERALD_VONAGE_API_URL",
        )
        if isinstance(answer, DeliveryResult):
            return answer
        if answer.status == 429:
            return _rate_limited(answer, "Vonage is rate limiting Herald (HTTP 429).")
        if answer.status in (401, 403):
            return DeliveryResult.unavailable(
                _VONAGE_CREDENTIALS.format(code=answer.status), answer.status
            )
        if answer.status >= 500:
            return DeliveryResult.unavailable(
                f"Vonage failed (HTTP {answer.status}).", answer.status
            )
        data = _json_of(answer, "Vonage", self._url, "HERALD_VONAGE_API_URL")
        if isinstance(data, DeliveryResult):
            return data
        parts = data.get("messages")
        if answer.status != 200 or not isinstance(parts, list) or not parts:
            return DeliveryResult.unavailable(
                f"Vonage answered HTTP {answer.status} without the SMS API's messages.",
                answer.status,
            )
        failed = next(
            (p for p in parts if not isinstance(p, dict) or str(p.get("status")) != "0"), None
        )
        first = parts[0]
        if failed is None and isinstance(first.get("message-id"), str) and first["message-id"]:
            return DeliveryResult.ok(answer.status, first["message-id"])
        return self._failure(failed or {}, delivery.destination.target)

    @staticmethod
    def _failure(part: Any, to: str) -> DeliveryResult:
        code = str(part.get("status", "")) if isinstance(part, dict) else ""
        text = part.get("error-text") if isinstance(part, dict) else None
        said = clip(" ".join(str(text or "no reason given").split()), SAID)
        if code == "1":
            return DeliveryResult.retry(
                "Vonage is throttling Herald (status 1).", 429, retry_after=VONAGE_THROTTLE_WAIT
            )
        if code in VONAGE_PERMANENT:
            return DeliveryResult.permanent(VONAGE_PERMANENT[code].format(to=to, said=said))
        if code in VONAGE_ACCOUNT:
            return DeliveryResult.unavailable(VONAGE_ACCOUNT[code].format(code=code))
        return DeliveryResult.retry(f"Vonage did not take the message (status {code}): {said}")
