"""The /schedule command callbacks, checks and transformers, driven with interaction doubles."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import discord
import pytest
from discord import app_commands

from bot.discord_bot import DiscordAdapter, create_adapter
from core.cases import Herald
from core.clock import ManualClock
from core.store import Store
from tests.discord_bot.conftest import discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    BOT,
    CHANNEL,
    MANAGER,
    OTHER_CHANNEL,
    OWNER,
    READER,
    SENDER,
    STRANGER,
    Channel,
    Guild,
    Interaction,
    command,
    in_dm,
    who,
)
from tests.support.store import audit_trail

#: Another member's schedule of the same tenant is refused for the role (issue 33).
CHANGE = "Schedule 1 is another member's: only its owner or an admin can change it."
SEE = "Schedule 1 is another member's: only its owner, operators and admins can see it."

Make = Callable[..., Interaction]


async def run(adapter: DiscordAdapter, name: str, inter: Interaction, **params: Any) -> str:
    """Run the command as the tree does after parsing: checks, then the callback.
    Returns the reply text; asserts the interaction was deferred first, ephemerally."""
    cmd = command(adapter, name)
    assert await cmd._check_can_run(inter)  # type: ignore[arg-type]
    await cmd._do_call(inter, params)  # type: ignore[arg-type]
    first, last = inter.log[0], inter.log[-1]
    assert (first.kind, first.ephemeral, first.options["thinking"]) == ("defer", True, True)
    assert last.kind == "followup" and last.ephemeral
    assert last.content is not None and len(last.content) <= 2000
    return last.content


def t(at: datetime) -> str:
    return f"<t:{int(at.timestamp())}:F> (<t:{int(at.timestamp())}:R>)"


async def test_create_answers_ephemerally_with_discord_timestamps_and_buttons(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    inter = interaction()
    text = await run(adapter, "create", inter, when="tomorrow at 9am", message="Standup <@&1>")

    assert text.startswith("Scheduled.")
    assert "**Schedule #1** · pending · to <#700000000000000010>" in text
    assert f"**Next:** {t(datetime(2026, 3, 3, 9, 0, tzinfo=UTC))}" in text
    assert "> Standup <@&1>" in text
    # no zone of the member: the server default is used, and the reply says so
    assert "read this in **UTC** (the server default)" in text and "/schedule timezone" in text
    assert inter.last.custom_ids == ["herald:schedule:edit:1", "herald:schedule:cancel:1"]
    assert inter.last.options["allowed_mentions"].to_dict()["parse"] == []
    [schedule] = await herald.list_schedules(who(OWNER))
    assert (schedule.owner, schedule.destination) == (f"discord:{OWNER}", f"discord:{CHANNEL}")
    assert schedule.timezone == "UTC"


async def test_the_audit_log_says_it_came_through_discord(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await run(adapter, "create", interaction(), when="tomorrow at 9am", message="Standup")
    [row] = await audit_trail(herald.store, "schedule", "1")
    assert (row.actor, row.surface) == (f"discord:{OWNER}", "discord")


async def test_recurring_in_the_members_zone_shows_the_next_sends(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.set_timezone(who(OWNER), "Europe/Berlin")
    text = await run(
        adapter, "create", interaction(), when="every weekday at 9am", message="Standup"
    )

    assert "every weekday at 09:00 (Europe/Berlin)" in text
    assert f"**Next:** {t(datetime(2026, 3, 3, 8, 0, tzinfo=UTC))}" in text
    assert "**Then:** <t:1772611200:F>, <t:1772697600:F>" in text  # Wed 4, Thu 5 Mar 08:00Z
    assert "server default" not in text


async def test_the_timezone_option_goes_through_its_transformer(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    inter = interaction()
    zone = await command(adapter, "create")._params["timezone"].transform(inter, "Asia/Tokyo")
    text = await run(adapter, "create", inter, when="tomorrow at 9am", message="hi", timezone=zone)

    assert f"**Next:** {t(datetime(2026, 3, 3, 0, 0, tzinfo=UTC))}" in text
    assert "server default" not in text


async def test_unreadable_time_says_what_and_gives_an_example(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(adapter, "create", interaction(), when="blursday at noonish", message="x")

    assert text.startswith('Could not read "blursday at noonish": try "every day at 9am"')
    assert await herald.list_schedules(who(OWNER)) == []


@pytest.mark.parametrize(
    ("member", "bot", "refusal"),
    [
        (READER, SENDER, "You cannot send messages in <#700000000000000010>"),
        (SENDER, READER, "Herald cannot send messages in <#700000000000000010>"),
    ],
)
async def test_current_channel_needs_both_member_and_bot_to_send(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, member: Any, bot: Any, refusal: str
) -> None:
    inter = interaction(permissions=member, app_permissions=bot)
    text = await run(adapter, "create", inter, when="in 1 hour", message="hello")

    assert text.startswith(refusal)
    assert await herald.list_schedules(who(OWNER)) == []


@pytest.mark.parametrize(
    ("perms", "ok"),
    [
        ({OWNER: SENDER, BOT: SENDER}, True),
        ({OWNER: SENDER, BOT: READER}, False),
        ({OWNER: READER, BOT: SENDER}, False),
        ({BOT: SENDER}, False),
    ],
)
async def test_another_channel_is_checked_with_permissions_for(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, perms: Any, ok: bool
) -> None:
    guild = Guild()
    other = Channel(OTHER_CHANNEL, guild, perms)
    text = await run(
        adapter, "create", interaction(guild=guild), when="in 1 hour", message="hi", channel=other
    )

    found = await herald.list_schedules(who(OWNER))
    if ok:
        assert "to <#700000000000000020>" in text
        assert [s.destination for s in found] == [f"discord:{OTHER_CHANNEL}"]
    else:
        assert "cannot send messages in <#700000000000000020>" in text and found == []


async def test_in_a_thread_sending_in_threads_is_what_counts(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    guild = Guild()
    thread = Channel(CHANNEL, guild, {})
    thread.type = discord.ChannelType.public_thread  # type: ignore[attr-defined]
    in_threads = discord.Permissions(view_channel=True, send_messages_in_threads=True)

    inter = interaction(guild=guild, channel=thread, permissions=SENDER, app_permissions=SENDER)
    text = await run(adapter, "create", inter, when="in 1 hour", message="hi")
    assert text.startswith("You cannot send messages in <#700000000000000010>")

    inter = interaction(
        guild=guild, channel=thread, permissions=in_threads, app_permissions=in_threads
    )
    assert (await run(adapter, "create", inter, when="in 1 hour", message="hi")).startswith(
        "Scheduled."
    )


async def test_commands_refuse_direct_messages_before_the_callback(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    inter = in_dm(interaction())
    with pytest.raises(app_commands.NoPrivateMessage) as caught:
        await command(adapter, "create")._check_can_run(inter)  # type: ignore[arg-type]
    await adapter.client.tree.on_error(inter, caught.value)  # type: ignore[arg-type]

    assert inter.last.kind == "message" and inter.last.ephemeral
    assert inter.last.content == (
        "Herald's /schedule works in server channels, not in direct messages."
    )


async def test_the_check_records_the_member(
    adapter: DiscordAdapter, interaction: Make, store: Store
) -> None:
    inter = interaction(display_name="Grace")
    assert await command(adapter, "list")._check_can_run(inter)  # type: ignore[arg-type]

    member = await store.get_member(who(OWNER).tenant, f"discord:{OWNER}")
    assert member is not None and member.display_name == "Grace" and not member.platform_admin


@pytest.mark.parametrize("from_permission", [True, False])
async def test_manage_server_makes_an_admin_only_when_configured(
    store: Store,
    clock: ManualClock,
    sqlite_url: str,
    nowhere_near_discord: str,
    from_permission: bool,
) -> None:
    settings = discord_settings(
        sqlite_url, nowhere_near_discord, HERALD_DISCORD_ADMINS_FROM_PERMISSION=from_permission
    )
    herald = Herald(store, settings, clock)
    adapter = create_adapter(settings, herald)
    try:
        check = command(adapter, "list")._check_can_run
        await check(Interaction(adapter.client, STRANGER, permissions=MANAGER))  # type: ignore[arg-type]
        assert (await herald.actor(who(STRANGER))).is_admin is from_permission
        await check(Interaction(adapter.client, STRANGER, permissions=SENDER))  # type: ignore[arg-type]
        assert not (await herald.actor(who(STRANGER))).is_admin
    finally:
        await adapter.stop()


async def test_list_and_show(adapter: DiscordAdapter, interaction: Make, herald: Herald) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")
    await run(adapter, "create", interaction(), when="tomorrow at 8am", message="Once")

    listing = await run(adapter, "list", interaction())
    assert listing.splitlines()[0] == "**Your schedules** (2):"
    assert "**#2** · <t:1772524800:R> · once" in listing  # 3 Mar 08:00Z, the sooner
    assert listing.index("**#2**") < listing.index("**#1**")

    inter = interaction()
    shown = await run(adapter, "show", inter, id=1)
    assert "**Schedule #1** · active" in shown and "every day at 10:00 (UTC)" in shown
    assert inter.last.custom_ids == [
        "herald:schedule:edit:1",
        "herald:schedule:send-now:1",  # issue 41: an active schedule's next send, now
        "herald:schedule:cancel:1",
    ]

    assert await run(adapter, "show", interaction(STRANGER), id=1) == (SEE)
    assert "list is empty" in await run(adapter, "list", interaction(STRANGER))
    everyone = await run(adapter, "list", interaction(STRANGER), everyone=True)
    assert everyone == "Only operators and admins can list everyone's schedules."
    assert "(2)" in await run(adapter, "list", interaction(ADMIN), everyone=True)
    pending = await run(adapter, "list", interaction(), state="pending")
    assert pending.splitlines()[0] == "**Your pending schedules** (1):" and "**#2**" in pending
    failed = await run(adapter, "list", interaction(), state="failed")
    assert failed.startswith("Your failed list is empty")


async def test_edit_command(adapter: DiscordAdapter, interaction: Make, herald: Herald) -> None:
    await herald.set_timezone(who(OWNER), "Europe/Berlin")
    await run(adapter, "create", interaction(), when="tomorrow at 9am", message="Old")

    text = await run(adapter, "edit", interaction(), id=1, when="friday at 17:00", message="New")
    assert text.startswith("Changed.")
    assert t(datetime(2026, 3, 6, 16, 0, tzinfo=UTC)) in text and "> New" in text

    guild = Guild()
    blocked = Channel(OTHER_CHANNEL, guild, {OWNER: SENDER})
    text = await run(adapter, "edit", interaction(guild=guild), id=1, channel=blocked)
    assert text.startswith("Herald cannot send messages in <#700000000000000020>")

    text = await run(adapter, "edit", interaction(), id=1)
    assert text == "Nothing to change: give a new time, text, destination or priority."


async def test_pause_resume_skip_cancel(
    adapter: DiscordAdapter, interaction: Make, store: Store
) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")

    assert (await run(adapter, "pause", interaction(), id=1)).startswith("Paused")
    assert "none while paused" in await run(adapter, "show", interaction(), id=1)
    text = await run(adapter, "resume", interaction(), id=1)
    assert text.startswith("Resumed.") and t(datetime(2026, 3, 3, 10, tzinfo=UTC)) in text
    text = await run(adapter, "skip", interaction(), id=1)
    assert text.startswith("Skipped") and t(datetime(2026, 3, 4, 10, tzinfo=UTC)) in text

    assert (await run(adapter, "cancel", interaction(STRANGER), id=1)) == (CHANGE)
    inter = interaction()
    assert (await run(adapter, "cancel", inter, id=1)).startswith("Cancelled")
    assert inter.last.custom_ids == []  # nothing left to edit or cancel
    assert await run(adapter, "cancel", interaction(), id=1) == "Schedule 1 is already cancelled."
    # every action is audited with the Discord user id
    trail = [(a.actor, a.action) for a in await audit_trail(store, "schedule", "1")]
    verbs = ("pause", "resume", "skip", "cancel")
    assert [a for a in trail if a[0] == f"discord:{OWNER}" and a[1] != "schedule.create"] == [
        (f"discord:{OWNER}", f"schedule.{verb}") for verb in verbs
    ]
    # the other member's attempts were refused, and each refusal is in the audit log
    assert [a for a in trail if a[0] != f"discord:{OWNER}"] == [
        (f"discord:{STRANGER}", "schedule.change.denied")
    ]


async def test_admins_change_anyones_schedule(adapter: DiscordAdapter, interaction: Make) -> None:
    await run(adapter, "create", interaction(), when="every day at 10:00", message="Daily")

    assert (await run(adapter, "pause", interaction(ADMIN), id=1)).startswith("Paused")


async def test_timezone_command(adapter: DiscordAdapter, interaction: Make) -> None:
    assert "You have not set a time zone" in await run(adapter, "timezone", interaction())

    inter = interaction()
    zone = await command(adapter, "timezone")._params["zone"].transform(inter, " Europe/Berlin ")
    text = await run(adapter, "timezone", inter, zone=zone)
    assert text.startswith("Your time zone is now **Europe/Berlin**")
    assert (await run(adapter, "timezone", interaction())).startswith(
        "Your time zone is **Europe/Berlin**"
    )


async def test_a_bad_option_value_is_answered_by_the_tree(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    for name, option, value in (("timezone", "zone", "Mars/Olympus"), ("show", "id", "soon")):
        inter = interaction()
        with pytest.raises(app_commands.TransformerError) as caught:
            await command(adapter, name)._params[option].transform(inter, value)
        await adapter.client.tree.on_error(inter, caught.value)  # type: ignore[arg-type]
        assert inter.last.kind == "message" and inter.last.ephemeral
        assert value in str(inter.last.content)
        assert "Something went wrong" not in str(inter.last.content)


async def test_the_id_transformer_reads_picked_and_typed_ids(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    param = command(adapter, "cancel")._params["id"]
    for value in ("12", "#12", " #12 · next Tue 03 Mar 09:00 · Standup"):
        assert await param.transform(interaction(), value) == 12


async def test_the_whole_invocation_path(adapter: DiscordAdapter, interaction: Make) -> None:
    """Namespace -> checks -> transformers -> callback, as the tree runs a command."""
    await run(adapter, "create", interaction(), when="tomorrow at 9am", message="Hi")
    inter = interaction()
    namespace = app_commands.Namespace(inter, {}, [{"type": 3, "name": "id", "value": "#1"}])  # type: ignore[arg-type]

    await command(adapter, "show")._invoke_with_namespace(inter, namespace)  # type: ignore[arg-type]

    assert "**Schedule #1**" in str(inter.last.content)
    with pytest.raises(app_commands.NoPrivateMessage):
        await command(adapter, "show")._invoke_with_namespace(in_dm(interaction()), namespace)  # type: ignore[arg-type]


async def test_help(adapter: DiscordAdapter, interaction: Make) -> None:
    text = await run(adapter, "help", interaction())

    for name in ("create", "list", "show", "edit", "cancel", "pause", "resume", "skip"):
        assert f"{name} " in text or f"/schedule {name}" in text
    assert "`/schedule timezone [zone:]`" in text and "until set: UTC" in text
    assert "`until_done:True [nag:15m] [escalate_to:" in text  # issue 40's two features
    assert "`/schedule approvals`" in text
    # issue 41: a channel's list, private, send now
    assert "`/schedule list [channel:]`" in text and "`private:True`" in text
    assert "`send-now id:`" in text


async def test_an_unexpected_failure_is_logged_not_shown(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    herald.list_schedules = broken  # type: ignore[method-assign]
    text = await run(adapter, "list", interaction())

    assert text.startswith("Something went wrong on Herald's side") and "fire" not in text
    assert "disk on fire" in caplog.text


async def test_a_rule_without_a_time_takes_9am_and_the_reply_says_so(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(adapter, "create", interaction(), when="every weekday", message="Standup")

    assert "**When:** every weekday at 09:00 (UTC) — add 'at …' to change it" in text
    assert f"**Next:** {t(datetime(2026, 3, 3, 9, 0, tzinfo=UTC))}" in text
    edited = await run(adapter, "edit", interaction(), id=1, when="every weekday at 10am")
    assert "every weekday at 10:00 (UTC)" in edited and "add 'at" not in edited


async def test_the_zone_option_takes_cities_and_spells_out_an_ambiguous_abbreviation(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    transform = command(adapter, "timezone")._params["zone"].transform
    assert await transform(interaction(), "new york") == "America/New_York"
    assert await transform(interaction(), "São Paulo") == "America/Sao_Paulo"
    inter = interaction()
    with pytest.raises(app_commands.TransformerError) as caught:
        await transform(inter, "EST")
    await adapter.client.tree.on_error(inter, caught.value)  # type: ignore[arg-type]
    assert inter.last.content is not None
    assert "EST is ambiguous: America/New_York (Eastern time, with daylight saving)" in (
        inter.last.content
    )


@pytest.mark.parametrize("verb", ["delete", "remove"])
async def test_delete_and_remove_cancel_as_reminder_bots_say_it(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, verb: str
) -> None:
    await herald.create_schedule(who(OWNER), to=f"discord:{CHANNEL}", when="in 1 hour", text="x")
    assert (await run(adapter, verb, interaction(), id=1)).startswith("Cancelled")
    [schedule] = await herald.list_schedules(who(OWNER), state="cancelled")
    assert schedule.id == 1
