"""Named templates (issue 39) against every destination's limits, through the use
cases on real SQLite and PostgreSQL: each limit is checked at the longest the template
renders with the schedule's data (the longest weekday and month, the largest id); an
edit that would push a schedule using the template over a limit is refused naming it
(``force_version`` keeps it on its version); the delivered history keeps the text it
sent; a value's mentions go through the same checks as a plain text's; another tenant
never reaches a template; and migration 0018 goes down only while no schedule uses one.

The dispatcher drains against a recording channel; time is a ManualClock."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from core import db, limits, render
from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput, NotFound
from core.tenancy import MentionRefused
from tests.support.channels import RecordingChannel

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)  # a member of A
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A
BEA = Principal("slack:UBEA", B, platform_admin=True)  # an admin of B
BOB = Principal("slack:UBOB", B)  # a member of B
DISCORD = "discord:123456789012345678"  # a channel: its "scheduled by" line is kept room for
SLACK = "slack:C0OPS"
#: What a Discord channel's message may hold of its own: 2,000 less the "scheduled by"
#: line Herald may add (core.limits.DISCORD_CREDIT_ROOM).
DISCORD_ROOM = limits.DISCORD_CONTENT.size - limits.DISCORD_CREDIT_ROOM


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def schedules(herald: Herald) -> list[tuple[Any, ...]]:
    """Every schedule as stored, to show a refusal changed nothing."""
    return [(s.id, s.body, s.template_version, s.options) for s in await herald.list_schedules(ADA)]


async def refused(herald: Herald, said: str, **request: Any) -> str:
    """Create ``request`` as Anna (or ``actor``), expect InvalidInput saying ``said`` in
    one sentence, and nothing stored."""
    actor = request.pop("actor", ANNA)
    before = await schedules(herald)
    with pytest.raises(InvalidInput) as caught:
        await herald.create_schedule(actor, when="in 1 hour", text="", **request)
    message = str(caught.value)
    assert said in message, message
    assert "\n" not in message and message.endswith(".")
    assert await schedules(herald) == before
    return message


# --- each destination's limit at the longest rendering -------------------------------


async def test_discord_is_checked_at_the_longest_weekday_and_month(
    herald: Herald, clock: ManualClock
) -> None:
    """ "Wednesday September" (19 characters) is the longest ``%A %B``: a text one
    character over with it is refused, though every date near now (Monday March, 12)
    and the short ones ("Monday May", 10) would fit."""
    date_field = "{{ date | date: '%A %B' }}"
    over = "x" * (DISCORD_ROOM - 18)
    assert len(over) + len("Monday May") <= DISCORD_ROOM
    assert len(over) + len(clock.now().strftime("%A %B")) <= DISCORD_ROOM
    await herald.add_template(ADA, "over", over + date_field)
    said = await refused(
        herald, "Discord allows 2,000 characters in a message", to=DISCORD, template="over"
    )
    assert said.startswith("Template 'over' v1 filled in for ")
    assert "at its longest" in said
    assert said.endswith(f"this message has {limits.DISCORD_CONTENT.size + 1:,}.")
    await herald.add_template(ADA, "fits", "x" * (DISCORD_ROOM - 19) + date_field)
    s, _ = await herald.create_schedule(
        ANNA, to=DISCORD, when="in 1 hour", text="", template="fits"
    )
    assert s.template_version == 1


async def test_discord_is_checked_with_each_recipients_own_data(herald: Herald) -> None:
    """The Discord recipient's own data, with the largest schedule id, one character
    over its room: refused, though the shared data is short."""
    await herald.add_template(
        ADA, "two", "{{ a }}{{ b }} #{{ schedule.id }}", variables={"a": "text", "b": "text"}
    )
    room = DISCORD_ROOM - len(" #") - len(str(render.LONGEST_ID))
    a = "x" * 1000
    await refused(
        herald,
        "Discord allows 2,000 characters",
        to=["log:", DISCORD],
        template="two",
        data={"a": "short", "b": "y"},
        data_by_recipient={DISCORD: {"a": a, "b": "y" * (room - len(a) + 1)}},
    )
    s, _ = await herald.create_schedule(
        ANNA,
        to=["log:", DISCORD],
        when="in 1 hour",
        text="",
        template="two",
        data={"a": "short", "b": "y"},
        data_by_recipient={DISCORD: {"a": a, "b": "y" * (room - len(a))}},
    )
    assert s.template_id is not None


async def test_slack_blocks_are_checked_after_the_data_fills_them(herald: Herald) -> None:
    await herald.add_template(
        ADA,
        "notes",
        "Release notes",
        blocks=[section("*Notes*"), section("{{ notes }}" * 4)],
        variables={"notes": "text"},
    )
    said = await refused(
        herald,
        "Slack allows 3,000 characters in a section's text; block 2's text has 3,200.",
        actor=ADA,
        to=SLACK,
        template="notes",
        data={"notes": "n" * 800},
    )
    assert said.startswith("Template 'notes' v1 filled in for ")
    s, _ = await herald.create_schedule(
        ADA, to=SLACK, when="in 1 hour", text="", template="notes", data={"notes": "n" * 750}
    )
    assert s.options["blocks"][1]["text"]["text"] == "{{ notes }}" * 4  # filled in when sent


async def test_an_email_subject_is_checked_at_its_longest(herald: Herald) -> None:
    """78 characters (RFC 5322): "Wednesday" (9) is the longest weekday; the schedule
    is saved on a Monday (6), where the subject would fit."""
    await herald.add_template(
        ADA,
        "mail",
        "{{ service }} was deployed.",
        subject="{{ service }} on {{ date | date: '%A' }}",
        variables={"service": "text"},
    )
    email = "email:ops@example.com"
    await refused(
        herald,
        "Email (RFC 5322) allows 78 characters in a subject line; this subject has 79.",
        to=email,
        template="mail",
        data={"service": "s" * 66},
    )
    s, _ = await herald.create_schedule(
        ANNA, to=email, when="in 1 hour", text="", template="mail", data={"service": "s" * 65}
    )
    assert s.options["subject"] == "{{ service }} on {{ date | date: '%A' }}"


async def test_an_sms_value_that_needs_ucs2_is_checked_in_segments(herald: Herald) -> None:
    """682 GSM-7 characters are 5 segments; one Cyrillic letter in a value makes the
    whole text UCS-2, 67 characters a segment: 11, over Twilio's 10."""
    await herald.add_template(ADA, "sms", "a" * 680 + " {{ note }}", variables={"note": "text"})
    sms = "sms:+12025550123"
    said = await refused(
        herald, "SMS segments (UCS-2, because of 'ж')", to=sms, template="sms", data={"note": "ж"}
    )
    assert "can need 11 SMS segments" in said or "needs 11 SMS segments" in said
    s, _ = await herald.create_schedule(
        ANNA, to=sms, when="in 1 hour", text="", template="sms", data={"note": "z"}
    )
    assert s.template_version == 1


