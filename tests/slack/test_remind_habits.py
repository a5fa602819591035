"""/remind's habits over signed HTTP: channels typed as plain text (found by name with
``conversations.list``), /remind's own order, delete and remove, unknown commands."""

from __future__ import annotations

import pytest

from tests.fakes.slack import slack_error
from tests.slack.conftest import SlackEnv
from tests.slack.support import text_of


async def test_a_channel_typed_as_plain_text_is_found_by_name(env: SlackEnv) -> None:
    await env.send.command("#general tomorrow at 9am: Coffee", user="U2", channel="C0RANDOM")
    shown = text_of(await env.reply())
    [schedule] = await env.schedules()
    assert schedule.destination == "slack:C0123" and schedule.body == "Coffee"
    assert "<#C0123>" in shown
    [listed] = env.slack.calls("conversations.list")
    assert listed["types"] == "public_channel" and listed["exclude_archived"] in ("1", "true")


async def test_names_are_found_across_pages_and_kept_a_while(env: SlackEnv) -> None:
    env.slack.list_page_size = 1
    await env.send.command('#random "Lunch!" every monday', user="U2")
    await env.reply()
    pages = len(env.slack.calls("conversations.list"))
    assert pages > 1
    await env.send.command("#random tomorrow at 10am: again", user="U2")
    assert "Scheduled" in text_of(await env.reply(2))
    assert len(env.slack.calls("conversations.list")) == pages  # the cached names
    assert [s.destination for s in await env.schedules()] == ["slack:C0RANDOM"] * 2


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("#nowhere tomorrow at 9am: x", "no public channel named `#nowhere`"),
        ("#secret tomorrow at 9am: x", "no public channel named `#secret`"),  # private, not in it
        ("#twin tomorrow at 9am: x", "Several channels are named `#twin` (<#CTWIN1>, <#CTWIN2>)"),
        ("#nobot tomorrow at 9am: x", "NOBOT"),
    ],
)
async def test_a_name_not_found_or_ambiguous_is_said_and_nothing_is_scheduled(
    env: SlackEnv, text: str, says: str
) -> None:
    env.slack.add_channel("CTWIN1", "twin")
    env.slack.add_channel("CTWIN2", "twin")
    await env.send.command(text)
    shown = text_of(await env.reply())
    assert ":warning:" in shown and says in shown
    assert await env.schedules() == []


async def test_slack_failing_to_list_names_is_said(env: SlackEnv) -> None:
    env.slack.script(slack_error("internal_error"), on="/api/conversations.list")
    await env.send.command("#general tomorrow at 9am: x")
    shown = text_of(await env.reply())
    assert "could not look up `#general` with Slack just now (internal_error)" in shown
    assert await env.schedules() == []


@pytest.mark.parametrize(
    ("text", "when", "body"),
    [
        ("remind #general to drink water at 5pm", "at 5pm", "drink water"),
        (
            "remind #general to meet at the cafe at 5pm every monday",
            "at 5pm every monday",
            "meet at the cafe",
        ),
        (
            "remind <#C0123|general> to check in on Bob tomorrow at 10am",
            "tomorrow at 10am",
            "check in on Bob",
        ),
        ("remind to stretch in 10 minutes", "in 10 minutes", "stretch"),
        # WHEN first, as /remind takes it too (issue 33)
        ("remind #general in 20 minutes to drink water", "in 20 minutes", "drink water"),
        ("remind #general at 5pm to go to the gym", "at 5pm", "go to the gym"),
        ("remind #general to drink water twice a day", "twice a day", "drink water"),
        ('#general "Standup" every monday', "every monday", "Standup"),
        ("#general every monday: Standup", "every monday", "Standup"),
    ],
)
async def test_remind_orders_schedule_what_they_say(
    env: SlackEnv, text: str, when: str, body: str
) -> None:
    await env.send.command(text)
    shown = text_of(await env.reply())
    assert ":white_check_mark: Scheduled" in shown
    [schedule] = await env.schedules()
    assert (schedule.expression, schedule.body) == (when, body)
    assert schedule.destination == "slack:C0123"


async def test_a_remind_order_with_no_readable_time_is_refused(env: SlackEnv) -> None:
    await env.send.command("remind #general to water the plants at teatime")
    shown = text_of(await env.reply())
    assert ":warning:" in shown and "at teatime" in shown
    assert await env.schedules() == []


@pytest.mark.parametrize("verb", ["delete", "remove", "DELETE"])
async def test_delete_and_remove_cancel(env: SlackEnv, verb: str) -> None:
    await env.send.command("every day at 9: daily")
    await env.reply()
    [schedule] = await env.schedules()
    await env.send.command(f"{verb} {schedule.id}")
    assert f"Cancelled schedule #{schedule.id}" in text_of(await env.reply(2))
    [schedule] = await env.schedules()
    assert schedule.state == "cancelled"


async def test_an_unknown_command_is_named_and_changes_nothing(env: SlackEnv) -> None:
    await env.send.command("every day at 9: daily")
    await env.reply()
    await env.send.command("frobnicate 1")
    shown = text_of(await env.reply(2))
    assert "Unknown command `frobnicate`" in shown and "cancel (delete, remove)" in shown
    assert "colon" not in shown  # not the time-format answer
    [schedule] = await env.schedules()
    assert schedule.state == "active"
