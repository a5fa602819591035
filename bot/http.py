"""The service's HTTP endpoints on ``HERALD_HTTP_HOST:HERALD_HTTP_PORT``: ``/healthz``
(the process is alive), ``/readyz`` (it can do its job: the database answers, takes a
write that commits and is at the code's schema; the dispatcher ticks) and ``/metrics``
(Prometheus). A database failure is told as "unavailable"; where it is goes to the log.
Adapters that take HTTP requests (Slack's HTTP mode) add their routes to the same app.
The port is served behind :mod:`bot.http_guard`'s limits (timeouts, a connection cap,
body sizes per route)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.http_guard import HttpLimits, guarded_app, start_guarded
from core import db
from core.cases import Herald
from core.dispatcher import Dispatcher
from core.errors import ConfigError, DatabaseError, HeraldError, NotFound
from core.store import Store

if TYPE_CHECKING:
    from bot.adapters import Adapter

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[tuple[bool, str]]]

#: Seconds a write probe's answer is reused: ``/readyz`` asked in a flood writes at most
#: once in this long.
WRITE_PROBE_SECONDS = 5.0
#: What ``/readyz`` (which anyone reaching the port may ask) says of a database failure;
#: the cause, with where the database is, goes to the log.
UNAVAILABLE = "the database is unavailable"


class Readiness:
    """The checks behind ``/readyz``; each answers (ok, detail)."""

    def __init__(
        self, store: Store, dispatcher: Dispatcher, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.adapters: dict[str, Adapter] = {}
        self.clock = clock
        self._probe_lock = asyncio.Lock()
        self._probed: tuple[float, tuple[bool, str]] | None = None

    async def database(self) -> tuple[bool, str]:
        try:
            await self.store.ping()
        except HeraldError as exc:
            return _unavailable("database", exc)
        return True, "reachable"

    async def writes(self) -> tuple[bool, str]:
        """Whether the database takes a write that commits (a full disk or a read-only
        database answers reads and refuses writes); asked at most every
        :data:`WRITE_PROBE_SECONDS`."""
        async with self._probe_lock:
            if self._probed is not None and self.clock() - self._probed[0] < WRITE_PROBE_SECONDS:
                return self._probed[1]
            try:
                await self.store.write_probe()
                result = True, "a write committed"
            except HeraldError as exc:
                result = _unavailable("writes", exc, "the database refused a write")
            self._probed = self.clock(), result
            return result

    async def migrations(self) -> tuple[bool, str]:
        try:
            current = await asyncio.to_thread(db.current_revision, self.store.url)
        except HeraldError as exc:
            return _unavailable("migrations", exc)
        head = db.head_revision()
        if current != head:
            return False, f"schema at {current or 'none'}, code needs {head}"
        return True, f"at {head}"

    async def dispatcher_loop(self) -> tuple[bool, str]:
        age = time.monotonic() - self.dispatcher.last_tick
        limit = 2 * self.dispatcher.config.sweep_seconds + 5
        ok = age <= limit
        return ok, f"last tick {age:.1f}s ago (limit {limit:.0f}s)"

    async def run(self) -> tuple[bool, dict[str, Any]]:
        checks: dict[str, Any] = {}
        for name, check in (
            ("database", self.database),
            ("writes", self.writes),
            ("migrations", self.migrations),
            ("dispatcher", self.dispatcher_loop),
        ):
            ok, detail = await check()
            checks[name] = {"ok": ok, "detail": detail}
        for name, adapter in self.adapters.items():
            ok = adapter.connected()
            # an adapter that is down says why (its ``problem``: a sentence, no secret)
            detail = "connected" if ok else (adapter.problem or "not connected")
            checks[f"adapter:{name}"] = {"ok": ok, "detail": detail}
        for kind, channel in self.dispatcher.channels.items():
            health = getattr(channel, "api_health", None)
            if health is not None:  # a provider API the admin configured (Slack, Discord)
                problem = health.problem
                detail = problem or "ok"
                checks[f"channel:{kind}"] = {"ok": problem is None, "detail": detail}
        return all(c["ok"] for c in checks.values()), checks


def _unavailable(check: str, exc: HeraldError, detail: str = UNAVAILABLE) -> tuple[bool, str]:
    log.warning("not ready: %s", detail, extra={"check": check, "error": str(exc)})
    return False, detail


def make_http_app(
    readiness: Readiness, herald: Herald | None = None, limits: HttpLimits | None = None
) -> web.Application:
    """The aiohttp app with the health and metrics routes, and (given ``herald``) each
    member's calendar feed at ``/calendar/<token>.ics``, the HTTP API under ``/v1``
    (:mod:`bot.api`) and providers' delivery receipts at ``/receipts/<provider>``
    (:mod:`bot.receipts`). Its routes take no request body unless they declare one
    (:func:`bot.http_guard.body_limit`)."""
    app = guarded_app()
    if herald is not None:
        from bot.api import add_api
        from bot.receipts import add_receipts

        limits = limits or HttpLimits.from_settings(herald.settings)
        add_api(app, herald, limits)
        add_receipts(app, herald, readiness.dispatcher, limits)

    async def calendar(request: web.Request) -> web.Response:
        assert herald is not None
        token = request.match_info["token"]
        try:
            body = await herald.calendar_for_token(token)
        except NotFound:
            return web.Response(status=404, text="Not found\n")
        except DatabaseError as exc:
            log.warning("calendar feed: database unavailable", extra={"error": str(exc)})
            return web.Response(
                status=503, text=f"{UNAVAILABLE.capitalize()}.\n", headers={"Retry-After": "5"}
            )
        return web.Response(
            body=body,
            headers={
                "Content-Type": "text/calendar; charset=utf-8",
                "Cache-Control": "private, max-age=300",
            },
        )

    if herald is not None:
        app.router.add_get("/calendar/{token}.ics", calendar)

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        ok, checks = await readiness.run()
        body = {"status": "ready" if ok else "not ready", "checks": checks}
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(_: web.Request) -> web.Response:
        data = generate_latest(readiness.dispatcher.metrics.registry)
        return web.Response(body=data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def start_http(
    app: web.Application, host: str, port: int, limits: HttpLimits
) -> web.AppRunner:
    """Serve ``app`` behind ``limits``; returns the runner to ``cleanup()`` at shutdown."""
    try:
        runner, site = await start_guarded(app, host, port, limits)
    except OSError as exc:
        raise ConfigError(
            f"Cannot listen on {host}:{port} ({exc.strerror}): set HERALD_HTTP_HOST and "
            "HERALD_HTTP_PORT to a free address (0 picks any free port)."
        ) from exc
    log.info(
        "http endpoints up",
        extra={"host": host, "port": site.port, "max_connections": limits.max_connections},
    )
    return runner
