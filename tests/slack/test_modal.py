"""The schedule modal's round trip: opened by /schedule (or Edit), submitted, validated
inline, previewed; over signed HTTP against the fake Slack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.slack import commands
from tests.fakes.http import Scripted
from tests.slack.conftest import SlackEnv
from tests.slack.support import filled, text_of, who


async def open_modal(env: SlackEnv, command: str = "", user: str = "U1") -> dict[str, Any]:
    count = len(env.slack.opened)
    answer = await env.send.command(command, user=user)
    assert answer.status == 200
    await env.slack.until(lambda: len(env.slack.opened) > count)
    return env.slack.opened[-1]


def block(view: dict[str, Any], block_id: str) -> dict[str, Any]:
    return next(b for b in view["blocks"] if b.get("block_id") == block_id)


async def test_bare_schedule_opens_the_modal_in_the_current_channel(env: SlackEnv) -> None:
    opened = await open_modal(env)
    view = opened["view"]
    assert opened["trigger_id"].endswith(".trigger")
    assert view["type"] == "modal" and view["callback_id"] == "herald_schedule"
    assert block(view, "channel")["element"]["initial_conversations"] == ["C0123"]
    assert "Europe/Berlin" in block(view, "when")["hint"]["text"]
    assert {"text", "when", "preview", "date", "time", "repeat"} <= {
        b.get("block_id") for b in view["blocks"]
    }


async def test_a_submitted_modal_schedules_and_confirms(env: SlackEnv) -> None:
    opened = await open_modal(env)
    answer = await env.send.submit(
        filled(opened, channel="C0123", text="Retro <today> & beer", when="every friday at 17:00")
    )
    assert answer.status == 200 and answer.text == ""  # the modal closes
    await env.slack.until(lambda: env.slack.ephemerals and env.slack.published)
    [schedule] = await env.schedules()
    assert schedule.destination == "slack:C0123" and schedule.timezone == "Europe/Berlin"
    assert schedule.body == "Retro &lt;today&gt; &amp; beer"  # Slack's escaped form
    assert schedule.idempotency_key == "slack-view:V1"
    [note] = env.slack.ephemerals
    assert (note["channel"], note["user"]) == ("C0123", "U1")
    assert "every Friday at 17:00 (Europe/Berlin)" in text_of(note)
    assert env.slack.published[-1]["user_id"] == "U1"


async def test_the_pickers_build_a_repeating_schedule(env: SlackEnv) -> None:
    opened = await open_modal(env)
    await env.send.submit(
        filled(opened, text="Plants", date="2026-03-05", time_="09:00", repeat="weekly")
    )
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.expression == "every Thursday at 09:00 starting 2026-03-05"
    assert schedule.rrule is not None and "BYDAY=TH" in schedule.rrule


async def test_problems_are_shown_inline_and_nothing_is_saved(env: SlackEnv) -> None:
    opened = await open_modal(env)
    answer = await env.send.submit(filled(opened, channel="C0RANDOM", text="  ", when="someday"))
    assert answer.status == 200
    data = answer.json()
    assert data["response_action"] == "errors"
    errors = data["errors"]
    assert set(errors) == {"text", "when", "channel"}
    assert 'Could not read "someday"' in errors["when"]
    assert "member of: join that channel first" in errors["channel"]
    answer = await env.send.submit(filled(opened, channel="CNOBOT", text="x", date="2026-03-05"))
    errors = answer.json()["errors"]
    assert "/invite @Herald" in errors["channel"] and "Pick a time too" in errors["time"]
    answer = await env.send.submit(filled(opened, text="x"))
    assert "Say when" in answer.json()["errors"]["when"]
    assert await env.schedules() == []
    assert env.slack.ephemerals == []


async def test_edit_opens_the_modal_filled_in_and_saves_only_what_changed(env: SlackEnv) -> None:
    await env.send.command("in 2 hours: first draft")
    await env.reply()
    opened = await open_modal(env, "edit 1")
    view = opened["view"]
    assert block(view, "text")["element"]["initial_value"] == "first draft"
    assert block(view, "when")["element"]["initial_value"] == "in 2 hours"
    assert block(view, "channel")["element"]["initial_conversations"] == ["C0123"]
    meta = json.loads(view["private_metadata"])
    assert (meta["schedule_id"], meta["version"]) == (1, 1)
    [before] = await env.schedules()
    env.clock.advance(600)  # "in 2 hours" is not read again when the time is unchanged
    answer = await env.send.submit(filled(opened, text="final draft", when="in 2 hours"))
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [after] = await env.schedules()
    assert after.body == "final draft" and after.version == 2
    assert after.starts_at == before.starts_at
    assert "Saved" in text_of(env.slack.ephemerals[0])


async def test_a_stale_edit_is_refused_inline(env: SlackEnv) -> None:
    await env.send.command("every day at 9: daily")
    await env.reply()
    opened = await open_modal(env, "edit 1")
    await env.send.command("pause 1")
    await env.reply(2)
    answer = await env.send.submit(filled(opened, text="changed", when="every day at 9"))
    errors = answer.json()["errors"]
    assert "it changed since you read it" in errors["when"]
    [schedule] = await env.schedules()
    assert schedule.body == "daily"


async def test_someone_elses_schedule_cannot_be_opened_for_editing(env: SlackEnv) -> None:
    await env.send.command("in 1 hour: mine", user="U1")
    await env.reply()
    await env.send.command("edit 1", user="U2")
    assert "Schedule 1 is another member's" in text_of(await env.reply(2))
    assert env.slack.opened == []


async def test_enter_in_the_when_field_previews_the_next_times(env: SlackEnv) -> None:
    opened = await open_modal(env)
    view = {**filled(opened, text="hi", when="every weekday at 9am"), "id": "V9"}
    answer = await env.send.preview(view)
    assert answer.status == 200
    await env.slack.until(lambda: env.slack.updated)
    update = env.slack.updated[0]
    assert update["view_id"] == "V9" and update["hash"] == "h1"
    preview = text_of({"blocks": [block(update["view"], "preview")]})
    assert "every weekday at 09:00 (Europe/Berlin)" in preview
    assert preview.count("<!date^") == 3
    await env.send.preview({**filled(opened, text="hi", when="at teatime-ish"), "id": "V9"})
    await env.slack.until(lambda: len(env.slack.updated) == 2)
    assert ":warning: Could not read" in text_of(
        {"blocks": [block(env.slack.updated[1]["view"], "preview")]}
    )


async def test_a_slow_slack_still_gets_its_answer_within_three_seconds(
    env: SlackEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "ACK_BUDGET", 0.2)
    opened = await open_modal(env)
    env.slack.script(Scripted(stall=True), on="/api/conversations.members")
    answer = await env.send.submit(filled(opened, text="x", when="tomorrow at 9"))
    assert answer.seconds < 3.0
    assert "could not wait for Herald" in answer.json()["errors"]["when"]
    assert await env.schedules() == []


async def test_a_message_longer_than_the_field_is_shown_and_kept_on_edit(env: SlackEnv) -> None:
    """Slack's plain_text_input holds 3,000 characters; a 3,500-character message is
    shown (not cut into the field) and an edit of its time leaves it whole."""
    from slack_sdk.models.views import View

    body = "Long notes. " * 291 + "end"  # 3,495 characters
    await env.herald.create_schedule(who("U1"), to="slack:C0123", when="in 2 hours", text=body)
    opened = await open_modal(env, "edit 1")
    view = opened["view"]
    View(**view).validate_json()
    assert "text" not in {b.get("block_id") for b in view["blocks"]}
    kept = text_of({"blocks": [block(view, "text_kept")]})
    assert "(3,495 characters) stays as it is" in kept
    assert "Slack allows 3,000 characters in a plain_text_input; it has 3,495." in kept
    assert "herald edit 1 --text" in kept
    state = filled(opened, when="in 3 hours")
    del state["state"]["values"]["text"]  # Slack sends only the inputs the view has
    answer = await env.send.submit(state)
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [after] = await env.schedules()
    assert after.body == body and after.expression == "in 3 hours"


async def test_a_text_too_long_for_a_fixed_destination_is_refused_on_the_field(
    env: SlackEnv,
) -> None:
    hook = "discord-webhook:https://discord.com/api/webhooks/1/token"
    await env.herald.create_schedule(who("U1"), to=hook, when="in 2 hours", text="short")
    opened = await open_modal(env, "edit 1")
    answer = await env.send.submit(
        filled(opened, channel="fixed", text="x" * 2500, when="in 2 hours")
    )
    errors = answer.json()["errors"]
    assert errors == {
        "text": "Discord allows 2,000 characters in a message; this message has 2,500."
    }
    [after] = await env.schedules()
    assert after.body == "short" and after.version == 1


async def test_enter_in_when_keeps_a_message_longer_than_the_field(env: SlackEnv) -> None:
    """Issue 32: the preview rebuilt the modal from the view's state, where Slack sends
    only inputs; a message shown instead of edited (over 3,000 characters) came back as
    "(0 characters)" with an empty quote. It now carries over what the view showed."""
    from slack_sdk.models.views import View

    body = "Long notes. " * 291 + "end"  # 3,495 characters
    await env.herald.create_schedule(who("U1"), to="slack:C0123", when="in 2 hours", text=body)
    opened = await open_modal(env, "edit 1")
    state = {**filled(opened, when="every weekday at 9am"), "id": "V9"}
    del state["state"]["values"]["text"]  # Slack sends only the inputs the view has
    answer = await env.send.preview(state)
    assert answer.status == 200
    await env.slack.until(lambda: env.slack.updated)
    rebuilt = env.slack.updated[0]["view"]
    View(**rebuilt).validate_json()
    kept = text_of({"blocks": [block(rebuilt, "text_kept")]})
    assert kept == text_of({"blocks": [block(opened["view"], "text_kept")]})
    assert "(3,495 characters) stays as it is" in kept and ">Long notes. Long notes." in kept
    assert "every weekday at 09:00" in text_of({"blocks": [block(rebuilt, "preview")]})
    again = {**rebuilt, "id": "V9", "state": state["state"]}  # Enter once more
    await env.send.preview(again)
    await env.slack.until(lambda: len(env.slack.updated) == 2)
    assert text_of({"blocks": [block(env.slack.updated[1]["view"], "text_kept")]}) == kept
    answer = await env.send.submit(again)  # and saving keeps the message whole
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [after] = await env.schedules()
    assert after.body == body and after.expression == "every weekday at 9am"


async def test_the_modal_posts_in_several_channels(env: SlackEnv) -> None:
    """The picker takes several channels (a multi_conversations_select): one schedule
    to each, confirmed in the first."""
    opened = await open_modal(env)
    picker = block(opened["view"], "channel")["element"]
    assert picker["type"] == "multi_conversations_select"
    answer = await env.send.submit(
        filled(opened, channel=["C0123", "CALERTS"], text="Retro", when="every friday at 17:00")
    )
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.destinations == ["slack:C0123", "slack:CALERTS"]
    [note] = env.slack.ephemerals
    assert note["channel"] == "C0123"
    assert "Scheduled for <#C0123>, <#CALERTS>." in text_of(note)


async def test_a_channel_the_person_may_not_use_is_refused_on_the_picker(env: SlackEnv) -> None:
    opened = await open_modal(env)
    answer = await env.send.submit(
        filled(opened, channel=["C0123", "C0RANDOM"], text="x", when="in 2 hours")
    )
    assert "member of: join that channel first" in answer.json()["errors"]["channel"]
    assert await env.schedules() == []


async def test_editing_several_channels_starts_with_them_and_saves_a_change(
    env: SlackEnv,
) -> None:
    await env.send.command("<#C0123> <#CALERTS> every day at 9: daily")
    await env.reply()
    opened = await open_modal(env, "edit 1")
    picker = block(opened["view"], "channel")["element"]
    assert picker["initial_conversations"] == ["C0123", "CALERTS"]
    answer = await env.send.submit(
        filled(opened, channel=["CALERTS"], text="daily", when="every day at 9")
    )
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.destinations == ["slack:CALERTS"]


async def test_a_schedule_to_a_person_too_is_shown_fixed_in_the_modal(env: SlackEnv) -> None:
    await env.send.command("<#C0123> me every day at 9: daily")
    await env.reply()
    opened = await open_modal(env, "edit 1")
    view = opened["view"]
    assert "channel" not in {b.get("block_id") for b in view["blocks"]}
    assert "slack:C0123, slack:@U1" in text_of({"blocks": [block(view, "destination")]})
