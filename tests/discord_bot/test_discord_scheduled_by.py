"""Delivered Discord messages say who scheduled them in a last small line, with the
name Herald knows (members table), never able to mention or format; not in a direct
message's tenant. Over the fake Discord REST API with the real channel and store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core import limits
from core.actors import Principal, discord_tenant
from core.cases import Herald
from core.channels import build_channels
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import Settings
from core.store import Store
from tests.discord_bot.conftest import TOKEN, discord_settings
from tests.discord_bot.doubles import CHANNEL, GUILD, OWNER, who
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


async def sent(
    fake: FakeDiscordApp, store: Store, sqlite_url: str, actor: Principal, name: str, **env: Any
) -> str:
    settings = discord_settings(sqlite_url, fake.api_url, **env)
    herald = Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(seconds=30)))
    await herald.sync_member(actor, display_name=name)
    await herald.create_schedule(actor, to=f"discord:{CHANNEL}", when="in 5 seconds", text="hi")
    await deliver(store, settings)
    [message] = fake.messages
    return str(message["content"])


async def test_a_channel_message_says_who_scheduled_it(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    content = await sent(fake, store, sqlite_url, who(OWNER), "Ada")
    assert content == "hi\n-# scheduled by @\u200bAda"


async def test_a_name_can_neither_mention_nor_format(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    content = await sent(fake, store, sqlite_url, who(OWNER), "everyone <@1> **x**")
    line = content.splitlines()[-1]
    assert "@everyone" not in line and "<@1>" not in line and "**" not in line
    assert line == "-# scheduled by @\u200beveryone \\<@\u200b1\\> \\*\\*x\\*\\*"
    [request] = fake.requests_to("/messages")
    assert request.json()["allowed_mentions"] == {"parse": ["users"]}


async def test_a_server_may_turn_it_off(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    off = {"HERALD_TENANT_SCHEDULED_BY": f"{discord_tenant(GUILD, OWNER)}=off"}
    assert await sent(fake, store, sqlite_url, who(OWNER), "Ada", **off) == "hi"


async def test_not_in_a_direct_message_tenant(
    fake: FakeDiscordApp, store: Store, sqlite_url: str
) -> None:
    dm = Principal(f"discord:{OWNER}", discord_tenant(None, OWNER))
    assert await sent(fake, store, sqlite_url, dm, "Ada") == "hi"


# Issue 32, finding 6: the line is never left out. A member Herald knows no name of is
# credited by their member id; a message as long as a save allows goes out with its
# line within 2,000 characters, a long name clipped.


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
