"""Issue 32, finding 6, on Discord: the "scheduled by" line is never left out. A member
Herald knows no name of is credited by their member id; a message as long as a save
allows goes out with its line within 2,000 characters, a long name clipped. Over the
fake Discord REST API with the real channel, dispatcher and store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from core import limits
from core.channels import build_channels
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import Settings
from core.store import Store
from core.usecases import Herald
from tests.discord_bot.conftest import TOKEN, discord_settings
from tests.discord_bot.doubles import CHANNEL, OWNER, who
from tests.fakes.discord_app import FakeDiscordApp


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        yield server


async def deliver(store: Store, settings: Settings) -> None:
    channels = build_channels(settings)
    try:
        config = DispatcherConfig.from_settings(settings)
        await Dispatcher(store, channels, clock=SystemClock(), config=config).drain()
    finally:
        for channel in channels.values():
            await channel.close()


def herald_for(store: Store, settings: Settings) -> Herald:
    return Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(seconds=30)))


async def test_a_member_without_a_known_name_is_credited_by_id(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    settings = discord_settings(sqlite_url, fake.api_url)
    herald = herald_for(store, settings)
    await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="in 5 seconds", text="hi"
    )
    await deliver(store, settings)
    [message] = fake.messages
    assert message["content"] == f"hi\n-# scheduled by @\u200b{OWNER}"  # was: "hi"


async def test_the_longest_message_a_save_allows_keeps_its_credit(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    settings = discord_settings(sqlite_url, fake.api_url)
    herald = herald_for(store, settings)
    await herald.sync_member(
        who(OWNER), display_name="Augusta Ada King, Countess of Lovelace, Analyst"
    )
    body = "x" * (2000 - limits.DISCORD_CREDIT_ROOM)
    await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="in 5 seconds", text=body
    )
    await deliver(store, settings)
    [message] = fake.messages
    content = str(message["content"])
    assert len(content) <= 2000
    # the name clipped to limits.CREDIT_NAME (was: the line left out)
    assert content == body + "\n-# scheduled by @\u200bAugusta Ada King, Countess of Lovelace,…"
