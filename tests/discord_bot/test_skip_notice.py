"""A reminder skipped because its recipient's preferences changed after it was saved
(issue 37): its author is told by direct message on Discord, one message for a burst
of skips, never an author of another server or platform; dead letters still go to the
alert channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from bot.discord_bot import DiscordAdapter, create_adapter
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.preferences import Preferences
from core.settings import Settings
from core.store import AuditEntry, Settled, Store
from tests.discord_bot.conftest import ALERTS, TOKEN, discord_settings
from tests.discord_bot.doubles import CHANNEL, GUILD, OWNER, STRANGER, who
from tests.fakes.discord_app import FakeDiscordApp
from tests.support.channels import RecordingChannel

TENANT = f"discord:{GUILD}"
BOB = f"discord:{STRANGER}"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        server.add_channel(ALERTS)
        server.add_user(str(OWNER))
        server.add_user(str(STRANGER))
        yield server


@pytest.fixture
def live(sqlite_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(sqlite_url, fake.api_url)


@pytest.fixture
async def adapter(
    live: Settings, store: Store, clock: ManualClock
) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(live, Herald(store, live, clock))
    made.skips.window = 0.0
    try:
        await made.start()
        yield made
    finally:
        await made.stop()


async def refused(herald: Herald, *texts: str) -> list[Settled]:
    """The owner reminds Bob once per text; then Bob accepts reminders only from admins,
    and the dispatcher skips them. What it settled, untold (the adapter hears nothing
    yet)."""
    now = herald.clock.now()
    await herald.store.save_member(TENANT, BOB, now=now, timezone="UTC", display_name="Bob")
    for text in texts:
        await herald.create_schedule(
            who(OWNER), to=f"discord:@{STRANGER}", when="in 1 minute", text=text
        )
    audit = AuditEntry(BOB, "preferences.set", "member", BOB)
    await herald.store.put_preferences(
        TENANT, BOB, Preferences(accept_from="admins"), now=now, by=BOB, audit=audit
    )
    herald.clock.advance(60)  # type: ignore[attr-defined]
    settled: list[Settled] = []
    channel = RecordingChannel(kind="discord")
    dispatcher = Dispatcher(
        herald.store, {"discord": channel}, clock=herald.clock, observer=settled.append
    )
    await dispatcher.drain()
    assert not channel.deliveries and [s.state for s in settled] == ["skipped"] * len(texts)
    return sorted(settled, key=lambda s: s.job.schedule_id)


def dms(fake: FakeDiscordApp, user: int = OWNER) -> list[str]:
    dm = fake.dms.get(str(user))
    return [m["content"] for m in fake.channels[dm].messages] if dm else []


async def test_the_author_is_told_once_by_direct_message(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    [item] = await refused(adapter.herald, "stand-up")
    adapter.on_finished(item)
    await adapter.skips.close()
    assert dms(fake) == [
        f"Your reminder to Bob (schedule {item.job.schedule_id}) was not sent: Bob accepts "
        "reminders only from admins (their preferences changed after this was scheduled)."
    ]
    [posted] = fake.requests_to(f"POST /api/v10/channels/{fake.dms[str(OWNER)]}/messages")
    assert posted.json()["allowed_mentions"] == {"parse": []}  # it pings no one
    assert dms(fake, STRANGER) == []


async def test_a_burst_of_skips_is_one_message(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    first, second = await refused(adapter.herald, "one", "two")
    adapter.on_finished(first)
    adapter.on_finished(second)
    await asyncio.sleep(0)  # its window (0 s) over: closing waits for what it sends
    await adapter.skips.close()
    [told] = dms(fake)
    lines = told.splitlines()
    assert lines[0] == "2 of your reminders were not sent:"
    assert [x.split(")")[0] for x in lines[1:]] == [
        f"• Your reminder to Bob (schedule {first.job.schedule_id}",
        f"• Your reminder to Bob (schedule {second.job.schedule_id}",
    ]


async def test_an_author_of_another_server_or_platform_is_not_told(
    fake: FakeDiscordApp, live: Settings, store: Store, clock: ManualClock
) -> None:
    only_here = discord_settings(live.database_url, fake.api_url, DISCORD_GUILD_IDS=str(GUILD))
    adapter = create_adapter(only_here, Herald(store, only_here, clock))
    try:
        await adapter.start()
        [item] = await refused(adapter.herald, "stand-up")
        for other in (
            replace(item.job, tenant="discord:111111111111111111"),  # a server not served
            replace(item.job, tenant=f"discord:@{STRANGER}"),  # someone else's DMs
            replace(item.job, owner="slack:U1"),
        ):
            adapter.on_finished(replace(item, job=other))
        adapter.on_finished(replace(item, error="Skipped: a calendar's holiday."))
        await adapter.skips.close()
        assert dms(fake) == [] and fake.requests_to("POST /api/v10/users/@me/channels") == []
    finally:
        await adapter.stop()


async def test_a_dead_letter_still_goes_to_the_alert_channel(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    herald = adapter.herald
    await herald.create_schedule(who(OWNER), to=f"discord:{CHANNEL}", when="in 1 minute", text="x")
    herald.clock.advance(60)  # type: ignore[attr-defined]
    failing = RecordingChannel(
        lambda d: DeliveryResult.permanent("Missing Access", 403), kind="discord"
    )
    dispatcher = Dispatcher(
        herald.store,
        {"discord": failing},
        clock=herald.clock,
        config=DispatcherConfig(max_attempts=1),
        observer=adapter.on_finished,
    )
    assert (await dispatcher.drain()).outcomes["dead"] == 1
    pending = [t for t in asyncio.all_tasks() if t.get_name().startswith("herald-discord-alert")]
    await asyncio.gather(*pending)
    [alert] = fake.channels[ALERTS].messages
    assert alert["content"].startswith("**Dead letter**")
    await adapter.skips.close()
    assert dms(fake) == []
