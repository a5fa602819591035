"""A running ``herald run`` serving the HTTP API, on SQLite and on PostgreSQL, and the
tokens the tests call it with (made through the same use case ``herald token create``
calls). Tests talk to it with a real HTTP client (httpx)."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from core import db
from core.cases import Herald
from core.clock import ManualClock, SystemClock
from core.settings import load_settings
from core.store import Store
from tests.conftest import PG_URL, _pg_conninfo, require_pg
from tests.fakes.http import unused_port

ROOT = "local:root"  # a Herald-wide admin (HERALD_ADMINS)
ENV = {
    "HERALD_ADMINS": ROOT,
    "HERALD_DEFAULT_TZ": "UTC",
    "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver below is on 127.0.0.1
    "HERALD_QUOTA_SCHEDULES_PER_MEMBER": "6",  # through a token, local's members count too
    "HERALD_API_BURST": "10000",
    "HERALD_API_RATE": "10000",
    "HERALD_ADAPTERS": "none",
    "HERALD_LOG_FORMAT": "human",
}


class _Gone(BaseHTTPRequestHandler):
    """A webhook receiver that refuses every delivery for good (410: a dead letter)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(410)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def gone_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gone)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"webhook:http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Service:
    """A ``herald run`` process with its HTTP port, and the database it serves."""

    url: str
    base: str
    proc: subprocess.Popen[str]
    env: dict[str, str] = field(default_factory=dict)
    log: Any = None

    def token(
        self,
        member: str,
        *,
        tenant: str = "local",
        scope: str = "write",
        expires: str = "90d",
        made_at: datetime | None = None,
    ) -> str:
        """A new token acting as ``member`` (made by the Herald-wide admin)."""
        return asyncio.run(self._token(member, tenant, scope, expires, made_at))

    async def _token(
        self, member: str, tenant: str, scope: str, expires: str, made_at: datetime | None
    ) -> str:
        store = await Store.open(self.url)
        try:
            settings = load_settings(HERALD_DATABASE_URL=self.url, _env_file=None, **ENV)
            clock = SystemClock() if made_at is None else ManualClock(made_at)
            herald = Herald(store, settings, clock)
            minted = await herald.create_token(
                ROOT, member, tenant=tenant, scope=scope, expires=expires
            )
            return minted.secret
        finally:
            await store.close()

    def run(self, coro_fn: Any, clock: Any = None) -> Any:
        """Run ``coro_fn(herald)`` against the service's database, in-process (on
        ``clock``, default the system's)."""

        async def go() -> Any:
            store = await Store.open(self.url)
            try:
                settings = load_settings(HERALD_DATABASE_URL=self.url, _env_file=None, **ENV)
                return await coro_fn(Herald(store, settings, clock or SystemClock()))
            finally:
                await store.close()

        return asyncio.run(go())

    def client(self, token: str | None) -> httpx.Client:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)


def start_service(url: str, **env: str) -> Service:
    """Migrate ``url`` and start ``herald run`` on a free port; wait until it answers."""
    db.upgrade(url)
    port = unused_port()
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        **ENV,
        "HERALD_DATABASE_URL": url,
        "HERALD_HTTP_PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    log = tempfile.TemporaryFile("w+")  # herald run's log, read if it dies
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"herald run exited: {log.read()[-3000:]}")
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("herald run did not answer /healthz within 60 s")
        time.sleep(0.05)  # polling a process's start-up, not waiting for a schedule
    return Service(url, base, proc, full, log)


def stop_service(service: Service) -> None:
    service.proc.terminate()
    try:
        service.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        service.proc.kill()
        service.proc.wait()
    if service.log is not None:
        service.log.close()


@contextmanager
def serving(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str, **env: str
) -> Iterator[Service]:
    """``herald run`` (:func:`start_service` with ``env``) on the fixture's database:
    SQLite in a temporary directory ``name``, or PostgreSQL in a schema of its own,
    stopped and the schema dropped afterwards."""
    schema = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp(name) / 'herald.db'}"
    else:
        require_pg()
        schema = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        pg = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        url = pg.render_as_string(hide_password=False)
    svc = start_service(url, **env)
    try:
        yield svc
    finally:
        stop_service(svc)
        if schema is not None:
            with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """``herald run`` on SQLite, then on PostgreSQL (a schema of its own)."""
    with serving(request, tmp_path_factory, "api") as svc:
        yield svc


def wait_for(check: Any, *, within: float = 30.0, what: str = "") -> Any:
    """Poll ``check()`` until it returns something truthy (a delivery the dispatcher
    makes at its own pace); fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:.0f} s: {what}")
        time.sleep(0.1)
