"""Every Discord payload Herald builds, rendered with extreme inputs (the longest texts
it stores, the largest ids, unicode, many schedules), is within Discord's documented
limits (core.limits): message content, buttons and their custom_ids, the Edit form,
autocomplete answers and the application commands themselves.

Our fake Discord accepts anything; the real one answers 400 Invalid Form Body."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, actions, choices, render
from bot.discord_bot.components import (
    DeadLetterButton,
    EditForm,
    PageButton,
    ScheduleButton,
    view_for,
)
from core import limits
from core.cases import Herald
from core.models import Schedule
from tests.support import extremes as x

ACTOR = "discord:200000000000000001"
#: Discord's rule for CHAT_INPUT command and option names (application-commands page).
NAME = re.compile(r"^[-_'\w]{1,32}$")


@pytest.fixture
async def many(herald: Herald) -> list[Schedule]:
    return await x.extreme_schedules(herald, ACTOR)


def content(text: str) -> None:
    assert 0 < len(text) <= limits.DISCORD_CONTENT.size, len(text)


def components(reply: actions.Reply) -> None:
    view = view_for(reply)
    if view is None:
        return
    rows = view.to_components()
    assert len(rows) <= limits.DISCORD_ACTION_ROWS.size
    for row in rows:
        assert len(row["components"]) <= limits.DISCORD_ROW_BUTTONS.size
        for button in row["components"]:
            custom_id = button["custom_id"]
            assert len(custom_id) <= limits.DISCORD_CUSTOM_ID.size
            assert len(button["label"]) <= limits.DISCORD_BUTTON_LABEL.size
            handler = (
                DeadLetterButton
                if ":dead:" in custom_id
                else PageButton
                if ":list:" in custom_id
                else ScheduleButton
            )
            # a click after a restart finds its handler by this template
            assert handler.__discord_ui_compiled_template__.fullmatch(custom_id), custom_id


async def test_messages_and_their_buttons(many: list[Schedule]) -> None:
    for schedule in many:
        reply = actions.Reply(
            render.fit(render.card(schedule, "Scheduled.")), actions.buttons_for(schedule)
        )
        content(reply.text)
        components(reply)
        components(actions.Reply("Paused.", actions.buttons_for(schedule, toggle=True)))
        content(render.detail(x.detail_of(schedule)))
        assert len(render.choice_label(schedule)) <= limits.DISCORD_CHOICE_NAME.size
    for everyone in (False, True):
        listed = many * 10
        for number in (0, 1, 10**6):
            text, shown, pages = render.listing(listed, everyone=everyone, number=number)
            assert pages > 2 and 0 <= shown < pages
            content(text)
            for row in text.splitlines()[1:-1]:
                assert len(row) <= render.LINE_MOST, row
            big = 10**19  # Discord's snowflakes are 64-bit: at most 20 digits
            page = actions.ListPage(big, big, everyone, "cancelled", 10**5)
            components(actions.Reply(text, pages=(("previous", page), ("next", page))))
    assert render.PAGE * render.LINE_MOST + 100 <= limits.DISCORD_CONTENT.size
    for n in range(3):
        alert = actions.alert(x.finished(n))
        content(alert.text)
        components(alert)
        content(render.decided(alert.text, "Retried", 2**63 - 1, x.finished().job.due_at))
    feeds = x.feeds()
    content(render.feeds(feeds))
    content(render.feed_added(feeds[0], "https://example.org/" + "c" * 3000 + ".ics"))
    content(actions.help_reply(x.ZONE).text)


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


async def test_the_edit_form(many: list[Schedule]) -> None:
    for schedule in many:
        for body in (schedule.body, "x" * 2000, "y" * 4000):
            form = EditForm(schedule.model_copy(update={"body": body}))
            payload = form.to_dict()
            assert len(payload["title"]) <= limits.DISCORD_MODAL_TITLE.size
            assert len(payload["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
            assert len(payload["components"]) <= limits.DISCORD_MODAL_COMPONENTS.size
            texts = []
            for node in walk(payload["components"]):
                if node.get("type") == 18:  # a label
                    assert len(node["label"]) <= limits.DISCORD_LABEL.size
                    assert len(node.get("description", "")) <= limits.DISCORD_LABEL_DESCRIPTION.size
                if node.get("type") == 4:  # a text input
                    most = node["max_length"]
                    assert most <= limits.DISCORD_TEXT_INPUT.size
                    assert len(node.get("value", "")) <= most
                    assert len(node["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
                    texts.append(node)
                if node.get("type") == 10:  # a text display
                    assert len(node["content"]) <= limits.DISCORD_TEXT_DISPLAY.size
            message = [t for t in texts if t["custom_id"] == "text"]
            if message:  # the message field holds the whole message, never a cut copy
                assert message[0]["value"] == body
            else:
                assert len(body) > limits.text_limit(schedule.destination).size


async def test_autocomplete_answers(herald: Herald, many: list[Schedule]) -> None:
    for n in range(40):
        await herald.create_schedule(ACTOR, to="log:", when=f"in {n + 1} hours", text=x.BODY)
    answers = [
        await choices.id_choices(herald, ACTOR, ""),
        await choices.id_choices(herald, ACTOR, "ü"),
        await choices.when_choices(herald, ACTOR, ""),
        await choices.when_choices(herald, ACTOR, "every day at 9am except x from https://e.org/h"),
        await choices.when_choices(herald, ACTOR, "ü" * 99),
        [(zone, zone) for zone in choices.zone_choices("")],
        [(zone, zone) for zone in choices.zone_choices("a")],
    ]
    for pairs in answers:
        assert len(pairs) <= limits.DISCORD_CHOICES.size
        for name, value in pairs:
            assert 1 <= len(name) <= limits.DISCORD_CHOICE_NAME.size
            assert 1 <= len(value) <= limits.DISCORD_CHOICE_NAME.size
    assert len(answers[0]) == limits.DISCORD_CHOICES.size  # 40 schedules, 25 offered


def check_command(node: dict[str, Any], depth: int = 0) -> None:
    assert NAME.fullmatch(node["name"]) and node["name"] == node["name"].lower(), node["name"]
    assert 1 <= len(node["description"]) <= limits.DISCORD_COMMAND_DESCRIPTION.size
    options = node.get("options") or []
    assert len(options) <= limits.DISCORD_COMMAND_OPTIONS.size
    for option in options:
        check_command(option, depth + 1)
    for choice in node.get("choices") or []:
        assert 1 <= len(choice["name"]) <= limits.DISCORD_CHOICE_NAME.size


def test_the_application_commands(adapter: DiscordAdapter) -> None:
    tree = adapter.client.tree
    registered = tree.get_commands()
    assert registered
    for command in registered:
        payload = command.to_dict(tree)
        check_command(payload)
        assert isinstance(command, discord.app_commands.Group | discord.app_commands.Command)
