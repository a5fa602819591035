"""Slack requests are bound to their workspace: a team Herald is not installed in is
refused; commands, buttons and the modal of one workspace never reach another's
schedules (the same answer as a missing id); broadcast mentions are refused for
members; commands per minute are counted."""

from __future__ import annotations

import json

import pytest

from bot.slack.modal import ModalMeta
from core.actors import Principal, slack_tenant
from tests.slack.conftest import SlackEnv
from tests.slack.support import TEAM, state, text_of, who

OTHER = "T0OTHER"
BOTH = {"HERALD_SLACK_TEAM_IDS": f"{TEAM},{OTHER}", "HERALD_SLACK_ADMINS_FROM_WORKSPACE": True}


async def ours(env: SlackEnv) -> int:
    """A schedule of the fake workspace's U1."""
    made, _ = await env.herald.create_schedule(
        who("U1"), to="slack:C0123", when="every monday at 9am", text="Ours"
    )
    assert made.id is not None
    return made.id


async def test_a_team_herald_is_not_installed_in_is_refused(env: SlackEnv) -> None:
    await ours(env)
    await env.send.command("list", team="T0STRANGER")
    reply = await env.reply()
    assert "not installed in this Slack workspace" in text_of(reply)
    await env.send.command("pause 1", team="T0STRANGER")
    assert "not installed" in text_of(await env.reply(2))
    [schedule] = await env.schedules()
    assert schedule.state == "active"
    assert await env.herald.store.get_member(slack_tenant("T0STRANGER"), "slack:U1") is None


@pytest.mark.parametrize("slack_extra", [BOTH], indirect=True)
@pytest.mark.parametrize("text", ["show {sid}", "pause {sid}", "cancel {sid}", "skip {sid}"])
async def test_another_workspaces_schedule_answers_like_a_missing_one(
    env: SlackEnv, text: str
) -> None:
    sid = await ours(env)
    # UOWNER owns the other workspace: an admin there, nobody here
    await env.send.command(text.format(sid=sid), user="UOWNER", team=OTHER)
    assert f"There is no schedule {sid} of yours." in text_of(await env.reply())
    [schedule] = await env.schedules()
    assert (schedule.state, schedule.version) == ("active", 1)


@pytest.mark.parametrize("slack_extra", [BOTH], indirect=True)
async def test_list_all_of_another_workspaces_admin_shows_none_of_ours(env: SlackEnv) -> None:
    await ours(env)
    await env.send.command("list all", user="UOWNER", team=OTHER)
    assert "Everyone's schedule list is empty" in text_of(await env.reply())
    there = await env.herald.actor(Principal("slack:UOWNER", slack_tenant(OTHER)))
    here = await env.herald.actor(who("UOWNER"))
    assert there.is_admin and not there.herald_wide
    assert not here.is_admin  # never seen here, so not an admin here


@pytest.mark.parametrize("slack_extra", [BOTH], indirect=True)
async def test_buttons_of_another_workspace_do_not_act(env: SlackEnv) -> None:
    sid = await ours(env)
    await env.send.click("herald_cancel", str(sid), user="UOWNER", team=OTHER)
    assert f"There is no schedule {sid} of yours." in text_of(await env.reply())
    [schedule] = await env.schedules()
    assert schedule.state == "active"


@pytest.mark.parametrize("slack_extra", [BOTH], indirect=True)
async def test_an_edit_form_submitted_from_another_workspace_changes_nothing(
    env: SlackEnv,
) -> None:
    sid = await ours(env)
    meta = ModalMeta(schedule_id=sid, version=1, channels=("C0123",), when="every monday at 9am")
    view = {
        "id": "V9",
        "type": "modal",
        "callback_id": "herald_schedule",
        "private_metadata": meta.dumps(),
        "blocks": [{"type": "input", "block_id": "text"}],
        "state": state(channel="C0123", text="Theirs now", when="every monday at 9am"),
    }
    answer = await env.send.submit(view, user="UOWNER", team=OTHER)
    assert answer.status == 200
    errors = json.loads(answer.text)["errors"]
    assert any(f"no schedule {sid} of yours" in e for e in errors.values())
    [schedule] = await env.schedules()
    assert schedule.body == "Ours" and schedule.version == 1


async def test_a_button_on_a_delivered_message_does_not_act(env: SlackEnv) -> None:
    """A button on a channel message (not Herald's ephemeral reply or Home tab) could
    be one a user planted in their own blocks: Herald does not act on it."""
    sid = await ours(env)
    await env.send.click("herald_cancel", str(sid), message={"ts": "1.2", "blocks": []})
    assert "only on Herald's own replies" in text_of(await env.reply())
    [schedule] = await env.schedules()
    assert schedule.state == "active"


async def test_a_member_cannot_make_the_bot_ping_the_channel(env: SlackEnv) -> None:
    await env.send.command("in 1 hour: <!channel> free pizza")
    reply = text_of(await env.reply())
    assert "Only admins can notify a whole channel" in reply
    assert await env.schedules() == []


@pytest.mark.parametrize("slack_extra", [{"HERALD_QUOTA_COMMANDS_PER_MINUTE": "2"}], indirect=True)
async def test_commands_per_minute_are_counted(env: SlackEnv) -> None:
    for n in range(3):
        await env.send.command("list")
        await env.reply(n + 1)
    assert "more than 2 commands in a minute" in text_of(env.slack.responses[2])
    env.clock.advance(60)
    await env.send.command("list")
    assert "more than 2" not in text_of(await env.reply(4))
