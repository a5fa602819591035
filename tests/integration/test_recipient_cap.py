"""Messages of one author to one destination are capped per hour (issue 32, finding 8:
``HERALD_RECIPIENT_HOURLY_CAP``), counted by the hour they are due in, sent ones
included; admins, exempt tenants and one's own DMs aside. Through the use cases, on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from core.actors import Principal
from core.cases import Herald, import_schedules
from core.clock import ManualClock
from core.dispatcher import Dispatcher
from core.settings import Settings, load_settings
from core.store import AuditFilter, ScheduleQuery
from core.tenancy import QuotaExceeded
from tests.conftest import START
from tests.support.channels import RecordingChannel

A = "slack:TA"
ANNA = Principal("slack:UANNA", A)  # a member, who floods
ALAN = Principal("slack:UALAN", A)  # another member
BOB = Principal("slack:UBOB", A)  # whom they remind
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A


def cap_settings(db_url: str, **extra: Any) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_SLACK_ADMINS_FROM_WORKSPACE=True,
        _env_file=None,
        **extra,
    )


@pytest.fixture
def settings(db_url: str) -> Settings:
    return cap_settings(db_url)  # the default cap, 30


@pytest.fixture
async def known(herald: Herald) -> None:
    for who in (ANNA, ALAN, BOB, ADA):
        await herald.sync_member(who, display_name=who.id.removeprefix("slack:U").title())


async def _to(herald: Herald, destination: str) -> int:
    found = await herald.store.list_schedules(ScheduleQuery(destination=destination, limit=1000))
    return len(found)


@pytest.mark.full(
    "thirty reminders on PostgreSQL; the default run caps them on SQLite", backend="postgres"
)
@pytest.mark.usefixtures("known")
async def test_thirty_reminders_to_one_member_within_an_hour_and_no_more(herald: Herald) -> None:
    assert herald.settings.recipient_hourly_cap == 30
    for n in range(30):  # 14:00 (START is 12:00 UTC)
        await herald.create_schedule(ANNA, to="slack:@UBOB", when="in 2 hours", text=f"ping {n}")
    with pytest.raises(QuotaExceeded) as refused:
        await herald.create_schedule(ANNA, to="slack:@UBOB", when="in 2 hours", text="one more")
    assert str(refused.value) == (
        "You already have 30 messages to slack:@UBOB due within that hour (14:00 to 15:00 "
        "UTC on Mon 02 Mar 2026); the limit is 30 per hour per recipient. Choose another "
        "time, or put them in one message."
    )
    assert await _to(herald, "slack:@UBOB") == 30  # nothing was stored
    denied = await herald.audit_log(ADA, AuditFilter(action="schedule.create.denied"))
    assert [row.actor for row in denied] == [ANNA.id]

    # any hour that holds 14:00 is full; from 15:00 on, another hour begins
    with pytest.raises(QuotaExceeded):
        await herald.create_schedule(ANNA, to="slack:@UBOB", when="at 14:59", text="x")
    with pytest.raises(QuotaExceeded):
        await herald.create_schedule(ANNA, to="slack:@UBOB", when="at 13:01", text="x")
    await herald.create_schedule(ANNA, to="slack:@UBOB", when="at 15:00", text="later")
    await herald.create_schedule(ANNA, to="slack:@UBOB", when="at 13:00", text="earlier")
    # per author and per destination; admins and one's own DMs are not capped
    await herald.create_schedule(ALAN, to="slack:@UBOB", when="in 2 hours", text="from Alan")
    await herald.create_schedule(ANNA, to="slack:C0TEAM", when="in 2 hours", text="channel")
    await herald.create_schedule(ADA, to="slack:@UBOB", when="in 2 hours", text="from Ada")
    await herald.create_schedule(ANNA, to="slack:@UANNA", when="in 2 hours", text="note")
    assert await _to(herald, "slack:@UBOB") == 34


@pytest.fixture
def small(db_url: str) -> Settings:
    return cap_settings(db_url, HERALD_RECIPIENT_HOURLY_CAP=3)


@pytest.fixture
def capped(herald: Herald, small: Settings) -> Herald:
    return Herald(herald.store, small, herald.clock)


@pytest.mark.usefixtures("known")
async def test_messages_already_sent_in_the_hour_count(capped: Herald, clock: ManualClock) -> None:
    """The flood's second wave: as soon as the first three are sent, three more for
    the same hour are still too many."""
    for n in range(3):
        await capped.create_schedule(ANNA, to="slack:@UBOB", when="in 10 minutes", text=f"{n}")
    clock.advance(600)
    channel = RecordingChannel(kind="slack")
    await Dispatcher(capped.store, {"slack": channel}, clock=clock).drain()
    assert len(channel.deliveries) == 3
    with pytest.raises(QuotaExceeded, match="already have 3 messages to slack:@UBOB"):
        await capped.create_schedule(ANNA, to="slack:@UBOB", when="in 30 minutes", text="again")
    clock.advance(3600)
    await capped.create_schedule(ANNA, to="slack:@UBOB", when="in 1 minute", text="next hour")


@pytest.mark.usefixtures("known")
async def test_a_recurring_schedule_counts_every_send(capped: Herald) -> None:
    mail = "email:ops@example.com"
    with pytest.raises(QuotaExceeded) as refused:
        await capped.create_schedule(ANNA, to=mail, when="every 15 minutes", text="tick")
    assert str(refused.value).startswith(
        "This would send more than 3 messages to email:ops@example.com within one "
        "hour (12:15 to 13:15 UTC on Mon 02 Mar 2026); the limit is 3 per hour per recipient."
    )
    await capped.create_schedule(ANNA, to=mail, when="every 30 minutes", text="tock")
    with pytest.raises(QuotaExceeded, match=r"make 4 messages .*2 of them already there"):
        await capped.create_schedule(ANNA, to=mail, when="every 30 minutes", text="tock")
    # two sends an hour of the rule, from 12:30 on: room for one more in an hour
    await capped.create_schedule(ANNA, to=mail, when="at 17:10", text="one-off")
    with pytest.raises(QuotaExceeded, match="already have 3 messages"):
        await capped.create_schedule(ANNA, to=mail, when="at 17:20", text="one too many")
    assert await _to(capped, mail) == 2


@pytest.mark.usefixtures("known")
async def test_a_webhook_is_a_programs_endpoint_not_a_recipient(capped: Herald) -> None:
    """The cap protects people and rooms; a webhook is bounded by its rate limit."""
    hook = "webhook:https://hooks.example/deploys"
    await capped.create_schedule(ANNA, to=hook, when="every 15 minutes", text="tick")
    for n in range(4):
        await capped.create_schedule(ANNA, to=hook, when="in 10 minutes", text=f"{n}")
    assert await _to(capped, hook) == 5


@pytest.mark.usefixtures("known")
async def test_an_edit_or_a_resume_cannot_crowd_an_hour_either(capped: Herald) -> None:
    made = [
        (await capped.create_schedule(ANNA, to="slack:@UBOB", when=at, text=f"{n}"))[0]
        for n, at in enumerate(("at 14:00", "at 14:10", "at 14:20", "at 18:00"))
    ]
    later = made[3]
    assert later.id is not None
    with pytest.raises(QuotaExceeded, match="already have 3 messages"):
        await capped.edit_schedule(ANNA, later.id, when="at 14:30")
    moved = await capped.edit_schedule(ANNA, later.id, when="at 16:00")
    assert moved.starts_at == START + timedelta(hours=4)
    # a schedule to someone else moved to Bob counts for Bob
    other, _ = await capped.create_schedule(ANNA, to="slack:C0TEAM", when="at 14:40", text="c")
    assert other.id is not None
    with pytest.raises(QuotaExceeded):
        await capped.edit_schedule(ANNA, other.id, to="slack:@UBOB")

    # paused, a message does not count; resuming it does
    first = made[0]
    assert first.id is not None
    await capped.pause_schedule(ANNA, first.id)
    await capped.create_schedule(ANNA, to="slack:@UBOB", when="at 14:05", text="in its place")
    with pytest.raises(QuotaExceeded, match="already have 3 messages"):
        await capped.resume_schedule(ANNA, first.id)
    again = await capped.store.get_schedule(first.id)
    assert again is not None and again.state == "paused"


@pytest.mark.usefixtures("known")
async def test_an_import_cannot_flood_a_recipient(herald: Herald) -> None:
    """Thirty-one lines to one member due in one hour: the import is refused as a whole."""
    lines = [
        json.dumps({"to": "slack:@UBOB", "when": "in 2 hours", "text": f"ping {n}"})
        for n in range(31)
    ]
    with pytest.raises(QuotaExceeded, match="the limit is 30 per hour per recipient"):
        await import_schedules(herald, ANNA, "\n".join(lines))
    assert await _to(herald, "slack:@UBOB") == 0
    report = await import_schedules(herald, ANNA, "\n".join(lines[:30]))
    assert report.imported == 30
