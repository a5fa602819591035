"""Named templates (issue 39) through the use cases, over real SQLite and PostgreSQL:
who may manage them, a schedule with data, the checks when saved for every
destination, an edit that moves (or keeps) the schedules using it, and what was sent
as the delivery log keeps it. The dispatcher drains against a recording channel; time
is a ManualClock."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from tests.support.channels import RecordingChannel
from tests.support.store import audit_trail

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)  # a member of A
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A
BEA = Principal("slack:UBEA", B, platform_admin=True)  # an admin of B
DEPLOY = "Deploy {{ service }} v{{ version }} on {{ date | date: '%A' }} (#{{ schedule.id }})"


def dispatcher(herald: Herald, channel: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=30, max_lateness=3600)
    return Dispatcher(
        herald.store,
        {"log": channel, "discord": RecordingChannel(kind="discord")},
        clock=herald.clock,
        config=config,
        rng=random.Random(7),
    )


async def deploy(herald: Herald) -> None:
    await herald.add_template(
        ADA, "deploy", DEPLOY, variables={"service": "text", "version": "number"}
    )


async def test_members_use_templates_and_admins_manage_them(herald: Herald) -> None:
    with pytest.raises(PermissionDenied):
        await herald.add_template(ANNA, "deploy", DEPLOY, variables={"service": "text"})
    await deploy(herald)
    [(template, used)] = await herald.list_templates(ANNA)
    assert (template.name, template.version, used) == ("deploy", 1, 0)
    with pytest.raises(NotFound):  # invisible to another tenant
        await herald.show_template(BEA, "deploy")
    assert await herald.list_templates(BEA) == []
    with pytest.raises(Conflict):
        await deploy(herald)
    [entry] = await audit_trail(herald.store, "template", str(template.id))
    assert (entry.action, entry.actor) == ("template.create", ADA.id)


async def test_a_template_that_uses_an_undeclared_variable_is_refused(herald: Herald) -> None:
    with pytest.raises(InvalidInput, match=r"\{\{ version \}\}, which is not declared"):
        await herald.add_template(ADA, "deploy", DEPLOY, variables={"service": "text"})
    with pytest.raises(InvalidInput, match="cannot be read"):
        await herald.add_template(ADA, "x", "{% include 'secrets' %}")
    assert await herald.list_templates(ADA) == []


async def test_a_schedule_sends_its_template_filled_in(herald: Herald, clock: ManualClock) -> None:
    await deploy(herald)
    s, _ = await herald.create_schedule(
        ANNA,
        to="log:",
        when="in 1 hour",
        text="",
        template="deploy",
        data={"service": "api", "version": "1.4"},
    )
    assert (s.template_version, s.options["liquid"]["data"]) == (
        1,
        {"service": "api", "version": 1.4},
    )
    channel = RecordingChannel()
    clock.advance(timedelta(hours=1))
    await dispatcher(herald, channel).drain(retry_window=60)
    [sent] = channel.deliveries
    day = clock.now().strftime("%A")
    assert sent.body == f"Deploy api v1.4 on {day} (#{s.id})"
    detail = await herald.show_schedule(ANNA, s.id)
    assert detail.attempts[0].body == sent.body  # the log shows the text as sent


async def test_missing_unknown_and_wrong_kind_values_are_refused(herald: Herald) -> None:
    await deploy(herald)
    for data, said in (
        ({"service": "api"}, "needs a value for 'version'"),
        ({"service": "api", "version": "1.4.2"}, "'version' must be a number"),
        ({"service": "api", "version": 1, "region": "eu"}, "no variable 'region'"),
    ):
        with pytest.raises(InvalidInput, match=said):
            await herald.create_schedule(
                ANNA, to="log:", when="in 1 hour", text="", template="deploy", data=data
            )
    assert await herald.list_schedules(ANNA) == []


async def test_a_value_too_long_for_discord_is_refused_when_saved(herald: Herald) -> None:
    await herald.add_template(
        ADA, "note", "{{ text }} {{ text }} {{ text }}", variables={"text": "text"}
    )
    with pytest.raises(InvalidInput, match="Discord allows 2,000 characters in a message"):
        await herald.create_schedule(
            ANNA,
            to=["log:", "discord:123456789012345678"],
            when="in 1 hour",
            text="",
            template="note",
            data={"text": "short"},
            data_by_recipient={"discord:123456789012345678": {"text": "x" * 1000}},
        )
    s, _ = await herald.create_schedule(
        ANNA,
        to=["log:", "discord:123456789012345678"],
        when="in 1 hour",
        text="",
        template="note",
        data={"text": "x" * 600},
    )
    assert s.template_id is not None


async def test_an_edit_that_would_break_a_schedule_is_refused_naming_it(
    herald: Herald, clock: ManualClock
) -> None:
    await deploy(herald)
    s, _ = await herald.create_schedule(
        ANNA,
        to="log:",
        when="every day at 9am",
        text="",
        template="deploy",
        data={"service": "api", "version": 2},
    )
    with pytest.raises(InvalidInput, match=rf"would break 1 schedule using it \(#{s.id}\)"):
        await herald.edit_template(
            ADA,
            "deploy",
            body="{{ service }} {{ region }}",
            variables={"service": "text", "version": "number", "region": "text"},
        )
    kept = await herald.edit_template(
        ADA,
        "deploy",
        body="{{ service }} {{ region }}",
        variables={"service": "text", "version": "number", "region": "text"},
        force_version=True,
    )
    assert (kept.template.version, kept.moved, [i for i, _ in kept.kept]) == (2, [], [s.id])
    moved = await herald.edit_template(ADA, "deploy", expected_version=2, body="Now {{ service }}")
    assert moved.moved == []  # it stays on version 1, where it was kept
    assert (await herald.show_schedule(ANNA, s.id)).schedule.template_version == 1
    with pytest.raises(InvalidInput, match=rf"used by 1 schedule \(#{s.id}\)"):
        await herald.remove_template(ADA, "deploy")


async def test_a_schedule_is_moved_onto_a_template_given_new_data_and_back_off(
    herald: Herald,
) -> None:
    await deploy(herald)
    s, _ = await herald.create_schedule(ANNA, to="log:", when="every day at 9am", text="plain")
    with pytest.raises(InvalidInput, match="name the template too"):
        await herald.edit_schedule(ANNA, s.id, data={"service": "api"})
    moved = await herald.edit_schedule(
        ANNA, s.id, template="deploy", data={"service": "api", "version": 1}
    )
    assert (moved.template_version, moved.body) == (1, DEPLOY)
    with pytest.raises(InvalidInput, match="edit the template, or stop using it"):
        await herald.edit_schedule(ANNA, s.id, text="new words")
    again = await herald.edit_schedule(ANNA, s.id, data={"service": "web", "version": 2})
    assert again.options["liquid"]["data"] == {"service": "web", "version": 2}
    with pytest.raises(InvalidInput, match="needs a value for 'version'"):
        await herald.edit_schedule(ANNA, s.id, data={"service": "web"})
    with pytest.raises(InvalidInput, match="its own text too"):
        await herald.edit_schedule(ANNA, s.id, template="none")
    off = await herald.edit_schedule(ANNA, s.id, template="none", text="plain again")
    assert (off.template_id, off.body, "liquid" in off.options) == (None, "plain again", False)
    [(_, used)] = await herald.list_templates(ADA)
    assert used == 0
    await herald.remove_template(ADA, "deploy")
    assert await herald.list_templates(ADA) == []


async def test_another_tenant_can_neither_see_nor_use_a_template(herald: Herald) -> None:
    await deploy(herald)
    bob = Principal("slack:UBOB", B)
    for who in (BEA, bob):
        with pytest.raises(NotFound):
            await herald.create_schedule(
                who,
                to="log:",
                when="in 1 hour",
                text="",
                template="deploy",
                data={"service": "api", "version": 1},
            )
        with pytest.raises(NotFound):
            await herald.preview_template(who, "deploy")
    with pytest.raises(NotFound):
        await herald.edit_template(BEA, "deploy", body="hijacked")
    with pytest.raises(NotFound):
        await herald.remove_template(BEA, "deploy")
    assert (await herald.show_template(ADA, "deploy")).template.body == DEPLOY


async def test_a_template_edit_moves_the_schedules_using_it_and_the_log_keeps_the_old_text(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.add_template(ADA, "hello", "Hello {{ who }}", variables={"who": "text"})
    s, _ = await herald.create_schedule(
        ANNA, to="log:", when="every hour", text="", template="hello", data={"who": "team"}
    )
    channel = RecordingChannel()
    d = dispatcher(herald, channel)
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=60)
    edited = await herald.edit_template(
        ADA, "hello", body="Good morning {{ who }}", expected_version=1
    )
    assert (edited.moved, edited.kept) == ([s.id], [])
    with pytest.raises(Conflict):
        await herald.edit_template(ADA, "hello", body="stale", expected_version=1)
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=60)
    assert [x.body for x in channel.deliveries] == ["Hello team", "Good morning team"]
    detail = await herald.show_schedule(ANNA, s.id)
    assert sorted(a.body for a in detail.attempts) == ["Good morning team", "Hello team"]
    assert detail.schedule.template_version == 2
    versions = (await herald.show_template(ANNA, "hello")).versions
    assert [(v.version, v.body) for v in versions] == [
        (2, "Good morning {{ who }}"),
        (1, "Hello {{ who }}"),
    ]
    trail = [e.action for e in await audit_trail(herald.store, "template", str(edited.template.id))]
    assert trail == ["template.create", "template.edit"]


async def test_a_schedule_keeps_at_most_32_kb_of_data(herald: Herald) -> None:
    await herald.add_template(ADA, "note", "{{ text }}", variables={"text": "text"})
    hooks = [f"webhook:https://example.com/h{n}" for n in range(40)]
    with pytest.raises(InvalidInput, match=r"data come to [\d,]+ bytes; the most a schedule keeps"):
        await herald.create_schedule(
            ADA,
            to=hooks,
            when="in 1 hour",
            text="",
            template="note",
            data_by_recipient={hook: {"text": "x" * 1000} for hook in hooks},
        )
    assert await herald.list_schedules(ADA) == []


async def test_a_template_too_slow_to_fill_in_with_its_data_is_refused(herald: Herald) -> None:
    """Its loops and filters over a long value would cost every send, list and
    preview hundreds of milliseconds: refused when saved (its CPU time, not the wall's)."""
    heavy = "{% for i in (1..999) %}{{ v | split: '' | reverse | join: '' | size }}{% endfor %}"
    await herald.add_template(ADA, "heavy", heavy, variables={"v": "text"})
    with pytest.raises(InvalidInput, match=r"takes [\d,]+ ms of CPU; the most is 5 ms"):
        await herald.create_schedule(
            ANNA, to="log:", when="in 1 hour", text="", template="heavy", data={"v": "x" * 1000}
        )
    assert await herald.list_schedules(ANNA) == []
    light = "{% for i in (1..20) %}{{ v | upcase | size }}{% endfor %}"
    await herald.add_template(ADA, "light", light, variables={"v": "text"})
    s, _ = await herald.create_schedule(
        ANNA, to="log:", when="in 1 hour", text="", template="light", data={"v": "x" * 1000}
    )
    assert s.template_id is not None


async def test_a_schedule_whose_template_has_a_subject_takes_new_data(herald: Herald) -> None:
    await herald.add_template(
        ADA,
        "mail",
        "Body {{ service }}",
        subject="Deploy {{ service }}",
        variables={"service": "text"},
    )
    with pytest.raises(InvalidInput, match="takes its subject from the template"):
        await herald.create_schedule(
            ANNA,
            to="email:ops@example.com",
            when="in 1 hour",
            text="",
            template="mail",
            data={"service": "api"},
            options={"subject": "My own"},
        )
    s, _ = await herald.create_schedule(
        ANNA,
        to="email:ops@example.com",
        when="in 1 hour",
        text="",
        template="mail",
        data={"service": "api"},
    )
    edited = await herald.edit_schedule(ANNA, s.id, data={"service": "web"})
    assert edited.options["liquid"]["data"] == {"service": "web"}
    assert edited.options["subject"] == "Deploy {{ service }}"


async def test_names_past_64_characters_and_none_are_no_template(herald: Herald) -> None:
    await herald.add_template(ADA, "a" * 64, "x")
    with pytest.raises(NotFound):
        await herald.remove_template(ADA, "a" * 64 + "x")
    with pytest.raises(InvalidInput, match="'none' means no template"):
        await herald.add_template(ADA, "none", "x")


async def test_embeds_are_checked_at_their_own_longest_date(herald: Herald) -> None:
    """The body does not read the date; an embed does, and is one character over
    Discord's 4,096 only on a Wednesday in September: refused when saved."""
    tail = "{{ date | date: '%A %B' }}"  # at its longest "Wednesday September"
    embed = {"description": "a" * 3000 + "{{ x }}{{ y }}" + tail}
    await herald.add_template(
        ADA, "card", "See below {{ x }}", embeds=[embed], variables={"x": "text", "y": "text"}
    )
    hook = "discord-webhook:https://discord.com/api/webhooks/1/abc"
    data = {"x": "x" * 1000, "y": "y" * 78}  # 4,097 on a Wednesday in September
    with pytest.raises(InvalidInput, match="4,096"):
        await herald.create_schedule(
            ANNA, to=hook, when="in 1 hour", text="", template="card", data=data
        )
    s, _ = await herald.create_schedule(
        ANNA, to=hook, when="in 1 hour", text="", template="card", data={**data, "y": "y" * 77}
    )
    assert s.template_id is not None


async def test_data_may_not_fill_in_herald_s_own_action_ids(herald: Herald) -> None:
    blocks = [
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open"},
                    "action_id": "{{ action }}",
                }
            ],
        }
    ]
    await herald.add_template(ADA, "button", "Click", blocks=blocks, variables={"action": "text"})
    with pytest.raises(InvalidInput, match="Herald's own action or block ids"):
        await herald.create_schedule(
            ANNA,
            to="slack:C0123",
            when="in 1 hour",
            text="",
            template="button",
            data={"action": "herald_retry"},
        )
    s, _ = await herald.create_schedule(
        ANNA,
        to="slack:C0123",
        when="in 1 hour",
        text="",
        template="button",
        data={"action": "open_docs"},
    )
    assert s.template_id is not None
