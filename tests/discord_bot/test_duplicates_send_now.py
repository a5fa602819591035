"""``/schedule create`` catches duplicates (issue 41): the same text already due into
the channel within ten minutes is said, nothing is saved, and [Create anyway] [Cancel]
decide, for the member who asked only; a save's warnings (a crowded channel) as
"⚠️ …" lines; ``/schedule send-now`` and the Send now button. Driven with interaction
doubles and clicks dispatched as discord.py dispatches them, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, actions
from bot.discord_bot.duplicates import CANCELLED, EXPIRED, NOT_YOURS, Requests
from core.cases import Herald
from core.clock import ManualClock
from tests.discord_bot.doubles import (
    ADMIN,
    BOT,
    CHANNEL,
    OTHER_CHANNEL,
    OWNER,
    SENDER,
    STRANGER,
    Guild,
    Interaction,
    click,
    message_with,
    who,
)
from tests.discord_bot.test_discord_commands import run

Make = Callable[..., Interaction]
STANDUP = "Stand-up in 5 minutes"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using the store runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


async def ada_standup(herald: Herald) -> int:
    """Ada's stand-up into #general, every weekday at 09:00."""
    await herald.sync_member(who(OWNER), display_name="Ada")
    schedule, _ = await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="every weekday at 9am", text=STANDUP
    )
    assert schedule.id is not None
    return schedule.id


async def asked_twice(adapter: DiscordAdapter, interaction: Make) -> tuple[str, list[str]]:
    """Sam schedules the same stand-up five minutes later: the warning and its buttons."""
    inter = interaction(STRANGER)
    text = await run(
        adapter, "create", inter, when="every weekday at 9:05am", message="stand-UP in 5 minutes"
    )
    return text, inter.last.custom_ids


def as_message(adapter: DiscordAdapter, inter: Interaction) -> discord.Message:
    assert inter.last.view is not None
    return message_with(adapter.client, inter.last.view, str(inter.last.content))


