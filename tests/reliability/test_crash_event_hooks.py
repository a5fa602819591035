"""A ``herald run`` killed with SIGKILL while it pushes events to an event hook loses no
event: the outbox is written with each outcome, the hook's cursor moves only after its
receiver took the events, and what is pushed again carries the same ``webhook-id``
(and verifies with the official Standard Webhooks library)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web
from standardwebhooks.webhooks import Webhook

from bot.cli.bench import schedule_rows
from core import db
from core.events import new_secret
from core.models import EventHook
from core.store import AuditEntry, Store
from tests.fakes import WebhookReceiver
from tests.reliability.conftest import report

JOBS = 100
DESTINATIONS = 100  # webhooks are rate limited per URL (10/s): spread over many URLs


class EventReceiver:
    """An application's endpoint that verifies each push and answers after a moment
    (so that a kill finds pushes in flight)."""

    def __init__(self, secret: str) -> None:
        self.verifier = Webhook(secret)
        self.got: list[tuple[str, int]] = []  # (webhook-id, job id)
        self.forged = 0
        self._runner: web.AppRunner | None = None
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    async def __aenter__(self) -> EventReceiver:
        app = web.Application()
        app.router.add_post("/events", self._take)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _take(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = self.verifier.verify(body, dict(request.headers))
        except Exception:
            self.forged += 1
            return web.Response(status=401)
        await asyncio.sleep(0.02)
        self.got.append((request.headers["webhook-id"], int(event["data"]["job_id"])))
        return web.Response(status=204)


def start(url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
        "HERALD_LEASE_SECONDS": "2",
        "HERALD_SWEEP_SECONDS": "0.5",
        "HERALD_HTTP_PORT": "0",
    }
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"], env=env, stdout=sink, stderr=sink
        )


async def until(predicate: object, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.02)  # polling another process's progress, not a schedule
    raise AssertionError("timed out")


@pytest.mark.timeout(120)
async def test_sigkill_mid_stream_loses_no_event(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/hooks.db"
    db.upgrade(url)
    store = await Store.open(url)
    secret = new_secret()
    log = tmp_path / "herald.log"
    try:
        async with WebhookReceiver() as messages, EventReceiver(secret) as app:
            now = datetime.now(UTC)
            await store.add_hook(
                EventHook(
                    tenant="local",
                    owner="local:crash",
                    tenant_wide=True,
                    url=f"http://127.0.0.1:{app.port}/events",
                    types=["job.delivered"],
                    secret=secret,
                    created_at=now,
                    updated_at=now,
                ),
                audit=AuditEntry("local:crash", "hook.create", "event_hook"),
            )
            rows = schedule_rows(
                JOBS,
                now,
                0.0,
                lambda i: f"webhook:{messages.url}/hook/{i % DESTINATIONS}",
                owner="local:crash",
            )
            await store.create_schedules_bulk(
                rows, details=[{} for _ in rows], actor="local:crash", action="test", now=now
            )
            proc = start(url, log)
            try:
                for target in (10, 40):  # killed twice while events stream out
                    await until(lambda t=target: len(app.got) >= t, 60)
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(timeout=30)
                    proc = start(url, log)
                await until(lambda: len({job for _, job in app.got}) >= JOBS, 60)
            except AssertionError:
                raise AssertionError(f"herald run's log ends:\n{log.read_text()[-3000:]}") from None
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
            delivered = {r.request.path for r in messages.received}
    finally:
        await store.close()
    assert len(delivered) >= 1 and app.forged == 0
    jobs_of: dict[str, set[int]] = {}
    for msg_id, job in app.got:
        jobs_of.setdefault(msg_id, set()).add(job)
    assert all(len(jobs) == 1 for jobs in jobs_of.values()), "one webhook-id, one event"
    heard = {job for _, job in app.got}
    assert len(heard) == JOBS, "an event was lost"
    ids_of: dict[int, set[str]] = {}
    for msg_id, job in app.got:
        ids_of.setdefault(job, set()).add(msg_id)
    assert all(len(ids) == 1 for ids in ids_of.values()), "one job, one event (not two ids)"
    again = len(app.got) - len(jobs_of)
    report(
        "crash",
        f"2 SIGKILLs while {JOBS} events are pushed to an event hook (SQLite)",
        f"0 events lost, {again} pushed again with the same webhook-id",
    )
