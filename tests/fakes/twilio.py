"""A local Twilio Programmable Messaging API: the Message resource's create, as
documented, and the status callbacks Twilio posts back, signed as Twilio signs them.

- Create a Message: ``POST /2010-04-01/Accounts/{AccountSid}/Messages.json``, HTTP Basic
  auth ``AccountSid:AuthToken`` (checked exactly), a form with ``To``, ``From`` or
  ``MessagingServiceSid``, ``Body`` and optionally ``StatusCallback``; answers 201 with
  the Message resource in JSON (``sid`` "SM" + 32 hex, ``status`` "queued", or
  "accepted" through a Messaging Service)
  (https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).
- Errors: the documented JSON ``{"code", "message", "more_info", "status"}`` with the
  HTTP status in ``status`` (https://www.twilio.com/docs/api/errors): 20003 (401, bad
  credentials), 21211 (invalid To), 21610 (unsubscribed recipient), 21602/21603/21604
  (missing Body/From/To), 21617 (body over 1,600 characters), 20429 (429).
- Status callbacks: :meth:`FakeTwilio.post_status_callback` posts a form to a URL with
  ``X-Twilio-Signature`` computed as https://www.twilio.com/docs/usage/webhooks/webhooks-security
  says (:func:`signature`); tests/integration/test_channel_sms.py proves the twilio
  SDK's ``RequestValidator`` accepts it.

Use::

    async with FakeTwilio() as twilio:
        settings = load_settings(**twilio.env(), ...)
        ...
        [sent] = twilio.messages          # what was created, in order
        sent.form["To"], sent.sid, sent.status_callback
        twilio.mode = "unsubscribed"      # "ok", "503", "429", "unsubscribed", "invalid"
        await twilio.refuse()             # connections refused (same port) ...
        await twilio.accept()             # ... and accepted again
        await twilio.post_status_callback(url, sent, "delivered")

Test numbers: :data:`FROM` (the sender) and :data:`TO` (a recipient) are valid numbers
by phonenumbers' ranges (555-01XX is the NANP's range for fiction), as Herald's
``sms:`` check wants; ``+15551234567`` is refused there (no area code 555).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any, Self

import aiohttp
from aiohttp import web

from core import sms_text
from tests.fakes.http import FakeHTTPServer

ACCOUNT_SID = "AC" + "0123456789abcdef" * 2
AUTH_TOKEN = "f00dfeedf00dfeedf00dfeedf00dfeed"
#: The sending number (``TWILIO_FROM``).
FROM = "+12025550100"
#: A recipient: ``sms:+12025550123``.
TO = "+12025550123"
MAX_BODY = 1600

#: Modes (:attr:`FakeTwilio.mode`): how the next message creations are answered.
MODES = ("ok", "503", "429", "unsubscribed", "invalid", "not-mobile")


def signature(auth_token: str, url: str, params: dict[str, str]) -> str:
    """``X-Twilio-Signature``: base64 of HMAC-SHA1, keyed by the auth token, of the full
    URL followed by each POST parameter's name and value, sorted by name."""
    data = url + "".join(f"{key}{params[key]}" for key in sorted(params))
    digest = hmac.new(auth_token.encode(), data.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def error(code: int, message: str, status: int) -> dict[str, Any]:
    """Twilio's error answer."""
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }


@dataclass
class SentMessage:
    """A Message the fake created: its form fields as received, and its resource."""

    sid: str
    form: dict[str, str]
    resource: dict[str, Any] = field(default_factory=dict)

    @property
    def status_callback(self) -> str | None:
        return self.form.get("StatusCallback")