async def test_a_duplicate_is_said_and_create_anyway_creates_it_for_who_asked_only(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    first = await ada_standup(herald)
    inter = interaction(STRANGER)
    text = await run(
        adapter, "create", inter, when="every weekday at 9:05am", message="stand-UP in 5 minutes"
    )
    assert text == (
        f"⚠️ Ada already scheduled '{STANDUP}' into <#{CHANNEL}> every weekday at 09:00 (UTC) "
        f"(id {first}).\nNothing is scheduled yet: **Create anyway**, or **Cancel**."
    )
    create, cancel = inter.last.custom_ids
    token = create.removeprefix("herald:dup:create:")
    assert cancel == f"herald:dup:cancel:{token}" and len(create) <= 100 and len(token) >= 20
    assert await herald.list_schedules(who(STRANGER)) == []
    message = as_message(adapter, inter)

    # someone else (even an admin) cannot press them: told alone, nothing changes
    other = interaction(ADMIN, message=message)
    await click(adapter.client, other, create)
    assert [(a.kind, a.ephemeral) for a in other.log] == [("defer", False), ("followup", True)]
    assert other.last.content == NOT_YOURS
    # nor can the same user from another server
    elsewhere = interaction(STRANGER, message=message, guild=Guild(700000000000000002))
    await click(adapter.client, elsewhere, create)
    assert elsewhere.last.content == NOT_YOURS
    assert await herald.list_schedules(who(STRANGER)) == []

    pressed = interaction(STRANGER, message=message)
    await click(adapter.client, pressed, create)
    assert pressed.last.kind == "edit"
    made = str(pressed.last.content)
    assert made.startswith("Scheduled.\n**Schedule #") and "already scheduled" not in made
    assert pressed.last.custom_ids[0].startswith("herald:schedule:edit:")
    [schedule] = await herald.list_schedules(who(STRANGER))
    assert schedule.body == "stand-UP in 5 minutes" and schedule.expression.endswith("9:05am")

    again = interaction(STRANGER, message=message)
    await click(adapter.client, again, create)
    assert again.last.content == EXPIRED and again.last.view is None
    assert len(await herald.list_schedules(who(STRANGER))) == 1


async def test_cancel_saves_nothing_and_an_expired_request_says_so(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await ada_standup(herald)
    inter = interaction(STRANGER)
    await run(adapter, "create", inter, when="every weekday at 9am", message=STANDUP)
    message = as_message(adapter, inter)
    create, cancel = inter.last.custom_ids

    pressed = interaction(STRANGER, message=message)
    await click(adapter.client, pressed, cancel)
    assert (pressed.last.kind, pressed.last.content, pressed.last.view) == ("edit", CANCELLED, None)
    late = interaction(STRANGER, message=message)
    await click(adapter.client, late, create)
    assert late.last.content == EXPIRED
    assert await herald.list_schedules(who(STRANGER)) == []

    # a request waits fifteen minutes
    now = [0.0]
    adapter.client.requests.clock = lambda: now[0]
    inter = interaction(STRANGER)
    await run(adapter, "create", inter, when="every weekday at 9am", message=STANDUP)
    message = as_message(adapter, inter)
    now[0] += 15 * 60 + 1
    pressed = interaction(STRANGER, message=message)
    await click(adapter.client, pressed, inter.last.custom_ids[0])
    assert pressed.last.content == EXPIRED == "That request expired: schedule it again."
    assert await herald.list_schedules(who(STRANGER)) == []


async def test_another_text_or_another_time_is_no_duplicate(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await ada_standup(herald)
    other = await run(
        adapter, "create", interaction(STRANGER), when="every weekday at 9am", message="Retro"
    )
    later = await run(
        adapter, "create", interaction(STRANGER), when="every weekday at 9:30am", message=STANDUP
    )
    assert other.startswith("Scheduled.") and later.startswith("Scheduled.")
    assert "⚠️" not in other + later
    assert len(await herald.list_schedules(who(STRANGER))) == 2


async def test_a_reminder_and_several_places_are_checked_too(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    mine = await run(
        adapter, "create", interaction(), when="tomorrow at 9am", message="Pills", to="me"
    )
    assert mine.startswith("Reminder for you scheduled")
    again = interaction()
    text = await run(adapter, "create", again, when="tomorrow at 9:02am", message="pills", to="me")
    assert text.startswith(f"⚠️ You already scheduled 'Pills' into <@{OWNER}>'s direct messages")
    assert again.last.custom_ids[0].startswith("herald:dup:create:")
    pressed = interaction(message=as_message(adapter, again))
    await click(adapter.client, pressed, again.last.custom_ids[0])
    assert str(pressed.last.content).startswith("Reminder for you scheduled")
    assert len(await herald.list_schedules(who(OWNER))) == 2

    await ada_standup(herald)
    guild = Guild()
    guild.add_channel(CHANNEL, {STRANGER: SENDER, BOT: SENDER}, "general")
    guild.add_channel(OTHER_CHANNEL, {STRANGER: SENDER, BOT: SENDER}, "dev")
    both = interaction(STRANGER, guild=guild)
    text = await run(
        adapter, "create", both, when="every weekday at 9am", message=STANDUP, to="#general #dev"
    )
    assert text.startswith(f"⚠️ Ada already scheduled '{STANDUP}' into <#{CHANNEL}>")
    assert await herald.list_schedules(who(STRANGER)) == []


def test_requests_are_bounded_and_their_tokens_random() -> None:
    async def nothing(_: Any) -> actions.Reply:
        return actions.Reply("")

    kept = Requests(kept=3)
    tokens = [kept.keep((1, 2), nothing) for _ in range(5)]
    assert len(set(tokens)) == 5 and len(kept) == 3
    assert kept.find(tokens[0]) is None and kept.find(tokens[4]) is not None
    assert kept.take(tokens[4]) is not None and kept.take(tokens[4]) is None


# --- a save's warnings --------------------------------------------------------------------


async def test_a_crowded_channel_is_said_on_create_and_edit(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    for n in range(60):
        await herald.create_schedule(
            who(ADMIN), to=f"discord:{CHANNEL}", when="tomorrow at 9am", text=f"Report {n}"
        )
    text = await run(adapter, "create", interaction(), when="tomorrow at 9am", message="Mine")
    heading, warning = text.splitlines()[:2]
    assert heading == "Scheduled."
    assert warning.startswith(f"⚠️ 61 messages are due into <#{CHANNEL}> at 09:00;")
    assert warning.endswith("late")

    quiet = await run(adapter, "create", interaction(), when="tomorrow at 3pm", message="Later")
    assert "⚠️" not in quiet
    [later] = [s for s in await herald.list_schedules(who(OWNER)) if s.body == "Later"]
    edited = await run(adapter, "edit", interaction(), id=later.id, when="tomorrow at 9am")
    assert edited.startswith("Changed.\n⚠️ 62 messages are due into")


# --- send now -------------------------------------------------------------------------------


async def test_send_now_sends_the_next_occurrence_and_keeps_the_rule(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, clock: ManualClock
) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")
    text = await run(adapter, "send-now", interaction(), id=1)
    assert text.startswith(
        "Sending now: sending its Tue 03 Mar 2026 10:00 occurrence now; the next ones stay "
        "as planned.\n**Schedule #1** · active"
    )
    detail = await herald.show_schedule(who(OWNER), 1)
    assert [j.due_at for j in detail.jobs if j.state == "pending"][:1] == [clock.now()]
    assert detail.schedule.state == "active"
    # the card has no second Send now; the alias is the same verb
    assert "herald:schedule:send-now:1" not in text
    again = await run(adapter, "now", interaction(), id=1)
    # not sent yet: the same occurrence, still once
    assert again.startswith("Sending now: sending its Tue 03 Mar 2026 10:00 occurrence now")
    detail = await herald.show_schedule(who(OWNER), 1)
    assert [j.due_at for j in detail.jobs if j.state == "pending"].count(clock.now()) == 1

    await run(adapter, "create", interaction(), when="in 3 hours", message="Once")
    once = await run(adapter, "send-now", interaction(), id=2)
    assert once.startswith("Sending now.\n**Schedule #2**")
    one = await herald.show_schedule(who(OWNER), 2)
    assert [j.due_at for j in one.jobs] == [clock.now()]


async def test_send_now_refuses_a_paused_schedule_and_someone_elses(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")
    assert (await run(adapter, "send-now", interaction(STRANGER), id=1)) == (
        "Schedule 1 is another member's: only its owner or an admin can change it."
    )
    await run(adapter, "pause", interaction(), id=1)
    paused = await run(adapter, "send-now", interaction(), id=1)
    assert paused == "Schedule 1 is paused: resume it to send it now."


async def test_the_send_now_button_on_a_card(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, clock: ManualClock
) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")
    shown = interaction()
    await run(adapter, "show", shown, id=1)
    assert "herald:schedule:send-now:1" in shown.last.custom_ids
    pressed = interaction(message=as_message(adapter, shown))
    await click(adapter.client, pressed, "herald:schedule:send-now:1")
    assert str(pressed.last.content).startswith("Sending now: sending its")
    assert pressed.last.custom_ids == ["herald:schedule:edit:1", "herald:schedule:cancel:1"]
    detail = await herald.show_schedule(who(OWNER), 1)
    assert clock.now() in [j.due_at for j in detail.jobs]
    # a paused schedule's card offers Resume, not Send now
    paused = interaction()
    await run(adapter, "pause", paused, id=1)
    assert "herald:schedule:send-now:1" not in paused.last.custom_ids
    clock.advance(timedelta(minutes=1).total_seconds())


async def test_a_refused_create_anyway_leaves_the_buttons_working(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, clock: ManualClock
) -> None:
    await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="today at 12:05", text=STANDUP
    )
    inter = interaction(STRANGER)
    await run(adapter, "create", inter, when="today at 12:05", message=STANDUP)
    create, cancel = inter.last.custom_ids
    message = as_message(adapter, inter)
    clock.advance(timedelta(minutes=6).total_seconds())  # 12:05 has passed meanwhile

    pressed = interaction(STRANGER, message=message)
    await click(adapter.client, pressed, create)
    assert pressed.last.kind == "followup" and pressed.last.ephemeral
    assert pressed.last.content != EXPIRED and "past" in str(pressed.last.content)
    assert await herald.list_schedules(who(STRANGER)) == []
    later = interaction(STRANGER, message=message)
    await click(adapter.client, later, cancel)
    assert later.last.content == CANCELLED
