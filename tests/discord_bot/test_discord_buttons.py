"""Cancel and Edit under a schedule card: clicks and the Edit form, dispatched the way
discord.py dispatches them (its view store, the message's real components)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import discord

from bot.discord_bot import DiscordAdapter
from bot.discord_bot.components import EditForm
from core.cases import Herald
from tests.discord_bot.doubles import (
    ADMIN,
    OWNER,
    STRANGER,
    Interaction,
    click,
    command,
    message_with,
    submit,
    who,
)

#: Another member's schedule of the same tenant is refused for the role (issue 33).
CHANGE = "Schedule 1 is another member's: only its owner or an admin can change it."
SEE = "Schedule 1 is another member's: only its owner, operators and admins can see it."

Make = Callable[..., Interaction]


async def card(
    adapter: DiscordAdapter, make: Make, when: str = "every day at 10:00"
) -> discord.Message:
    """Create a schedule with /schedule create; the card it answered, as a message."""
    inter = make()
    await command(adapter, "create")._do_call(inter, {"when": when, "message": "Daily"})  # type: ignore[arg-type]
    assert inter.last.view is not None
    return message_with(adapter.client, inter.last.view, str(inter.last.content))


async def test_cancel_replaces_the_card(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await card(adapter, interaction)
    inter = interaction(message=message)

    await click(adapter.client, inter, "herald:schedule:cancel:1")

    [deferred, edited] = inter.log
    assert deferred.kind == "defer" and edited.kind == "edit"
    assert str(edited.content).startswith("Cancelled: nothing more will be sent.")
    assert "· cancelled ·" in str(edited.content) and edited.view is None
    detail = await herald.show_schedule(who(OWNER), 1)
    assert detail.schedule.state == "cancelled"


async def test_someone_elses_click_is_refused_to_them_alone(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await card(adapter, interaction)
    inter = interaction(STRANGER, message=message)

    await click(adapter.client, inter, "herald:schedule:cancel:1")

    assert [(a.kind, a.ephemeral) for a in inter.log] == [("defer", False), ("followup", True)]
    assert inter.last.content == CHANGE
    assert (await herald.show_schedule(who(OWNER), 1)).schedule.state == "active"


async def paused_card(adapter: DiscordAdapter, make: Make) -> discord.Message:
    """Schedule, then /schedule pause it; the reply it answered, as a message."""
    await card(adapter, make)
    inter = make()
    await command(adapter, "pause")._do_call(inter, {"id": "1"})  # type: ignore[arg-type]
    assert str(inter.last.content).startswith("Paused") and inter.last.view is not None
    return message_with(adapter.client, inter.last.view, str(inter.last.content))


async def test_pause_offers_resume_and_resume_offers_pause(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await paused_card(adapter, interaction)
    assert [c.custom_id for c in message.components[0].children] == [  # type: ignore[union-attr]
        "herald:schedule:edit:1",
        "herald:schedule:resume:1",
        "herald:schedule:cancel:1",
    ]
    resumed = interaction(message=message)
    await click(adapter.client, resumed, "herald:schedule:resume:1")
    assert str(resumed.last.content).startswith("Resumed")
    assert resumed.last.custom_ids == [
        "herald:schedule:edit:1",
        "herald:schedule:pause:1",
        "herald:schedule:send-now:1",  # active again: its next send may go now
        "herald:schedule:cancel:1",
    ]
    assert (await herald.show_schedule(who(OWNER), 1)).schedule.state == "active"

    again = interaction(message=message_with(adapter.client, resumed.last.view))
    await click(adapter.client, again, "herald:schedule:pause:1")
    assert "herald:schedule:resume:1" in again.last.custom_ids
    assert (await herald.show_schedule(who(OWNER), 1)).schedule.state == "paused"


async def test_someone_elses_resume_is_refused(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await paused_card(adapter, interaction)
    inter = interaction(STRANGER, message=message)

    await click(adapter.client, inter, "herald:schedule:resume:1")

    assert inter.last.content == CHANGE
    assert (await herald.show_schedule(who(OWNER), 1)).schedule.state == "paused"


async def test_edit_opens_a_prefilled_form_and_applies_it(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await card(adapter, interaction)
    inter = interaction(message=message)

    await click(adapter.client, inter, "herald:schedule:edit:1")

    [opened] = inter.log
    form = opened.modal
    assert isinstance(form, EditForm) and form.custom_id == "herald:schedule:form:1:1"
    assert (form.when.default, form.text.default) == ("every day at 10:00", "Daily")

    sent = interaction()
    await submit(adapter.client, sent, form, when="every day at 11:30", text="Daily")

    assert [a.kind for a in sent.log] == ["defer", "followup"] and sent.last.ephemeral
    assert str(sent.last.content).startswith("Changed.")
    stamp = int(datetime(2026, 3, 3, 11, 30, tzinfo=UTC).timestamp())
    assert f"<t:{stamp}:F>" in str(sent.last.content)
    schedule = (await herald.show_schedule(who(OWNER), 1)).schedule
    assert (schedule.expression, schedule.body) == ("every day at 11:30", "Daily")


async def test_a_form_opened_before_a_change_is_refused(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    message = await card(adapter, interaction)
    opener = interaction(message=message)
    await click(adapter.client, opener, "herald:schedule:edit:1")
    form = opener.log[0].modal
    await herald.edit_schedule(who(ADMIN), 1, text="Changed by an admin")

    sent = interaction()
    await submit(adapter.client, sent, form, when="every day at 10:00", text="Mine")

    assert str(sent.last.content).startswith("Schedule 1 is at version 2, not 1")
    schedule = (await herald.show_schedule(who(OWNER), 1)).schedule
    assert schedule.body == "Changed by an admin"


async def test_an_untouched_form_changes_nothing(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    message = await card(adapter, interaction)
    opener = interaction(message=message)
    await click(adapter.client, opener, "herald:schedule:edit:1")

    sent = interaction()
    await submit(adapter.client, sent, opener.log[0].modal, when="every day at 10:00", text="Daily")

    assert sent.last.content == "Nothing changed: schedule #1 stays as it was."


async def test_edit_on_a_schedule_one_cannot_see(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    message = await card(adapter, interaction)
    inter = interaction(STRANGER, message=message)

    await click(adapter.client, inter, "herald:schedule:edit:1")

    assert [(a.kind, a.ephemeral) for a in inter.log] == [("message", True)]
    assert inter.last.content == SEE
