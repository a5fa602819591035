"""Named templates in Slack (issue 39): ``/schedule … template:NAME name=value``, the
modal's template picker and data, the reply that says which template and shows its next
message as it will be sent, ``/schedule templates``; through signed HTTP and the fake
Slack Web API, on SQLite and PostgreSQL. Bad input is one sentence and stores nothing;
another workspace's templates are never found."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.models.views import View

from core.actors import Principal, slack_tenant
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import TEAM, TENANT, filled, text_of

OTHER = "T0OTHER"
ADMIN = Principal("slack:UADMIN", TENANT)  # HERALD_ADMINS: an admin of every tenant
DEPLOY = "Deploy {{ service }} v{{ version }} (#{{ schedule.id }})"
COMMAND = "<#C0123|general> every monday at 9am template:deploy service=api version=1.4"


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    """The Slack app over SQLite, then PostgreSQL, serving this workspace and another."""
    extra = {"HERALD_SLACK_TEAM_IDS": f"{TEAM},{OTHER}"}
    async with slack_env(slack, db_url, clock, extra) as built:
        await built.herald.add_template(
            ADMIN,
            "deploy",
            DEPLOY,
            variables={"service": "text", "version": "number"},
            description="A release note",
        )
        yield built


async def command(env: SlackEnv, text: str, user: str = "U1", team: str = TEAM) -> str:
    """``/schedule text``: what its ephemeral reply says."""
    count = len(env.slack.responses)
    answer = await env.send.command(text, user=user, team=team)
    assert answer.status == 200
    reply = await env.reply(count + 1)
    assert reply["response_type"] == "ephemeral"
    return text_of(reply)


async def open_modal(env: SlackEnv, text: str = "", user: str = "U1") -> dict[str, Any]:
    count = len(env.slack.opened)
    assert (await env.send.command(text, user=user)).status == 200
    await env.slack.until(lambda: len(env.slack.opened) > count)
    return env.slack.opened[-1]


def block(view: dict[str, Any], block_id: str) -> dict[str, Any]:
    return next(b for b in view["blocks"] if b.get("block_id") == block_id)


def with_template(view: dict[str, Any], name: str | None, data: str | None) -> dict[str, Any]:
    """``view`` with ``name`` picked in the template picker and ``data`` typed."""
    values = view["state"]["values"]
    values["template"] = {
        "template": {
            "type": "static_select",
            "selected_option": {"value": name or "-", "text": {"type": "plain_text", "text": "x"}},
        }
    }
    values["data"] = {"data": {"type": "plain_text_input", "value": data}}
    return view


async def test_a_command_schedules_a_template_with_its_data(env: SlackEnv) -> None:
    said = await command(env, COMMAND)
    assert ":white_check_mark: Scheduled template *deploy* v1 for <#C0123>." in said
    assert "every Monday at 09:00" in said
    [schedule] = await env.schedules()
    assert (schedule.template_version, schedule.body) == (1, DEPLOY)
    assert schedule.options["liquid"]["template"] == "deploy"
    assert schedule.options["liquid"]["data"] == {"service": "api", "version": 1.4}
    # the reply shows the next message as it will be sent, not the template's source
    assert "Template *deploy* v1 with service=api, version=1.4; its next message:" in said
    assert f">Deploy api v1.4 (#{schedule.id})" in said
    assert "{{" not in said
    due = schedule.next_run_at
    assert due is not None
    env.clock.advance((due - env.clock.now()).total_seconds() + 1)
    dispatcher = Dispatcher(
        env.herald.store, env.herald.channels, clock=env.clock, config=DispatcherConfig()
    )
    assert (await dispatcher.drain()).outcomes["delivered"] == 1
    [posted] = env.slack.messages
    assert (posted["channel"], posted["text"]) == ("C0123", f"Deploy api v1.4 (#{schedule.id})")


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        (
            "every monday at 9am template:nope",
            "There is no template named `nope` in this workspace: `/schedule templates` lists",
        ),
        ("every monday at 9am template:deploy service=api", "needs a value for 'version'"),
        (
            "every monday at 9am template:deploy service=api version=soon",
            "'version' must be a number, not 'soon'.",
        ),
        (
            "every monday at 9am template:deploy service=api version=1 colour=red",
            "Template 'deploy' has no variable 'colour' (its variables: service, version).",
        ),
        ("every monday at 9am template:deploy service=api: Hello", "not both"),
        ('"Hello" every monday at 9am template:deploy', "not both"),
        ("every monday at 9am template:deploy service", "give data as name=value"),
        ("template:deploy service=api version=1", "Say when before `template:deploy`"),
        ("someday template:deploy service=api version=1", 'Could not read "someday"'),
    ],
)
async def test_bad_template_input_is_one_sentence_and_stores_nothing(
    env: SlackEnv, text: str, sentence: str
) -> None:
    said = await command(env, text)
    assert sentence in said, said
    assert await env.schedules() == []


async def test_a_template_goes_to_several_recipients_and_to_a_person(env: SlackEnv) -> None:
    said = await command(
        env, "<#C0123|general> <@U2|grace> tomorrow at 9 template:deploy service=web version=2"
    )
    assert "Scheduled template *deploy* v1 for <#C0123>, <@U2> (direct message)." in said
    said = await command(env, "me in 10 minutes template:deploy service=db version=3")
    assert "Reminder for you scheduled" in said and ">Deploy db v3" in said
    routed, reminder = sorted(await env.schedules(), key=lambda s: s.id or 0)
    assert routed.destinations == ["slack:C0123", "slack:@U2"]
    assert reminder.destination == "slack:@U1"
    assert reminder.options["liquid"]["data"] == {"service": "db", "version": 3}


async def test_another_workspaces_template_is_not_found(env: SlackEnv) -> None:
    there = Principal("slack:UADMIN", slack_tenant(OTHER))
    await env.herald.add_template(there, "theirs", "Their {{ x }}", variables={"x": "text"})
    said = await command(env, "every monday at 9am template:theirs x=1")
    assert "There is no template named `theirs` in this workspace" in said
    assert await env.schedules() == []
    listed = await command(env, "templates")
    assert "*deploy*" in listed and "theirs" not in listed
    opened = await open_modal(env)
    options = block(opened["view"], "template")["element"]["options"]
    assert [o["value"] for o in options] == ["-", "deploy"]
    # a picker's submission naming it (a forged or stale view) is refused inline
    view = with_template(filled(opened, text=None, when="tomorrow at 9"), "theirs", "x=1")
    answer = await env.send.submit(view)
    assert "There is no template named 'theirs' here" in answer.json()["errors"]["template"]
    assert await env.schedules() == []
    # and their own workspace sees theirs, not ours
    listed = await command(env, "templates", user="UADMIN", team=OTHER)
    assert "*theirs*" in listed and "deploy" not in listed


async def test_templates_lists_names_variables_and_use(env: SlackEnv) -> None:
    await command(env, COMMAND)
    listed = await command(env, "templates")
    assert "*Templates* (1)" in listed
    assert "• *deploy* v1: A release note · variables: service (text), version (number)" in listed
    assert "used by 1 schedule" in listed
    example = "`/schedule #general every monday at 9am template:deploy service=… version=…`"
    assert f"Schedule one: {example}" in listed


async def test_the_modal_picks_a_template_previews_and_schedules_it(env: SlackEnv) -> None:
    opened = await open_modal(env)
    view = opened["view"]
    View(**view).validate_json()
    assert block(view, "text")["optional"] is True  # a template may stand in for it
    picker = block(view, "template")
    assert picker["element"]["type"] == "static_select" and picker["dispatch_action"] is True
    assert picker["element"]["initial_option"]["value"] == "-"
    # picking it shows its variables and its text with the data typed so far
    current = with_template(filled(opened, text=None, when="every monday at 9am"), "deploy", None)
    current["id"] = "V7"
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "herald"},
        "user": {"id": "U1", "username": "u1", "team_id": TEAM},
        "api_app_id": "A0HERALD",
        "trigger_id": env.send.trigger(),
        "container": {"type": "view", "view_id": "V7"},
        "view": {"hash": "h1", **with_template(current, "deploy", "service=api")},
        "actions": [
            {
                "type": "static_select",
                "action_id": "template",
                "block_id": "template",
                "selected_option": {"value": "deploy"},
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    assert (await env.send.interaction(payload)).status == 200
    await env.slack.until(lambda: env.slack.updated)
    rebuilt = env.slack.updated[-1]["view"]
    View(**rebuilt).validate_json()
    preview = text_of({"blocks": [block(rebuilt, "template_preview")]})
    assert "*deploy* v1 · variables: service (text), version (number)" in preview
    assert ">Deploy api v{{ version }} (#123)" in preview  # never more finished than it is
    assert block(rebuilt, "template")["element"]["initial_option"]["value"] == "deploy"
    assert block(rebuilt, "data")["element"]["initial_value"] == "service=api"
    # submitted: scheduled with the template and its data
    answer = await env.send.submit(
        with_template(
            filled(opened, text=None, when="every monday at 9am"),
            "deploy",
            "service=api\nversion=1.4",
        )
    )
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.template_version == 1
    assert schedule.options["liquid"]["data"] == {"service": "api", "version": 1.4}
    note = text_of(env.slack.ephemerals[0])
    assert ":white_check_mark: Scheduled template *deploy* v1 for <#C0123>." in note
    assert f">Deploy api v1.4 (#{schedule.id})" in note


@pytest.mark.parametrize(
    ("text", "name", "data", "field", "sentence"),
    [
        (None, None, None, "text", "Say what to send, or pick a template."),
        ("Hello", "deploy", "service=api\nversion=1", "text", "not both"),
        (None, "deploy", "service=api", "data", "needs a value for 'version'"),
        (None, "deploy", "service api", "data", "Write each value as name=value"),
        ("Hello", None, "service=api", "data", "Pick a template for these values"),
    ],
)
async def test_the_modal_refuses_bad_template_input_inline(
    env: SlackEnv, text: str | None, name: str | None, data: str | None, field: str, sentence: str
) -> None:
    opened = await open_modal(env)
    answer = await env.send.submit(
        with_template(filled(opened, text=text, when="every monday at 9am"), name, data)
    )
    errors = answer.json()["errors"]
    assert sentence in errors[field], errors
    assert await env.schedules() == []


async def test_editing_a_templated_schedule_changes_its_data(env: SlackEnv) -> None:
    await command(env, COMMAND)
    opened = await open_modal(env, "edit 1")
    view = opened["view"]
    assert block(view, "template")["element"]["initial_option"]["value"] == "deploy"
    assert block(view, "data")["element"]["initial_value"] == "service=api\nversion=1.4"
    assert "initial_value" not in block(view, "text")["element"]  # no source as a message
    meta = json.loads(view["private_metadata"])
    assert meta["template"] == "deploy"
    answer = await env.send.submit(
        with_template(
            filled(opened, text=None, when="every monday at 9am"),
            "deploy",
            "service=api\nversion=2",
        )
    )
    assert answer.status == 200 and answer.text == "", answer.text
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.options["liquid"]["data"] == {"service": "api", "version": 2}
    assert schedule.version == 2 and schedule.expression == "every monday at 9am"
    assert ":white_check_mark: Saved template *deploy* v1" in text_of(env.slack.ephemerals[0])


async def test_past_a_hundred_templates_the_picker_looks_them_up(env: SlackEnv) -> None:
    for n in range(120):
        await env.herald.add_template(ADMIN, f"t{n:03d}", f"Text {n}")
    there = Principal("slack:UADMIN", slack_tenant(OTHER))
    await env.herald.add_template(there, "t11-theirs", "Theirs")
    opened = await open_modal(env)
    picker = block(opened["view"], "template")["element"]
    assert picker["type"] == "external_select" and "options" not in picker
    View(**opened["view"]).validate_json()
    payload = {
        "type": "block_suggestion",
        "team": {"id": TEAM, "domain": "herald"},
        "user": {"id": "U1", "username": "u1", "team_id": TEAM},
        "api_app_id": "A0HERALD",
        "action_id": "template",
        "block_id": "template",
        "value": "t11",
        "container": {"type": "view", "view_id": "V1"},
        "view": {"id": "V1", "type": "modal", "callback_id": "herald_schedule"},
    }
    answer = await env.send.interaction(payload)
    assert answer.status == 200
    values = [o["value"] for o in answer.json()["options"]]
    assert values == ["-", *(f"t{n:03d}" for n in range(110, 120))]  # not t11-theirs


async def test_a_message_that_mentions_template_colon_is_sent_as_written(env: SlackEnv) -> None:
    """After ": " everything is the message, as it was before templates: a message
    ending in ``template:onboarding`` is text, not a template."""
    said = await command(env, "<#C0123|general> every monday at 9am: Review template:onboarding")
    assert "Scheduled" in said, said
    [s] = await env.schedules()
    assert (s.body, s.template_id) == ("Review template:onboarding", None)