async def test_a_template_that_renders_a_python_object_is_refused_when_used(
    herald: Herald,
) -> None:
    """A declared variable's attribute is read, and refused, when a schedule is saved."""
    await herald.add_template(ADA, "peek", "{{ service.__class__ }}", variables={"service": "text"})
    await refused(
        herald,
        "Template 'peek' v1: service.__class__ has no value.",
        to="log:",
        template="peek",
        data={"service": "api"},
    )


# --- an edit and the schedules using the template -----------------------------------------


async def test_an_edit_over_a_dependants_limit_is_refused_naming_it_and_force_keeps_it(
    herald: Herald,
) -> None:
    await herald.add_template(ADA, "note", "{{ text }}", variables={"text": "text"})
    long, _ = await herald.create_schedule(
        ANNA,
        to=DISCORD,
        when="every day at 9am",
        text="",
        template="note",
        data={"text": "x" * 900},
    )
    short, _ = await herald.create_schedule(
        ANNA, to=DISCORD, when="every day at 9am", text="", template="note", data={"text": "hi"}
    )
    tripled = "{{ text }} {{ text }} {{ text }}"
    before = await schedules(herald)
    with pytest.raises(InvalidInput) as caught:
        await herald.edit_template(ADA, "note", body=tripled)
    said = str(caught.value)
    assert f"Version 2 of template 'note' would break 1 schedule using it (#{long.id})" in said
    assert "Discord allows 2,000 characters in a message" in said
    assert "force the new version to keep those on version 1" in said
    assert f"#{short.id}" not in said
    assert await schedules(herald) == before  # nothing changed
    detail = await herald.show_template(ADA, "note")
    assert (detail.template.version, detail.template.body) == (1, "{{ text }}")
    assert [v.version for v in detail.versions] == [1]

    edited = await herald.edit_template(ADA, "note", body=tripled, force_version=True)
    assert edited.template.version == 2
    assert edited.moved == [short.id]
    [(kept_id, why)] = edited.kept
    assert kept_id == long.id and "Discord allows 2,000 characters" in why
    kept = (await herald.show_schedule(ANNA, long.id)).schedule
    moved = (await herald.show_schedule(ANNA, short.id)).schedule
    assert (kept.template_version, kept.body) == (1, "{{ text }}")
    assert (moved.template_version, moved.body) == (2, tripled)


