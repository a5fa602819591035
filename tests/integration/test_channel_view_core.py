"""The channel's view (issue 41) through the use cases, on SQLite and PostgreSQL:
the agenda's privacy and tenancy, duplicates (warn, refuse, create anyway), sending a
schedule's next occurrence now, and a save's congestion warning."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.actors import Principal
from core.cases import Herald
from core.cases.channel_view import Duplicated
from core.errors import Conflict, InvalidInput, PermissionDenied
from core.store import AuditFilter
from core.views import warnings_of
from tests.conftest import START

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)
BOB = Principal("slack:UBOB", A)
ADA = Principal("slack:UADA", A, platform_admin=True)
BEN = Principal("slack:UBEN", B)
GENERAL = "slack:C0GENERAL"


async def test_agenda_shows_a_channels_schedules_to_who_is_in_it(herald: Herald) -> None:
    bob, _ = await herald.create_schedule(
        BOB, to=GENERAL, when="every weekday at 9am", text="Stand-up in 5 minutes"
    )
    await herald.create_schedule(
        BOB, to=GENERAL, when="tomorrow at 10am", text="secret", private=True
    )
    await herald.create_schedule(BEN, to=GENERAL, when="tomorrow at 10am", text="other tenant")
    seen = await herald.agenda(ANNA, GENERAL, seen_in=GENERAL)
    assert [e.schedule.id for e in seen] == [bob.id]
    assert "weekday" in seen[0].when
    with pytest.raises(InvalidInput, match="cannot ask Slack"):
        await herald.agenda(ANNA, GENERAL)  # no platform to ask here
    with pytest.raises(InvalidInput, match="direct message"):
        await herald.agenda(ANNA, "slack:@UBOB", seen_in=GENERAL)
    mine = await herald.agenda(BOB, GENERAL, seen_in=GENERAL)
    assert len(mine) == 2  # his private one too
    audits = await herald.store.audit_page(AuditFilter(action="view.channel"), limit=10)
    assert [(a.actor, a.action) for a in audits if a.action == "view.channel"] == [
        ("slack:UANNA", "view.channel")
    ]


async def test_duplicates_warn_refuse_and_create_anyway(herald: Herald) -> None:
    first, _ = await herald.create_schedule(
        BOB, to=GENERAL, when="every weekday at 9am", text="Stand-up in 5 minutes"
    )
    with pytest.raises(Duplicated) as refused:
        await herald.create_schedule(
            ANNA,
            to=GENERAL,
            when="every weekday at 9:05am",
            text="  stand-UP in 5   minutes ",
            duplicates="refuse",
            seen_in=GENERAL,
        )
    assert f"(id {first.id})" in str(refused.value)
    assert "already scheduled 'Stand-up in 5 minutes' into" in str(refused.value)
    warned, created = await herald.create_schedule(
        ANNA,
        to=GENERAL,
        when="every weekday at 9:05am",
        text="stand-up in 5 minutes",
        seen_in=GENERAL,
    )
    assert created and [w.kind for w in warnings_of(warned)] == ["duplicate"]
    quiet, _ = await herald.create_schedule(
        ANNA,
        to=GENERAL,
        when="every weekday at 9:30am",
        text="stand-up in 5 minutes",
        seen_in=GENERAL,
    )
    assert warnings_of(quiet) == []  # outside ten minutes
    other, _ = await herald.create_schedule(
        ANNA,
        to=GENERAL,
        when="every weekday at 9am",
        text="Retro in 5 minutes",
        seen_in=GENERAL,
    )
    assert warnings_of(other) == []
    anyway, _ = await herald.create_schedule(
        ANNA,
        to=GENERAL,
        when="every weekday at 9am",
        text="stand-up in 5 minutes",
        duplicates="ignore",
        seen_in=GENERAL,
    )
    assert warnings_of(anyway) == []


async def test_send_now(herald: Herald) -> None:
    once, _ = await herald.create_schedule(BOB, to=GENERAL, when="in 2 hours", text="once")
    sent = await herald.send_schedule_now(BOB, once.id)
    jobs = await herald.store.schedule_jobs(once.id)
    assert [j.due_at for j in jobs] == [START]
    assert sent.version == once.version + 1
    daily, _ = await herald.create_schedule(BOB, to=GENERAL, when="every day at 9am", text="d")
    before = (await herald.store.schedule_jobs(daily.id))[0]
    await herald.send_schedule_now(BOB, daily.id)
    after = (await herald.store.schedule_jobs(daily.id))[0]
    assert after.id == before.id and after.due_at == START
    assert after.idempotency_key != before.idempotency_key
    assert after.occurrence_at == before.occurrence_at
    paused = await herald.pause_schedule(BOB, daily.id)
    with pytest.raises(InvalidInput, match="paused"):
        await herald.send_schedule_now(BOB, paused.id)
    with pytest.raises(PermissionDenied):
        await herald.send_schedule_now(ANNA, once.id)
    with pytest.raises(Conflict):
        await herald.send_schedule_now(BOB, once.id, expected_version=1)


@pytest.mark.full(
    "a crowded channel on PostgreSQL; the default run crowds it on SQLite", backend="postgres"
)
async def test_a_crowded_channel_is_said(herald: Herald) -> None:
    for i in range(300):
        await herald.create_schedule(
            "local:root-admin",
            to=GENERAL,
            when="tomorrow at 9am",
            text=f"m{i}",
            duplicates="ignore",
        )
    s, _ = await herald.create_schedule(ANNA, to=GENERAL, when="tomorrow at 9am", text="me")
    said = [w for w in warnings_of(s) if w.kind == "congestion"]
    assert len(said) == 1
    assert said[0].text.startswith("301 messages are due into <#C0GENERAL> at 09:00")
    assert "Slack sends about 1 a second there" in said[0].text
    assert said[0].late == pytest.approx(298 * 1.07, rel=0.01)
    assert timedelta(seconds=said[0].late) > timedelta(minutes=5)
