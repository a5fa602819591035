"""Operations: health and readiness, Prometheus metrics, structured logs without secrets."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bot.http import Readiness, make_http_app, start_http
from bot.http_guard import HttpLimits
from core import db
from core.cases import Herald
from core.channels import build_channels
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher
from core.settings import load_settings
from core.store import Store
from tests.fakes import FakeSlack, WebhookReceiver, unused_port
from tests.support.channels import RecordingChannel

SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-known-secret-token-1",
    "SLACK_SIGNING_SECRET": "signing-known-secret-2",
    "DISCORD_BOT_TOKEN": "discord-known-secret-3",
    "HERALD_SMTP_PASSWORD": "smtp-known-secret-4",
}
HOOK_SECRET = "whsec_S25vd25TZWNyZXRXZWJob29rNQ=="
TEXT = "Confidential: payroll numbers inside"


async def test_health_readiness_and_metrics(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    dispatcher = Dispatcher(store, {"log": RecordingChannel()}, clock=SystemClock())
    settings = load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None)
    herald = Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
    readiness = Readiness(store, dispatcher)
    port = unused_port()
    limits = HttpLimits.from_settings(settings)
    runner = await start_http(make_http_app(readiness), "127.0.0.1", port, limits)
    try:
        await herald.create_schedule("local:a", to="log:", when="in 30 seconds", text=TEXT)
        await dispatcher.drain()
        await dispatcher.sweep()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            health = await client.get("/healthz")
            assert (health.status_code, health.json()) == (200, {"status": "ok"})
            ready = await client.get("/readyz")
            assert ready.status_code == 200, ready.text
            assert {k: v["ok"] for k, v in ready.json()["checks"].items()} == {
                "database": True,
                "writes": True,
                "migrations": True,
                "dispatcher": True,
            }
            metrics = (await client.get("/metrics")).text
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(metrics)
            for s in family.samples
        }
        assert samples[("herald_deliveries_total", (("channel", "log"), ("outcome", "ok")))] == 1
        assert samples[("herald_jobs", (("state", "delivered"),))] == 1
        assert samples[("herald_delivery_lateness_seconds_count", (("channel", "log"),))] == 1
        assert samples[("herald_claim_batch_size_count", ())] == 1
        assert samples[("herald_dispatcher_heartbeat_timestamp_seconds", ())] > 0
        assert TEXT not in metrics and "local:a" not in metrics  # no user text in labels

        # a schema older than the code: not ready, and it says why
        await asyncio.to_thread(db.downgrade, sqlite_url, "0003")
        ok, checks = await readiness.run()
        assert not ok and "code needs" in checks["migrations"]["detail"]
    finally:
        await runner.cleanup()
        await store.close()


async def test_logs_of_a_full_delivery_cycle_hold_no_secret_and_no_text(tmp_path: Path) -> None:
    async with (
        FakeSlack(token=SECRETS["SLACK_BOT_TOKEN"]) as slack,
        WebhookReceiver(secret=HOOK_SECRET) as hook,
    ):
        slack.add_channel("C0123ABC")
        url = f"sqlite:///{tmp_path}/h.db"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
            **SECRETS,
            "HERALD_DATABASE_URL": url,
            "SLACK_API_URL": slack.api_url,
            "HERALD_WEBHOOK_SECRETS": f"{hook.url}/={HOOK_SECRET}",
            "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",
            "HERALD_LOG_FORMAT": "json",
            "HERALD_LOG_LEVEL": "INFO",
            "HERALD_MAX_ATTEMPTS": "2",
            "HERALD_BACKOFF_BASE": "0.05",
        }
        settings = load_settings(
            _env_file=None, **{k: v for k, v in env.items() if k.startswith(("HERALD_", "SLACK_"))}
        )
        store = await Store.open(url)
        channels = build_channels(settings)
        herald = Herald(
            store,
            settings,
            ManualClock(datetime.now(UTC) - timedelta(minutes=1)),
            channels=channels,
        )
        slack.add_channel("C0GONE")  # exists when scheduled, archived before the send
        for to in ("slack:C0123ABC", f"webhook:{hook.hook_url}?token=url-secret-6", "slack:C0GONE"):
            await herald.create_schedule("local:a", to=to, when="in 30 seconds", text=TEXT)
        slack.channels.pop("C0GONE")
        for channel in channels.values():
            await channel.close()
        await store.close()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "run",
            "--drain",
            "--drain-timeout",
            "5",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    logs = err.decode()
    assert proc.returncode == 0, logs
    events = [json.loads(line) for line in logs.splitlines() if line.strip()]
    # at INFO, deliveries are counted per recorded batch; each failure has its own line
    batches = [e for e in events if e.get("event") == "jobs.recorded"]
    assert sum(e.get("delivered", 0) for e in batches) == 2
    assert all({"timestamp", "level", "jobs", "worker"} <= set(e) for e in batches)
    assert not [e for e in events if e.get("event") == "job.delivered"]
    [dead] = [e for e in events if e.get("event") == "job.dead"]
    assert {
        "timestamp",
        "level",
        "job_id",
        "schedule_id",
        "destination",
        "attempt",
        "outcome",
        "duration_ms",
        "worker",
        "error",
    } <= set(dead)
    for secret in [*SECRETS.values(), HOOK_SECRET, "url-secret-6", TEXT]:
        assert secret not in logs