async def test_an_edit_that_leaves_a_dependant_without_a_value_is_refused(herald: Herald) -> None:
    await herald.add_template(ADA, "hi", "Hi {{ who }}", variables={"who": "text"})
    s, _ = await herald.create_schedule(
        ANNA, to="log:", when="every day at 9am", text="", template="hi", data={"who": "team"}
    )
    with pytest.raises(InvalidInput, match=rf"would break 1 schedule using it \(#{s.id}\)"):
        await herald.edit_template(
            ADA, "hi", body="Hi {{ who }} in {{ room }}", variables={"who": "text", "room": "text"}
        )


def dispatcher(herald: Herald, channel: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=30, max_lateness=3600)
    return Dispatcher(
        herald.store, {"log": channel}, clock=herald.clock, config=config, rng=random.Random(7)
    )


async def test_history_keeps_the_old_text_and_the_next_occurrence_sends_the_new(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.add_template(
        ADA, "standup", "v1: standup for {{ team }}", variables={"team": "text"}
    )
    s, _ = await herald.create_schedule(
        ANNA,
        to="log:",
        when="every day at 13:00",
        text="",
        template="standup",
        data={"team": "api"},
    )
    channel = RecordingChannel()
    clock.advance(timedelta(hours=1, minutes=1))
    await dispatcher(herald, channel).drain(retry_window=60)
    assert [d.body for d in channel.deliveries] == ["v1: standup for api"]

    edited = await herald.edit_template(ADA, "standup", body="v2: stand-up, {{ team }}")
    assert edited.moved == [s.id]
    clock.advance(timedelta(days=1))
    await dispatcher(herald, channel).drain(retry_window=60)
    assert [d.body for d in channel.deliveries] == ["v1: standup for api", "v2: stand-up, api"]

    detail = await herald.show_schedule(ANNA, s.id)
    sent = sorted(
        ((a.job_id, a.body) for a in detail.attempts if a.body is not None),
        key=lambda pair: pair[0],
    )
    assert [body for _, body in sent] == ["v1: standup for api", "v2: stand-up, api"]
    assert detail.schedule.template_version == 2
    versions = (await herald.show_template(ADA, "standup")).versions
    assert [(v.version, v.body) for v in versions] == [
        (2, "v2: stand-up, {{ team }}"),
        (1, "v1: standup for {{ team }}"),
    ]


# --- mentions in a value ---------------------------------------------------------------------


@pytest.mark.parametrize("mention", ["<!channel>", "<!here>", "<!everyone>"])
async def test_a_slack_broadcast_in_a_value_is_refused_for_a_member_as_in_plain_text(
    herald: Herald, mention: str
) -> None:
    await herald.add_template(ADA, "say", "Heads up: {{ note }}", variables={"note": "text"})
    await herald.add_template(
        ADA, "block", "Heads up", blocks=[section("{{ note }}")], variables={"note": "text"}
    )
    text = f"{mention} deploy at 5"
    with pytest.raises(MentionRefused) as plain:
        await herald.create_schedule(ANNA, to=SLACK, when="in 1 hour", text=f"Heads up: {text}")
    for template in ("say", "block"):
        with pytest.raises(MentionRefused) as templated:
            await herald.create_schedule(
                ANNA, to=SLACK, when="in 1 hour", text="", template=template, data={"note": text}
            )
        assert str(templated.value) == str(plain.value)
    assert await herald.list_schedules(ADA) == []
    s, _ = await herald.create_schedule(
        ADA, to=SLACK, when="in 1 hour", text="", template="say", data={"note": text}
    )
    assert s.template_id is not None  # an admin may


@pytest.mark.parametrize("actor", [ANNA, ADA], ids=["member", "admin"])
async def test_a_discord_mention_in_a_value_gets_the_plain_texts_allowed_mentions(
    herald: Herald, actor: Principal
) -> None:
    await herald.add_template(ADA, "say", "Heads up: {{ note }}", variables={"note": "text"})
    note = "@everyone @here <@&123456789012345678> deploy at 5"
    plain, _ = await herald.create_schedule(
        actor, to=DISCORD, when="in 1 hour", text=f"Heads up: {note}"
    )
    templated, _ = await herald.create_schedule(
        actor, to=DISCORD, when="in 1 hour", text="", template="say", data={"note": note}
    )
    allowed = templated.options["allowed_mentions"]
    assert allowed == plain.options["allowed_mentions"]
    if actor is ANNA:
        assert "everyone" not in allowed["parse"]  # Discord will not ping anyone for it


# --- tenancy ------------------------------------------------------------------------------


async def test_another_tenant_cannot_use_or_see_a_template_by_name(herald: Herald) -> None:
    await herald.add_template(ADA, "deploy", "A: {{ service }}", variables={"service": "text"})
    for actor in (BEA, BOB):
        with pytest.raises(NotFound, match="There is no template named 'deploy' here"):
            await herald.create_schedule(
                actor,
                to="log:",
                when="in 1 hour",
                text="",
                template="deploy",
                data={"service": "api"},
            )
        with pytest.raises(NotFound):
            await herald.preview_template(actor, "deploy", {"service": "api"})
        assert await herald.template_names(actor, "de") == []
    with pytest.raises(NotFound):
        await herald.edit_template(BEA, "deploy", body="B: {{ service }}")
    with pytest.raises(NotFound):
        await herald.remove_template(BEA, "deploy")
    # B's own template of the same name is its own
    await herald.add_template(BEA, "deploy", "B: {{ service }}", variables={"service": "text"})
    b, _ = await herald.create_schedule(
        BOB, to="log:", when="in 1 hour", text="", template="deploy", data={"service": "api"}
    )
    assert b.body == "B: {{ service }}"
    a_detail = await herald.show_template(ADA, "deploy")
    assert (a_detail.template.body, a_detail.used_by) == ("A: {{ service }}", [])
    mine, _ = await herald.create_schedule(
        ANNA, to="log:", when="in 1 hour", text="", template="deploy", data={"service": "api"}
    )
    with pytest.raises(NotFound):  # B cannot move A's schedule onto its template either
        await herald.edit_schedule(BEA, mine.id, template="deploy", data={"service": "x"})


# --- migration 0018 -------------------------------------------------------------------------


def _count(url: str, query: str) -> Any:
    engine = db.make_sync_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(query)).scalar_one()
    finally:
        engine.dispose()


