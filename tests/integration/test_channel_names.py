"""Channels by name (issue 33): ``slack:#deploys`` and ``discord:#general@<server id>``
are looked up once when a schedule is saved, through the platform's directory
(Slack's ``conversations.list``, Discord's ``GET /guilds/{id}/channels``, against the
local fakes), and the schedule keeps the id. The same "no channel / several" sentences
as Slack's ``/schedule``; where the platform is not connected, a sentence saying so.
Through the use cases (create, edit, import, feeds' destination filter), on SQLite and
PostgreSQL, and through the ``herald`` command."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.slack.directory import ChannelNames
from bot.slack.grammar import Refusal
from core.actors import Principal
from core.cases import Herald, ImportRejected, import_schedules
from core.channels import build_channels
from core.channels.base import Channel
from core.clock import ManualClock
from core.destinations import ChannelName, channel_name
from core.errors import InvalidInput
from core.settings import Settings, load_settings
from core.store import Store
from tests.fakes import FakeDiscord, FakeSlack

SLACK_TOKEN = "xoxb-names-secret-token"
DISCORD_TOKEN = "MTIz.names-secret-token"
GUILD = "700000000000000001"
GENERAL = "123456789012345678"
ALICE = "local:alice"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=SLACK_TOKEN) as fake:
        fake.add_channel("C0DEPLOYS", "deploys")
        fake.add_channel("C0TEAM", "team")
        fake.add_channel("C0OLD", "deploys-old", is_archived=True)
        fake.add_channel("C0TWIN1", "twin")
        fake.add_channel("C0TWIN2", "twin")  # Enterprise Grid: shared between workspaces
        fake.list_page_size = 2  # the names are found across pages
        yield fake


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(DISCORD_TOKEN, guild_id=GUILD) as fake:
        fake.add_channel(GENERAL, name="general")
        fake.add_channel("223456789012345678", name="random")
        yield fake


def _settings(db_url: str, slack: FakeSlack | None, discord: FakeDiscord | None) -> Settings:
    env = {
        "HERALD_DATABASE_URL": db_url,
        "HERALD_ADMINS": "local:root-admin",
        "HERALD_DEFAULT_TZ": "UTC",
    }
    if slack is not None:
        env |= {"SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_API_URL": slack.api_url}
    if discord is not None:
        env |= {"DISCORD_BOT_TOKEN": DISCORD_TOKEN, "DISCORD_API_URL": discord.api_url}
    return load_settings(_env_file=None, **env)


@pytest.fixture
async def connected(
    store: Store, db_url: str, slack: FakeSlack, discord: FakeDiscord, clock: ManualClock
) -> AsyncIterator[Herald]:
    """The use cases with Slack and Discord connected, as the composition roots build them."""
    settings = _settings(db_url, slack, discord)
    channels = build_channels(settings)
    yield Herald(store, settings, clock, channels=channels)
    await _close(channels)


async def _close(channels: dict[str, Channel]) -> None:
    for channel in channels.values():
        await channel.close()


async def test_a_slack_name_is_looked_up_once_and_kept_as_the_id(
    connected: Herald, slack: FakeSlack
) -> None:
    schedule, created = await connected.create_schedule(
        ALICE, to="slack:#Deploys", when="every weekday at 9am", text="Stand-up"
    )

    assert created and schedule.destination == "slack:C0DEPLOYS"
    stored = await connected.store.get_schedule(schedule.id or 0)
    assert stored is not None and stored.destination == "slack:C0DEPLOYS"
    assert len(slack.requests_to("conversations.list")) == 2  # 4 live channels, 2 a page
    # saved once: the name is not looked up again for the list, nor at each send
    listed = await connected.list_schedules(ALICE, destination="slack:C0DEPLOYS")
    assert [s.id for s in listed] == [schedule.id]
    edited = await connected.edit_schedule(ALICE, schedule.id or 0, to="slack:#team")
    assert edited.destination == "slack:C0TEAM"


async def test_no_channel_and_several_say_what_slack_schedule_says(
    connected: Herald, slack: FakeSlack
) -> None:
    with pytest.raises(InvalidInput) as nothing:
        await connected.create_schedule(ALICE, to="slack:#nope", when="tomorrow 9am", text="x")
    with pytest.raises(InvalidInput) as archived:
        await connected.create_schedule(
            ALICE, to="slack:#deploys-old", when="tomorrow 9am", text="x"
        )
    with pytest.raises(InvalidInput) as several:
        await connected.create_schedule(ALICE, to="slack:#twin", when="tomorrow 9am", text="x")

    assert str(nothing.value) == (
        "There is no public channel named `#nope` that Herald can see: check the spelling, "
        "or use its id, e.g. slack:C0123ABC (a private channel is found only by its id)."
    )
    assert "`#deploys-old`" in str(archived.value)
    assert str(several.value) == (
        "Several channels are named `#twin` (slack:C0TWIN1, slack:C0TWIN2): "
        "use the id of the one you mean."
    )
    assert await connected.list_schedules(ALICE) == []  # nothing was saved
    # Slack's /schedule says the same, with its own way to pick a channel
    names = ChannelNames(_sdk_client(slack))
    with pytest.raises(Refusal) as in_slack:
        await names.find("T0HERALD", "nope")
    with pytest.raises(Refusal) as in_slack_several:
        await names.find("T0HERALD", "twin")
    assert str(in_slack.value).startswith(str(nothing.value).partition(": check")[0])
    assert str(in_slack_several.value).startswith("Several channels are named `#twin` (")


def _sdk_client(slack: FakeSlack) -> object:
    from slack_sdk.web.async_client import AsyncWebClient

    return AsyncWebClient(token=SLACK_TOKEN, base_url=slack.api_url)


async def test_without_a_slack_token_a_name_says_to_use_the_id(
    store: Store, db_url: str, clock: ManualClock
) -> None:
    settings = _settings(db_url, None, None)
    channels = build_channels(settings)
    try:
        for herald in (
            Herald(store, settings, clock, channels=channels),
            Herald(store, settings, clock),
        ):
            with pytest.raises(InvalidInput) as refused:
                await herald.create_schedule(
                    ALICE, to="slack:#deploys", when="tomorrow 9am", text="x"
                )
            assert str(refused.value) == (
                "Channel names (slack:#deploys) need Herald's Slack connection "
                "(SLACK_BOT_TOKEN) to be looked up: use the channel id, e.g. slack:C0123ABC "
                "(the channel's details, at the bottom)."
            )
            with pytest.raises(InvalidInput, match="Discord connection"):
                await herald.create_schedule(
                    ALICE, to=f"discord:#general@{GUILD}", when="tomorrow 9am", text="x"
                )
            assert await herald.list_schedules(ALICE) == []
    finally:
        await _close(channels)


async def test_a_discord_name_on_a_server(connected: Herald, discord: FakeDiscord) -> None:
    schedule, _ = await connected.create_schedule(
        ALICE, to=f"discord:#general@{GUILD}", when="tomorrow 9am", text="Hi"
    )
    assert schedule.destination == f"discord:{GENERAL}"
    # a member of a Discord server's tenant names channels of their own server
    member = Principal(f"discord:{GENERAL[:-1]}9", tenant=f"discord:{GUILD}")
    mine, _ = await connected.create_schedule(
        member, to="discord:#random", when="tomorrow 9am", text="Hi"
    )
    assert mine.destination == "discord:223456789012345678"
    # and only theirs: another server is another tenant, its names are not looked up
    with pytest.raises(InvalidInput, match="Only the channels of your own Discord server"):
        await connected.create_schedule(
            member, to="discord:#general@700000000000000009", when="tomorrow 9am", text="x"
        )

    with pytest.raises(InvalidInput, match=r"Say which Discord server `#general` is on"):
        await connected.create_schedule(ALICE, to="discord:#general", when="tomorrow", text="x")
    with pytest.raises(InvalidInput) as nothing:
        await connected.create_schedule(
            ALICE, to=f"discord:#nope@{GUILD}", when="tomorrow 9am", text="x"
        )
    assert str(nothing.value).startswith(
        f"There is no text channel named `#nope` on Discord server {GUILD} that Herald can see"
    )
    with pytest.raises(InvalidInput, match="Herald is not on Discord server 700000000000000009"):
        await connected.create_schedule(
            ALICE, to="discord:#general@700000000000000009", when="tomorrow 9am", text="x"
        )


async def test_an_import_looks_each_name_up_once(connected: Herald, slack: FakeSlack) -> None:
    # the same name however it is written: one lookup
    spellings = ("slack:#deploys", "slack:#Deploys", " slack:#DEPLOYS")
    lines = [
        json.dumps({"to": to, "when": "every monday at 9am", "text": f"L{i}"})
        for i, to in enumerate(spellings)
    ]
    report = await import_schedules(connected, ALICE, lines)

    assert report.imported == 3
    assert {s.destination for s in await connected.list_schedules(ALICE)} == {"slack:C0DEPLOYS"}
    assert len(slack.requests_to("conversations.list")) == 2  # one walk of the pages

    bad = [*lines, json.dumps({"to": "slack:#nope", "when": "tomorrow 9am", "text": "x"})]
    with pytest.raises(ImportRejected) as rejected:
        await import_schedules(connected, ALICE, bad)
    assert rejected.value.invalid[0][0] == 4
    assert "no public channel named `#nope`" in rejected.value.invalid[0][1]


async def test_the_herald_command_takes_a_name(slack: FakeSlack, tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
        "HERALD_DATABASE_URL": f"sqlite:///{tmp_path}/herald.db",
        "HERALD_DEFAULT_TZ": "UTC",
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "SLACK_API_URL": slack.api_url,
    }

    async def herald(*args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            *args,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    code, out, err = await herald(
        "schedule", "--to", "slack:#deploys", "--when", "tomorrow 9am", "--text", "Hi", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["destination"] == "slack:C0DEPLOYS"

    code, _, err = await herald(
        "schedule", "--to", "slack:#nope", "--when", "tomorrow 9am", "--text", "Hi"
    )
    assert code == 2
    assert "There is no public channel named `#nope`" in err and SLACK_TOKEN not in err


@pytest.mark.parametrize(
    ("uri", "read"),
    [
        ("slack:#deploys", ChannelName("slack", "deploys")),
        (" Slack:#Deploys ", ChannelName("slack", "deploys")),
        (f"discord:#general@{GUILD}", ChannelName("discord", "general", GUILD)),
        ("discord:#general", ChannelName("discord", "general")),
        ("slack:C0123ABC", None),  # an id: nothing to look up
        ("slack:#", None),
        ("slack:#deploys@T0123", None),  # a server is Discord's; the parser refuses it
        ("webhook:https://example.com/#frag", None),
    ],
)
def test_what_reads_as_a_channel_name(uri: str, read: ChannelName | None) -> None:
    assert channel_name(uri) == read
