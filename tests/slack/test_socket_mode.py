"""Socket Mode: with SLACK_APP_TOKEN the adapter opens no port; it connects a WebSocket
(URL from apps.connections.open), acknowledges each envelope and handles it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast
from urllib.parse import parse_qsl

import pytest

from bot.slack import create_adapter
from core.cases import Herald
from core.clock import ManualClock
from core.errors import ConfigError
from core.settings import load_settings
from core.store import Store
from tests.fakes.slack_socket import FakeSlackSocket
from tests.slack.conftest import slack_settings, workspace
from tests.slack.support import SlackSender, text_of, who


@pytest.fixture
async def socket_slack() -> AsyncIterator[FakeSlackSocket]:
    async with FakeSlackSocket() as fake:
        workspace(fake)
        yield fake


async def test_socket_mode_takes_a_command_without_any_public_url(
    socket_slack: FakeSlackSocket, sqlite_url: str, clock: ManualClock
) -> None:
    settings = slack_settings(
        socket_slack,
        sqlite_url,
        SLACK_APP_TOKEN=socket_slack.app_token,
        SLACK_SIGNING_SECRET=None,
    )
    store = await Store.open(sqlite_url)
    herald = Herald(store, settings, clock)
    adapter = create_adapter(settings, herald)
    try:
        await adapter.start()
        assert adapter.mode == "socket" and adapter.port is None
        assert socket_slack.connected.is_set() and adapter.connected()
        sender = SlackSender("unused", socket_slack.response_url)
        command = dict(parse_qsl(sender.command_body("tomorrow at 9am: over the socket")))
        envelope = await socket_slack.push("slash_commands", command)
        await socket_slack.until(lambda: socket_slack.acks and socket_slack.responses)
        assert socket_slack.acks[0]["envelope_id"] == envelope
        assert "Scheduled for <#C0123>" in text_of(socket_slack.responses[0])
        [schedule] = await herald.list_schedules(who("U1"))
        assert schedule.timezone == "Europe/Berlin"
    finally:
        await adapter.stop()
        await store.close()
    assert not adapter.connected()


def test_http_mode_needs_a_signing_secret(sqlite_url: str) -> None:
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url, SLACK_BOT_TOKEN="xoxb-1", _env_file=None
    )
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        create_adapter(settings, cast(Herald, None))


async def test_a_refused_bot_token_stops_start_up_with_a_clear_error(
    socket_slack: FakeSlackSocket, sqlite_url: str, clock: ManualClock
) -> None:
    settings = slack_settings(socket_slack, sqlite_url, SLACK_BOT_TOKEN="xoxb-revoked")
    store = await Store.open(sqlite_url)
    adapter = create_adapter(settings, Herald(store, settings, clock))
    try:
        with pytest.raises(ConfigError, match=r"Slack refused SLACK_BOT_TOKEN \(invalid_auth\)"):
            await adapter.start()
        assert adapter.bolt is None and adapter.port is None
    finally:
        await adapter.stop()
        await store.close()
