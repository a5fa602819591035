"""Reminders by direct message through the use cases: whom a member may remind (themselves,
a member Herald knows in their tenant), who asked, and the Snooze and Done buttons, with
an injected clock. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core import limits
from core.actors import Principal
from core.cases import Herald, ImportRejected, import_schedules
from core.clock import ManualClock
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.reminders import ASKED_BY, ASKED_BY_NAME
from core.settings import Settings, load_settings
from core.store import ScheduleQuery
from core.tenancy import QuotaExceeded
from tests.conftest import START
from tests.support.store import audit_trail

A, B, GUILD = "slack:TA", "slack:TB", "discord:700000000000000001"
ALICE = Principal("slack:UALICE", A)
BOB = Principal("slack:UBOB", A)
BEN = Principal("slack:UBEN", B)  # another workspace
DAN = Principal("discord:111111111111111111", GUILD)
DORA = Principal("discord:222222222222222222", GUILD)
ROOT = "local:root-admin"  # HERALD_ADMINS: Herald-wide


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS=ROOT,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_QUOTA_SCHEDULES_PER_MEMBER=3,
        _env_file=None,
    )


@pytest.fixture
async def known(herald: Herald) -> None:
    for who, name in ((ALICE, "Alice"), (BOB, "Bob"), (BEN, "Ben"), (DAN, "Dan"), (DORA, "Dora")):
        await herald.sync_member(who, display_name=name)


async def _count(herald: Herald) -> int:
    return len(await herald.store.list_schedules(ScheduleQuery(limit=1000)))


# --- whom a member may remind ---------------------------------------------------------


@pytest.mark.usefixtures("known")
async def test_a_member_reminds_themselves_with_their_own_quota_and_tenant(
    herald: Herald,
) -> None:
    schedule, created = await herald.create_schedule(
        ALICE, to="slack:@UALICE", when="in 10 minutes", text="stretch"
    )
    assert created and schedule.owner == ALICE.id and schedule.tenant == A
    assert schedule.next_run_at == START + timedelta(minutes=10)
    assert ASKED_BY not in schedule.options


@pytest.mark.usefixtures("known")
async def test_a_member_reminds_another_member_of_the_same_tenant(herald: Herald) -> None:
    schedule, _ = await herald.create_schedule(
        ALICE, to="slack:@UBOB", when="tomorrow at 9", text="send the deck"
    )
    assert schedule.owner == ALICE.id and schedule.tenant == A
    assert schedule.options[ASKED_BY] == ALICE.id
    assert schedule.options[ASKED_BY_NAME] == "Alice"
    discord, _ = await herald.create_schedule(
        DAN, to="discord:@222222222222222222", when="in 1 hour", text="review"
    )
    assert discord.options[ASKED_BY] == DAN.id and discord.tenant == GUILD


@pytest.mark.usefixtures("known")
@pytest.mark.parametrize(
    ("who", "to"),
    [
        (ALICE, "slack:@UBEN"),  # known, but in another workspace
        (ALICE, "slack:@UNOBODY"),  # never seen
        (DAN, "discord:@333333333333333333"),  # not in the server
        (ALICE, "discord:@222222222222222222"),  # a Discord user from a Slack workspace
        ("local:someone", "slack:@UALICE"),  # the terminal's plain member
    ],
)
async def test_reminding_someone_outside_the_tenant_is_refused_and_audited(
    herald: Herald, who: Principal | str, to: str
) -> None:
    before = await _count(herald)
    with pytest.raises(PermissionDenied, match="only if they are a member"):
        await herald.create_schedule(who, to=to, when="in 10 minutes", text="hi")
    assert await _count(herald) == before
    trail = await audit_trail(herald.store, "schedule", "")
    assert trail[-1].action == "schedule.create.denied"


@pytest.mark.usefixtures("known")
async def test_the_terminal_operator_may_remind_any_member_herald_knows(herald: Herald) -> None:
    schedule, _ = await herald.create_schedule(
        ROOT, to="slack:@UBEN", when="in 10 minutes", text="from ops"
    )
    assert schedule.tenant == "local" and schedule.options[ASKED_BY] == ROOT
    with pytest.raises(PermissionDenied):
        await herald.create_schedule(ROOT, to="slack:@UNOBODY", when="in 1 hour", text="x")


@pytest.mark.usefixtures("known")
async def test_who_asked_counts_against_the_message_limit(herald: Herald) -> None:
    text = "y" * (limits.DISCORD_CONTENT.size - 5)
    await herald.create_schedule(DAN, to="discord:@111111111111111111", when="in 1h", text=text)
    with pytest.raises(limits.TooLarge):
        await herald.create_schedule(DAN, to="discord:@222222222222222222", when="in 1h", text=text)


# --- Snooze and Done ------------------------------------------------------------------


@pytest.fixture
async def for_bob(herald: Herald, known: None) -> int:
    schedule, _ = await herald.create_schedule(
        ALICE, to="slack:@UBOB", when="in 5 minutes", text="send the deck"
    )
    assert schedule.id is not None
    return schedule.id


@pytest.mark.parametrize(
    ("choice", "due"),
    [
        ("15m", START + timedelta(minutes=15)),
        ("1h", START + timedelta(hours=1)),
        ("tomorrow", datetime(2026, 3, 3, 9, 0, tzinfo=START.tzinfo)),
    ],
)
async def test_snooze_makes_a_one_off_for_the_same_person(
    herald: Herald, for_bob: int, choice: str, due: datetime
) -> None:
    snoozed = await herald.snooze_reminder(BOB, for_bob, choice, message="D1/1700000001.000001")
    new = snoozed.schedule
    assert snoozed.created and new.id != for_bob
    assert new.owner == BOB.id and new.tenant == A  # Bob's quota, Bob's tenant
    assert new.destination == "slack:@UBOB" and new.body == "send the deck"
    assert new.rrule is None and new.next_run_at == due
    assert ASKED_BY not in new.options  # Bob's own now
    trail = await audit_trail(herald.store, "schedule", str(new.id))
    assert [a.action for a in trail] == ["schedule.create"]


async def test_snooze_until_tomorrow_is_9_in_the_members_zone(
    herald: Herald, for_bob: int, clock: ManualClock
) -> None:
    await herald.set_timezone(BOB, "Asia/Tokyo")  # 12:00 UTC is 21:00 in Tokyo
    snoozed = await herald.snooze_reminder(BOB, for_bob, "tomorrow", message="m")
    assert snoozed.schedule.next_run_at == datetime(2026, 3, 3, 0, 0, tzinfo=START.tzinfo)
    assert snoozed.schedule.timezone == "Asia/Tokyo"


async def test_a_second_click_on_the_same_message_makes_nothing_new(
    herald: Herald, for_bob: int
) -> None:
    first = await herald.snooze_reminder(BOB, for_bob, "15m", message="m1")
    again = await herald.snooze_reminder(BOB, for_bob, "15m", message="m1")
    assert not again.created and again.schedule.id == first.schedule.id
    other = await herald.snooze_reminder(BOB, for_bob, "15m", message="m2")
    assert other.created


@pytest.mark.parametrize(
    "clicker",
    [
        ALICE,  # asked for it, but it is not hers
        Principal("slack:UBOB", B),  # Bob's id, from another workspace
        BEN,
    ],
)
async def test_buttons_of_someone_elses_reminder_are_refused(
    herald: Herald, for_bob: int, clicker: Principal
) -> None:
    before = await _count(herald)
    with pytest.raises(NotFound, match="no reminder"):
        await herald.snooze_reminder(clicker, for_bob, "15m", message="m")
    with pytest.raises(NotFound, match="no reminder"):
        await herald.finish_reminder(clicker, for_bob)
    assert await _count(herald) == before
    trail = await audit_trail(herald.store, "schedule", str(for_bob))
    assert {a.action for a in trail} >= {"reminder.snooze.denied", "reminder.done.denied"}


async def test_a_channel_message_has_no_reminder_buttons(herald: Herald, known: None) -> None:
    schedule, _ = await herald.create_schedule(ALICE, to="slack:C0123", when="in 1h", text="x")
    assert schedule.id is not None
    with pytest.raises(NotFound):
        await herald.finish_reminder(ALICE, schedule.id)


async def test_discord_buttons_in_a_dm_act_in_the_reminders_server(
    herald: Herald, known: None
) -> None:
    schedule, _ = await herald.create_schedule(
        DAN, to="discord:@222222222222222222", when="in 1h", text="review"
    )
    assert schedule.id is not None
    # a click in a DM carries no server: the tenant is Dora's own
    in_dm = Principal(DORA.id, "discord:@222222222222222222")
    snoozed = await herald.snooze_reminder(in_dm, schedule.id, "1h", message="9")
    assert snoozed.schedule.owner == DORA.id and snoozed.schedule.tenant == GUILD
    done = await herald.finish_reminder(in_dm, schedule.id)
    assert done.id == schedule.id
    trail = await audit_trail(herald.store, "schedule", str(schedule.id))
    assert trail[-1].action == "reminder.done" and trail[-1].actor == DORA.id


async def test_snooze_counts_against_the_members_quota(herald: Herald, for_bob: int) -> None:
    for n in range(3):  # HERALD_QUOTA_SCHEDULES_PER_MEMBER=3
        await herald.snooze_reminder(BOB, for_bob, "15m", message=f"m{n}")
    with pytest.raises(QuotaExceeded):
        await herald.snooze_reminder(BOB, for_bob, "15m", message="m3")


async def test_unknown_snooze_choice_is_refused(herald: Herald, for_bob: int) -> None:
    with pytest.raises(InvalidInput, match="Unknown snooze"):
        await herald.snooze_reminder(BOB, for_bob, "forever", message="m")


# --- edit and import go through the same rule ----------------------------------------


@pytest.mark.usefixtures("known")
async def test_editing_to_someone_outside_the_tenant_is_refused(herald: Herald) -> None:
    schedule, _ = await herald.create_schedule(ALICE, to="slack:@UALICE", when="in 1h", text="x")
    assert schedule.id is not None
    with pytest.raises(PermissionDenied):
        await herald.edit_schedule(ALICE, schedule.id, to="slack:@UBEN")
    edited = await herald.edit_schedule(ALICE, schedule.id, to="slack:@UBOB")
    assert edited.destination == "slack:@UBOB" and edited.options[ASKED_BY] == ALICE.id
    back = await herald.edit_schedule(ALICE, schedule.id, to="slack:C0123")
    assert ASKED_BY not in back.options


@pytest.mark.usefixtures("known")
async def test_an_import_line_to_someone_outside_the_tenant_is_invalid(herald: Herald) -> None:
    lines = [
        '{"to": "slack:@UBOB", "when": "in 1h", "text": "ok"}',
        '{"to": "slack:@UBEN", "when": "in 1h", "text": "not here"}',
    ]
    with pytest.raises(ImportRejected) as caught:
        await import_schedules(herald, ALICE, lines)
    [(number, reason)] = caught.value.invalid
    assert number == 2 and "only if they are a member" in reason
    assert await _count(herald) == 0


@pytest.mark.usefixtures("known")
async def test_a_fast_rule_is_allowed_to_oneself_but_not_into_someone_elses_dms(
    herald: Herald,
) -> None:
    fast = "every 5 minutes"  # faster than HERALD_QUOTA_MIN_INTERVAL's default
    mine, _ = await herald.create_schedule(ALICE, to="slack:@UALICE", when=fast, text="water")
    assert mine.rrule is not None
    with pytest.raises(QuotaExceeded):
        await herald.create_schedule(ALICE, to="slack:@UBOB", when=fast, text="water")
