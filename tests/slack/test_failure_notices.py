"""The author is told (issue 38) in Slack: a schedule's delivery that dies makes its
author a direct message, within one sweep, saying what failed and why, with Request
retry and Edit; a burst within HERALD_NOTICE_DIGEST is one digest; an admin who hears
of it in the alert channel is not told twice; a member may turn these off; a process
that dies after taking notices leaves them to be told after the lease. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.notices import message
from bot.slack.notices import notice_blocks
from bot.slack.skips import MESSAGE_CHARS
from bot.slack.words import escape
from core.cases import NOTICE_LEASE_SECONDS, AuthorNotices
from core.cases.notices import NoticeLine, notice_text
from core.cases.preferences import PreferenceChanges
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.store import TakenNotice
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import ALERTS, SlackEnv, slack_env
from tests.slack.support import action_ids, who
from tests.slack.test_payload_contract import valid_message
from tests.support.channels import RecordingChannel

WHY = "Slack channel C0123 is archived"


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    """The adapter over SQLite and PostgreSQL; its sweeper is driven by the tests."""
    async with slack_env(slack, db_url, clock, {"HERALD_SWEEP_SECONDS": 3600}) as built:
        yield built


async def kill(
    env: SlackEnv,
    count: int = 1,
    author: str = "U1",
    when: str = "in 1 minute",
    *,
    observed: bool = True,
) -> list[int]:
    """``count`` schedules of ``author`` whose delivery (due in a minute) fails for
    good; their ids. Not ``observed``: settled where this adapter does not hear of it
    (another process, a provider's receipt)."""
    ids = []
    for n in range(count):
        schedule, _ = await env.herald.create_schedule(
            who(author), to="slack:C0123", when=when, text=f"doomed {n}"
        )
        assert schedule.id is not None
        ids.append(schedule.id)
    env.clock.advance(60)
    failing = RecordingChannel(lambda d: DeliveryResult.permanent(WHY, 410), kind="slack")
    dispatcher = Dispatcher(
        env.herald.store,
        {"slack": failing},
        clock=env.clock,
        config=DispatcherConfig(max_attempts=1),
        observer=env.adapter.on_finished if observed else None,
    )
    assert (await dispatcher.drain()).outcomes["dead"] == count
    return ids


def dms(env: SlackEnv, user: str = "U1") -> list[dict[str, Any]]:
    im = env.slack.ims.get(user)
    return [m for m in env.slack.messages if im is not None and m["channel"] == im]


async def test_a_dead_letters_author_is_told_with_retry_and_edit(env: SlackEnv) -> None:
    [sid] = await kill(env, when="every day at 12:01 UTC")
    assert await env.adapter.notices.sweep() == 1
    [told] = dms(env)
    assert told["text"] == (f"Your message to slack:C0123 (schedule {sid}) was not sent: {WHY}.")
    assert action_ids(told) == ["herald_notice_retry", "herald_notice_edit"]
    valid_message((told["text"], told["blocks"]))
    assert await env.herald.pending_notices("slack") == 0
    assert await env.adapter.notices.sweep() == 0 and len(dms(env)) == 1


async def test_a_one_off_has_nothing_left_to_edit(env: SlackEnv) -> None:
    await kill(env)
    await env.adapter.notices.sweep()
    [told] = dms(env)
    assert action_ids(told) == ["herald_notice_retry"]


async def test_failures_within_the_window_make_one_digest(env: SlackEnv) -> None:
    await kill(env)
    await env.adapter.notices.sweep()
    later = await kill(env, 3)
    assert await env.adapter.notices.sweep() == 0  # told a minute ago: they wait
    assert len(dms(env)) == 1 and await env.herald.pending_notices("slack") == 3
    env.clock.advance(env.settings.notice_digest_seconds)
    assert await env.adapter.notices.sweep() == 1
    digest = dms(env)[-1]
    lines = digest["text"].splitlines()
    assert lines[0] == "3 of your messages were not sent:"
    assert [f"(schedule {s})" in line for s, line in zip(later, lines[1:], strict=True)] == [
        True
    ] * 3
    valid_message((digest["text"], digest["blocks"]))
    assert action_ids(digest).count("herald_notice_retry") == 3


async def test_an_admin_watching_the_alert_channel_is_told_once(env: SlackEnv) -> None:
    await kill(env, author="UADMIN")
    await env.slack.until(lambda: any(m["channel"] == ALERTS for m in env.slack.messages))
    assert await env.adapter.notices.sweep() == 0
    assert dms(env, "UADMIN") == [] and await env.herald.pending_notices() == 0


async def test_an_admin_is_told_of_what_the_alert_channel_never_showed(
    env: SlackEnv,
) -> None:
    await kill(env, author="UADMIN", observed=False)
    assert await env.adapter.notices.sweep() == 1
    assert not any(m["channel"] == ALERTS for m in env.slack.messages)
    [told] = dms(env, "UADMIN")
    assert told["text"].endswith(f"was not sent: {WHY}.")


async def test_notices_turned_off_are_never_sent(env: SlackEnv) -> None:
    await env.herald.set_preferences(who("U1"), PreferenceChanges(notices=False))
    await kill(env, 2)
    assert await env.adapter.notices.sweep() == 0
    assert dms(env) == [] and await env.herald.pending_notices() == 0
    shown = await env.herald.preferences(who("U1"))
    assert shown.effective.notices is False and "failure notices off" in shown.to_json()["summary"]


async def test_notices_taken_by_a_process_that_died_are_told_after_the_lease(
    env: SlackEnv,
) -> None:
    await kill(env)
    taken = await env.herald.take_notices("slack", env.clock.now())  # …and the taker dies
    assert [len(g.lines) for g in taken] == [1]
    assert await env.adapter.notices.sweep() == 0 and dms(env) == []
    env.clock.advance(NOTICE_LEASE_SECONDS)
    assert await env.adapter.notices.sweep() == 1 and len(dms(env)) == 1


async def test_a_failed_post_is_told_at_the_next_sweep(env: SlackEnv) -> None:
    await kill(env)
    scopes = env.slack.scopes
    env.slack.scopes = tuple(s for s in scopes if s != "im:write")  # missing_scope
    assert await env.adapter.notices.sweep() == 0
    assert await env.herald.pending_notices() == 1
    env.slack.scopes = scopes
    assert await env.adapter.notices.sweep() == 1 and len(dms(env)) == 1


async def test_an_author_who_cannot_be_reached_is_not_retried(env: SlackEnv) -> None:
    await kill(env)
    env.slack.users["U1"]["deleted"] = True
    assert await env.adapter.notices.sweep() == 0
    assert await env.herald.pending_notices() == 0


async def test_request_retry_from_the_direct_message_reaches_an_admin(env: SlackEnv) -> None:
    await kill(env)
    await env.adapter.notices.sweep()
    [told] = dms(env)
    [job] = [d.job_id for d in await env.herald.dead_letters("slack:UADMIN")]
    await env.send.click("herald_notice_retry", str(job), channel=told["channel"], message=told)
    reply = await env.reply()
    assert reply["text"] == (
        f":hourglass: Asked an admin to retry dead letter {job}; "
        "you will hear here what they decide."
    )
    [letter] = await env.herald.dead_letters("slack:UADMIN")
    assert letter.retry_requested_by == "slack:U1"
    assert await env.herald.approve_dead_retry("slack:UADMIN", [job]) == 1


async def test_the_buttons_work_only_in_herald_direct_messages(env: SlackEnv) -> None:
    await kill(env)
    [job] = [d.job_id for d in await env.herald.dead_letters("slack:UADMIN")]
    await env.send.click("herald_notice_retry", str(job), channel="C0123", message={})
    reply = await env.reply()
    assert "direct messages" in reply["text"]
    [letter] = await env.herald.dead_letters("slack:UADMIN")
    assert letter.retry_requested_by is None


async def test_edit_opens_the_schedules_form(env: SlackEnv) -> None:
    [sid] = await kill(env, when="every day at 12:01 UTC")
    await env.adapter.notices.sweep()
    [told] = dms(env)
    await env.send.click("herald_notice_edit", str(sid), channel=told["channel"], message=told)
    await env.slack.until(lambda: env.slack.opened)
    assert str(sid) in env.slack.opened[-1]["view"]["private_metadata"]


async def test_prefs_notices_off_and_on_from_slack(env: SlackEnv) -> None:
    await env.send.command("prefs notices off")
    reply = await env.reply()
    assert reply["text"].startswith("Saved: Herald no longer tells you here")
    assert (await env.herald.preferences(who("U1"))).effective.notices is False
    await env.send.command("prefs notices on")
    assert (await env.reply(2))["text"].startswith("Saved: Herald tells you here")
    assert (await env.herald.preferences(who("U1"))).effective.notices is True
    await env.send.command("prefs notices maybe")
    assert "`notices off|on`" in (await env.reply(3))["text"]


async def test_a_schedule_paused_for_failing_is_told_with_resume(env: SlackEnv) -> None:
    schedule, _ = await env.herald.create_schedule(
        who("U1"), to="slack:C0123", when="every hour", text="pulse"
    )
    assert schedule.id is not None
    failing = RecordingChannel(lambda d: DeliveryResult.permanent(WHY, 410), kind="slack")
    dispatcher = Dispatcher(
        env.herald.store,
        {"slack": failing},
        clock=env.clock,
        config=DispatcherConfig(max_attempts=1, auto_pause_after=3),
    )
    for _ in range(3):
        env.clock.advance(3600)
        await dispatcher.drain()
    assert (await env.herald.show_schedule(who("U1"), schedule.id)).schedule.state == "paused"
    env.clock.advance(env.settings.notice_digest_seconds)
    assert await env.adapter.notices.sweep() == 1
    [told] = dms(env)
    lines = told["text"].splitlines()
    assert lines[0] == "Herald has 4 notices for you:"  # three failed, then the pause
    assert lines[4] == (
        f"• Schedule {schedule.id} was paused: its last 3 occurrences all failed. Resume it "
        "when the destination works again."
    )
    assert "herald_notice_resume" in action_ids(told)
    valid_message((told["text"], told["blocks"]))
    await env.send.click(
        "herald_notice_resume", str(schedule.id), channel=told["channel"], message=told
    )
    assert (await env.reply())["text"].startswith("Resumed")
    assert (await env.herald.show_schedule(who("U1"), schedule.id)).schedule.state == "active"


def test_the_longest_digest_is_a_valid_message_that_pings_no_one() -> None:
    """Twelve notices (expired ones with a hint, dead ones with two buttons) whose
    reasons carry mentions: Block Kit's limits hold, and nothing reads as a mention."""
    hostile = "<!channel> <@U0BOB> <!subteam^S1> & " + "x" * 600
    taken = [
        TakenNotice(
            id=n,
            tenant="slack:T1",
            owner="slack:U1",
            kind="expired" if n % 2 else "dead",
            schedule_id=n,
            job_id=n,
            reason=hostile,
            at=datetime(2026, 3, 2, tzinfo=UTC),
            destination="slack:C0123",
            job_state="expired" if n % 2 else "dead",
            schedule_state="active",
        )
        for n in range(1, 13)
    ]
    lines = tuple(
        NoticeLine(
            x.id, x.kind, x.schedule_id, x.job_id, notice_text(x), x.kind == "dead", False, True
        )
        for x in taken
    )
    group = AuthorNotices("slack:T1", "slack:U1", lines)
    text, blocks = message(group, MESSAGE_CHARS, escape), notice_blocks(group)
    valid_message((text, blocks))
    shown = json.dumps([text, blocks])
    assert "<!" not in shown and "<@" not in shown
    assert text.splitlines()[0] == "12 of your messages were not sent:"
