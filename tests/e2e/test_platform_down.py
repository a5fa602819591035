"""A misconfigured platform URL is a sentence (issue 33): when ``SLACK_API_URL`` or
``DISCORD_API_URL`` answers plain text, an HTML page, or nothing at all, ``herald run``
(bot.service.serve, in this process) stays up: the adapter is down and says why in one
log line and on ``/readyz``, a webhook due meanwhile is delivered, and the platform's
own delivery gets a retry or a permanent failure with a sentence."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.service import serve
from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings, load_settings
from core.store import Settled, Store
from tests.fakes.discord_app import FakeDiscordApp
from tests.fakes.http import FakeHTTPServer, Scripted, unused_port
from tests.fakes.slack_app import FakeSlackApp
from tests.fakes.webhook import WebhookReceiver
from tests.support.waiting import until

SLACK_TOKEN = "xoxb-secret-token-for-the-test"
DISCORD_TOKEN = "discord-secret-token-for-the-test"
DISCORD_CHANNEL = "123456789012345678"

#: What a wrong URL answers: a proxy's plain text, a web server's HTML page, nothing.
ANSWERS: dict[str, Callable[[], Scripted]] = {
    "plain text": lambda: Scripted(body="It works!", headers={"Content-Type": "text/plain"}),
    "html": lambda: Scripted(
        status=404,
        body="<html><body><h1>Not Found</h1></body></html>",
        headers={"Content-Type": "text/html; charset=utf-8"},
    ),
    "hang": lambda: Scripted(stall=True),
}
#: What the adapter's problem (on /readyz and in the log) says for each.
SAYS = {
    "plain text": "answered HTTP 200 with text/plain, not JSON",
    "html": "answered HTTP 404 with text/html, not JSON",
    "hang": "did not answer within 0.5 s",
}
#: The outcome and sentence of the platform's own delivery for each.
DELIVERY = {
    "plain text": ("retrying", "answered HTTP 200 with text/plain, not JSON"),
    "html": ("dead", "answered HTTP 404 with text/html, not JSON"),
    "hang": ("retrying", "did not answer in time"),
}


def _settings(platform: str, fake: FakeHTTPServer, database_url: str, port: int) -> Settings:
    values: dict[str, Any] = {
        "HERALD_DATABASE_URL": database_url,
        "HERALD_DEFAULT_TZ": "UTC",
        "HERALD_HTTP_HOST": "127.0.0.1",
        "HERALD_HTTP_PORT": port,
        "HERALD_HTTP_TIMEOUT": 0.5,  # a hang is found out in half a second
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on 127.0.0.1
        "HERALD_SWEEP_SECONDS": 3600,
        "_env_file": None,
    }
    if platform == "slack":
        values |= {
            "SLACK_BOT_TOKEN": SLACK_TOKEN,
            "SLACK_SIGNING_SECRET": "signing-secret",
            "SLACK_API_URL": f"{fake.url}/api/",
        }
    else:
        values |= {"DISCORD_BOT_TOKEN": DISCORD_TOKEN, "DISCORD_API_URL": f"{fake.url}/api/v10"}
    return load_settings(**values)


@pytest.mark.parametrize("answer", list(ANSWERS))
@pytest.mark.parametrize("platform", ["slack", "discord"])
async def test_a_wrong_platform_url_leaves_herald_running_and_says_so(
    platform: str, answer: str, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake: FakeHTTPServer = (
        FakeSlackApp(SLACK_TOKEN) if platform == "slack" else FakeDiscordApp(DISCORD_TOKEN)
    )
    async with fake, WebhookReceiver() as hook:
        fake.script(*(ANSWERS[answer]() for _ in range(50)))  # every request to the "API"
        port = unused_port()
        settings = _settings(platform, fake, sqlite_url, port)
        store = await Store.open(sqlite_url)
        try:
            # a clock a minute behind: what it schedules "in 30 seconds" is due now
            herald = Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
            target = "slack:C0123ABC" if platform == "slack" else f"discord:{DISCORD_CHANNEL}"
            await herald.create_schedule(
                "local:ops", to=target, when="in 30 seconds", text="to the platform"
            )
            await herald.create_schedule(
                "local:ops", to=f"webhook:{hook.hook_url}", when="in 30 seconds", text="hook"
            )
        finally:
            await store.close()

        finished: list[Settled] = []
        stop = asyncio.Event()
        caplog.set_level(logging.INFO)
        running = asyncio.create_task(serve(settings, stop=stop, observer=finished.append))
        try:
            await until(lambda: hook.received)  # the webhook, due meanwhile, is delivered
            await until(lambda: any(f.job.destination == target for f in finished))
            assert not running.done(), "herald run stopped"
            async with (
                aiohttp.ClientSession() as client,
                client.get(f"http://127.0.0.1:{port}/readyz") as ready,
            ):
                status, body = ready.status, await ready.json()
            assert not running.done()
        finally:
            stop.set()
            await asyncio.wait_for(running, 15)

    assert hook.received[0].payload["text"] == "hook"
    assert status == 503
    check = body["checks"][f"adapter:{platform}"]
    assert check["ok"] is False
    assert SAYS[answer] in check["detail"]
    assert f"http://127.0.0.1:{fake.port}/api/" in check["detail"]
    assert body["checks"]["database"]["ok"] and body["checks"]["dispatcher"]["ok"]
    if answer != "hang":  # the delivery met the same page: the channel says so too
        assert body["checks"][f"channel:{platform}"]["ok"] is False

    # one log line for the adapter, naming the URL and what it answered; no token anywhere
    down = [r.getMessage() for r in caplog.records if "adapter is down" in r.getMessage()]
    assert len(down) == 1, down
    assert SAYS[answer] in down[0] and f"127.0.0.1:{fake.port}/api/" in down[0]
    assert SLACK_TOKEN not in caplog.text and DISCORD_TOKEN not in caplog.text
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"

    # the platform's own delivery: a retry or a permanent failure, with a sentence (its
    # first try's: a retry due again before the run stops may be recorded as well)
    outcome = next(f for f in finished if f.job.destination == target)
    state, said = DELIVERY[answer]
    assert outcome.state == state, outcome.error
    assert outcome.error is not None and said in outcome.error
    assert outcome.error.endswith(".") and "<html" not in outcome.error
