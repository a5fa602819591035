"""A fake Mailgun Messages API (``POST /v3/{domain}/messages``), built from Mailgun's API
reference: https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Messages/
and its response codes:
https://documentation.mailgun.com/docs/mailgun/quickstart-guide/responses .

What it checks, as Mailgun does: HTTP Basic auth with the user ``api`` and the API key
(401 ``Forbidden``, as plain text, otherwise), the sending domain it was made for (404
``{"message": "Domain not found: …"}`` otherwise), a form body (URL-encoded or
multipart/form-data) with ``from``, ``to``, ``subject`` and one of ``text``/``html``
(400 ``{"message": "… parameter is missing"}``), an address in ``to`` (400 ``"to
parameter is not a valid address. please check documentation"``), and the sending
options (``o:``, ``h:``, ``v:``) within 16 kB together. An accepted message is answered
200 ``{"id": "<…>", "message": "Queued. Thank you."}``, its id the ``h:Message-Id`` the
request gave (Mailgun keeps a Message-Id given that way), else one of the fake's.

Same switches and records as :class:`tests.fakes.sendgrid.FakeSendGrid` (``mode``,
``retry_after``, ``bad_addresses``, ``refuse_connections``/``accept_connections``,
``sent`` as :class:`~tests.fakes.sendgrid.SentMail` with ``variables`` the ``v:`` fields,
``requests``)::

    async with FakeMailgun(api_key="key-test", domain="mg.example.com") as fake:
        HERALD_MAILGUN_API_URL=fake.api_url, MAILGUN_API_KEY=fake.api_key,
        MAILGUN_DOMAIN=fake.domain
"""

from __future__ import annotations

import base64
import binascii
import re
from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import parse_qsl

from aiohttp import web

from tests.fakes.sendgrid import ProviderFake, SentMail

#: "Sending options (those prefixed by o:, h:, or v:) are limited to 16 kB in total."
MAX_OPTIONS = 16 * 1024
_ADDRESS = re.compile(r"^(?:[^<>]*<)?[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+>?$")


def mailgun_error(status: int, message: str) -> web.Response:
    """Mailgun's error answer: ``{"message": "…"}``."""
    return web.json_response({"message": message}, status=status)


class FakeMailgun(ProviderFake):
    """Mailgun's Messages API for one sending domain and one API key (see the module)."""

    def __init__(self, api_key: str = "key-fake-for-tests", domain: str = "mg.example.com") -> None:
        super().__init__()
        self.api_key = api_key
        self.domain = domain

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v3/{domain}/messages", self._send)

    def _unavailable(self) -> web.Response:
        return mailgun_error(503, "Service Unavailable")

    def _too_many(self, headers: dict[str, str]) -> web.Response:
        answer = mailgun_error(429, "Too many requests")
        answer.headers.update(headers)
        return answer

    def _authorized(self, header: str) -> bool:
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, key = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return user == "api" and key == self.api_key

    async def _send(self, request: web.Request) -> web.Response:
        if not self._authorized(request.headers.get("Authorization", "")):
            return web.Response(status=401, text="Forbidden")
        domain = request.match_info["domain"]
        if domain != self.domain:
            return mailgun_error(404, f"Domain not found: {domain}")
        bad_address = mailgun_error(
            400, "to parameter is not a valid address. please check documentation"
        )
        switched = self._switched(bad_address)
        if switched is not None:
            return switched
        form = _form(request.headers.get("Content-Type", ""), await request.read())
        if form is None:
            return mailgun_error(400, "Bad Request")
        for name in ("from", "to", "subject"):
            if not form.get(name):
                return mailgun_error(400, f"{name} parameter is missing")
        if not form.get("text") and not form.get("html"):
            return mailgun_error(400, "Need at least one of 'text' or 'html' parameters specified")
        to = [a.strip() for a in form["to"].split(",") if a.strip()]
        if not all(_ADDRESS.match(a) for a in to) or any(a in self.bad_addresses for a in to):
            return bad_address
        options = sum(len(k) + len(v) for k, v in form.items() if k[:2] in ("o:", "h:", "v:"))
        if options > MAX_OPTIONS:
            return mailgun_error(
                400,
                "Send options (parameters starting with o:, h:, or v:) are limited to 16 kB total",
            )
        given = form.get("h:Message-Id", "").strip()
        message_id = given if given else f"<{self._next_id()}.fake@{self.domain}>"
        if not message_id.startswith("<"):
            message_id = f"<{message_id}>"
        self.sent.append(
            SentMail(
                to=to,
                sender=form["from"],
                subject=form["subject"],
                text=form.get("text", ""),
                html=form.get("html", ""),
                headers={k[2:]: v for k, v in form.items() if k.startswith("h:")},
                variables={k[2:]: v for k, v in form.items() if k.startswith("v:")},
                message_id=message_id,
                raw=dict(form),
            )
        )
        return web.json_response({"id": message_id, "message": "Queued. Thank you."})


def _form(content_type: str, body: bytes) -> dict[str, str] | None:
    """The fields of a URL-encoded or multipart/form-data body (the last value of a
    field given twice); None for any other body."""
    kind = content_type.partition(";")[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        try:
            return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            return None
    if kind == "multipart/form-data":
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + body)
        fields: dict[str, str] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str):
                payload = part.get_payload(decode=True)
                fields[name] = payload.decode("utf-8") if isinstance(payload, bytes) else ""
        return fields
    return None