async def test_0018_goes_down_while_no_schedule_uses_a_template(
    herald: Herald, db_url: str
) -> None:
    db.upgrade(db_url)
    await herald.add_template(ADA, "unused", "Hello {{ who }}", variables={"who": "text"})
    await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="plain text")
    await herald.store.close()
    db.downgrade(db_url, "0017")
    assert db.current_revision(db_url) == "0017"
    assert _count(db_url, "SELECT count(*) FROM schedule") == 1
    db.upgrade(db_url)
    assert _count(db_url, "SELECT count(*) FROM template") == 0


async def test_0018_refuses_to_go_down_while_a_schedule_uses_one_naming_the_count(
    herald: Herald, db_url: str
) -> None:
    db.upgrade(db_url)
    await herald.add_template(ADA, "hi", "Hello {{ who }}", variables={"who": "text"})
    for who in ("team", "ops"):
        await herald.create_schedule(
            ANNA, to="log:", when="in 1 hour", text="", template="hi", data={"who": who}
        )
    await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="plain text")
    await herald.store.close()
    db.downgrade(db_url, "0018")  # the revisions above it hold nothing here
    query = "SELECT count(*) FROM schedule WHERE template_id IS NOT NULL"
    with pytest.raises(RuntimeError, match="Cannot go below revision 0018: 2 schedules use a"):
        db.downgrade(db_url, "0017")
    assert db.current_revision(db_url) == "0018"
    assert _count(db_url, query) == 2
    assert _count(db_url, "SELECT count(*) FROM template_version") == 1


async def test_each_recipient_is_checked_at_its_own_longest_date(herald: Herald) -> None:
    """The first recipient's text does not depend on the date's length (``%a``: three
    letters), so any date is its longest; the Discord recipient's does (``%A %B``): at
    the first sample date (Saturday January, 16 characters) it fits, at Wednesday
    September (19) it is one over."""
    await herald.add_template(
        ADA,
        "styled",
        "x" * (DISCORD_ROOM - 18) + "{% if style == 'long' %}{{ date | date: '%A %B' }}{% else %}"
        "{{ date | date: '%a' }}{% endif %}",
        variables={"style": "text"},
    )
    # alone, the Discord recipient is refused
    with pytest.raises(InvalidInput, match="Discord allows 2,000 characters"):
        await herald.create_schedule(
            ANNA, to=DISCORD, when="in 1 hour", text="", template="styled", data={"style": "long"}
        )
    # after a recipient whose longest date is another, it must be refused too
    with pytest.raises(InvalidInput, match="Discord allows 2,000 characters"):
        await herald.create_schedule(
            ANNA,
            to=["log:", DISCORD],
            when="in 1 hour",
            text="",
            template="styled",
            data={"style": "short"},
            data_by_recipient={DISCORD: {"style": "long"}},
        )
