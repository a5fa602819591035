"""End to end: a signed /schedule leads to a chat.postMessage at the fake Slack, and
`herald run` (bot.service.serve) serves /slack/events on its own HTTP server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from bot.service import serve
from core.cases import Herald
from core.channels import build_channels
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.store import Store
from tests.fakes.http import unused_port
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_settings
from tests.slack.support import SlackSender, text_of, who


@pytest.fixture
def clock() -> ManualClock:
    """A few seconds behind the wall: "in 2 seconds" is already due for a dispatcher on
    the real clock, so no test waits for a schedule."""
    return ManualClock(datetime.now(UTC) - timedelta(seconds=5))


async def test_a_signed_schedule_command_is_posted_to_the_channel(env: SlackEnv) -> None:
    answer = await env.send.command("<#C0123|general> in 2 seconds: hello", user="U1")
    assert answer.status == 200
    assert ":white_check_mark: Scheduled for <#C0123>" in text_of(await env.reply())
    channels = build_channels(env.settings)  # pointed at the fake by SLACK_API_URL
    try:
        dispatcher = Dispatcher(
            env.herald.store, channels, clock=SystemClock(), config=DispatcherConfig()
        )
        summary = await dispatcher.drain()
    finally:
        for channel in channels.values():
            await channel.close()
    assert summary.outcomes["delivered"] == 1
    [posted] = env.slack.messages
    assert (posted["channel"], posted["text"]) == ("C0123", "hello")
    assert posted["metadata"]["event_type"] == "herald_delivery"


async def test_herald_run_serves_slack_on_its_http_server(
    slack: FakeSlackApp, sqlite_url: str
) -> None:
    port = unused_port()
    settings = slack_settings(slack, sqlite_url, HERALD_HTTP_PORT=port)
    stop = asyncio.Event()
    up: asyncio.Future[tuple[Herald, Dispatcher]] = asyncio.get_running_loop().create_future()
    running = asyncio.create_task(
        serve(settings, stop=stop, ready=lambda h, d: up.set_result((h, d)))
    )
    sender = SlackSender(f"http://127.0.0.1:{port}/slack/events", slack.response_url)
    try:
        await asyncio.wait_for(asyncio.shield(up), 10)
        answer = await sender.command("<#C0123|general> in 1 hour: from herald run")
        assert answer.status == 200
        await slack.until(lambda: slack.responses)
        assert "Scheduled for <#C0123>" in text_of(slack.responses[0])
        forged = await sender.post(sender.command_body("in 1 hour: x"), secret="nope")
        assert forged.status == 401
        async with aiohttp.ClientSession() as client:
            async with client.get(f"http://127.0.0.1:{port}/readyz") as ready:
                checks = (await ready.json())["checks"]
        assert checks["adapter:slack"] == {"ok": True, "detail": "connected"}
    finally:
        await sender.close()
        stop.set()
        await asyncio.wait_for(running, 10)
    store = await Store.open(sqlite_url)
    try:
        herald = Herald(store, settings, SystemClock())
        [schedule] = await herald.list_schedules(who("U1"))
        assert (schedule.destination, schedule.body) == ("slack:C0123", "from herald run")
    finally:
        await store.close()
