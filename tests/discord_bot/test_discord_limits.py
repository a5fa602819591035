"""Discord within its limits: /schedule refuses a message Discord would refuse, and the
Edit form never shortens a stored message."""

from __future__ import annotations

from collections.abc import Callable

import discord

from bot.discord_bot import DiscordAdapter
from bot.discord_bot.components import EditForm
from core.actors import Principal
from core.cases import Herald
from core.store import AuditEntry
from tests.discord_bot.doubles import OWNER, Interaction, submit, who
from tests.discord_bot.test_discord_commands import run

Make = Callable[..., Interaction]
WEBHOOK = "webhook:https://example.com/hook"


async def test_create_refuses_a_message_over_2000_characters(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(adapter, "create", interaction(), when="in 1 hour", message="x" * 3508)
    assert text == "Discord allows 2,000 characters in a message; this message has 3,508."
    assert await herald.list_schedules(who(OWNER)) == []


def fields(form: EditForm) -> dict[str, discord.ui.TextInput[EditForm]]:
    return {
        child.component.custom_id: child.component
        for child in form.children
        if isinstance(child, discord.ui.Label) and isinstance(child.component, discord.ui.TextInput)
    }


async def test_the_edit_form_keeps_a_3500_character_message_intact(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    body = "Quarterly notes — " * 194 + "fin"  # 3,495 characters, for a webhook
    actor = who(OWNER)
    schedule, _ = await herald.create_schedule(
        actor, to=WEBHOOK, when="every day at 10:00", text=body
    )
    form = EditForm(schedule)
    message = fields(form)["text"]
    assert (message.default, message.max_length) == (body, 4000)
    payload = form.to_dict()
    assert len(payload["title"]) <= 45 and len(payload["custom_id"]) <= 100

    await submit(adapter.client, interaction(), form, when="every day at 11:00", text=body)

    after = (await herald.show_schedule(actor, schedule.id)).schedule
    assert after.expression == "every day at 11:00" and after.body == body


async def test_a_message_the_form_cannot_hold_is_shown_and_kept(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    """A Discord schedule stored before the limits were checked (2,500 characters):
    the form has no message field to cut it into, and says how to change it."""
    actor = who(OWNER)
    schedule, _ = await herald.create_schedule(
        actor, to="discord:123456789012345678", when="every day at 10:00", text="short"
    )
    legacy = await herald.store.change_schedule(
        schedule.id,
        expected_version=1,
        values={"body": "y" * 2500},
        now=herald.clock.now(),
        audit=AuditEntry(
            actor.id, "schedule.edit", "schedule", str(schedule.id), {}, tenant=actor.tenant
        ),
    )
    form = EditForm(legacy)
    assert "text" not in fields(form)
    [note] = [c for c in form.children if isinstance(c, discord.ui.TextDisplay)]
    assert "(2,500 characters) stays as it is: this form holds 2,000" in note.content
    assert f"/schedule edit id:{schedule.id} message:" in note.content
    assert len(note.content) <= 4000

    await submit(adapter.client, interaction(), form, when="every day at 12:00")

    after = (await herald.show_schedule(actor, schedule.id)).schedule
    assert after.expression == "every day at 12:00" and after.body == "y" * 2500


async def test_the_edit_form_holds_what_every_recipient_allows(herald: Herald) -> None:
    """A webhook takes 4,000 characters, a Discord channel 2,000: the field takes 2,000."""
    schedule, _ = await herald.create_schedule(
        who(OWNER),
        to=[WEBHOOK, "discord:123456789012345678"],
        when="every day at 10:00",
        text="short",
    )
    assert fields(EditForm(schedule))["text"].max_length == 2000


async def test_the_edit_form_offers_no_template_source_as_the_message(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    actor = who(OWNER)
    admin = Principal("discord:UADMIN", actor.tenant, platform_admin=True)
    await herald.add_template(admin, "hello", "Hello {{ who }}", variables={"who": "text"})
    schedule, _ = await herald.create_schedule(
        actor,
        to=WEBHOOK,
        when="every day at 10:00",
        text="",
        template="hello",
        data={"who": "team"},
    )
    form = EditForm(schedule)
    assert "text" not in fields(form)
    [note] = [c for c in form.children if isinstance(c, discord.ui.TextDisplay)]
    assert "Sends template `hello` v1" in note.content and "data:" in note.content

    await submit(adapter.client, interaction(), form, when="every day at 11:00")

    after = (await herald.show_schedule(actor, schedule.id)).schedule
    assert after.expression == "every day at 11:00" and after.body == "Hello {{ who }}"
    assert after.options["liquid"]["data"] == {"who": "team"}
