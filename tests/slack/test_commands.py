"""/schedule over signed HTTP: what gets scheduled, what the person reads, who may do what."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from core.errors import PermissionDenied
from tests.fakes.http import Scripted
from tests.slack.conftest import SlackEnv
from tests.slack.support import SECRET, action_ids, text_of, who
from tests.support.store import audit_trail


async def test_a_schedule_goes_to_the_channel_it_was_typed_in_in_the_profile_zone(
    env: SlackEnv,
) -> None:
    answer = await env.send.command("tomorrow at 9am: Coffee ☕", user="U1", channel="C0123")
    assert answer.status == 200 and answer.text == ""
    reply = await env.reply()
    [schedule] = await env.schedules()
    assert schedule.destination == "slack:C0123" and schedule.owner == "slack:U1"
    assert schedule.timezone == "Europe/Berlin"  # U1's Slack profile
    assert schedule.starts_at == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)
    assert reply["response_type"] == "ephemeral"
    shown = text_of(reply)
    assert f"#{schedule.id}" in shown and "<#C0123>" in shown
    assert "once, Tue 3 Mar 2026 09:00 (Europe/Berlin)" in shown
    assert f"<!date^{int(schedule.starts_at.timestamp())}^" in shown
    assert ">Coffee ☕" in shown
    assert action_ids(reply) == ["herald_edit", "herald_cancel"]


async def test_the_audit_log_says_it_came_through_slack(env: SlackEnv) -> None:
    await env.send.command("tomorrow at 9am: Coffee", user="U1", channel="C0123")
    await env.reply()
    [schedule] = await env.schedules()
    [row] = await audit_trail(env.herald.store, "schedule", str(schedule.id))
    assert (row.actor, row.surface) == ("slack:U1", "slack")


async def test_a_recurring_schedule_shows_its_next_times_as_date_tokens(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> every weekday at 9am: Standup in 5 minutes!")
    shown = text_of(await env.reply())
    assert "every weekday at 09:00 (Europe/Berlin)" in shown
    assert shown.count("<!date^") == 3 and "{date_short_pretty} {time}" in shown


async def test_the_remind_form_names_another_channel(env: SlackEnv) -> None:
    await env.send.command('<#C0RANDOM|random> "Lunch!" tomorrow at noon', user="U2")
    await env.reply()
    [schedule] = await env.schedules()
    assert (schedule.destination, schedule.body) == ("slack:C0RANDOM", "Lunch!")
    assert schedule.timezone == "America/New_York"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("<#C0123> at the sunny side of noon: x", 'Could not read "at the sunny side of noon"'),
        ("<#C0123> 2026-03-01 09:00: x", "in the past"),
        ("tomorrow at 9 Coffee", 'put ": "'),
        ("#nowhere tomorrow: x", "no public channel named `#nowhere`"),
        ("frobnicate 3", "Unknown command `frobnicate`"),
        ("<#C0123> tomorrow at 9: " + "x" * 4001, "Herald allows 4,000 characters"),
    ],
)
async def test_what_cannot_be_read_is_named_and_nothing_is_scheduled(
    env: SlackEnv, text: str, says: str
) -> None:
    await env.send.command(text)
    shown = text_of(await env.reply())
    assert says in shown and ":warning:" in shown
    assert await env.schedules() == []


async def test_a_refusal_escapes_what_the_person_typed(env: SlackEnv) -> None:
    await env.send.command("<#C0123> o'clock <!channel>: x")
    shown = text_of(await env.reply())
    assert "<!channel>" not in shown and "&lt;!channel&gt;" in shown


async def test_a_group_mention_among_targets_is_refused(env: SlackEnv) -> None:
    await env.send.command("<#C0123> <!channel> tomorrow: x")
    shown = text_of(await env.reply())
    assert "not a group" in shown and "<!channel>" not in shown
    assert await env.schedules() == []


async def test_only_members_of_a_channel_may_schedule_into_it(env: SlackEnv) -> None:
    await env.send.command("<#C0RANDOM|random> tomorrow at 9: sneaky", user="U1")
    shown = text_of(await env.reply())
    assert "channels you are a member of" in shown and "<#C0RANDOM>" in shown
    assert await env.schedules() == []


async def test_membership_is_found_across_pages(env: SlackEnv) -> None:
    env.slack.page_size = 1
    await env.send.command("tomorrow at 9: from the last page", user="UOWNER")
    await env.reply()
    assert len(await env.schedules()) == 1
    assert len(env.slack.calls("conversations.members")) == 4


@pytest.mark.parametrize("channel", ["<#CNOBOT|nobot>", "<#GSECRET>"])
async def test_a_channel_herald_is_not_in_says_how_to_invite_it(
    env: SlackEnv, channel: str
) -> None:
    await env.send.command(f"{channel} tomorrow at 9: hello?", user="U1")
    shown = text_of(await env.reply())
    assert "/invite @Herald" in shown
    assert await env.schedules() == []


async def test_list_show_and_help(env: SlackEnv) -> None:
    await env.send.command("every day at 8am: vitamins")
    await env.send.command("tomorrow at 10: dentist")
    await env.reply(2)
    await env.send.command("list")
    listing = await env.reply(3)
    shown = text_of(listing)
    assert "Your schedules* (2)" in shown and ">vitamins" in shown and ">dentist" in shown
    assert action_ids(listing).count("herald_edit") == 2
    assert "herald_pause" in action_ids(listing) and "herald_skip" in action_ids(listing)
    await env.send.command("show 1")
    assert "expression `every day at 8am`" in text_of(await env.reply(4))
    await env.send.command("help")
    assert "WHEN: MESSAGE" in text_of(await env.reply(5))
    await env.send.command("list pending")
    shown = text_of(await env.reply(6))
    assert "Your pending schedules* (1)" in shown and ">dentist" in shown
    assert ">vitamins" not in shown  # recurring: active, not pending
    await env.send.command("list failed")
    assert "Your failed schedule list is empty" in text_of(await env.reply(7))


async def test_members_manage_their_own_schedules_and_admins_everyones(env: SlackEnv) -> None:
    await env.send.command("every monday at 9: weekly", user="U1")
    await env.reply(1)
    await env.send.command("cancel 1", user="U2")
    assert "Schedule 1 is another member's: only its owner or an admin" in text_of(
        await env.reply(2)
    )
    await env.send.command("pause 1", user="U1")
    assert "Paused schedule #1" in text_of(await env.reply(3))
    await env.send.command("resume 1", user="U1")
    assert "Resumed schedule #1" in text_of(await env.reply(4))
    before = (await env.schedules())[0].next_run_at
    await env.send.command("skip 1", user="U1")
    assert "Skipped the next occurrence of schedule #1" in text_of(await env.reply(5))
    [skipped] = await env.schedules()
    assert skipped.next_run_at is not None and before is not None
    assert (skipped.next_run_at - before).days == 7
    await env.send.command("list all", user="U2")
    assert "Only operators and admins" in text_of(await env.reply(6))
    await env.send.command("list all", user="UADMIN")
    assert "Everyone's schedules* (1)" in text_of(await env.reply(7))
    await env.send.command("cancel 1", user="UADMIN")
    assert "Cancelled schedule #1" in text_of(await env.reply(8))
    trail = await audit_trail(env.herald.store, "schedule", "1")
    assert [(a.actor, a.action) for a in trail][-4:] == [
        ("slack:U1", "schedule.pause"),
        ("slack:U1", "schedule.resume"),
        ("slack:U1", "schedule.skip"),
        ("slack:UADMIN", "schedule.cancel"),
    ]
    with pytest.raises(PermissionDenied, match="another member's"):
        await env.herald.show_schedule(who("U2"), 1)


async def test_a_zone_set_with_timezone_wins_over_the_profile(env: SlackEnv) -> None:
    await env.send.command("timezone")
    assert "*Europe/Berlin* (from your Slack profile)" in text_of(await env.reply(1))
    await env.send.command("timezone Asia/Tokyo")
    assert "now reads your times in *Asia/Tokyo*" in text_of(await env.reply(2))
    await env.send.command("timezone Mars/Olympus_Mons")
    assert ":warning:" in text_of(await env.reply(3))
    await env.send.command("tomorrow at 9am: ohayo")
    await env.reply(4)
    [schedule] = await env.schedules()
    assert schedule.timezone == "Asia/Tokyo"
    assert schedule.starts_at == datetime(2026, 3, 3, 0, 0, tzinfo=UTC)


async def test_the_command_is_acknowledged_at_once_even_when_slack_is_slow(
    env: SlackEnv,
) -> None:
    env.adapter.stop_grace = 0.1
    env.slack.script(Scripted(stall=True), on="/api/users.info")
    answer = await env.send.command("tomorrow at 9: slow")
    assert answer.status == 200 and answer.seconds < 1.0
    await env.slack.until(lambda: env.slack.requests_to("users.info"))
    assert env.slack.responses == []  # the work goes on after the acknowledgement...
    env.slack.release()
    reply = text_of(await env.reply())  # ...and answers once Slack does
    assert reply and [s.body for s in await env.schedules()] == ["slow"]


@pytest.mark.parametrize(
    "slack_extra", [{"HERALD_SLACK_ADMINS_FROM_WORKSPACE": "true"}], indirect=True
)
async def test_workspace_owners_are_admins_when_herald_trusts_them(env: SlackEnv) -> None:
    await env.send.command("list all", user="UOWNER")
    assert "Everyone's schedule list is empty" in text_of(await env.reply())
    actor = await env.herald.actor(who("UOWNER"))
    assert actor.is_admin


async def test_workspace_owners_are_members_by_default(env: SlackEnv) -> None:
    await env.send.command("list all", user="UOWNER")
    assert "Only operators and admins" in text_of(await env.reply())


async def test_no_token_or_secret_reaches_the_log(
    env: SlackEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await env.send.command("tomorrow at 9: logged")
    await env.reply()
    await env.send.command("<#CNOBOT> tomorrow at 9: refused")
    await env.reply(2)
    await env.send.post(env.send.command_body("forged"), secret="wrong")
    assert caplog.records  # the adapter, Bolt and the SDK did log at DEBUG
    assert env.slack.token not in caplog.text and SECRET not in caplog.text


async def test_a_rule_without_a_time_takes_9am_and_the_reply_says_so(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> every weekday: Standup", user="U1")
    shown = text_of(await env.reply())
    assert "every weekday at 09:00 (Europe/Berlin) — add 'at …' to change it" in shown
    [schedule] = await env.schedules()
    assert schedule.starts_at == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)  # Tue 09:00 Berlin
    await env.send.command("<#C0123|general> every weekday at 10am: Later", user="U1")
    assert "add 'at" not in text_of(await env.reply(2))


@pytest.mark.parametrize(
    "slack_extra", [{"HERALD_TENANT_DEFAULT_TIMES": "slack:T0HERALD=08:30"}], indirect=True
)
async def test_a_workspace_may_have_its_own_default_time(env: SlackEnv) -> None:
    await env.send.command("every monday: Plan the week", user="U2")
    assert "every Monday at 08:30 (America/New_York)" in text_of(await env.reply())
    [schedule] = await env.schedules()
    assert schedule.starts_at == datetime(2026, 3, 2, 13, 30, tzinfo=UTC)  # today, 08:30 EST


async def test_zones_are_cities_and_abbreviations_say_what_they_may_mean(env: SlackEnv) -> None:
    await env.send.command("timezone new york")
    assert "now reads your times in *America/New_York*" in text_of(await env.reply(1))
    await env.send.command("timezone EST")
    refused = text_of(await env.reply(2))
    assert "EST is ambiguous: America/New_York" in refused and "'Etc/GMT+5'" in refused
    await env.send.command("timezone Berlim")
    assert "did you mean Europe/Berlin?" in text_of(await env.reply(3))
    actor = await env.herald.actor(who("U1"))
    assert actor.timezone == "America/New_York"


async def test_a_typo_is_answered_with_what_it_almost_said(env: SlackEnv) -> None:
    await env.send.command("every fridy at 9am: Demo")
    assert "Did you mean 'every friday at 9am'?" in text_of(await env.reply())
    assert await env.schedules() == []
    await env.send.command("in 5 minutes:tight")
    await env.reply(2)
    [schedule] = await env.schedules()
    assert (schedule.expression, schedule.body) == ("in 5 minutes", "tight")
