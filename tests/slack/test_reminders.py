"""``/schedule me …`` and ``/schedule @someone …`` through the Bolt app, the delivered
direct message (conversations.open then chat.postMessage at the fake Slack), and its
Snooze and Done buttons.

Payload shapes: https://api.slack.com/reference/interaction-payloads/block-actions
(``container``, ``message``, ``channel``); the blocks are checked with slack_sdk's models.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from slack_sdk.models.blocks import Block

from core.dispatcher import Dispatcher, DispatcherConfig
from core.reminders import ASKED_BY
from tests.slack.conftest import SlackEnv
from tests.slack.support import TEAM, text_of


async def _command(env: SlackEnv, text: str, user: str = "U1") -> dict[str, Any]:
    count = len(env.slack.responses)
    await env.send.command(text, user=user)
    return await env.reply(count + 1)


async def _deliver(env: SlackEnv) -> dict[str, Any]:
    """Run the dispatcher once the reminder is due; the message it posted."""
    due = min(s.next_run_at for s in await env.schedules() if s.next_run_at is not None)
    env.clock.advance((due - env.clock.now()).total_seconds() + 1)
    before = len(env.slack.messages)
    channels = {"slack": env.herald.channels["slack"]}
    summary = await Dispatcher(
        env.herald.store, channels, clock=env.clock, config=DispatcherConfig()
    ).drain()
    assert summary.outcomes["delivered"] >= 1
    return env.slack.messages[before]


async def _click(
    env: SlackEnv,
    posted: dict[str, Any],
    choice: str,
    *,
    user: str = "U1",
    ephemeral: bool = False,
) -> None:
    [actions] = [b for b in posted["blocks"] if b["type"] == "actions"]
    [button] = [e for e in actions["elements"] if e["action_id"].endswith(choice)]
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "herald"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0HERALD",
        "trigger_id": env.send.trigger(),
        "container": {
            "type": "message",
            "message_ts": posted["ts"],
            "channel_id": posted["channel"],
            "is_ephemeral": ephemeral,
        },
        "channel": {"id": posted["channel"], "name": "directmessage"},
        "message": {
            "type": "message",
            "ts": posted["ts"],
            "text": posted["text"],
            "blocks": posted["blocks"],
        },
        "response_url": env.slack.response_url(),
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": actions["block_id"],
                "value": button["value"],
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    assert (await env.send.interaction(payload)).status == 200


async def test_schedule_me_sends_a_direct_message_with_buttons(env: SlackEnv) -> None:
    reply = await _command(env, "me in 10 minutes: stretch")
    assert "Reminder for you scheduled" in text_of(reply)
    [schedule] = await env.schedules()
    assert schedule.destination == "slack:@U1" and schedule.owner == "slack:U1"
    assert schedule.next_run_at == env.clock.now() + timedelta(minutes=10)
    assert env.slack.calls("conversations.open")[0]["users"] == "U1"  # checked at once

    posted = await _deliver(env)
    assert posted["channel"] == env.slack.ims["U1"] and posted["text"] == "stretch"
    for block in posted["blocks"]:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()


async def test_reminding_a_colleague_says_so_to_both(env: SlackEnv) -> None:
    reply = await _command(env, "<@U2|grace> tomorrow at 9: send the deck")
    assert "Reminder for <@U2> scheduled" in text_of(reply)
    assert "they will see that you asked" in text_of(reply)
    [schedule] = await env.schedules()
    assert schedule.destination == "slack:@U2" and schedule.owner == "slack:U1"
    assert schedule.options[ASKED_BY] == "slack:U1"
    member = await env.herald.store.get_member("slack:" + TEAM, "slack:U2")
    assert member is not None and member.display_name == "Grace"
    # the colleague hears of it at once, in their direct message with Herald
    [told] = [m for m in env.slack.messages if m["channel"] == env.slack.ims["U2"]]
    assert told["text"] == (
        "<@U1> scheduled a reminder for you: Herald will send it here, in this direct message."
    )

    posted = await _deliver(env)
    assert posted["channel"] == env.slack.ims["U2"]
    assert posted["text"] == "<@U1> asked me to remind you: send the deck"


async def test_a_person_of_another_workspace_or_a_bot_is_refused(env: SlackEnv) -> None:
    env.slack.add_user("UOUTSIDER", team="T0OTHER")
    env.slack.add_user("UROBOT", bot=True)
    reply = await _command(env, "<@UOUTSIDER|out> in 1 hour: hi")
    assert "not in this workspace" in text_of(reply)
    reply = await _command(env, "<@UROBOT> in 1 hour: hi")
    assert "is a bot" in text_of(reply)
    reply = await _command(env, "<@UNOBODY> in 1 hour: hi")
    assert "knows no user" in text_of(reply)
    assert await env.schedules() == []
    assert await env.herald.store.get_member("slack:" + TEAM, "slack:UOUTSIDER") is None


async def test_snooze_makes_a_one_off_and_edits_the_reminder(env: SlackEnv) -> None:
    await _command(env, "me in 10 minutes: stretch")
    posted = await _deliver(env)
    await _click(env, posted, "15m")
    await env.slack.until(lambda: env.slack.edits)
    [edit] = env.slack.edits
    assert edit["channel"] == posted["channel"] and edit["ts"] == posted["ts"]
    assert "Snoozed" in str(edit["blocks"]) and "herald_reminder_" not in str(edit["blocks"])
    snoozed = max(await env.schedules(), key=lambda s: s.id or 0)
    assert snoozed.body == "stretch" and snoozed.destination == "slack:@U1"
    assert snoozed.next_run_at == env.clock.now() + timedelta(minutes=15)
    assert snoozed.rrule is None and snoozed.owner == "slack:U1"


async def test_done_removes_the_buttons(env: SlackEnv) -> None:
    await _command(env, "me in 10 minutes: stretch")
    posted = await _deliver(env)
    await _click(env, posted, "done")
    await env.slack.until(lambda: env.slack.edits)
    blocks = env.slack.edits[0]["blocks"]
    assert [b["type"] for b in blocks] == ["section", "context"]
    assert "Done" in blocks[-1]["elements"][0]["text"]
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()


async def test_someone_elses_click_or_an_ephemeral_copy_is_refused(env: SlackEnv) -> None:
    await _command(env, "me in 10 minutes: stretch")
    posted = await _deliver(env)
    count = len(env.slack.responses)
    await _click(env, posted, "15m", user="U2")
    reply = await env.reply(count + 1)
    assert "no reminder" in text_of(reply) and reply["replace_original"] is False
    await _click(env, posted, "done", ephemeral=True)
    assert "only on a reminder in your direct messages" in text_of(await env.reply(count + 2))
    assert len(await env.schedules()) == 1 and env.slack.edits == []
