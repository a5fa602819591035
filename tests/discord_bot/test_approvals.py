"""Approvals on Discord (issue 40): a member's message into an announcement channel is
saved awaiting approval and says so; the approvers hear of it by direct message and in
the alert channel, with Approve and Reject (a form asking why); a decision edits the
message and tells the author; nobody approves their own; ``/schedule approvals``. Clicks
and the form dispatched the way discord.py dispatches them, against the local fake of
Discord's API, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, approvals, create_adapter
from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings
from core.store import Store
from tests.discord_bot.conftest import ALERTS, TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    CHANNEL,
    GUILD,
    OWNER,
    STRANGER,
    Channel,
    Guild,
    Interaction,
    click,
    command,
    in_dm,
    message_from,
    submit,
    who,
)
from tests.fakes.discord_app import FakeDiscordApp

Make = Callable[..., Interaction]
HELD = (
    f"Held for approval: it goes to <#{CHANNEL}>, an announcement channel. "
    "Nothing is sent until an approver approves it."
)
APPROVE = f"herald:approval:approve:{GUILD}:1"
REJECT = f"herald:approval:reject:{GUILD}:1"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url"))


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        server.add_channel(ALERTS)
        for user in (OWNER, ADMIN, STRANGER):
            server.add_user(str(user))
        yield server


@pytest.fixture
def settings(db_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(
        db_url,
        fake.api_url,
        HERALD_SWEEP_SECONDS=3600,
        HERALD_NOTICE_DIGEST=0,
        HERALD_ANNOUNCEMENT_CHANNELS=f"discord:{CHANNEL}",
        HERALD_APPROVERS=f"discord:{ADMIN},discord:{STRANGER}",
    )


@pytest.fixture
async def adapter(
    settings: Settings, store: Store, clock: ManualClock
) -> AsyncIterator[DiscordAdapter]:
    herald = Herald(store, settings, clock)
    made = create_adapter(settings, herald)
    try:
        await made.start()
        for user, name in ((ADMIN, "Root"), (STRANGER, "Sam")):  # known in the server
            await herald.sync_member(who(user), display_name=name)
        yield made
    finally:
        await made.stop()


@pytest.fixture
def interaction(adapter: DiscordAdapter) -> Make:
    def make(*args: Any, **kwargs: Any) -> Interaction:
        return Interaction(adapter.client, *args, **kwargs)

    return make


async def held(adapter: DiscordAdapter, make: Make, author: int = OWNER) -> Interaction:
    """``/schedule create`` of a message into the announcement channel by ``author``."""
    inter = make(author)
    options = {"when": "in 1 hour", "message": "Big news, everyone"}
    await command(adapter, "create")._do_call(inter, options)  # type: ignore[arg-type]
    return inter


def messages(fake: FakeDiscordApp, channel: str) -> list[dict[str, Any]]:
    return list(fake.channels[channel].messages) if channel in fake.channels else []


def dms(fake: FakeDiscordApp, user: int) -> list[dict[str, Any]]:
    return messages(fake, fake.dms.get(str(user), "none"))


def custom_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message.get("components", []) for c in row["components"]]


async def state(adapter: DiscordAdapter) -> str:
    return (await adapter.herald.show_schedule(who(OWNER), 1)).schedule.state


async def test_a_held_message_asks_the_approvers_and_approve_in_a_dm_sends_it(
    adapter: DiscordAdapter, interaction: Make, fake: FakeDiscordApp
) -> None:
    created = await held(adapter, interaction)
    assert HELD in str(created.last.content), created.last.content
    assert "awaiting approval" in str(created.last.content)
    assert await state(adapter) == "awaiting"

    assert await adapter.notices.sweep() == 3  # ADMIN, STRANGER and the alert channel
    [asked] = dms(fake, ADMIN)
    assert f"<@{OWNER}> asks to send to <#{CHANNEL}>" in asked["content"]
    assert f"because it goes to <#{CHANNEL}>, an announcement channel" in asked["content"]
    assert custom_ids(asked) == [APPROVE, REJECT]
    [alert] = messages(fake, ALERTS)
    assert custom_ids(alert) == [APPROVE, REJECT]
    [post] = fake.requests_to(f"POST /api/v10/channels/{ALERTS}/messages")
    assert post.json()["allowed_mentions"]["parse"] == []  # nobody is pinged
    assert dms(fake, OWNER) == []  # the author is never asked

    elsewhere = Guild(700000000000000002)  # an approver here, clicking in another server
    outside = interaction(
        STRANGER,
        guild=elsewhere,
        channel=Channel(700000000000000030, elsewhere, {}),
        message=message_from(adapter.client, copy.deepcopy(alert)),
    )
    await click(adapter.client, outside, APPROVE)
    assert outside.last.content == "There is no request 1 in your workspace."
    assert await state(adapter) == "awaiting"

    clicked = in_dm(interaction(ADMIN, message=message_from(adapter.client, asked)))
    await click(adapter.client, clicked, APPROVE)

    assert [a.kind for a in clicked.log] == ["defer", "edit"]
    edited = clicked.last
    assert str(edited.content).startswith(asked["content"])
    assert f"**Approved** by <@{ADMIN}> at <t:" in str(edited.content)
    assert edited.view is None  # its buttons are gone
    assert await state(adapter) == "active"

    late = interaction(STRANGER, message=message_from(adapter.client, alert))  # in the channel
    await click(adapter.client, late, APPROVE)
    assert [(a.kind, a.ephemeral) for a in late.log] == [("defer", False), ("followup", True)]
    assert late.last.content == "Request 1 is approved already: nothing to decide."

    assert await adapter.notices.sweep() == 1  # the author hears the outcome
    [told] = dms(fake, OWNER)
    assert f"<@{ADMIN}> approved your message (schedule 1)" in told["content"]


async def test_reject_asks_why_and_the_author_reads_it(
    adapter: DiscordAdapter, interaction: Make, fake: FakeDiscordApp
) -> None:
    await held(adapter, interaction)
    await adapter.notices.sweep()
    [alert] = messages(fake, ALERTS)
    seen = copy.deepcopy(alert)
    alerts = Channel(int(ALERTS), Guild(), {})

    clicked = interaction(ADMIN, channel=alerts, message=message_from(adapter.client, seen))
    await click(adapter.client, clicked, REJECT)
    [asked] = clicked.log
    assert asked.kind == "modal"
    form = asked.modal.to_dict()
    assert form["custom_id"] == f"herald:approval:form:{GUILD}:1"

    sent = interaction(ADMIN, channel=alerts, message=message_from(adapter.client, seen))
    await submit(adapter.client, sent, asked.modal, reason="Not on a  Friday")

    assert [a.kind for a in sent.log] == ["defer", "edit"]
    assert str(sent.last.content).endswith(f"**Rejected** by <@{ADMIN}>: Not on a Friday")
    assert sent.last.view is None
    assert await state(adapter) == "cancelled"

    await adapter.notices.sweep()
    [told] = dms(fake, OWNER)
    assert "rejected your message (schedule 1): Not on a Friday" in told["content"]


async def test_nobody_approves_their_own_nor_a_member_who_is_no_approver(
    adapter: DiscordAdapter, interaction: Make, fake: FakeDiscordApp
) -> None:
    created = await held(adapter, interaction, author=STRANGER)  # an approver, a member
    assert HELD in str(created.last.content)

    listed = interaction(STRANGER)
    await command(adapter, "approvals")._do_call(listed, {})  # type: ignore[arg-type]
    assert "**#1**" in str(listed.last.content) and listed.last.view is None  # their own

    view = discord.ui.View(timeout=None)
    for button in approvals.buttons(str(GUILD), 1):
        view.add_item(button)
    payload = {"content": "asks", "components": view.to_components()}
    own = interaction(STRANGER, message=message_from(adapter.client, payload))
    await click(adapter.client, own, APPROVE)
    assert own.last.ephemeral
    assert own.last.content == "Request 1 is your own: another approver decides it."

    member = interaction(OWNER, message=message_from(adapter.client, payload))
    await click(adapter.client, member, APPROVE)
    assert member.last.ephemeral and "Only the workspace's approvers" in str(member.last.content)

    assert (await adapter.herald.show_schedule(who(STRANGER), 1)).schedule.state == "awaiting"

    deciding = interaction(ADMIN)
    await command(adapter, "approvals")._do_call(deciding, {})  # type: ignore[arg-type]
    assert f"<@{STRANGER}> asks to send to <#{CHANNEL}>" in str(deciding.last.content)
    assert deciding.last.custom_ids == [APPROVE, REJECT]
