"""Every Discord payload Herald builds, rendered with extreme inputs (the longest texts
it stores, the largest ids, unicode, many schedules), is within Discord's documented
limits (core.limits): message content, buttons and their custom_ids, the Edit form,
autocomplete answers and the application commands themselves; until done and approvals
(issue 40): the Done button, Approve and Reject, the Reject form, the request lists.

Our fake Discord accepts anything; the real one answers 400 Invalid Form Body."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, actions, approvals, choices, render
from bot.discord_bot.components import (
    DeadLetterButton,
    DuplicateButton,
    EditForm,
    PageButton,
    ScheduleButton,
    view_for,
)
from bot.discord_bot.duplicates import Requests
from bot.discord_bot.ladders import DoneButton
from bot.discord_bot.notices import notice_view
from core import limits, until_done
from core.cases import AuthorNotices, Herald, NoticeLine
from core.channels.discord import done_row
from core.models import REJECT_REASON_CHARS, Schedule
from core.store import ApprovalRow
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
                else DuplicateButton
                if ":dup:" in custom_id
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
        # issue 41: Send now too, at most four in the row
        every = actions.buttons_for(schedule, toggle=True, send_now=True)
        assert len(every) <= 4
        components(actions.Reply("Resumed.", every))
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
    # issue 41: Create anyway and Cancel under a duplicate, the request's token kept here
    components(actions.Reply("⚠️ …", asked=Requests().keep((2**63, 2**63), _nothing)))


async def _nothing(_: Any) -> actions.Reply:
    return actions.Reply("")


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


#: "Slash commands can have a maximum of 8000 characters for combined name, description,
#: and value properties for each command, its options (including subcommands and
#: groups), and choices" (https://discord.com/developers/docs/interactions/application-commands#slash-commands).
COMMAND_CHARS = 8000


def characters(node: dict[str, Any]) -> int:
    """A command's characters as Discord counts them against :data:`COMMAND_CHARS`."""
    total = len(node["name"]) + len(node.get("description", ""))
    for choice in node.get("choices") or []:
        total += len(choice["name"]) + len(str(choice["value"]))
    return total + sum(characters(option) for option in node.get("options") or [])


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
    [group] = [c.to_dict(tree) for c in registered if c.name == "schedule"]
    options = {o["name"]: o.get("options") or [] for o in group["options"]}
    # issue 41: send-now (and its alias now) among the 25 a group may hold; private on
    # create (17 of 25 options) and edit; channel on list
    assert {"send-now", "now"} <= set(options) and len(options) <= 25
    assert "private" in {o["name"] for o in options["create"]} and len(options["create"]) <= 25
    assert "private" in {o["name"] for o in options["edit"]}
    assert "channel" in {o["name"] for o in options["list"]}
    for command in registered:
        payload = command.to_dict(tree)
        check_command(payload)
        assert characters(payload) <= COMMAND_CHARS, characters(payload)
        assert isinstance(command, discord.app_commands.Group | discord.app_commands.Command)


# --- until done and approvals (issue 40) ----------------------------------------------

BIG = 2**63 - 1  # the largest job or request id
SERVER = str(10**19)  # a 20-digit snowflake


def buttons_of(view: discord.ui.View) -> list[dict[str, Any]]:
    rows = view.to_components()
    assert len(rows) <= limits.DISCORD_ACTION_ROWS.size
    found = []
    for row in rows:
        assert len(row["components"]) <= limits.DISCORD_ROW_BUTTONS.size
        for button in row["components"]:
            assert len(button["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
            assert len(button["label"]) <= limits.DISCORD_BUTTON_LABEL.size
            found.append(button)
    return found


def test_the_done_button_is_the_one_core_posts() -> None:
    [row] = [done_row(BIG)]
    [button] = row["components"]
    assert len(button["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
    # a click on core's button, after a restart too, finds its handler by this template
    assert DoneButton.__discord_ui_compiled_template__.fullmatch(button["custom_id"])
    view = discord.ui.View(timeout=None)
    view.add_item(DoneButton(BIG))
    assert [b["custom_id"] for b in buttons_of(view)] == [button["custom_id"]]


def request(n: int, body: str = x.BODY) -> ApprovalRow:
    return ApprovalRow(
        id=BIG - n,
        tenant=f"discord:{SERVER}",
        kind="send",
        state="pending",
        requested_by=f"discord:{SERVER}",
        requested_at=x.finished().job.due_at,
        why=f"it goes to discord:{SERVER}, an announcement channel",
        decided_by=None,
        decided_at=None,
        reason=None,
        expires_at=None,
        schedule_id=BIG,
        schedule_version=1,
        job_id=None,
        body=body,
        destination=f"discord:{SERVER}",
        expression="every weekday at 9am except holidays from https://e.org/" + "h" * 400,
    )


def test_approve_reject_and_the_reject_form() -> None:
    view = discord.ui.View(timeout=None)
    for n in range(approvals.LISTED):
        for item in approvals.buttons(SERVER, BIG - n, f" #{BIG - n}"):
            view.add_item(item)
    found = buttons_of(view)
    assert len(found) == 2 * approvals.LISTED
    for button in found:
        assert approvals.ApprovalButton.__discord_ui_compiled_template__.fullmatch(
            button["custom_id"]
        ), button["custom_id"]

    form = approvals.RejectForm(BIG, SERVER).to_dict()
    assert len(form["title"]) <= limits.DISCORD_MODAL_TITLE.size
    assert len(form["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size
    assert len(form["components"]) <= limits.DISCORD_MODAL_COMPONENTS.size
    [label] = form["components"]
    assert label["type"] == 18 and len(label["label"]) <= limits.DISCORD_LABEL.size
    field = label["component"]
    assert field["type"] == 4 and field["max_length"] == REJECT_REASON_CHARS
    assert field["max_length"] <= limits.DISCORD_TEXT_INPUT.size
    assert len(field["placeholder"]) <= limits.DISCORD_PLACEHOLDER.size
    assert len(field["custom_id"]) <= limits.DISCORD_CUSTOM_ID.size


def test_request_lists_notices_and_decisions_fit() -> None:
    rows = [request(n, body) for n in range(40) for body in (x.BODY, "ü" * 4000)]
    for deciding in (False, True):
        content(approvals.listing(rows, deciding=deciding))
        content(approvals.listing(rows[:1], deciding=deciding))
        content(approvals.listing([], deciding=deciding))
    when = x.finished().job.due_at
    for reason in (None, "r" * REJECT_REASON_CHARS):
        said = approvals.verdict(reason is None, BIG, when, reason)
        for original in ("", "x" * limits.DISCORD_CONTENT.size):
            decided = approvals.with_verdict(original, f"Request {BIG}: {said}")
            content(decided)
            assert decided.endswith(said)  # the verdict is never cut
    lines = tuple(
        NoticeLine(n, "approval", BIG, None, "t" * 300, False, False, False, approval_id=BIG - n)
        for n in range(20)
    )
    view = notice_view(AuthorNotices(f"discord:{SERVER}", f"discord:{SERVER}", lines))
    assert view is not None
    assert len(buttons_of(view)) <= 25


async def test_a_card_with_the_longest_ladder_fits(many: list[Schedule]) -> None:
    people = [f"discord:@{10**19 + n}" for n in range(until_done.MAX_ESCALATE_TO)]
    rule = until_done.parse(
        "5m", [(people, "1h"), ([f"discord:{10**19 + n}" for n in range(5)], "24h")]
    )
    for schedule in many:
        laddered = schedule.model_copy(
            update={"options": {**schedule.options, until_done.OPTION: rule.to_json()}}
        )
        content(render.card(laddered, "Scheduled."))
        content(render.fit(render.card(laddered, "Scheduled.") + "\nHeld for approval: …"))
    assert f"escalate to <@{10**19}>" in render.ladder(rule)
