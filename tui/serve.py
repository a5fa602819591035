"""``herald console --serve``: the console in a browser, behind a login.

textual-serve runs one ``python -m tui`` per browser tab and relays it over a WebSocket.
On its own it lets anyone who can reach the port, or any web page the operator visits,
drive that console. :class:`ConsoleServer` puts a door in front of it:

- **a login**: ``/login`` takes a secret. Without a logins file the server makes one,
  prints it once at start, and whoever gives it acts as the person who started the server
  (``settings.local_actor``). With ``HERALD_CONSOLE_LOGINS_FILE`` each line is
  ``ACTOR_ID SECRET`` and a browser that gives a secret acts as that line's actor (its
  role, its permissions, its audit trail) — not as the person running the server. A
  secret must be strong: at least :data:`MIN_SECRET` characters that zxcvbn estimates
  take 10^:data:`MIN_GUESSES_LOG10` guesses (no common password, word, name, repeat or
  keyboard pattern); the one Herald makes is 24 random bytes.
- **a cookie**: a good login sets ``herald_console`` (a random session id, HttpOnly,
  SameSite=Strict, for :data:`SESSION_SECONDS`); the page, the WebSocket and downloads
  need it. The secret itself never travels again.
- **Origin and Host**: the WebSocket must come from the served origin (``Origin`` equal
  to the public URL, or to a loopback address when serving on loopback) and every request
  must name a served host (no DNS rebinding).
- **slow bad logins**: after each bad login from an address, that address must wait
  (1 s, 2 s, 4 s … up to :data:`LOCKOUT_CAP` s) before it may try again (429 meanwhile).
- **nothing secret on a command line**: each tab's process is started as
  ``python -m tui``; the database URL and the actor travel in its environment (which only
  the same user can read), never in its arguments.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import logging
import secrets
import shlex
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from core.errors import ConfigError
from core.settings import Settings

log = logging.getLogger(__name__)

COOKIE = "herald_console"
#: How long a browser session lasts after its login.
SESSION_SECONDS = 12 * 3600
#: Longest wait imposed on an address after repeated bad logins.
LOCKOUT_CAP = 300.0
#: Bytes a login form may take.
MAX_LOGIN_BODY = 4096
#: Shortest secret a logins file may hold.
MIN_SECRET = 16
#: The fewest guesses (as a power of ten) a login secret must take, as zxcvbn estimates
#: them from common passwords, words, names, keyboard patterns, repeats and dates: its
#: strongest score. A secret Herald makes (``secrets.token_urlsafe(24)``) is far above.
MIN_GUESSES_LOG10 = 10.0
#: How to make a strong secret, for the refusals.
_MAKE_ONE = "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_LOGIN_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Herald console: log in</title>
<style>body{{font-family:sans-serif;max-width:28em;margin:4em auto}}
input{{font-size:1.1em;width:100%;margin:.4em 0}}</style></head>
<body><h1>Herald console</h1><p>{message}</p>
<form method="post" action="/login">
<label for="secret">Login secret</label>
<input id="secret" name="secret" type="password" autocomplete="current-password" autofocus>
<input type="submit" value="Log in"></form></body></html>
"""


@dataclass(frozen=True)
class Login:
    actor_id: str
    secret: str


