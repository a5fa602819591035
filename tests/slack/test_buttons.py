"""Buttons on replies and in the App Home tab, and the Home tab itself."""

from __future__ import annotations

from tests.slack.conftest import SlackEnv
from tests.slack.support import action_ids, text_of

#: Another member's schedule of the same tenant is refused for the role (issue 33).
CHANGE = "Schedule 1 is another member's: only its owner or an admin can change it."


async def scheduled(env: SlackEnv, text: str = "every day at 9: daily", user: str = "U1") -> int:
    count = len(env.slack.responses)
    await env.send.command(text, user=user)
    await env.reply(count + 1)
    return max(s.id or 0 for s in await env.schedules())


async def test_cancel_on_a_confirmation_replaces_it(env: SlackEnv) -> None:
    sid = await scheduled(env)
    answer = await env.send.click("herald_cancel", str(sid), block_id=f"schedule:{sid}:one")
    assert answer.status == 200
    reply = await env.reply(2)
    assert reply["replace_original"] is True and reply["response_type"] == "ephemeral"
    assert f"Cancelled schedule #{sid}" in text_of(reply)
    assert action_ids(reply) == []  # a cancelled schedule has no buttons left
    [schedule] = await env.schedules()
    assert schedule.state == "cancelled"


async def test_a_click_in_a_list_answers_beside_it(env: SlackEnv) -> None:
    sid = await scheduled(env)
    await env.send.click("herald_pause", str(sid), block_id=f"schedule:{sid}")
    reply = await env.reply(2)
    assert reply["replace_original"] is False
    assert "Paused" in text_of(reply)
    assert action_ids(reply) == ["herald_edit", "herald_resume", "herald_cancel"]
    await env.send.click("herald_resume", str(sid), block_id=f"schedule:{sid}")
    resumed = await env.reply(3)
    assert "Resumed" in text_of(resumed)
    assert action_ids(resumed) == [
        "herald_edit",
        "herald_pause",
        "herald_send-now",
        "herald_skip",
        "herald_cancel",
    ]


async def test_a_typed_pause_offers_resume(env: SlackEnv) -> None:
    sid = await scheduled(env, "tomorrow at 9: once")
    await env.send.command(f"pause {sid}")
    reply = await env.reply(2)
    assert f"Paused schedule #{sid}" in text_of(reply)
    assert action_ids(reply) == ["herald_edit", "herald_resume", "herald_cancel"]
    await env.send.command(f"resume {sid}")
    assert action_ids(await env.reply(3)) == [
        "herald_edit",
        "herald_pause",
        "herald_send-now",
        "herald_cancel",
    ]


async def test_someone_elses_resume_click_changes_nothing(env: SlackEnv) -> None:
    sid = await scheduled(env, user="U1")
    await env.send.command(f"pause {sid}")
    await env.reply(2)
    await env.send.click("herald_resume", str(sid), user="U2", block_id=f"schedule:{sid}:one")
    reply = await env.reply(3)
    assert CHANGE in text_of(reply) and reply["replace_original"] is False
    [schedule] = await env.schedules()
    assert schedule.state == "paused"


async def test_someone_elses_click_changes_nothing(env: SlackEnv) -> None:
    sid = await scheduled(env, user="U1")
    await env.send.click("herald_cancel", str(sid), user="U2", block_id=f"schedule:{sid}:one")
    reply = await env.reply(2)
    assert CHANGE in text_of(reply) and reply["replace_original"] is False
    [schedule] = await env.schedules()
    assert schedule.state == "active"


async def test_edit_button_opens_the_filled_modal(env: SlackEnv) -> None:
    sid = await scheduled(env, "tomorrow at 9: edit me")
    await env.send.click("herald_edit", str(sid))
    await env.slack.until(lambda: env.slack.opened)
    view = env.slack.opened[0]["view"]
    assert view["title"]["text"] == f"Edit schedule #{sid}"
    assert '"schedule_id":1' in view["private_metadata"]


async def test_home_tab_lists_upcoming_schedules_with_buttons(env: SlackEnv) -> None:
    await scheduled(env, "every day at 9: daily")
    await scheduled(env, "tomorrow at 8: once")
    answer = await env.send.home_opened("U1")
    assert answer.status == 200
    await env.slack.until(lambda: env.slack.published)
    published = env.slack.published[-1]
    assert published["user_id"] == "U1"
    home = published["view"]
    assert home["type"] == "home"
    shown = text_of(home)
    assert shown.index(">once") < shown.index(">daily")  # soonest first
    assert "Operations" not in shown
    ids = action_ids(home)
    assert ids[0] == "herald_open_modal" and ids.count("herald_cancel") == 2


async def test_home_buttons_answer_in_the_home_tab(env: SlackEnv) -> None:
    sid = await scheduled(env, "every monday at 9: weekly")
    await env.send.click("herald_skip", str(sid), home=True)
    await env.slack.until(lambda: env.slack.published)
    assert "Skipped the next occurrence" in text_of(env.slack.published[-1]["view"])
    await env.send.click("herald_skip", "999", home=True)
    await env.slack.until(lambda: len(env.slack.published) == 2)
    assert "no schedule 999 of yours" in text_of(env.slack.published[-1]["view"])
    await env.send.click("herald_open_modal", "new", home=True)
    await env.slack.until(lambda: env.slack.opened)
    assert env.slack.opened[0]["view"]["callback_id"] == "herald_schedule"


async def test_operators_see_the_queue_in_their_home_tab(env: SlackEnv) -> None:
    await scheduled(env, "tomorrow at 9: queued")
    await env.send.home_opened("UADMIN")
    await env.slack.until(lambda: env.slack.published)
    shown = text_of(env.slack.published[-1]["view"])
    assert "Operations" in shown and "Waiting *1*" in shown and "Dead letters *0*" in shown
    assert "Nothing scheduled yet." in shown  # the admin's own list is empty
