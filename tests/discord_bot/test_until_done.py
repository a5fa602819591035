"""Until done on Discord (issue 40): ``/schedule create`` and ``edit`` with the ladder's
options, and the Done button under a delivered occurrence, clicked the way discord.py
dispatches it; the occurrence sent, nagged and edited by the dispatcher (ManualClock,
drain) through core's Discord channel against the local fake of Discord's API, on
SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest

from bot.discord_bot import DiscordAdapter, create_adapter, ladders
from core import until_done
from core.cases import Herald
from core.channels.discord import DiscordChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.settings import Settings
from core.store import Store
from tests.discord_bot.conftest import TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    CHANNEL,
    OTHER_CHANNEL,
    OWNER,
    STRANGER,
    Channel,
    Guild,
    Interaction,
    click,
    command,
    in_dm,
    message_from,
    who,
)
from tests.fakes.discord_app import FakeDiscordApp

Make = Callable[..., Interaction]
OTHER_GUILD = 700000000000000002


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url"))


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        server.add_user(str(OWNER))
        server.add_user(str(ADMIN))
        yield server


@pytest.fixture
def settings(db_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(db_url, fake.api_url, HERALD_SWEEP_SECONDS=3600)


@pytest.fixture
async def adapter(
    settings: Settings, store: Store, clock: ManualClock
) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(settings, Herald(store, settings, clock))
    try:
        yield made
    finally:
        await made.stop()


@pytest.fixture
def interaction(adapter: DiscordAdapter) -> Make:
    def make(*args: Any, **kwargs: Any) -> Interaction:
        return Interaction(adapter.client, *args, **kwargs)

    return make


@pytest.fixture
async def dispatcher(adapter: DiscordAdapter, fake: FakeDiscordApp) -> AsyncIterator[Dispatcher]:
    channel = DiscordChannel(TOKEN, base_url=fake.api_url, timeout=2.0)
    try:
        yield Dispatcher(
            adapter.herald.store,
            {"discord": channel},
            clock=adapter.herald.clock,
            config=DispatcherConfig(max_lateness=3600),
        )
    finally:
        await channel.close()


LADDER = {
    "when": "in 1 minute",
    "message": "Check the backups",
    "nag": "15m",
    "escalate_to": f"<@{ADMIN}>",
    "escalate_after": "1h",
}


async def create(adapter: DiscordAdapter, make: Make, **options: Any) -> Interaction:
    inter = make()
    await command(adapter, "create")._do_call(inter, {**LADDER, **options})  # type: ignore[arg-type]
    return inter


def posted(fake: FakeDiscordApp) -> list[dict[str, Any]]:
    return list(fake.channels[str(CHANNEL)].messages)


def done_id(message: dict[str, Any]) -> str:
    [row] = message["components"]
    [button] = row["components"]
    assert button["label"] == "Done" and button["style"] == 3
    return str(button["custom_id"])


async def test_create_with_a_ladder_says_it_in_words(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    inter = await create(adapter, interaction)

    text = str(inter.last.content)
    assert text.startswith("Scheduled."), text
    assert (
        f"**Until done:** until done, nag every 15 minutes, escalate to <@{ADMIN}> after 1 hour"
        in text
    )
    schedule = (await adapter.herald.show_schedule(who(OWNER), 1)).schedule
    assert schedule.options[until_done.OPTION] == {
        "nag": 900,
        "levels": [{"to": [f"discord:@{ADMIN}"], "after": 3600}],
    }


async def test_done_in_the_channel_stops_the_ladder_and_the_message_is_edited(
    adapter: DiscordAdapter,
    interaction: Make,
    fake: FakeDiscordApp,
    dispatcher: Dispatcher,
    clock: ManualClock,
) -> None:
    await create(adapter, interaction)
    clock.advance(60)
    assert (await dispatcher.drain()).outcomes["delivered"] == 1
    [message] = posted(fake)
    custom_id = done_id(message)
    before = copy.deepcopy(message)  # as a client not yet refreshed shows it, Done and all
    clock.advance(15 * 60)
    assert (await dispatcher.drain()).outcomes["delivered"] == 1  # nag 1, a reply
    nag = posted(fake)[1]
    assert nag["message_reference"]["message_id"] == message["id"]
    assert nag["content"].startswith("Still not done: Check the backups")

    clicked = interaction(STRANGER, message=message_from(adapter.client, message))
    await click(adapter.client, clicked, custom_id)

    assert [a.kind for a in clicked.log] == ["defer"]  # the dispatcher edits the message
    assert (await dispatcher.drain()).outcomes["delivered"] == 1  # the done step
    edited = posted(fake)[0]  # the same message, edited (PATCH)
    assert edited["id"] == message["id"]
    assert edited["content"].startswith("Check the backups")
    assert f"✅ Done by <@{STRANGER}> at 12:16" in edited["content"]
    assert edited["components"] == []

    clock.advance(3 * 3600)  # past every nag and the escalation: none is sent
    assert (await dispatcher.drain()).outcomes["delivered"] == 0
    assert len(posted(fake)) == 2 and str(ADMIN) not in fake.dms

    again = interaction(OWNER, message=message_from(adapter.client, before))
    await click(adapter.client, again, custom_id)
    assert [(a.kind, a.ephemeral) for a in again.log] == [("defer", False), ("followup", True)]
    assert str(again.last.content).startswith(f"Already done by <@{STRANGER}> at <t:")


async def test_done_from_another_server_or_channel_is_refused(
    adapter: DiscordAdapter,
    interaction: Make,
    fake: FakeDiscordApp,
    dispatcher: Dispatcher,
    clock: ManualClock,
) -> None:
    await create(adapter, interaction)
    clock.advance(60)
    await dispatcher.drain()
    [message] = posted(fake)
    custom_id = done_id(message)
    job_id = int(custom_id.rsplit(":", 1)[1])

    elsewhere = Guild(OTHER_GUILD)
    outsider = interaction(
        STRANGER,
        guild=elsewhere,
        channel=Channel(OTHER_CHANNEL, elsewhere, {}),
        message=message_from(adapter.client, message),
    )
    await click(adapter.client, outsider, custom_id)
    assert outsider.last.ephemeral
    assert outsider.last.content == f"There is no message {job_id} to mark done."

    seen = message_from(adapter.client, message)
    aside = interaction(STRANGER, channel=Channel(OTHER_CHANNEL, Guild(), {}), message=seen)
    await click(adapter.client, aside, custom_id)
    assert aside.last.ephemeral and "can mark it done" in str(aside.last.content)

    in_dm(stranger := interaction(STRANGER, message=seen))  # not whom it was sent to
    await click(adapter.client, stranger, custom_id)
    assert stranger.last.ephemeral and stranger.last.kind == "followup"

    assert await adapter.herald.awaiting_done(who(OWNER))  # still waiting for its Done
    assert posted(fake)[0]["content"] == "Check the backups"


async def test_edit_changes_the_ladder_and_until_done_false_ends_it(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    await create(adapter, interaction)
    edit = command(adapter, "edit")

    nag_off = interaction()
    await edit._do_call(nag_off, {"id": "1", "nag": "off", "escalate_after": "2h"})  # type: ignore[arg-type]
    assert f"**Until done:** until done, escalate to <@{ADMIN}> after 2 hours" in str(
        nag_off.last.content
    ), nag_off.last.content

    plain = interaction()
    await edit._do_call(plain, {"id": "1", "until_done": False})  # type: ignore[arg-type]
    assert "Until done" not in str(plain.last.content)
    schedule = (await adapter.herald.show_schedule(who(OWNER), 1)).schedule
    assert until_done.OPTION not in schedule.options


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"escalate_to": None}, "Say whom to escalate to"),
        ({"escalate_after": None}, "Say when to escalate"),
        ({"nag": "1m"}, "Nags come at most every 5 minutes"),
        ({"until_done": False}, "`until_done:False` sends the message plainly"),
        ({"escalate2_after": "30m", "escalate2_to": f"<@{OWNER}>"}, "later than the one before"),
    ],
)
async def test_a_ladder_that_does_not_hold_is_refused_in_a_sentence(
    adapter: DiscordAdapter, interaction: Make, options: dict[str, Any], words: str
) -> None:
    given = {k: v for k, v in {**LADDER, **options}.items() if v is not None}
    inter = interaction()
    await command(adapter, "create")._do_call(inter, given)  # type: ignore[arg-type]
    assert inter.last.ephemeral and words in str(inter.last.content), inter.last.content
    assert await adapter.herald.list_schedules(who(OWNER)) == []


def test_the_ladder_from_options() -> None:
    assert ladders.ladder(None, None, [(None, None)]) is None
    assert ladders.ladder(True, None, []) == {"nag": None, "escalate": []}
    assert ladders.ladder(False, None, []) is False
    was = until_done.UntilDone(
        None,
        (
            until_done.Level(("discord:@1",), timedelta(hours=1)),
            until_done.Level(("discord:@2",), timedelta(hours=2)),
        ),
    )
    # a new nag keeps both levels; escalate_to:none drops the first and the second
    assert ladders.ladder(None, "20m", [(None, None), (None, None)], was=was) == {
        "nag": "20m",
        "escalate": [
            {"to": ["discord:@1"], "after": 3600},
            {"to": ["discord:@2"], "after": 7200},
        ],
    }
    assert ladders.ladder(None, None, [([], None), (None, None)], was=was) == {
        "nag": None,
        "escalate": [],
    }
    with pytest.raises(InvalidInput, match="comes after the escalation before it"):
        ladders.ladder(True, None, [(None, None), (["discord:@2"], "2h")])
