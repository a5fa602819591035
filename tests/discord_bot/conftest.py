"""Fixtures for the Discord adapter tests: SQLite only (the adapter adds no query of its
own; the store contract suite covers PostgreSQL), a settings object with Discord
configured, the adapter (never connected to Discord) and interaction doubles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import yarl

from bot.discord_bot import DiscordAdapter, create_adapter  # first: it imports discord quietly

import discord.gateway  # isort: skip
import discord.http  # isort: skip
import discord.webhook.async_  # isort: skip
from core.cases import Herald
from core.settings import Settings, load_settings
from tests.discord_bot.doubles import ADMIN, Interaction
from tests.fakes import unused_port
from tests.support.calendars import ics

__all__ = ["ics"]  # the fixture: a local .ics server

TOKEN = "MTMw.discord-bot-secret-token"
ALERTS = "700000000000000099"


@pytest.fixture
def db_url(sqlite_url: str) -> str:
    return sqlite_url


@pytest.fixture(autouse=True)
def nowhere_near_discord(monkeypatch: pytest.MonkeyPatch) -> str:
    """Point discord.py's REST base and gateway at a closed local port (restored after
    the test), so nothing a test does can reach the real Discord."""
    dead = f"http://127.0.0.1:{unused_port()}/api/v10"
    monkeypatch.setattr(discord.http.Route, "BASE", dead)
    monkeypatch.setattr(discord.webhook.async_.Route, "BASE", dead)
    monkeypatch.setattr(
        discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(dead.replace("http", "ws"))
    )
    return dead


def discord_settings(db_url: str, api_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "HERALD_DATABASE_URL": db_url,
        "HERALD_ADMINS": f"discord:{ADMIN}",
        "HERALD_DEFAULT_TZ": "UTC",
        "DISCORD_BOT_TOKEN": TOKEN,
        "DISCORD_API_URL": api_url,
        "HERALD_DISCORD_ALERT_CHANNEL": ALERTS,
        "DISCORD_GUILD_IDS": "",
        "HERALD_DISCORD_ADMINS_FROM_PERMISSION": False,
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the .ics fake is on 127.0.0.1
        "_env_file": None,
        **overrides,
    }
    return load_settings(**values)


@pytest.fixture
def settings(db_url: str, nowhere_near_discord: str) -> Settings:
    return discord_settings(db_url, nowhere_near_discord)


@pytest.fixture
async def adapter(settings: Settings, herald: Herald) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(settings, herald)
    try:
        yield made
    finally:
        await made.stop()


@pytest.fixture
def interaction(adapter: DiscordAdapter) -> Callable[..., Interaction]:
    """``interaction(user_id, **kw)``: a fresh double on the adapter's client."""

    def make(*args: Any, **kwargs: Any) -> Interaction:
        return Interaction(adapter.client, *args, **kwargs)

    return make
