"""A reminder skipped because its recipient's preferences changed after it was saved
(issue 37): its author is told by direct message in Slack, one message for a burst of
skips, never an author of another workspace or platform; dead letters still go to the
alert channel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.channels.base import DeliveryResult
from core.dispatcher import Dispatcher, DispatcherConfig
from core.preferences import Preferences
from core.store import AuditEntry, Settled
from tests.slack.conftest import ALERTS, SlackEnv
from tests.slack.support import TENANT, text_of, who
from tests.support.channels import RecordingChannel


async def refused(env: SlackEnv, *texts: str) -> list[Settled]:
    """Ada (U1) reminds Grace (U2) once per text; then Grace accepts reminders only from
    admins, and the dispatcher skips them. What it settled, untold (the adapter hears
    nothing yet)."""
    now = env.clock.now()
    await env.herald.store.save_member(
        TENANT, "slack:U2", now=now, timezone="UTC", display_name="Grace"
    )
    for text in texts:
        await env.herald.create_schedule(who("U1"), to="slack:@U2", when="in 1 minute", text=text)
    audit = AuditEntry("slack:U2", "preferences.set", "member", "slack:U2")
    await env.herald.store.put_preferences(
        TENANT, "slack:U2", Preferences(accept_from="admins"), now=now, by="slack:U2", audit=audit
    )
    env.clock.advance(60)
    settled: list[Settled] = []
    channel = RecordingChannel(kind="slack")
    dispatcher = Dispatcher(
        env.herald.store, {"slack": channel}, clock=env.clock, observer=settled.append
    )
    await dispatcher.drain()
    assert not channel.deliveries and [s.state for s in settled] == ["skipped"] * len(texts)
    return sorted(settled, key=lambda s: s.job.schedule_id)


def dms(env: SlackEnv, user: str = "U1") -> list[dict[str, Any]]:
    im = env.slack.ims.get(user)
    return [m for m in env.slack.messages if im is not None and m["channel"] == im]


async def test_the_author_is_told_once_by_direct_message(env: SlackEnv) -> None:
    env.adapter.skips.window = 0.0
    [item] = await refused(env, "stand-up")
    env.adapter.on_finished(item)
    await env.slack.until(lambda: dms(env))
    [told] = dms(env)
    assert told["text"] == (
        f"Your reminder to Grace (schedule {item.job.schedule_id}) was not sent: Grace "
        "accepts reminders only from admins (their preferences changed after this was "
        "scheduled)."
    )
    assert "<@" not in told["text"] and "blocks" not in told  # Grace is named, not pinged
    await env.adapter.skips.flush()
    assert len(dms(env)) == 1


async def test_a_burst_of_skips_is_one_message(env: SlackEnv) -> None:
    env.adapter.skips.window = 0.0
    first, second = await refused(env, "one", "two")
    env.adapter.on_finished(first)
    env.adapter.on_finished(second)
    await env.slack.until(lambda: dms(env))
    await env.adapter.skips.flush()
    [told] = dms(env)
    lines = told["text"].splitlines()
    assert lines[0] == "2 of your reminders were not sent:"
    assert [x.split(")")[0] for x in lines[1:]] == [
        f"• Your reminder to Grace (schedule {first.job.schedule_id}",
        f"• Your reminder to Grace (schedule {second.job.schedule_id}",
    ]


async def test_an_author_of_another_workspace_or_platform_is_not_told(env: SlackEnv) -> None:
    env.adapter.skips.window = 0.0
    [item] = await refused(env, "stand-up")
    elsewhere = [
        replace(item, job=replace(item.job, tenant="slack:TOTHER")),
        replace(item, job=replace(item.job, owner="discord:123456789012345678")),
        replace(item, job=replace(item.job, owner="slack:<!channel>")),
    ]
    for other in elsewhere:
        env.adapter.on_finished(other)
    await env.adapter.skips.flush()
    assert all(c["users"] != "U1" for c in env.slack.calls("conversations.open"))
    assert dms(env) == []
    # a skip for any other reason (not a refusal) tells no one either
    env.adapter.on_finished(replace(item, error="Skipped: a calendar's holiday."))
    await env.adapter.skips.flush()
    assert dms(env) == []


async def test_a_dead_letter_still_goes_to_the_alert_channel(env: SlackEnv) -> None:
    await env.herald.create_schedule(who("U1"), to="slack:C0123", when="in 1 minute", text="x")
    env.clock.advance(60)
    failing = RecordingChannel(
        lambda d: DeliveryResult.permanent("Slack channel C0123 was not found", 404),
        kind="slack",
    )
    dispatcher = Dispatcher(
        env.herald.store,
        {"slack": failing},
        clock=env.clock,
        config=DispatcherConfig(max_attempts=1),
        observer=env.adapter.on_finished,
    )
    assert (await dispatcher.drain()).outcomes["dead"] == 1
    await env.slack.until(lambda: any(m["channel"] == ALERTS for m in env.slack.messages))
    [alert] = [m for m in env.slack.messages if m["channel"] == ALERTS]
    assert "Dead letter" in text_of(alert)
    await env.adapter.skips.flush()
    assert dms(env) == []
