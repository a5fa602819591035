"""The Slack adapter running in HTTP mode on 127.0.0.1 (a free port), against a fake Slack
Web API, over a real SQLite store and a Herald on a ManualClock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from bot.slack import SlackAdapter, create_adapter
from core.cases import Herald
from core.channels import build_channels
from core.channels.base import Channel
from core.clock import ManualClock
from core.models import Schedule
from core.settings import Settings, load_settings
from core.store import Store
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.support import SECRET, SlackSender
from tests.support.calendars import ics

__all__ = ["ics"]  # the fixture: a local .ics server

ALERTS = "CALERTS"


@dataclass
class SlackEnv:
    slack: FakeSlackApp
    settings: Settings
    herald: Herald
    clock: ManualClock
    adapter: SlackAdapter
    send: SlackSender

    async def schedules(self, **kw: Any) -> list[Schedule]:
        """Every schedule in the store (as an admin sees them)."""
        return await self.herald.list_schedules("slack:UADMIN", everyone=True, **kw)

    async def reply(self, count: int = 1) -> dict[str, Any]:
        """The ``count``-th reply posted to a response_url, once it arrives."""
        await self.slack.until(lambda: len(self.slack.responses) >= count)
        return self.slack.responses[count - 1]


def workspace(slack: FakeSlackApp) -> None:
    """Channels and people every Slack test starts with."""
    slack.add_channel("C0123", "general")
    slack.add_channel("C0RANDOM", "random")
    slack.add_channel("CNOBOT", "nobot", is_member=False)
    slack.add_channel("GSECRET", "secret", is_private=True, is_member=False)
    slack.add_channel(ALERTS, "herald-alerts")
    slack.add_user("U1", tz="Europe/Berlin", name="Ada")
    slack.add_user("U2", tz="America/New_York", name="Grace")
    slack.add_user("UADMIN", tz="UTC", name="Root")
    slack.add_user("UOWNER", tz="Asia/Tokyo", name="Owner", owner=True)
    slack.add_members("C0123", "U1", "U2", "UADMIN", "UOWNER")
    slack.add_members("C0RANDOM", "U2", "UADMIN")
    slack.add_members("CNOBOT", "U1")
    slack.add_members(ALERTS, "U1", "U2", "UADMIN", "UOWNER")


def slack_settings(slack: FakeSlackApp, database_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "HERALD_DATABASE_URL": database_url,
        "HERALD_ADMINS": "slack:UADMIN",
        "HERALD_DEFAULT_TZ": "UTC",
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
        "HERALD_HTTP_HOST": "127.0.0.1",
        "HERALD_HTTP_PORT": 0,
        "HERALD_SLACK_ALERT_CHANNEL": ALERTS,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the .ics fake is on 127.0.0.1
        "_env_file": None,
    }
    values.update(extra)
    return load_settings(**values)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApp]:
    async with FakeSlackApp() as fake:
        workspace(fake)
        yield fake


@pytest.fixture
def slack_extra(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Extra settings: parametrize ``slack_extra`` indirectly to change them."""
    return dict(getattr(request, "param", {}))


@pytest.fixture
async def env(
    slack: FakeSlackApp, sqlite_url: str, clock: ManualClock, slack_extra: dict[str, Any]
) -> AsyncIterator[SlackEnv]:
    async with slack_env(slack, sqlite_url, clock, slack_extra) as built:
        yield built


@asynccontextmanager
async def slack_env(
    slack: FakeSlackApp, database_url: str, clock: ManualClock, extra: dict[str, Any]
) -> AsyncIterator[SlackEnv]:
    """The adapter running over a store at ``database_url`` (see :func:`env`)."""
    from core import db

    if db.backend(database_url) == "postgresql":  # SQLite's store makes its own schema
        db.upgrade(database_url)
    settings = slack_settings(slack, database_url, **extra)
    store = await Store.open(database_url)
    channels: dict[str, Channel] = build_channels(settings)
    herald = Herald(store, settings, clock, channels=channels)
    adapter = create_adapter(settings, herald)
    adapter.alert_window = 0.0
    sender: SlackSender | None = None
    try:
        await adapter.start()
        url = f"http://127.0.0.1:{adapter.port}/slack/events"
        sender = SlackSender(url, slack.response_url)
        yield SlackEnv(slack, settings, herald, clock, adapter, sender)
    finally:
        if sender is not None:
            await sender.close()
        await adapter.stop()
        for channel in channels.values():
            await channel.close()
        await store.close()
