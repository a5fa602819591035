"""A fake SMTP server (aiosmtpd) on the test's own event loop.

Plain, STARTTLS (``tls_context`` given, ``require_starttls``) or implicit TLS
(``implicit_tls=True``), optionally with AUTH for one user (over plain text too with
``auth_require_tls=False``; ``echo_login=True`` makes a refused login quote the login,
the password and the ``AUTH PLAIN`` data it got, as careless servers do). Records each
accepted message in :attr:`FakeSMTP.messages`. Script replies per stage with
:meth:`FakeSMTP.reply` (``"rcpt"``, ``"mail"`` or ``"data"``: e.g. ``"450 4.2.1 Mailbox
busy"``); the stage ``"data"`` may also be told to stall (``stall_data = True``) until the
server stops, for client timeout tests.
"""

from __future__ import annotations

import asyncio
import base64
import email
import email.policy
import ssl
import warnings
from collections import deque
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any, Self

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes
    tls: bool
    authenticated: bool

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


class _Handler:
    def __init__(self, fake: FakeSMTP) -> None:
        self.fake = fake

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        scripted = self.fake._take("mail")
        if scripted:
            return scripted
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        scripted = self.fake._take("rcpt")
        if scripted:
            return scripted
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.fake.stall_data:
            await self.fake._release.wait()
            return "421 4.3.2 Shutting down"
        scripted = self.fake._take("data")
        if scripted:
            return scripted
        content = envelope.original_content or b""
        self.fake.messages.append(
            ReceivedMail(
                str(envelope.mail_from),
                list(envelope.rcpt_tos),
                content,
                session.ssl is not None or self.fake.implicit_tls,
                bool(session.authenticated),
            )
        )
        return "250 2.0.0 Message accepted"


class FakeSMTP:
    """Use as ``async with FakeSMTP() as smtp:``; ``smtp.port`` is where it listens."""

    def __init__(
        self,
        *,
        tls_context: ssl.SSLContext | None = None,
        implicit_tls: bool = False,
        require_starttls: bool = False,
        user: str | None = None,
        password: str | None = None,
        auth_require_tls: bool = True,
        echo_login: bool = False,
    ) -> None:
        self.tls_context = tls_context
        self.auth_require_tls = auth_require_tls
        self.echo_login = echo_login
        self.implicit_tls = implicit_tls
        self.require_starttls = require_starttls
        self.user = user
        self.password = password
        self.messages: list[ReceivedMail] = []
        self.stall_data = False
        self.port = 0
        self._replies: dict[str, deque[str]] = {}
        self._release = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._protocols: list[SMTP] = []

    def reply(self, stage: str, *replies: str) -> None:
        """Answer the next ``stage`` commands ("mail", "rcpt", "data") with ``replies``."""
        self._replies.setdefault(stage, deque()).extend(replies)

    def _take(self, stage: str) -> str | None:
        queue = self._replies.get(stage)
        return queue.popleft() if queue else None

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        ok = (
            isinstance(data, LoginPassword)
            and data.login.decode() == self.user
            and data.password.decode() == self.password
        )
        if not ok and self.echo_login and isinstance(data, LoginPassword):
            plain = base64.b64encode(b"\0" + data.login + b"\0" + data.password).decode()
            said = (
                f"535 5.7.8 Authentication failed for {data.login.decode()} with password "
                f"{data.password.decode()} (AUTH PLAIN {plain})"
            )
            return AuthResult(success=False, handled=False, message=said)
        return AuthResult(success=ok, handled=False)

    def _protocol(self) -> SMTP:
        loop = asyncio.get_running_loop()
        with warnings.catch_warnings():
            # "Requiring AUTH while not requiring TLS": what auth_require_tls=False asks for
            warnings.simplefilter("ignore", UserWarning)
            protocol = SMTP(
                _Handler(self),
                hostname="fake-smtp.test",
                loop=loop,
                tls_context=None if self.implicit_tls else self.tls_context,
                require_starttls=self.require_starttls,
                authenticator=self._authenticate if self.user else None,
                auth_required=bool(self.user),
                auth_require_tls=self.auth_require_tls,
            )
        self._protocols.append(protocol)
        return protocol

    async def start(self) -> Self:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._protocol,
            host="127.0.0.1",
            port=0,
            ssl=self.tls_context if self.implicit_tls else None,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self._release.set()
        await asyncio.sleep(0)
        if self._server is not None:
            self._server.close()
            for protocol in self._protocols:
                if protocol.transport is not None:
                    protocol.transport.close()
            await self._server.wait_closed()
            # A session stuck in a failed STARTTLS handshake never ends by itself.
            tasks = [p._handler_coroutine for p in self._protocols if p._handler_coroutine]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
