"""``/schedule prefs`` on Discord (issue 37): shown and changed ephemerally in words, the
server's defaults for admins; ``urgent`` on ``/schedule create`` for admins and operators
only; a blocked author's refusal. Driven through the registered commands with the
interaction doubles, on SQLite (the use cases' own tests cover PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.discord_bot import DiscordAdapter
from core.cases import Herald, PreferenceChanges
from tests.discord_bot.doubles import ADMIN, OWNER, STRANGER, Interaction, User, command, who
from tests.discord_bot.test_discord_commands import run
from tests.discord_bot.test_payload_contract import check_command

Make = Callable[..., Interaction]


async def prefs(adapter: DiscordAdapter, inter: Interaction, **params: Any) -> str:
    return await run(adapter, "prefs", inter, **params)  # ephemeral, within 2,000


def test_the_prefs_command_is_within_discords_limits(adapter: DiscordAdapter) -> None:
    tree = adapter.client.tree
    payload = command(adapter, "prefs").to_dict(tree)
    check_command(payload)  # names, descriptions, option counts and choices
    names = [o["name"] for o in payload["options"]]
    assert names[:7] == [
        "place",
        "accept",
        "block",
        "unblock",
        "quiet_start",
        "quiet_end",
        "quiet_days",
    ]
    accept = next(o for o in payload["options"] if o["name"] == "accept")
    assert [c["value"] for c in accept["choices"]] == ["anyone", "admins", "self"]
    create = command(adapter, "create").to_dict(tree)
    check_command(create)
    assert "urgent" in [o["name"] for o in create["options"]]


async def test_without_options_it_shows_what_applies(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await prefs(adapter, interaction())
    assert text.startswith("**Your preferences**")
    assert "Reminders to you go to: where they were sent" in text
    assert "Who may remind you: anyone here" in text
    assert "Blocked: nobody" in text and "Quiet hours: none" in text
    assert "`/schedule prefs`" in text
    assert "Quiet hours are read in UTC, the server default" in text
    await herald.set_timezone(who(OWNER), "Europe/Berlin")
    assert "server default" not in await prefs(adapter, interaction())


async def test_options_change_them_and_the_answer_says_so(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await prefs(
        adapter,
        interaction(),
        place="dm",
        accept="admins",
        block=User(STRANGER, "Sam"),
        quiet_start="22:00",
        quiet_end="08:00",
        quiet_days="weekends",
    )
    assert text.startswith("Saved. **Your preferences**")
    assert "Reminders to you go to: your direct messages" in text
    assert "Who may remind you: only admins" in text
    assert f"Blocked: <@{STRANGER}>" in text
    assert "Quiet hours: 22:00–08:00 and weekends (UTC)" in text
    mine = await herald.preferences(who(OWNER))
    assert mine.own.place == f"discord:@{OWNER}" and mine.own.blocked == (f"discord:{STRANGER}",)
    # one end of the window alone: the rest stays as it was
    text = await prefs(adapter, interaction(), quiet_end="07:00", unblock=User(STRANGER))
    assert "Quiet hours: 22:00–07:00 and weekends (UTC)" in text and "Blocked: nobody" in text
    text = await prefs(adapter, interaction(), quiet_days="sun")  # the window stays
    assert "Quiet hours: 22:00–07:00 and sun (UTC)" in text
    text = await prefs(adapter, interaction(), quiet_start="off", place="where")
    assert "Quiet hours: sun (UTC)" in text
    assert "Reminders to you go to: where they were sent" in text


async def test_bad_values_get_one_sentence_and_change_nothing(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    for params, said in (
        ({"quiet_start": "22:00"}, "Give both quiet_start and quiet_end"),
        ({"quiet_start": "25:00", "quiet_end": "08:00"}, "is not a time of day"),
        ({"quiet_days": "caturday"}, "is not a day"),
        ({"place": "the moon"}, "'the moon' is not a place"),
        ({"place": "+1"}, "'+1' is not a place"),
        ({"block": User(OWNER)}, "Nobody can block themselves"),
        ({"hold_channels": True}, "is a tenant default"),
    ):
        text = await prefs(adapter, interaction(), accept="self", **params)
        assert said in text, (params, text)
        assert "Saved" not in text
    assert (await herald.preferences(who(OWNER))).own.accept_from is None


async def test_the_servers_defaults_are_for_admins(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await prefs(adapter, interaction(), tenant=True, hold_channels=True)
    assert text == "Only an admin can see or change the tenant's default preferences."
    text = await prefs(
        adapter, interaction(ADMIN), tenant=True, hold_channels=True, accept="admins"
    )
    assert text.startswith("Saved. **This server's defaults**")
    assert "Messages to channels in quiet hours: held too" in text
    # a member sees where a field comes from
    text = await prefs(adapter, interaction())
    assert "Who may remind you: only admins (the server's default)" in text
    tenant = await herald.tenant_preferences(who(ADMIN))
    assert tenant.hold_channels is True and tenant.accept_from == "admins"


async def test_urgent_is_for_admins_and_operators(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(
        adapter, "create", interaction(), when="in 5 minutes", message="down", urgent=True
    )
    assert text == (
        "Only admins and operators can send urgent messages: schedule it without urgent and "
        "it goes out as a normal one."
    )
    assert await herald.list_schedules(who(OWNER)) == []
    text = await run(
        adapter, "create", interaction(ADMIN), when="in 5 minutes", message="down", urgent=True
    )
    assert "**Priority:** urgent" in text
    [schedule] = await herald.list_schedules(who(ADMIN))
    assert schedule.priority == "urgent"
    text = await run(adapter, "create", interaction(ADMIN), when="in 6 minutes", message="n")
    assert "Priority" not in text  # normal goes unsaid


async def test_a_blocked_author_is_refused(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await prefs(adapter, interaction(STRANGER))  # Sam is a member of the server's tenant
    await herald.set_preferences(who(STRANGER), PreferenceChanges(block=(f"discord:{OWNER}",)))
    text = await run(
        adapter, "create", interaction(), when="in 5 minutes", message="x", to=f"<@{STRANGER}>"
    )
    assert "does not accept reminders from you" in text
    assert await herald.list_schedules(who(OWNER)) == []


async def test_the_help_names_prefs_and_urgent(adapter: DiscordAdapter, interaction: Make) -> None:
    text = await run(adapter, "help", interaction())
    assert "`/schedule prefs" in text and "tenant:True" in text and "urgent:True" in text


async def test_the_card_says_when_quiet_hours_hold_a_reminder(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    await prefs(adapter, interaction(STRANGER), quiet_start="00:00", quiet_end="23:59")
    text = await run(
        adapter, "create", interaction(), when="in 5 minutes", message="x", to=f"<@{STRANGER}>"
    )
    assert "quiet hours" in text and "23:59" in text


async def test_failure_notices_are_turned_off_and_on(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await prefs(adapter, interaction())
    assert "Told of your failed messages by direct message: yes" in text
    text = await prefs(adapter, interaction(), notices=False)
    assert text.startswith("Saved.")
    assert "Told of your failed messages by direct message: no" in text
    assert (await herald.preferences(who(OWNER))).effective.notices is False
    await prefs(adapter, interaction(), notices=True)
    assert (await herald.preferences(who(OWNER))).effective.notices is True
