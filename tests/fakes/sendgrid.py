"""A fake SendGrid v3 Mail Send API (``POST /v3/mail/send``), built from SendGrid's API
reference: https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send and
its errors page
https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors.

What it checks, as SendGrid does: ``Authorization: Bearer <key>`` (401 "The provided
authorization grant is invalid, expired, or revoked" otherwise), a JSON body with
``personalizations`` (each with ``to``, each ``to`` with ``email``), ``from.email``, a
``subject`` (top level or in every personalization), and ``content`` (each with ``type``
and a non-empty ``value``; ``text/plain`` first, then ``text/html``). A bad request is
answered 400 with ``{"errors": [{"message", "field", "help"}]}``; an accepted one 202
with no body and an ``X-Message-Id`` header.

Use (the API of every provider fake here; :class:`FakeMailgun` has the same)::

    async with FakeSendGrid(api_key="SG.test-key") as fake:
        settings: HERALD_SENDGRID_API_URL=fake.api_url, SENDGRID_API_KEY=fake.api_key
        fake.mode = "unavailable"      # 503; "rate_limited": 429 (+ Retry-After:
                                       # fake.retry_after, None for no header; and
                                       # X-RateLimit-Reset fake.rate_limit_reset s
                                       # from now, as SendGrid documents, when set);
                                       # "bad_address": 400 for every recipient; "ok"
        fake.bad_addresses.add("x@example.com")   # 400 for that recipient only
        await fake.refuse_connections()  # the port closes: connections are refused
        await fake.accept_connections()  # the same port listens again
        fake.sent        # [SentMail] the messages it accepted, in order
        fake.requests    # every request (tests.fakes.http.Recorded), refused ones too
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any, Literal, Self

from aiohttp import web

from tests.fakes.http import FakeHTTPServer

Mode = Literal["ok", "unavailable", "rate_limited", "bad_address"]


@dataclass
class SentMail:
    """One message a provider fake accepted (both fakes record the same shape)."""

    to: list[str]
    sender: str
    subject: str
    text: str
    html: str
    #: Custom headers as asked for (``Message-ID`` among them), names as sent.
    headers: dict[str, str]
    #: SendGrid's ``custom_args`` / Mailgun's ``v:`` variables.
    variables: dict[str, str]
    #: The id the fake answered with (``X-Message-Id``; Mailgun's ``id``).
    message_id: str
    #: Everything else the request carried (SendGrid: the JSON body; Mailgun: the form).
    raw: dict[str, Any] = field(default_factory=dict)


class ProviderFake(FakeHTTPServer):
    """A provider API fake whose behaviour can be switched (see the module's "Use")."""

    def __init__(self) -> None:
        super().__init__()
        self.mode: Mode = "ok"
        #: The Retry-After header of a 429 (``rate_limited``); None: no header.
        self.retry_after: str | None = "30"
        #: SendGrid only: seconds from now its 429 says the limit resets
        #: (``X-RateLimit-Reset``, unix time, beside the answer's ``Date``); None: no header.
        self.rate_limit_reset: int | None = None
        #: Recipients refused with the provider's "not a valid address" 400.
        self.bad_addresses: set[str] = set()
        #: The messages accepted, in order.
        self.sent: list[SentMail] = []
        self._ids = itertools.count(1)

    @property
    def api_url(self) -> str:
        """The base URL to configure (``HERALD_SENDGRID_API_URL``, ``HERALD_MAILGUN_API_URL``)."""
        return self.url

    async def start(self) -> Self:
        """Listen on 127.0.0.1: a free port the first time, the same port after
        :meth:`refuse_connections`."""
        app = web.Application(middlewares=[self._middleware])
        self.add_routes(app.router)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def refuse_connections(self) -> None:
        """Close the port (open connections too): the provider is unreachable."""
        await self.stop()

    async def accept_connections(self) -> None:
        """Listen again on the same port (``mode`` is left as it is)."""
        if self._runner is None:
            self._release = asyncio.Event()
            await self.start()

    def _next_id(self) -> str:
        return f"{next(self._ids):04d}"

    def _switched(self, refusal: web.Response) -> web.Response | None:
        """The answer the mode asks for (``refusal``: this provider's bad-address 400),
        or None to answer normally."""
        if self.mode == "unavailable":
            return self._unavailable()
        if self.mode == "rate_limited":
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            return self._too_many(headers)
        if self.mode == "bad_address":
            return refusal
        return None

    def _unavailable(self) -> web.Response:
        raise NotImplementedError

    def _too_many(self, headers: dict[str, str]) -> web.Response:
        raise NotImplementedError


def sendgrid_errors(status: int, message: str, field_name: str | None = None) -> web.Response:
    """SendGrid's error answer: ``{"errors": [{"message", "field", "help"}]}``."""
    error: dict[str, Any] = {"message": message, "field": field_name}
    if field_name is not None:
        error["help"] = "http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html"
    return web.json_response({"errors": [error]}, status=status)


class FakeSendGrid(ProviderFake):
    """SendGrid's Mail Send with one API key (see the module)."""

    def __init__(self, api_key: str = "SG.fake-key.for-tests") -> None:
        super().__init__()
        self.api_key = api_key

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v3/mail/send", self._send)

    def _unavailable(self) -> web.Response:
        return sendgrid_errors(503, "Service Unavailable")

    def _too_many(self, headers: dict[str, str]) -> web.Response:
        answer = sendgrid_errors(429, "too many requests")
        answer.headers.update(headers)
        # https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/rate-limits
        if self.rate_limit_reset is not None:
            now = int(time.time())
            answer.headers["Date"] = formatdate(now, usegmt=True)
            answer.headers["X-RateLimit-Reset"] = str(now + self.rate_limit_reset)
        return answer

    async def _send(self, request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "")
        if not given.startswith("Bearer "):
            return sendgrid_errors(401, "authorization required")
        if given != f"Bearer {self.api_key}":
            return sendgrid_errors(
                401, "The provided authorization grant is invalid, expired, or revoked"
            )
        bad_address = sendgrid_errors(
            400, "Does not contain a valid address.", "personalizations.0.to.0.email"
        )
        switched = self._switched(bad_address)
        if switched is not None:
            return switched
        try:
            body = await request.json()
        except ValueError:
            return sendgrid_errors(400, "Bad Request")
        if not isinstance(body, dict):
            return sendgrid_errors(400, "Bad Request")
        problem = _shape_problem(body)
        if problem is not None:
            return sendgrid_errors(400, problem[1], problem[0])
        to = [t["email"] for p in body["personalizations"] for t in p["to"]]
        if any(address in self.bad_addresses for address in to):
            return bad_address
        content = {c["type"]: c["value"] for c in body["content"]}
        first = body["personalizations"][0]
        message_id = f"sg{self._next_id()}FakeMsgIdAbCdEf"
        self.sent.append(
            SentMail(
                to=to,
                sender=body["from"]["email"],
                subject=first.get("subject") or body.get("subject", ""),
                text=content.get("text/plain", ""),
                html=content.get("text/html", ""),
                headers={**body.get("headers", {}), **first.get("headers", {})},
                variables={**body.get("custom_args", {}), **first.get("custom_args", {})},
                message_id=message_id,
                raw=body,
            )
        )
        return web.Response(status=202, headers={"X-Message-Id": message_id})


def _shape_problem(body: dict[str, Any]) -> tuple[str, str] | None:
    """(field, SendGrid's message) of the first thing the reference requires that the
    body lacks; None when it is a Mail Send body."""
    personalizations = body.get("personalizations")
    if not isinstance(personalizations, list) or not personalizations:
        return "personalizations", (
            "The personalizations field is required and must have at least one personalization."
        )
    for i, p in enumerate(personalizations):
        to = p.get("to") if isinstance(p, dict) else None
        if not isinstance(to, list) or not to:
            return (
                f"personalizations.{i}.to",
                "The to array is required for all personalization objects.",
            )
        for j, t in enumerate(to):
            if not isinstance(t, dict) or not isinstance(t.get("email"), str):
                return f"personalizations.{i}.to.{j}.email", "Does not contain a valid address."
        if not body.get("subject") and not p.get("subject"):
            return (
                "subject",
                (
                    "The subject is required. You can get around this requirement if you use "
                    "a template with a subject defined or if every personalization has a "
                    "subject defined."
                ),
            )
        for name in ("headers", "custom_args"):
            if name in p and not _strings(p[name]):
                return (
                    f"personalizations.{i}.{name}",
                    f"Invalid type. Expected: object of strings, given: {name}.",
                )
    sender = body.get("from")
    if not isinstance(sender, dict) or not isinstance(sender.get("email"), str):
        return "from.email", (
            "The from object must be provided for every email send. It is an object that "
            "requires the email parameter, but may also contain a name parameter."
        )
    content = body.get("content")
    if not isinstance(content, list) or not content:
        return "content", (
            "Unless a valid template_id is provided, the content parameter is required. "
            "There must be at least one defined content block."
        )
    types = []
    for i, c in enumerate(content):
        if not isinstance(c, dict) or not isinstance(c.get("type"), str):
            return (
                f"content.{i}.type",
                "The content type must be a string at least one character in length.",
            )
        if not isinstance(c.get("value"), str) or not c["value"]:
            return (
                f"content.{i}.value",
                "The content value must be a string at least one character in length.",
            )
        types.append(c["type"])
    if (
        "text/html" in types
        and "text/plain" in types
        and types.index("text/plain") > types.index("text/html")
    ):
        return "content", "The text/plain content type must be first, followed by text/html."
    for name in ("headers", "custom_args"):
        if name in body and not _strings(body[name]):
            return name, f"Invalid type. Expected: object of strings, given: {name}."
    return None


def _strings(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )
