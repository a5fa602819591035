"""Every Slack payload Herald builds, rendered with extreme inputs (the longest texts it
stores, the largest ids, escaped unicode, many schedules and dead letters), is valid
for slack_sdk's own models (``Block.parse`` / ``View`` + ``validate_json()``, and
``to_dict()``, which validates every element inside) and within the documented limits
of core.limits that no model checks (a plain_text_input's max_length, options...).

Our fake Slack accepts anything; the real one answers ``invalid_blocks``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.slack import blocks as b
from bot.slack import grammar
from bot.slack.dead import Letter, decided, digest_blocks, digest_chunks, letter_blocks
from bot.slack.home import home_view
from bot.slack.modal import ModalMeta, fingerprint, fits_input, schedule_modal, template_blocks
from core import limits
from core.cases import Herald, Overview
from core.channels import parse_destination
from core.errors import InvalidInput
from core.models import Schedule
from core.store import Figures
from tests.support import extremes as x


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def within_table(payload: Any) -> None:
    """The limits slack_sdk's models do not check."""
    for node in walk(payload):
        kind = node.get("type")
        if kind == "plain_text_input":
            most = node.get("max_length", limits.SLACK_INPUT_MAX_LENGTH.size)
            assert 1 <= most <= limits.SLACK_INPUT_MAX_LENGTH.size, node
            assert len(node.get("initial_value", "")) <= most
            placeholder = node.get("placeholder", {}).get("text", "")
            assert len(placeholder) <= limits.SLACK_PLACEHOLDER.size
        if kind in ("static_select", "multi_static_select"):
            assert len(node["options"]) <= limits.SLACK_SELECT_OPTIONS.size
            for option in node["options"]:
                assert len(option["text"]["text"]) <= limits.SLACK_OPTION_TEXT.size
                assert len(option["value"]) <= limits.SLACK_OPTION_VALUE.size
        if kind == "section":
            text = node.get("text", {}).get("text", "")
            assert len(text) <= limits.SLACK_SECTION_TEXT.size
        if kind in ("mrkdwn", "plain_text"):
            assert len(node["text"]) <= limits.SLACK_TEXT_OBJECT.size
        if kind == "button":
            assert len(node.get("value", "")) <= limits.SLACK_BUTTON_VALUE.size
            assert len(node["action_id"]) <= limits.SLACK_ACTION_ID.size


def valid_message(reply: tuple[str, list[dict[str, Any]]]) -> None:
    text, blocks = reply
    assert len(text) <= limits.SLACK_TEXT.size
    assert 0 < len(blocks) <= limits.SLACK_MESSAGE_BLOCKS.size
    for raw in json.loads(json.dumps(blocks)):
        parsed = Block.parse(raw)
        assert parsed is not None, raw
        parsed.validate_json()
        parsed.to_dict()
    within_table(blocks)
    # and what core accepts of user-supplied blocks accepts Herald's own
    limits.check_slack_blocks(blocks)


def valid_view(view: dict[str, Any]) -> None:
    model = View(**json.loads(json.dumps(view)))
    model.validate_json()
    model.to_dict()
    limit = limits.SLACK_HOME_BLOCKS if view["type"] == "home" else limits.SLACK_VIEW_BLOCKS
    assert len(view["blocks"]) <= limit.size
    within_table(view)


@pytest.fixture
def db_url(sqlite_url: str) -> str:
    return sqlite_url  # the payloads do not depend on the database


@pytest.fixture
async def many(herald: Herald) -> list[Schedule]:
    return await x.extreme_schedules(herald)


async def test_replies_about_schedules(many: list[Schedule]) -> None:
    for schedule in many:
        valid_message(b.schedule_reply(schedule, f"Scheduled for {b.where(schedule.destination)}."))
        valid_message(b.schedule_reply(schedule, "Paused.", full=True))  # with Resume
        valid_message(b.detail_reply(x.detail_of(schedule)))
    for everyone in (False, True):
        # ten times as many, each its own schedule (Slack wants unique block_ids)
        listed = [s.model_copy(update={"id": 2**63 - 1 - i}) for i, s in enumerate(many * 10)]
        pages = -(-len(listed) // b.LIST_PAGE)
        assert pages > 2
        for number in (0, 1, pages - 1, pages + 5):
            page = b.Page("slack:T" + "9" * 20, "U" + "9" * 20, everyone, "delivered", number)
            valid_message(b.list_reply(listed, page))
    valid_message(b.notice(grammar.HELP))
    valid_message(b.refusal(InvalidInput("Refused & <refused> " * 300)))


async def test_feed_replies() -> None:
    feeds = x.feeds()
    valid_message(b.feeds_reply(feeds))
    valid_message(b.feed_added(feeds[0], "https://example.org/" + "c" * 2000 + ".ics"))


async def test_dead_letters_single_digest_and_decided() -> None:
    letters = [Letter.from_dead(d) for d in x.dead_letters(400)]
    for letter in letters[:3]:
        valid_message(("alert", letter_blocks(letter)))
    chunks = digest_chunks(letters)
    assert sum(len(c) for c in chunks) == 400  # every letter in one digest
    for chunk in chunks:
        blocks = digest_blocks(chunk)
        valid_message(("digest", blocks))
        valid_message(("decided", decided(blocks, "Retried 400 by <@U1> " * 50)))


async def test_the_home_tab(many: list[Schedule]) -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    figures = Figures(
        due_next_hour=2**31,
        per_minute=[],
        finished_last_hour=2**31,
        first_try_ok=2**31,
        oldest_overdue=(x.BIG, now.replace(year=2000)),
        dead=2**31,
        dead_requested=2**31,
    )
    overview = Overview(now, {"pending": 2**40, "retrying": 2**40, "claimed": 2**40}, figures)
    for schedules in ([], many * 10):
        view = home_view(
            schedules,
            zone=x.ZONE,
            overview=overview,
            dead=x.dead_letters(30),
            admin=True,
            notice="Saved & <done> " * 400,
        )
        valid_view(view)


async def test_the_schedule_modal(many: list[Schedule]) -> None:
    valid_view(schedule_modal(zone=x.ZONE, meta=ModalMeta(channels=("C0123",))))
    valid_view(schedule_modal(zone=x.ZONE, meta=ModalMeta(), preview="*reads* " * 900))
    for schedule in many:
        for body in (schedule.body, "x" * 3000, "&amp;" * 1000):
            meta = ModalMeta(
                schedule_id=schedule.id,
                version=schedule.version,
                channels=("C0123",),
                when=schedule.expression,
                text_fp=fingerprint(body),
                fixed=schedule.destination,
                long_text=not fits_input(body),
            )
            view = schedule_modal(zone=x.ZONE, meta=meta, text=body, preview="ü" * 4000)
            valid_view(view)
            assert len(view["title"]["text"]) <= limits.SLACK_MODAL_TITLE.size
            kept = ModalMeta.loads(view["private_metadata"])
            assert kept.when_changed(schedule.expression) is False  # read back as opened
            assert kept.when_changed("tomorrow at 9") is True


def test_the_known_bugs_are_gone() -> None:
    """The issue's list: a 4,000 max_length, a 25-character title, a digest button
    value over 2,000 characters."""
    view = schedule_modal(zone="UTC", meta=ModalMeta(schedule_id=1234567890, text_fp="f"))
    [message] = [bl for bl in view["blocks"] if bl.get("block_id") == "text"]
    assert message["element"]["max_length"] == 3000
    assert view["title"]["text"] == "Edit schedule"  # "Edit schedule #1234567890" is 25
    chunks = digest_chunks([Letter.from_dead(d) for d in x.dead_letters(150)])
    assert len(chunks) == 2  # 150 nineteen-digit ids do not fit one button
    for chunk in chunks:
        digest = digest_blocks(chunk)
        values = [e["value"] for bl in digest if bl["type"] == "actions" for e in bl["elements"]]
        assert values and all(len(v) <= 2000 for v in values)


async def test_the_most_blocks_a_save_allows_go_out_whole_with_what_herald_adds() -> None:
    """Issue 32: what core.limits lets a schedule save, the Slack channel sends within
    Slack's 50 blocks with its credit or its Snooze/Done buttons added, valid for
    slack_sdk; a message saved before that check is not sent without its credit."""
    from dataclasses import replace

    from core.channels.slack import SlackChannel
    from tests.fakes.deliveries import make_delivery

    own = [{"type": "section", "text": {"type": "mrkdwn", "text": f"part {i}"}} for i in range(49)]
    slack = SlackChannel("xoxb-test", base_url="http://127.0.0.1:9/api/")
    try:
        for uri, name in (("slack:C0123", "Ada"), ("slack:@U0123ABC", None)):
            limits.check_message(parse_destination(uri), "fallback", {"blocks": own})  # saved
            delivery = replace(
                make_delivery(uri, "fallback", options={"blocks": own}), scheduled_by=name
            )
            payload = slack.payload(delivery)
            assert len(payload["blocks"]) == limits.SLACK_MESSAGE_BLOCKS.size
            valid_message((payload["text"], payload["blocks"]))
            added = payload["blocks"][-1]
            assert added["type"] == ("context" if name else "actions")
        full = replace(
            make_delivery("slack:C0123", "x", options={"blocks": [*own, own[0]]}),
            scheduled_by="Ada",
        )
        result = await slack.send(full)  # never reaches Slack: refused before
        assert result.error is not None and "at most 49 blocks" in result.error
        assert result.outcome.value == "permanent"
    finally:
        await slack.close()


def test_the_modal_picks_several_channels() -> None:
    """The picker is Slack's multi_conversations_select (slack_sdk's model reads it
    back as one), starting with up to MAX_PICKED channels within the metadata's size."""
    from slack_sdk.models.blocks import ConversationMultiSelectElement, InputBlock

    from bot.slack.modal import MAX_PICKED

    channels = tuple(f"C{n:010d}" for n in range(MAX_PICKED))
    view = schedule_modal(zone="UTC", meta=ModalMeta(schedule_id=7, channels=channels, when="x"))
    valid_view(view)
    assert len(view["private_metadata"]) <= limits.SLACK_PRIVATE_METADATA.size
    [picker] = [b for b in View(**view).blocks if getattr(b, "block_id", None) == "channel"]
    assert isinstance(picker, InputBlock)
    assert isinstance(picker.element, ConversationMultiSelectElement)
    assert list(picker.element.initial_conversations or []) == list(channels)
    assert ModalMeta.loads(view["private_metadata"]).channels == channels


async def test_template_payloads(herald: Herald) -> None:
    """Issue 39: the modal's template picker (none, a few, the most a static menu
    lists, more: an external_select) with the longest names, data and previews; a
    schedule sending a template at its extremes (its line, its next message); and
    ``/schedule templates`` with the most templates, variables and descriptions."""
    from core.models import Template

    names = [f"{n:03d}" + "n" * 61 for n in range(250)]  # 64 characters, the most
    data = "name=" + "ü&<>" * 2000
    for count in (0, 1, 99, 100, 250):
        for meta in (
            ModalMeta(channels=("C0123",)),
            ModalMeta(schedule_id=x.BIG, version=2**31 - 1, template="z" * 64, data_fp="f"),
        ):
            view = schedule_modal(
                zone=x.ZONE,
                meta=meta,
                templates=names[:count],
                data=data,
                template_preview="*preview* &amp; " * 900,
            )
            valid_view(view)
            assert len(view["private_metadata"]) <= limits.SLACK_PRIVATE_METADATA.size
            pickers = [bl for bl in view["blocks"] if bl.get("block_id") == "template"]
            if not count and meta.template is None:
                assert pickers == []  # no template: the modal as before
                continue
            [picker] = pickers
            static = count + (meta.template is not None) < limits.SLACK_SELECT_OPTIONS.size
            kind = "static_select" if static else "external_select"
            assert picker["element"]["type"] == kind, count
    valid_view(
        {"type": "modal", "title": {"type": "plain_text", "text": "t"},
         "blocks": template_blocks(names[:99], names[98], None, None)}
    )  # fmt: skip
    admin = "local:root-admin"
    variables = {f"v{n:02d}" + "_" * 36: "text" for n in range(30)}  # 30 names of 40
    body = "".join("{{ " + name + " }}" for name in variables)
    await herald.add_template(admin, "z" * 64, body, variables=variables, description="d" * 500)
    made, _ = await herald.create_schedule(
        admin,
        to="log:",
        when="every day at 9am",
        text="",
        template="z" * 64,
        data={name: "&lt;x&gt; " * 13 for name in variables},  # 3,900 characters
    )
    for schedule in (made, made.model_copy(update={"id": x.BIG, "state": "paused"})):
        valid_message(b.schedule_reply(schedule, "Scheduled template *z* v1.", read_back=True))
        valid_message(b.detail_reply(x.detail_of(schedule)))
    page = b.Page("slack:T1", "U1")
    valid_message(
        b.list_reply([made.model_copy(update={"id": x.BIG - n}) for n in range(20)], page)
    )
    template = Template(
        tenant="slack:T1",
        name="z" * 64,
        description="d&<>" * 125,
        version=2**31 - 1,
        body=body,
        variables=variables,
        created_by=admin,
        updated_by=admin,
    )
    for count in (0, 1, 300):
        valid_message(b.templates_reply([(template, 2**31)] * count))
