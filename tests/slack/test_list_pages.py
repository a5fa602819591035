"""/schedule list pages with Previous and Next buttons, for the person who asked only."""

from __future__ import annotations

import json
from typing import Any

from bot.slack.blocks import LIST_PAGE, PAGE_NEXT, PAGE_PREVIOUS
from tests.slack.conftest import SlackEnv
from tests.slack.support import TENANT, action_ids, text_of, who


async def many(env: SlackEnv, count: int, user: str = "U1") -> None:
    """``count`` schedules of ``user``, straight through the use cases (at two times
    of day: a member may have 30 messages due within an hour in one channel)."""
    for n in range(count):
        when = "every day at 9" if n % 2 else "every day at 11"
        await env.herald.create_schedule(who(user), to="slack:C0123", when=when, text=f"number {n}")


def button_value(reply: dict[str, Any], action_id: str) -> str:
    [value] = [
        e["value"]
        for block in reply["blocks"]
        if block.get("type") == "actions"
        for e in block["elements"]
        if e["action_id"] == action_id
    ]
    return str(value)


def shown_ids(reply: dict[str, Any]) -> list[str]:
    return [
        str(block["block_id"]).split(":")[1]
        for block in reply["blocks"]
        if str(block.get("block_id", "")).startswith("schedule:")
    ]


async def test_a_long_list_pages_instead_of_stopping(env: SlackEnv) -> None:
    await many(env, LIST_PAGE * 2 + 3)
    await env.send.command("list")
    first = await env.reply()
    assert len(first["blocks"]) <= 50
    assert "herald list" not in text_of(first) and "Page 1 of 3" in text_of(first)
    assert action_ids(first)[-1:] == [PAGE_NEXT] and PAGE_PREVIOUS not in action_ids(first)
    assert len(shown_ids(first)) == LIST_PAGE

    await env.send.click(PAGE_NEXT, button_value(first, PAGE_NEXT), block_id="list_pages")
    second = await env.reply(2)
    assert second["replace_original"] is True and "Page 2 of 3" in text_of(second)
    assert action_ids(second)[-2:] == [PAGE_PREVIOUS, PAGE_NEXT]
    assert not set(shown_ids(first)) & set(shown_ids(second))

    await env.send.click(PAGE_NEXT, button_value(second, PAGE_NEXT), block_id="list_pages")
    third = await env.reply(3)
    assert "Page 3 of 3" in text_of(third) and len(shown_ids(third)) == 3
    assert PAGE_NEXT not in action_ids(third)
    seen = shown_ids(first) + shown_ids(second) + shown_ids(third)
    assert len(set(seen)) == LIST_PAGE * 2 + 3  # every schedule, once

    await env.send.click(PAGE_PREVIOUS, button_value(third, PAGE_PREVIOUS), block_id="list_pages")
    assert shown_ids(await env.reply(4)) == shown_ids(second)


async def test_a_short_list_has_no_page_buttons(env: SlackEnv) -> None:
    await many(env, 2)
    await env.send.command("list")
    reply = await env.reply()
    assert PAGE_NEXT not in action_ids(reply) and "Page" not in text_of(reply)


async def test_someone_elses_page_button_is_refused(env: SlackEnv) -> None:
    await many(env, LIST_PAGE + 1)
    await env.send.command("list")
    value = button_value(await env.reply(), PAGE_NEXT)
    await env.send.click(PAGE_NEXT, value, user="U2", block_id="list_pages")
    reply = await env.reply(2)
    assert "someone else's list" in text_of(reply) and reply["replace_original"] is False
    assert "number" not in text_of(reply)  # none of U1's schedules shown


async def test_a_page_button_forged_for_another_workspace_is_refused(env: SlackEnv) -> None:
    await many(env, LIST_PAGE + 1)
    forged = json.dumps(["slack:TOTHER", "U1", 0, None, 1])
    await env.send.click(PAGE_NEXT, forged, block_id="list_pages")
    assert "someone else's list" in text_of(await env.reply())
    # and a click from a workspace Herald is not installed in does nothing at all
    value = json.dumps([TENANT, "U1", 0, None, 1])
    await env.send.click(PAGE_NEXT, value, block_id="list_pages", team="TOTHER")
    assert "not installed" in text_of(await env.reply(2))


async def test_a_member_cannot_page_into_everyones_list(env: SlackEnv) -> None:
    await many(env, LIST_PAGE + 1, user="U2")
    value = json.dumps([TENANT, "U1", 1, None, 1])
    await env.send.click(PAGE_NEXT, value, block_id="list_pages")
    shown = text_of(await env.reply())
    assert "Only operators and admins can list everyone's schedules" in shown
    assert "number" not in shown


async def test_a_garbled_page_button_changes_nothing(env: SlackEnv) -> None:
    await env.send.click(PAGE_NEXT, "not a page", block_id="list_pages")
    assert "no list page" in text_of(await env.reply())


async def test_a_page_button_on_a_delivered_message_does_not_act(env: SlackEnv) -> None:
    await many(env, LIST_PAGE + 1)
    value = json.dumps([TENANT, "U1", 0, None, 1])
    await env.send.click(PAGE_NEXT, value, block_id="list_pages", message={"ts": "1.2"})
    reply = await env.reply()
    assert "only on Herald's own replies" in text_of(reply) and "number" not in text_of(reply)