class RestartableFake(FakeHTTPServer):
    """A fake that can stop listening and start again on the same port, so that a
    client's next connections are refused (a provider that is down), then answered."""

    refused = False

    async def start(self) -> Self:
        app = web.Application(middlewares=[self._middleware])
        self.add_routes(app.router)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))  # 0 the first time: a free port
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        self.refused = False
        return self

    async def refuse(self) -> None:
        """Stop listening: new connections to :attr:`url` are refused until
        :meth:`accept` (a kept-alive one sees the server close it)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.refused = True

    async def accept(self) -> None:
        """Listen again, on the same port."""
        if self._runner is None:
            await self.start()


class FakeTwilio(RestartableFake):
    """Twilio's Messages API for one account (``account_sid``/``auth_token``).

    :attr:`mode` answers every creation (default "ok"); :attr:`opted_out` holds numbers
    that replied STOP (21610 for them whatever the mode); :attr:`retry_after` is the
    ``Retry-After`` of mode "429" (None: no header). :attr:`messages` are the created
    ones; :attr:`requests` every request (base class)."""

    def __init__(self, account_sid: str = ACCOUNT_SID, auth_token: str = AUTH_TOKEN) -> None:
        super().__init__()
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.mode = "ok"
        self.retry_after: str | None = None
        self.opted_out: set[str] = set()
        self.messages: list[SentMessage] = []

    def env(self, sender: str = FROM) -> dict[str, str]:
        """The settings that point Herald at this fake (keyword arguments of
        ``core.settings.load_settings``)."""
        return {
            "TWILIO_ACCOUNT_SID": self.account_sid,
            "TWILIO_AUTH_TOKEN": self.auth_token,
            "TWILIO_FROM": sender,
            "HERALD_TWILIO_API_URL": self.url,
        }

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/2010-04-01/Accounts/{sid}/Messages.json", self._create)

    def _authorized(self, request: web.Request) -> bool:
        expected = base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given, f"Basic {expected}")

    async def _create(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response(error(20003, "Authenticate", 401), status=401)
        if request.match_info["sid"] != self.account_sid:
            return web.json_response(
                error(20404, "The requested resource was not found", 404), status=404
            )
        form = self.requests[-1].form()
        refusal = self._refusal(form)
        if refusal is not None:
            headers = {"Retry-After": self.retry_after} if refusal["status"] == 429 else {}
            headers = {k: v for k, v in headers.items() if v is not None}
            return web.json_response(refusal, status=refusal["status"], headers=headers)
        sid = "SM" + secrets.token_hex(16)
        message = SentMessage(sid, form, self._resource(sid, form))
        self.messages.append(message)
        return web.json_response(message.resource, status=201)

    def _refusal(self, form: dict[str, str]) -> dict[str, Any] | None:
        to = form.get("To", "")
        if self.mode == "503":
            return error(20500, "Service Unavailable", 503)
        if self.mode == "429":
            return error(20429, "Too Many Requests", 429)
        if not to:
            return error(21604, "A 'To' phone number is required.", 400)
        if not form.get("From") and not form.get("MessagingServiceSid"):
            return error(21603, "A 'From' phone number is required.", 400)
        if not form.get("Body"):
            return error(21602, "Message body is required.", 400)
        if len(form["Body"]) > MAX_BODY:
            return error(
                21617, "The concatenated message body exceeds the 1600 character limit.", 400
            )
        if self.mode == "invalid" or not to.startswith("+") or not to[1:].isdigit():
            return error(21211, f"The 'To' number {to} is not a valid phone number.", 400)
        if self.mode == "not-mobile":
            return error(21614, f"'To' number {to} is not a valid mobile number", 400)
        if self.mode == "unsubscribed" or to in self.opted_out:
            return error(21610, "Attempt to send to unsubscribed recipient", 400)
        return None

    def _resource(self, sid: str, form: dict[str, str]) -> dict[str, Any]:
        now = formatdate(usegmt=True).replace("GMT", "+0000")
        service = form.get("MessagingServiceSid")
        base = f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}"
        return {
            "account_sid": self.account_sid,
            "api_version": "2010-04-01",
            "body": form["Body"],
            "date_created": now,
            "date_sent": None,
            "date_updated": now,
            "direction": "outbound-api",
            "error_code": None,
            "error_message": None,
            "from": form.get("From"),
            "messaging_service_sid": service,
            "num_media": "0",
            "num_segments": str(sms_text.segments(form["Body"])[1]),
            "price": None,
            "price_unit": "USD",
            "sid": sid,
            "status": "accepted" if service and not form.get("From") else "queued",
            "subresource_uris": {"media": f"{base}/Media.json"},
            "to": form["To"],
            "uri": f"{base}.json",
        }

    # -- status callbacks ------------------------------------------------------------

    def callback_params(
        self, message: SentMessage, status: str, error_code: str | None = None
    ) -> dict[str, str]:
        """The form Twilio posts to a message's StatusCallback when its status changes
        (https://www.twilio.com/docs/messaging/guides/track-outbound-message-status)."""
        params = {
            "AccountSid": self.account_sid,
            "ApiVersion": "2010-04-01",
            "From": message.form.get("From") or FROM,
            "MessageSid": message.sid,
            "MessageStatus": status,
            "SmsSid": message.sid,
            "SmsStatus": status,
            "To": message.form["To"],
        }
        if error_code is not None:
            params["ErrorCode"] = error_code
        return params

    async def post_status_callback(
        self,
        url: str,
        message: SentMessage,
        status: str,
        *,
        error_code: str | None = None,
        auth_token: str | None = None,
        params: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        """POST a status callback for ``message`` to ``url``, signed with this account's
        auth token (or ``auth_token``: a forger's); ``params`` replaces the form.
        Returns the answer's status and text."""
        form = params if params is not None else self.callback_params(message, status, error_code)
        headers = {"X-Twilio-Signature": signature(auth_token or self.auth_token, url, form)}
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=form, headers=headers) as answer,
        ):
            return answer.status, await answer.text()
