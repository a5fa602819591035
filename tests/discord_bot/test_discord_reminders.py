"""``/schedule create to:me`` or ``to:@someone`` (a reminder by direct message), and the
Snooze and Done buttons core's Discord channel puts under a delivered reminder, clicked
in a direct message the way discord.py dispatches a click (its view store, the message's
real components)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from bot.discord_bot import DiscordAdapter
from bot.discord_bot.reminders import read_to
from core.cases import Herald
from core.channels.discord import reminder_row
from core.clock import ManualClock
from core.errors import InvalidInput
from core.reminders import ASKED_BY
from tests.discord_bot.doubles import (
    BOT,
    GUILD,
    OWNER,
    STRANGER,
    Interaction,
    click,
    command,
    in_dm,
    message_from,
    who,
)
from tests.support.store import audit_trail

Make = Callable[..., Interaction]
OUTSIDER = 800000000000000099


async def create(adapter: DiscordAdapter, inter: Interaction, **params: Any) -> str:
    cmd = command(adapter, "create")
    assert await cmd._check_can_run(inter)  # type: ignore[arg-type]
    await cmd._do_call(inter, params)  # type: ignore[arg-type]
    assert inter.last.kind == "followup" and inter.last.ephemeral
    return str(inter.last.content)


@pytest.mark.parametrize(
    ("text", "user"),
    [("me", OWNER), ("ME", OWNER), (f"<@{STRANGER}>", STRANGER), (f"<@!{STRANGER}>", STRANGER)],
)
def test_to_reads_me_mentions_and_ids(text: str, user: int) -> None:
    assert read_to(text, OWNER) == user
    assert read_to(str(STRANGER), OWNER) == STRANGER


def test_to_refuses_a_name() -> None:
    with pytest.raises(InvalidInput, match="cannot tell who 'bob' is"):
        read_to("bob", OWNER)


async def test_to_me_schedules_a_direct_message(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, clock: ManualClock
) -> None:
    text = await create(adapter, interaction(), when="in 10 minutes", message="stretch", to="me")
    assert text.startswith("Reminder for you scheduled")
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.destination == f"discord:@{OWNER}" and schedule.tenant == f"discord:{GUILD}"
    assert schedule.next_run_at == clock.now() + timedelta(minutes=10)
    assert ASKED_BY not in schedule.options


async def test_to_a_member_of_the_server_says_so_and_records_them(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    make = interaction()
    text = await create(
        adapter, make, when="tomorrow at 9", message="the deck", to=f"<@{STRANGER}>"
    )
    assert text.startswith(f"Reminder for <@{STRANGER}> scheduled")
    assert "they will see that you asked" in text
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.destination == f"discord:@{STRANGER}"
    assert schedule.options[ASKED_BY] == f"discord:{OWNER}"
    member = await herald.store.get_member(f"discord:{GUILD}", f"discord:{STRANGER}")
    assert member is not None and member.display_name == "Sam"
    # the member hears of it at once, by direct message, and who asked
    assert make.guild.members[STRANGER].direct == [
        f"<@{OWNER}> scheduled a reminder for you: Herald will send it here, in this direct "
        "message."
    ]


async def test_a_member_whose_messages_are_closed_is_scheduled_and_the_asker_told(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    make = interaction()
    make.guild.members[STRANGER].closed = True
    text = await create(adapter, make, when="tomorrow at 9", message="x", to=f"<@{STRANGER}>")
    assert text.startswith(f"Reminder for <@{STRANGER}> scheduled")
    assert "Herald could not tell them now" in text and "code 50007" in text
    assert len(await herald.list_schedules(who(OWNER))) == 1


@pytest.mark.parametrize(
    ("to", "extra", "problem"),
    [
        (str(OUTSIDER), {}, "not a member of this server"),
        (f"<@{BOT}>", {}, "is a bot"),
        ("bob", {}, "cannot tell what 'bob' is"),
        ("me", {"channel": object()}, "not both"),
    ],
)
async def test_refused_reminders_change_nothing(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    to: str,
    extra: dict[str, Any],
    problem: str,
) -> None:
    text = await create(adapter, interaction(), when="in 1 hour", message="hi", to=to, **extra)
    assert problem in text
    assert await herald.list_schedules(who(OWNER)) == []
    assert await herald.store.get_member(f"discord:{GUILD}", f"discord:{OUTSIDER}") is None


async def _delivered(adapter: DiscordAdapter, herald: Herald, make: Make, to: str = "me") -> Any:
    """A reminder scheduled by OWNER, as the message core's channel posts it."""
    await create(adapter, make(), when="in 10 minutes", message="stretch", to=to)
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.id is not None
    payload = {"content": "stretch", "components": [reminder_row(schedule.id)]}
    return schedule.id, message_from(adapter.client, payload)


async def test_snooze_in_the_dm_makes_a_one_off_and_edits_the_reminder(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, clock: ManualClock
) -> None:
    sid, message = await _delivered(adapter, herald, interaction)
    inter = in_dm(interaction(OWNER, message=message))

    await click(adapter.client, inter, f"herald:reminder:1h:{sid}")

    [deferred, edited] = inter.log
    assert deferred.kind == "defer" and edited.kind == "edit"
    assert str(edited.content).startswith("stretch\n-# 💤 Snoozed") and edited.view is None
    snoozed = [s for s in await herald.list_schedules(who(OWNER)) if s.id != sid]
    assert [(s.body, s.destination) for s in snoozed] == [("stretch", f"discord:@{OWNER}")]
    assert snoozed[0].next_run_at == clock.now() + timedelta(hours=1)
    assert snoozed[0].tenant == f"discord:{GUILD}"  # the reminder's server, not the DM


async def test_done_removes_the_buttons(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    sid, message = await _delivered(adapter, herald, interaction)
    inter = in_dm(interaction(OWNER, message=message))
    await click(adapter.client, inter, f"herald:reminder:done:{sid}")
    assert inter.last.kind == "edit" and "✅ Done." in str(inter.last.content)
    assert inter.last.view is None
    trail = await audit_trail(herald.store, "schedule", str(sid))
    assert trail[-1].action == "reminder.done"


async def test_someone_elses_reminder_button_is_refused_to_them_alone(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    sid, message = await _delivered(adapter, herald, interaction, to=f"<@{STRANGER}>")
    inter = in_dm(interaction(OWNER, message=message))  # asked for it; not theirs
    await click(adapter.client, inter, f"herald:reminder:15m:{sid}")
    assert [(a.kind, a.ephemeral) for a in inter.log] == [("defer", False), ("followup", True)]
    assert "no reminder" in str(inter.last.content)
    assert len(await herald.list_schedules(who(OWNER))) == 1
    # the person it was for may snooze it: their own one-off, in the server's tenant
    theirs = in_dm(interaction(STRANGER, message=message))
    await click(adapter.client, theirs, f"herald:reminder:15m:{sid}")
    assert theirs.last.kind == "edit"
    [snoozed] = await herald.list_schedules(who(STRANGER))
    assert snoozed.destination == f"discord:@{STRANGER}"