def read_logins(path: Path) -> list[Login]:
    """The logins of a logins file: ``ACTOR_ID SECRET`` per line, ``#`` comments.

    Raises ConfigError when the file is missing, readable by others than its owner, or
    holds a line that is not a login (naming the line, never its secret)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read the console logins file {path} ({exc.strerror}).") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"The console logins file {path} can be read by other users: chmod 600 it."
        )
    logins = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        actor_id, _, secret = line.partition(" ")
        secret = secret.strip()
        if ":" not in actor_id or len(secret) < MIN_SECRET:
            raise ConfigError(
                f"Line {number} of {path} is not 'ACTOR_ID SECRET' (an id like slack:U123, "
                f"then a secret of at least {MIN_SECRET} characters)."
            )
        if weak_secret(secret, actor_id):
            raise ConfigError(
                f"The secret on line {number} of {path} is too easy to guess (common "
                f"words, names, repeats or keyboard patterns): make a random one with {_MAKE_ONE}."
            )
        logins.append(Login(actor_id, secret))
    if not logins:
        raise ConfigError(f"The console logins file {path} holds no login.")
    return logins


def weak_secret(secret: str, actor_id: str = "") -> bool:
    """Whether ``secret`` would be guessed in fewer than 10^:data:`MIN_GUESSES_LOG10`
    tries (zxcvbn's estimate; the actor's id and its parts count as known words)."""
    from zxcvbn import zxcvbn  # its word lists load on first use: only when serving

    known = [actor_id, *actor_id.split(":")] if actor_id else []
    estimate = zxcvbn(secret[:72], user_inputs=known)  # zxcvbn reads at most 72
    return float(estimate["guesses_log10"]) < MIN_GUESSES_LOG10


@dataclass
class _Attempts:
    failures: int = 0
    locked_until: float = 0.0


@dataclass
class Session:
    actor_id: str
    expires: float


@dataclass
class Door:
    """Who may come in: the logins, the open sessions, the bad-login record per address."""

    logins: list[Login]
    clock: Callable[[], float] = time.monotonic
    sessions: dict[str, Session] = field(default_factory=dict)
    attempts: dict[str, _Attempts] = field(default_factory=dict)

    def wait_before_login(self, address: str) -> float:
        """Seconds ``address`` must still wait before it may try a login (0: it may)."""
        record = self.attempts.get(address)
        return max(0.0, record.locked_until - self.clock()) if record else 0.0

    def login(self, address: str, secret: str) -> str | None:
        """A new session id for a good secret; None (and a longer wait) for a bad one."""
        match = None
        for candidate in self.logins:  # compare with every one: the time tells nothing
            if hmac.compare_digest(candidate.secret.encode(), secret.encode(errors="replace")):
                match = candidate
        now = self.clock()
        if match is None:
            record = self.attempts.setdefault(address, _Attempts())
            record.failures += 1
            record.locked_until = now + min(LOCKOUT_CAP, 2.0 ** (record.failures - 1))
            if len(self.attempts) > 10_000:  # bounded: forget the oldest addresses
                for stale in list(self.attempts)[:1000]:
                    del self.attempts[stale]
            return None
        self.attempts.pop(address, None)
        self.sessions = {k: s for k, s in self.sessions.items() if s.expires > now}
        session_id = secrets.token_urlsafe(32)
        self.sessions[session_id] = Session(match.actor_id, now + SESSION_SECONDS)
        return session_id

    def session(self, request: web.Request) -> Session | None:
        session = self.sessions.get(request.cookies.get(COOKIE, ""))
        if session is None or session.expires <= self.clock():
            return None
        return session


class ConsoleServer(Server):
    """textual-serve's server behind :class:`Door` (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        door: Door,
        *,
        host: str,
        port: int,
        public_url: str | None = None,
    ) -> None:
        command = f"{shlex.quote(sys.executable)} -m tui"  # nothing secret: see _Tab
        super().__init__(
            command, host=host, port=port, title="Herald console", public_url=public_url
        )
        self.settings = settings
        self.door = door
        self.origins = _origins(self.public_url, host, port)

    def allowed_host(self, request: web.Request) -> bool:
        return any(urlsplit(origin).netloc == request.host for origin in self.origins)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        app.router.add_get("/login", self.login_page)
        app.router.add_post("/login", self.login)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self.allowed_host(request):
            return web.Response(status=421, text="This server does not serve that host.\n")
        path = request.path
        public = urlsplit(self.public_url).netloc
        if request.host != public and request.method == "GET" and path in ("/", "/login"):
            # one name per server: the session cookie and the WebSocket URL use the public one
            raise web.HTTPSeeOther(f"{self.public_url}{path}")
        if path == "/login" or path.startswith("/static/"):
            return await handler(request)  # type: ignore[no-any-return]
        if self.door.session(request) is None:
            if path == "/":
                raise web.HTTPSeeOther("/login")
            return web.Response(status=401, text="Log in first: /login\n")
        return await handler(request)  # type: ignore[no-any-return]

    async def on_startup(self, app: web.Application) -> None:
        """(textual-serve prints its banner and the command here; we print ours.)"""

    async def login_page(self, request: web.Request) -> web.Response:
        return _page("Give the login secret printed when the console server started.")

    async def login(self, request: web.Request) -> web.Response:
        address = request.remote or "?"
        wait = self.door.wait_before_login(address)
        if wait > 0:
            return web.Response(
                status=429,
                text=f"Too many bad logins: try again in {wait:.0f} s.\n",
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:  # another page posting guesses
            raise web.HTTPForbidden(text="Log in from the console's own page.\n")
        length = request.content_length
        if length is None or length > MAX_LOGIN_BODY:
            return web.Response(status=413, text="A login is a secret, not a book.\n")
        form = await request.post()
        secret = form.get("secret")
        session_id = self.door.login(address, secret if isinstance(secret, str) else "")
        if session_id is None:
            log.warning("console login refused", extra={"remote": address})
            return _page("That is not a login secret.", status=403)
        actor_id = self.door.sessions[session_id].actor_id
        log.info("console login", extra={"remote": address, "actor": actor_id})
        response = web.HTTPSeeOther("/")
        response.set_cookie(
            COOKIE,
            session_id,
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="Strict",
            secure=self.public_url.startswith("https:"),
            path="/",
        )
        raise response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's handler, but only for a logged-in browser on the served origin,
        and with a process that acts as the session's actor."""
        session = self.door.session(request)
        if session is None:
            raise web.HTTPUnauthorized(text="Log in first: /login\n")
        if request.headers.get("Origin") not in self.origins:
            log.warning(
                "console websocket refused: foreign origin",
                extra={"origin": request.headers.get("Origin", "")[:200]},
            )
            raise web.HTTPForbidden(text="This page may not drive the console.\n")
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=64 * 1024)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        tab: _Tab | None = None
        try:
            await websocket.prepare(request)
            tab = _Tab(
                self.command,
                self.tab_environment(session.actor_id),
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await tab.start(width, height)
            try:
                await self._process_messages(websocket, tab)
            finally:
                await tab.stop()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:
            log.exception("console tab failed")
        finally:
            if tab is not None:
                await tab.stop()
        return websocket

    def tab_environment(self, actor_id: str) -> dict[str, str]:
        """What a tab's process gets on top of this process's environment."""
        settings = self.settings
        return {
            "HERALD_DATABASE_URL": settings.database_url,
            "HERALD_ADMINS": ",".join(sorted(settings.admins)),
            "HERALD_DEFAULT_TZ": settings.default_tz,
            "HERALD_CONSOLE_ACTOR": actor_id,
        }


class _Tab(AppService):
    """One tab's ``python -m tui``, with the settings it needs in its environment."""

    def __init__(self, command: str, extra: dict[str, str], **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self.extra = extra

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        return {**super()._build_environment(width, height), **self.extra}


def _origins(public_url: str, host: str, port: int) -> set[str]:
    """The origins a served page has: the public URL's, and on loopback each loopback
    name's (a browser may have been pointed at localhost or at 127.0.0.1)."""
    parts = urlsplit(public_url)
    origins = {f"{parts.scheme}://{parts.netloc}"}
    if host in _LOOPBACK:
        origins |= {f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"}
    return origins


def _page(message: str, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        text=_LOGIN_PAGE.format(message=html.escape(message)),
        content_type="text/html",
    )


def make_door(settings: Settings) -> tuple[Door, str | None]:
    """The door and, when no logins file is configured, the one-time secret to print."""
    if settings.console_logins_file:
        return Door(read_logins(Path(settings.console_logins_file))), None
    secret = secrets.token_urlsafe(24)
    return Door([Login(settings.local_actor, secret)]), secret


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    public_url: str | None,
    out: TextIO,
) -> None:
    """Serve the console until interrupted; say where, to whom, and how to log in."""
    door, secret = make_door(settings)
    server = ConsoleServer(settings, door, host=host, port=port, public_url=public_url)
    out.write(f"Serving the console on {server.public_url}/login\n")
    if host in _LOOPBACK:
        out.write(
            "Only this machine can reach it; --host 0.0.0.0 --public-url https://… to serve "
            "others (behind TLS).\n"
        )
    else:
        out.write(f"Listening on {host}: other machines can reach it.\n")
    if secret is not None:
        out.write(f"Login secret (shown once; acts as {settings.local_actor}): {secret}\n")
    else:
        out.write(f"Logins from {settings.console_logins_file}: each acts as its own actor.\n")
    out.flush()
    server.serve()
