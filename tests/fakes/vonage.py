"""A local Vonage SMS API (https://developer.vonage.com/en/api/sms): ``POST /sms/json``
with ``api_key``, ``api_secret`` (checked exactly), ``from``, ``to`` (E.164 without
"+"), ``text`` and ``type`` ("unicode" for UCS-2 text), as a form or as JSON.

Answers HTTP 200 with ``{"message-count": "1", "messages": [{...}]}`` whose ``status``
is "0" for an accepted message (with its ``message-id``) or an error code with its
``error-text``, as the troubleshooting guide lists them
(https://developer.vonage.com/en/messaging/sms/guides/troubleshooting-sms): 1
throttled, 2 missing parameters, 3 invalid parameters, 4 invalid credentials, 5
internal error, 7 number barred, 29 non-whitelisted destination.

Use::

    async with FakeVonage() as vonage:
        settings = load_settings(**vonage.env(), ...)
        [sent] = vonage.messages            # the accepted ones: their params
        vonage.mode = "throttled"           # "ok", "503", "throttled", "invalid",
                                            # "barred", "internal", "demo"
        await vonage.refuse(); await vonage.accept()   # as FakeTwilio
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.twilio import RestartableFake

API_KEY = "a1b2c3d4"
API_SECRET = "Vonage0Secret9xyz"
#: The sender Vonage shows (``VONAGE_FROM``): a number without "+", or a name.
FROM = "12025550100"

MODES = ("ok", "503", "throttled", "invalid", "barred", "internal", "demo")
_MODE_STATUS = {
    "throttled": ("1", "Throughput Rate Exceeded - please wait [ 1000 ] and retry"),
    "invalid": ("3", "Invalid to address"),
    "barred": ("7", "Number barred"),
    "internal": ("5", "Internal Error"),
    "demo": ("29", "Non White-listed Destination - rejected"),
}


@dataclass
class VonageMessage:
    """An accepted message: its id and the parameters it came with."""

    message_id: str
    params: dict[str, str]


class FakeVonage(RestartableFake):
    """The SMS API of one account (``api_key``/``api_secret``)."""

    def __init__(self, api_key: str = API_KEY, api_secret: str = API_SECRET) -> None:
        super().__init__()
        self.api_key = api_key
        self.api_secret = api_secret
        self.mode = "ok"
        self.messages: list[VonageMessage] = []

    def env(self, sender: str = FROM) -> dict[str, str]:
        """The settings that point Herald at this fake."""
        return {
            "VONAGE_API_KEY": self.api_key,
            "VONAGE_API_SECRET": self.api_secret,
            "VONAGE_FROM": sender,
            "HERALD_VONAGE_API_URL": self.url,
        }

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/sms/json", self._send)

    async def _send(self, request: web.Request) -> web.Response:
        if self.mode == "503":
            return web.Response(status=503, text="Service Unavailable")
        params = {k: str(v) for k, v in self.requests[-1].params().items()}
        missing = [p for p in ("api_key", "api_secret", "from", "to", "text") if not params.get(p)]
        if any(p in missing for p in ("api_key", "api_secret")):
            return self._answer("2", "Missing api_key or api_secret")
        key_ok = hmac.compare_digest(params["api_key"], self.api_key)
        if not (key_ok and hmac.compare_digest(params["api_secret"], self.api_secret)):
            return self._answer("4", "Bad Credentials")
        if missing:
            return self._answer("2", f"Missing {missing[0]}")
        if params["to"].startswith("+") or not params["to"].isdigit():
            return self._answer("3", "Invalid to address")
        if params.get("type", "text") not in ("text", "unicode", "binary"):
            return self._answer("3", "Invalid message type")
        if self.mode in _MODE_STATUS:
            return self._answer(*_MODE_STATUS[self.mode])
        message = VonageMessage(secrets.token_hex(8).upper(), params)
        self.messages.append(message)
        return web.json_response(
            {
                "message-count": "1",
                "messages": [
                    {
                        "to": params["to"],
                        "message-id": message.message_id,
                        "status": "0",
                        "remaining-balance": "15.53590000",
                        "message-price": "0.03330000",
                        "network": "310004",
                    }
                ],
            }
        )

    @staticmethod
    def _answer(status: str, text: str) -> web.Response:
        body: dict[str, Any] = {
            "message-count": "1",
            "messages": [{"status": status, "error-text": text}],
        }
        return web.json_response(body)
