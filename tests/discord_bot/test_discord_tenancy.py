"""Discord interactions act in their server's tenant: commands, autocomplete and buttons
from one server never reach another server's schedules (the same answer as a missing
id), Manage Server makes an admin of that server only, and a scheduled message carries
the author's mention rights as ``allowed_mentions``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, create_adapter
from core.cases import Herald
from core.store import Store
from tests.discord_bot.conftest import discord_settings
from tests.discord_bot.doubles import (
    CHANNEL,
    MANAGER,
    OWNER,
    STRANGER,
    Guild,
    Interaction,
    Role,
    click,
    command,
    who,
)
from tests.discord_bot.test_discord_buttons import card

Make = Callable[..., Interaction]
ELSEWHERE = 700000000000000777  # another server with Herald in it


async def run(adapter: DiscordAdapter, name: str, inter: Interaction, **params: Any) -> str:
    cmd = command(adapter, name)
    assert await cmd._check_can_run(inter)  # type: ignore[arg-type]
    await cmd._do_call(inter, params)  # type: ignore[arg-type]
    assert inter.last.content is not None
    return inter.last.content


async def ours(herald: Herald) -> int:
    made, _ = await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="every monday at 9am", text="Ours"
    )
    assert made.id is not None
    return made.id


@pytest.mark.parametrize("name", ["show", "pause", "cancel", "skip", "resume"])
async def test_another_servers_schedule_answers_like_a_missing_one(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, name: str
) -> None:
    sid = await ours(herald)
    inter = interaction(STRANGER, guild=Guild(ELSEWHERE), permissions=MANAGER)
    text = await run(adapter, name, inter, id=sid)
    assert text == f"There is no schedule {sid} of yours."
    schedule = (await herald.show_schedule(who(OWNER), sid)).schedule
    assert (schedule.state, schedule.version) == ("active", 1)


async def test_an_edit_from_another_server_changes_nothing(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    sid = await ours(herald)
    inter = interaction(STRANGER, guild=Guild(ELSEWHERE))
    text = await run(adapter, "edit", inter, id=sid, message="Theirs now")
    assert text == f"There is no schedule {sid} of yours."
    assert (await herald.show_schedule(who(OWNER), sid)).schedule.body == "Ours"


async def test_autocomplete_lists_only_this_servers_schedules(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await ours(herald)
    # the same member in another server sees none of them
    inter = interaction(OWNER, guild=Guild(ELSEWHERE), namespace={"id": ""})
    await command(adapter, "show")._invoke_autocomplete(inter, "id", inter.namespace)  # type: ignore[arg-type]
    assert inter.response.choices == []
    here = interaction(OWNER, namespace={"id": ""})
    await command(adapter, "show")._invoke_autocomplete(here, "id", here.namespace)  # type: ignore[arg-type]
    assert len(here.response.choices) == 1


async def test_a_button_clicked_in_another_server_does_not_act(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await card(adapter, interaction)
    inter = interaction(STRANGER, guild=Guild(ELSEWHERE), permissions=MANAGER, message=message)
    await click(adapter.client, inter, "herald:schedule:cancel:1")
    assert "There is no schedule 1 of yours." in str(inter.last.content)
    assert (await herald.show_schedule(who(OWNER), 1)).schedule.state == "active"


async def test_manage_server_makes_an_admin_of_that_server_only(
    sqlite_url: str, nowhere_near_discord: str, store: Store, herald: Herald
) -> None:
    settings = discord_settings(
        sqlite_url, nowhere_near_discord, HERALD_DISCORD_ADMINS_FROM_PERMISSION=True
    )
    adapter = create_adapter(settings, herald)
    try:
        sid = await ours(herald)
        elsewhere = Interaction(
            adapter.client, STRANGER, guild=Guild(ELSEWHERE), permissions=MANAGER
        )
        await run(adapter, "list", elsewhere, everyone=True)
        assert (await herald.actor(who(STRANGER, ELSEWHERE))).is_admin
        assert (
            "no schedule"
            in (
                await run(
                    adapter,
                    "show",
                    Interaction(
                        adapter.client, STRANGER, guild=Guild(ELSEWHERE), permissions=MANAGER
                    ),
                    id=sid,
                )
            ).lower()
        )
        assert not (await herald.actor(who(STRANGER))).is_admin
    finally:
        await adapter.stop()


async def test_a_message_notifies_whom_its_author_could(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    guild = Guild(roles=[Role(55, mentionable=True), Role(66)])
    text = "@everyone <@&55> <@&66> ship it"
    await run(adapter, "create", interaction(OWNER, guild=guild), when="in 1 hour", message=text)
    loud = discord.Permissions(view_channel=True, send_messages=True, mention_everyone=True)
    await run(
        adapter,
        "create",
        interaction(STRANGER, guild=guild, permissions=loud),
        when="in 1 hour",
        message=text + " now",  # the same text would be a duplicate (issue 41)
    )
    quiet, boss = (
        await herald.list_schedules(who(OWNER)),
        await herald.list_schedules(who(STRANGER)),
    )
    assert quiet[0].options["allowed_mentions"] == {"parse": ["users"], "roles": ["55"]}
    assert boss[0].options["allowed_mentions"] == {"parse": ["users", "roles", "everyone"]}
