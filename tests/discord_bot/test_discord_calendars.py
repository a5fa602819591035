"""Calendars from Discord: ``skip_calendar:`` and ``… except holidays from URL`` on
``/schedule create``, and the admins' ``/schedule feed add|list|remove``; driven with
interaction doubles, calendars from a local .ics server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import discord

from bot.discord_bot import DiscordAdapter
from core.cases import Herald
from core.models import JobState
from core.store import Store
from tests.discord_bot.doubles import ADMIN, CHANNEL, OWNER, Interaction, command, who
from tests.fakes.ics import ICSServer
from tests.support.calendars import data
from tests.support.store import audit_trail

Make = Callable[..., Interaction]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def feed_command(adapter: DiscordAdapter, name: str) -> discord.app_commands.Command[Any, ..., Any]:
    """``/schedule feed <name>``."""
    group = adapter.client.tree.get_command("schedule")
    assert isinstance(group, discord.app_commands.Group)
    feed = group.get_command("feed")
    assert isinstance(feed, discord.app_commands.Group)
    found = feed.get_command(name)
    assert isinstance(found, discord.app_commands.Command)
    return found


async def run(
    cmd: discord.app_commands.Command[Any, ..., Any], inter: Interaction, **params: Any
) -> str:
    """Checks, then the callback, as the tree runs them; the ephemeral follow-up's text."""
    assert await cmd._check_can_run(inter)  # type: ignore[arg-type]
    await cmd._do_call(inter, params)  # type: ignore[arg-type]
    last = inter.log[-1]
    assert last.kind == "followup" and last.ephemeral and last.content is not None
    return last.content


async def skipped(herald: Herald, schedule_id: int) -> list[tuple[datetime, str | None]]:
    jobs = await herald.store.schedule_jobs(schedule_id)
    return sorted((j.occurrence_at, j.last_error) for j in jobs if j.state == JobState.SKIPPED)


def day(at: datetime) -> str:
    return f"<t:{int(at.timestamp())}:D>"


# --- skip calendars on /schedule create ------------------------------------------------


async def test_the_skip_calendar_option_skips_holidays_and_the_reply_names_them(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, ics: ICSServer
) -> None:
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    await herald.set_timezone(who(OWNER), "Europe/Berlin")
    text = await run(
        command(adapter, "create"),
        interaction(),
        when="every weekday at 9am",
        message="Standup",
        skip_calendar=url,
    )

    assert text.startswith("Scheduled.")
    assert (
        "**Skips:** the event dates of 1 calendar; next skipped: "
        f"{day(utc(2026, 4, 3, 7))} (Good Friday), {day(utc(2026, 4, 6, 7))} (Easter Monday), "
        f"{day(utc(2026, 5, 1, 7))} (Labour Day)"
    ) in text
    [schedule] = await herald.list_schedules(who(OWNER))
    assert (await skipped(herald, schedule.id))[:2] == [
        (utc(2026, 4, 3, 7), "Skipped: Good Friday"),
        (utc(2026, 4, 6, 7), "Skipped: Easter Monday"),
    ]
    shown = await run(command(adapter, "show"), interaction(), id=schedule.id)
    assert "(Good Friday)" in shown and "Latest sends" not in shown  # nothing happened yet


async def test_except_holidays_from_a_url_in_when_does_the_same(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, ics: ICSServer
) -> None:
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    text = await run(
        command(adapter, "create"),
        interaction(),
        when=f"every weekday at 9am except holidays from {url}",
        message="Standup",
    )

    assert "every weekday at 09:00 (UTC)" in text and "(Good Friday)" in text
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.expression == "every weekday at 9am"
    assert (utc(2026, 4, 3, 9), "Skipped: Good Friday") in await skipped(herald, schedule.id)


async def test_a_calendar_that_cannot_be_read_schedules_nothing(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, ics: ICSServer
) -> None:
    create = command(adapter, "create")
    gone = f"{ics.url}/gone.ics"
    text = await run(create, interaction(), when="every day at 9", message="x", skip_calendar=gone)
    assert text == f"Fetching {gone} answered HTTP 404."
    text = await run(create, interaction(), when="every day at 9 except holidays", message="x")
    assert "needs the calendar to read the dates from" in text
    assert await herald.list_schedules(who(OWNER)) == []


async def test_when_autocomplete_reads_the_phrase(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    inter = interaction(namespace={"when": "daily at 9 except holidays from https://x.org/h"})
    await command(adapter, "create")._invoke_autocomplete(inter, "when", inter.namespace)  # type: ignore[arg-type]
    [(label, value)] = inter.response.choices
    assert label.startswith("every day at 09:00 (UTC)") and "except a calendar's" in label
    assert value == "daily at 9 except holidays from https://x.org/h"


# --- /schedule feed ---------------------------------------------------------------------


async def test_an_admin_subscribes_this_channel_to_a_feed(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, ics: ICSServer
) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    text = await run(
        feed_command(adapter, "add"),
        interaction(ADMIN),
        calendar=url,
        before="10m",
        template="{event.summary} in 10 minutes",
    )

    assert text.startswith("Feed #1: a reminder 10 minutes before each event of")
    assert f"in <#{CHANNEL}>" in text
    reminders = await herald.list_schedules(who(ADMIN), state="active")
    assert reminders and {s.destination for s in reminders} == {f"discord:{CHANNEL}"}
    first = min(reminders, key=lambda s: s.starts_at)
    assert (first.starts_at, first.body) == (utc(2026, 3, 2, 14, 20), "Team stand-up in 10 minutes")

    listed = await run(feed_command(adapter, "list"), interaction(ADMIN))
    assert f"**#1** · 10 minutes before each event of calendar 1 · <#{CHANNEL}>" in listed
    removed = await run(feed_command(adapter, "remove"), interaction(ADMIN), id=1)
    assert removed == f"Feed #1 removed; {len(reminders)} waiting reminders cancelled."
    assert await herald.list_schedules(who(ADMIN), state="active") == []


async def test_only_admins_may_add_or_remove_feeds(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, store: Store, ics: ICSServer
) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    add = feed_command(adapter, "add")
    text = await run(add, interaction(OWNER), calendar=url)
    assert text == "Only an admin can subscribe to event feeds."
    assert await herald.list_feeds(who(ADMIN)) == []
    assert await herald.list_schedules(who(OWNER)) == []

    await run(add, interaction(ADMIN), calendar=url)
    text = await run(feed_command(adapter, "remove"), interaction(OWNER), id=1)
    assert text == "There is no feed 1 of yours."
    assert len(await herald.list_feeds(who(ADMIN))) == 1
    refused = [
        (a.actor, a.action)
        for key in ("", "1")
        for a in await audit_trail(store, "feed", key)
        if a.action.endswith(".denied")
    ]
    assert refused == [
        (f"discord:{OWNER}", "feed.add.denied"),
        (f"discord:{OWNER}", "feed.remove.denied"),
    ]


async def test_a_bad_lead_time_is_explained(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(
        feed_command(adapter, "add"),
        interaction(ADMIN),
        calendar="https://x.org/a.ics",
        before="soon",
    )
    assert text == "'soon' is not a lead time: write e.g. 10m, 1h or 1d."
    assert await herald.list_feeds(who(ADMIN)) == []
