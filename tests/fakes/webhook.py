"""A webhook receiver that checks Standard Webhooks signatures.

Accepts ``POST`` on any path and records each delivery with whether its signature
verified against :attr:`WebhookReceiver.secret` (None when no secret is set). The check is
written here from the specification, independently of Herald's signer: HMAC-SHA256 over
``{webhook-id}.{webhook-timestamp}.{body}``, key = base64-decoded ``whsec_`` secret (or
the raw text), ``webhook-signature`` a space-separated list of ``v1,<base64>``, and a
timestamp within ``tolerance`` seconds. Answers 200 unless scripted otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.http import FakeHTTPServer, Recorded


@dataclass
class ReceivedWebhook:
    request: Recorded
    verified: bool | None
    #: ``time.monotonic()`` when it arrived
    at: float = 0.0

    @property
    def id(self) -> str:
        return self.request.headers.get("webhook-id", "")

    @property
    def payload(self) -> Any:
        return json.loads(self.request.body)


def verify(secret: str, headers: dict[str, str], body: bytes, tolerance: float = 300) -> bool:
    """Whether a Standard Webhooks request is authentic (header names lower case)."""
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not (msg_id and stamp.isdigit() and signatures):
        return False
    if abs(time.time() - int(stamp)) > tolerance:
        return False
    key = (
        base64.b64decode(secret.removeprefix("whsec_"))
        if secret.startswith("whsec_")
        else secret.encode()
    )
    expected = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    for item in signatures.split():
        version, _, value = item.partition(",")
        if version == "v1" and hmac.compare_digest(base64.b64decode(value), expected):
            return True
    return False


class WebhookReceiver(FakeHTTPServer):
    """Receives webhooks at any path; ``hook_url`` is a ready-made target."""

    def __init__(self, secret: str | None = None, latency: float = 0.0) -> None:
        super().__init__()
        self.secret = secret
        #: How long it takes to answer a webhook, as a real endpoint does (the arrival
        #: is recorded at once).
        self.latency = latency
        self.received: list[ReceivedWebhook] = []

    @property
    def hook_url(self) -> str:
        return f"{self.url}/hooks/herald"

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/{tail:.*}", self._receive)

    async def _receive(self, request: web.Request) -> web.Response:
        recorded = self.requests[-1]
        verified = None
        if self.secret is not None:
            verified = verify(self.secret, recorded.headers, recorded.body)
        self.received.append(ReceivedWebhook(recorded, verified, time.monotonic()))
        if self.latency:
            await asyncio.sleep(self.latency)
        if verified is False:
            return web.json_response({"error": "bad signature"}, status=401)
        return web.json_response({"ok": True})
