"""The adapter against a local fake of Discord (REST and a quiet gateway): start and
stop, command sync, deliveries through the Discord channel, dead-letter alerts whose
buttons still work after a restart."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from bot.discord_bot import DiscordAdapter, create_adapter, invite_url
from bot.service import serve
from core.cases import Herald
from core.channels import build_channels
from core.channels.base import Channel
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher
from core.errors import ConfigError
from core.settings import Settings
from core.store import ClaimedJob, Settled, Store, Verdict
from tests.discord_bot.conftest import ALERTS, TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    CHANNEL,
    OWNER,
    STRANGER,
    Interaction,
    click,
    command,
    who,
)
from tests.discord_bot.doubles import message_from as message_of
from tests.fakes.discord_app import FakeDiscordApp
from tests.support.store import audit_trail

BLOCKED = "700000000000000030"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        server.add_channel(ALERTS)
        server.add_channel(BLOCKED, can_send=False)
        yield server


@pytest.fixture
def live(sqlite_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(sqlite_url, fake.api_url)


@pytest.fixture
async def channels(live: Settings) -> AsyncIterator[dict[str, Channel]]:
    built = build_channels(live)
    yield built
    for channel in built.values():
        await channel.close()


@pytest.fixture
def due_herald(store: Store, live: Settings, channels: dict[str, Channel]) -> Herald:
    """Herald with a clock 30 s behind the real one: what it schedules "in 10 seconds"
    is already due for a dispatcher on the real clock. Destinations are checked
    against the fake (the Discord channel's ``validate``)."""
    clock = ManualClock(datetime.now(UTC) - timedelta(seconds=30))
    return Herald(store, live, clock, channels=channels)


async def schedule_through_the_command(adapter: DiscordAdapter, channel_id: int) -> str:
    inter = Interaction(adapter.client, OWNER)
    inter.channel_id = channel_id
    params = {"when": "in 10 seconds", "message": f"Hello <#{channel_id}>"}
    await command(adapter, "create")._do_call(inter, params)  # type: ignore[arg-type]
    return str(inter.last.content)


async def alerts_posted() -> None:
    """Wait for the adapter's background alert posts."""
    pending = [t for t in asyncio.all_tasks() if t.get_name().startswith("herald-discord-alert")]
    await asyncio.gather(*pending)


def test_invite_url_asks_for_exactly_what_herald_needs() -> None:
    assert invite_url(1300000000000000001) == (
        "https://discord.com/oauth2/authorize?client_id=1300000000000000001"
        "&scope=bot+applications.commands&permissions=274877926400"
    )  # View Channel, Send Messages, Send Messages in Threads, Embed Links


async def test_start_logs_in_syncs_commands_and_connects(
    fake: FakeDiscordApp, live: Settings, herald: Herald, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    adapter = create_adapter(live, herald)
    assert adapter.name == "discord"
    try:
        await adapter.start()
        await asyncio.wait_for(fake.identified.wait(), 10)
    finally:
        await adapter.stop()

    [group] = fake.commands[None]  # global
    assert group["name"] == "schedule"
    assert [o["name"] for o in group["options"]] == [
        "create",
        "list",
        "show",
        "edit",
        "pause",  # core/verbs.py's order
        "resume",
        "skip",
        "send-now",  # issue 41, and its alias
        "now",
        "cancel",
        "delete",
        "remove",
        "timezone",
        "prefs",
        "feed",
        "templates",
        "approvals",
        "help",
    ]
    # Discord allows 25 subcommands (and groups) in a group
    # (https://discord.com/developers/docs/interactions/application-commands#subcommands-and-subcommand-groups)
    assert len(group["options"]) <= 25
    [feed] = [o for o in group["options"] if o["name"] == "feed"]
    assert feed["type"] == 2  # a subcommand group
    assert [o["name"] for o in feed["options"]] == ["add", "list", "remove"]
    [identify] = [p for p in fake.gateway_received if p["op"] == 2]
    assert identify["d"]["intents"] == 1  # guilds only: no privileged intent
    assert adapter.client.is_closed()
    assert TOKEN not in caplog.text


async def test_commands_sync_to_the_configured_guilds(
    fake: FakeDiscordApp, sqlite_url: str, herald: Herald
) -> None:
    settings = discord_settings(
        sqlite_url, fake.api_url, DISCORD_GUILD_IDS="111111111111111111, 222222222222222222"
    )
    adapter = create_adapter(settings, herald)
    try:
        await adapter.start()
    finally:
        await adapter.stop()

    assert sorted(fake.commands, key=str) == ["111111111111111111", "222222222222222222"]
    assert fake.commands["111111111111111111"][0]["name"] == "schedule"


async def test_a_refused_token_is_a_config_error_without_the_token(
    fake: FakeDiscordApp, sqlite_url: str, herald: Herald
) -> None:
    settings = discord_settings(sqlite_url, fake.api_url, DISCORD_BOT_TOKEN="wrong-secret")
    adapter = create_adapter(settings, herald)
    try:
        with pytest.raises(ConfigError, match="Discord refused DISCORD_BOT_TOKEN") as caught:
            await adapter.start()
    finally:
        await adapter.stop()
    assert "wrong-secret" not in str(caught.value)


async def test_an_unreachable_discord_is_said_in_a_sentence(
    settings: Settings, herald: Herald
) -> None:
    """Herald goes on delivering; the adapter is down and says why (issue 33)."""
    adapter = create_adapter(settings, herald)  # DISCORD_API_URL: a closed local port
    try:
        await adapter.start()
        assert not adapter.connected()
        assert adapter.problem is not None
        assert adapter.problem.startswith("Could not reach Discord's API at http://127.0.0.1:")
        # core.http_client.failure's words, as the channels say them
        assert "(connection refused by 127.0.0.1:" in adapter.problem
        assert adapter.problem.endswith("): check DISCORD_API_URL and the network.")
    finally:
        await adapter.stop()


async def test_a_scheduled_message_is_delivered_through_the_discord_channel(
    fake: FakeDiscordApp,
    live: Settings,
    due_herald: Herald,
    store: Store,
    channels: dict[str, Channel],
) -> None:
    adapter = create_adapter(live, due_herald)
    try:
        reply = await schedule_through_the_command(adapter, CHANNEL)
    finally:
        await adapter.stop()
    assert reply.startswith("Scheduled.")

    summary = await Dispatcher(store, channels, clock=SystemClock()).drain()

    [message] = fake.channels[str(CHANNEL)].messages
    assert message["content"] == f"Hello <#{CHANNEL}>" and message["nonce"]
    assert summary.outcomes["delivered"] == 1 and summary.waiting == 0


async def test_dead_letter_alert_buttons_work_after_a_restart(
    fake: FakeDiscordApp,
    live: Settings,
    due_herald: Herald,
    store: Store,
    channels: dict[str, Channel],
) -> None:
    first = create_adapter(live, due_herald)
    try:
        await first.start()
        await schedule_through_the_command(first, int(BLOCKED))
        await Dispatcher(store, channels, clock=SystemClock(), observer=first.on_finished).drain()
        await alerts_posted()
    finally:
        await first.stop()

    [alert] = fake.channels[ALERTS].messages
    assert alert["content"].startswith("**Dead letter** · job 1 · schedule #1")
    assert "Missing Permissions" in alert["content"]
    buttons = [c["custom_id"] for row in alert["components"] for c in row["components"]]
    assert buttons == ["herald:dead:retry:1", "herald:dead:discard:1"]
    [posted] = fake.requests_to(f"POST /api/v10/channels/{ALERTS}/messages")
    assert posted.json()["allowed_mentions"] == {"parse": []}  # a message body pings no one

    # A new process: a fresh client that never saw the message handles its buttons.
    second = create_adapter(live, due_herald)
    try:
        refused = Interaction(second.client, STRANGER, message=message_of(second.client, alert))
        await click(second.client, refused, "herald:dead:retry:1")
        assert [(a.kind, a.ephemeral) for a in refused.log] == [
            ("defer", False),
            ("followup", True),
        ]
        assert str(refused.last.content).startswith("Only Herald admins can retry")
        assert len(await due_herald.dead_letters(who(ADMIN))) == 1

        decided = Interaction(second.client, ADMIN, message=message_of(second.client, alert))
        await click(second.client, decided, "herald:dead:retry:1")
    finally:
        await second.stop()

    [_, edit] = decided.log
    assert edit.kind == "edit" and edit.view is None
    assert f"**Retried** by <@{ADMIN}>" in str(edit.content)
    assert "Only Herald admins can decide" not in str(edit.content)
    assert await due_herald.dead_letters(who(ADMIN)) == []
    trail = [(a.actor, a.action) for a in await audit_trail(store, "job", "1")]
    assert (f"discord:{ADMIN}", "dead.retry") in trail

    fake.channels[BLOCKED].can_send = True  # someone fixed the permission
    await Dispatcher(store, channels, clock=SystemClock()).drain()
    assert [m["content"] for m in fake.channels[BLOCKED].messages] == [f"Hello <#{BLOCKED}>"]


async def test_discard_from_an_alert(
    fake: FakeDiscordApp,
    live: Settings,
    due_herald: Herald,
    store: Store,
    channels: dict[str, Channel],
) -> None:
    adapter = create_adapter(live, due_herald)
    try:
        await adapter.start()
        await schedule_through_the_command(adapter, int(BLOCKED))
        await Dispatcher(store, channels, clock=SystemClock(), observer=adapter.on_finished).drain()
        await alerts_posted()
        [alert] = fake.channels[ALERTS].messages
        inter = Interaction(adapter.client, ADMIN, message=message_of(adapter.client, alert))
        await click(adapter.client, inter, "herald:dead:discard:1")
    finally:
        await adapter.stop()

    assert f"**Discarded** by <@{ADMIN}>" in str(inter.last.content)
    assert await due_herald.dead_letters(who(ADMIN)) == []


async def _job_seven(herald: Herald) -> None:
    """Jobs 1 to 7 of schedules in this server (alerts are only about its own)."""
    for n in range(7):
        await herald.create_schedule(
            who(OWNER), to=f"discord:{CHANNEL}", when="in 10 minutes", text=f"m{n}"
        )


def _finished(state: str) -> Verdict:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    job = ClaimedJob(7, 3, now, now, 8, "key", f"discord:{CHANNEL}", "body", None, None, {})
    return Verdict(job, state, error="Discord answered 500.")


async def test_only_dead_letters_are_posted_and_only_with_an_alert_channel(
    fake: FakeDiscordApp, live: Settings, sqlite_url: str, herald: Herald
) -> None:
    await _job_seven(herald)
    quiet = create_adapter(
        discord_settings(sqlite_url, fake.api_url, HERALD_DISCORD_ALERT_CHANNEL=""), herald
    )
    adapter = create_adapter(live, herald)
    try:
        await adapter.start()
        await quiet.start()
        adapter.on_finished(_finished("delivered"))
        adapter.on_finished(_finished("retrying"))
        quiet.on_finished(_finished("dead"))
        await alerts_posted()
        assert fake.requests_to("/messages") == []

        adapter.on_finished(_finished("dead"))
        await alerts_posted()
    finally:
        await adapter.stop()
        await quiet.stop()
    [alert] = fake.channels[ALERTS].messages
    assert "job 7 · schedule #3" in alert["content"] and "Discord answered 500." in alert["content"]


async def test_an_alert_discord_refuses_is_logged(
    fake: FakeDiscordApp, sqlite_url: str, herald: Herald, caplog: pytest.LogCaptureFixture
) -> None:
    settings = discord_settings(
        sqlite_url, fake.api_url, HERALD_DISCORD_ALERT_CHANNEL="700000000000000404"
    )
    await _job_seven(herald)
    adapter = create_adapter(settings, herald)
    adapter._alert_tenant = who(OWNER).tenant  # the lookup of the channel is not the point
    try:
        await adapter.start()
        assert await adapter.post_alert(_finished("dead")) is None
    finally:
        await adapter.stop()
    assert "could not post a dead-letter alert" in caplog.text


async def test_alerts_are_only_about_the_alert_channels_own_server(
    fake: FakeDiscordApp, live: Settings, herald: Herald
) -> None:
    """A dead letter of another server (or of the terminal) is not posted to this
    server's alert channel; one of its own is."""
    for guild in (700000000000000555, None):
        who_there = who(OWNER, guild) if guild else f"discord:{OWNER}"
        await herald.create_schedule(
            who_there, to=f"discord:{CHANNEL}", when="in 10 minutes", text="elsewhere"
        )
    adapter = create_adapter(live, herald)
    try:
        await adapter.start()
        elsewhere = [_finished_job(1), _finished_job(2)]
        for item in elsewhere:
            assert await adapter.post_alert(item) is None
        assert fake.channels[ALERTS].messages == []
        await herald.create_schedule(
            who(OWNER), to=f"discord:{CHANNEL}", when="in 10 minutes", text="here"
        )
        assert await adapter.post_alert(_finished_job(3)) is not None
    finally:
        await adapter.stop()
    [alert] = fake.channels[ALERTS].messages
    assert "job 3" in alert["content"]


def _finished_job(job_id: int) -> Verdict:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    job = ClaimedJob(job_id, job_id, now, now, 8, "k", f"discord:{CHANNEL}", "b", None, None, {})
    return Verdict(job, "dead", error="Discord answered 500.")


async def test_herald_run_starts_the_adapter_and_alerts_dead_letters(
    fake: FakeDiscordApp, live: Settings, due_herald: Herald
) -> None:
    """`herald run` (bot.service.serve) with DISCORD_BOT_TOKEN set: the adapter logs in
    and connects, and a delivery that dies is posted to the alert channel."""
    await due_herald.create_schedule(
        who(OWNER), to=f"discord:{BLOCKED}", when="in 10 seconds", text="Blocked"
    )
    stop = asyncio.Event()
    died = asyncio.Event()

    def observe(item: Settled) -> None:
        if item.state == "dead":
            died.set()

    running = asyncio.create_task(serve(live, stop=stop, observer=observe))
    try:
        await asyncio.wait_for(fake.identified.wait(), 10)
        await asyncio.wait_for(died.wait(), 10)
        await alerts_posted()
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)

    assert fake.commands[None][0]["name"] == "schedule"
    [alert] = fake.channels[ALERTS].messages
    assert alert["content"].startswith("**Dead letter** · job 1 · schedule #1")
