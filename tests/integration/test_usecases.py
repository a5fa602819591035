"""Use cases: permissions, audit, versions, job effects, and bad input that changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.errors import Conflict, InvalidInput, PermissionDenied
from core.models import JobState
from core.store import ScheduleQuery
from tests.conftest import START
from tests.support.store import audit_trail

ALICE, BOB, OPS, ADMIN = "local:alice", "local:bob", "local:olga", "local:root-admin"
LATER = "2026-03-02 15:00"  # START is 12:00 UTC


async def snapshot(herald: Herald) -> list[tuple]:
    """Everything a use case could have changed, to prove a refusal changed nothing."""
    rows = await herald.store.list_schedules(ScheduleQuery())
    out = []
    for s in rows:
        assert s.id is not None
        jobs = await herald.store.schedule_jobs(s.id)
        trail = await audit_trail(herald.store, "schedule", str(s.id))
        out.append((s.model_dump(), [j.model_dump() for j in jobs], len(trail)))
    return out


async def test_create_reads_the_time_in_the_given_zone_and_audits(herald: Herald) -> None:
    s, created = await herald.create_schedule(
        ALICE, to="log:", when="2026-03-03 09:00", text="Standup", tz="Europe/Berlin"
    )
    assert created and s.starts_at == START.replace(day=3, hour=8)  # 09:00 CET = 08:00 UTC
    assert s.timezone == "Europe/Berlin"
    detail = await herald.show_schedule(ALICE, s.id)
    assert [j.due_at for j in detail.jobs] == [s.starts_at]
    [row] = await audit_trail(herald.store, "schedule", str(s.id))
    assert (row.actor, row.action) == (ALICE, "schedule.create")
    assert "Standup" not in str(row.details)  # no message text in the audit log


async def test_member_zone_is_the_default(herald: Herald) -> None:
    await herald.set_timezone(ALICE, "America/New_York")
    s, _ = await herald.create_schedule(ALICE, to="log:", when="2026-03-03 09:00", text="x")
    assert s.timezone == "America/New_York" and s.starts_at.hour == 14


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"to": "smoke:signal"}, "Unknown destination kind 'smoke'"),
        ({"to": "slack:general"}, "not a Slack channel"),
        ({"to": "webhook:ftp://x"}, "not a webhook URL"),
        ({"text": "   "}, "The message is empty"),
        ({"text": "x" * 4001}, "Herald allows 4,000 characters in a message"),
        ({"when": "2026-03-01 09:00"}, "in the past"),
        ({"tz": "Mars/Olympus"}, "Unknown time zone 'Mars/Olympus'"),
        ({"key": ""}, "idempotency key"),
    ],
)
async def test_bad_input_is_refused_and_changes_nothing(
    herald: Herald, kwargs: dict, message: str
) -> None:
    await herald.create_schedule(ALICE, to="log:", when=LATER, text="keep me")
    before = await snapshot(herald)
    request = {"to": "log:", "when": LATER, "text": "hi", **kwargs}
    with pytest.raises(InvalidInput, match=message):
        await herald.create_schedule(ALICE, **request)
    assert await snapshot(herald) == before


async def test_text_of_exactly_4000_characters_is_accepted(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="x" * 4000)
    assert len(s.body) == 4000


async def test_members_act_on_their_own_operators_see_all_admins_act_on_all(
    herald: Herald,
) -> None:
    await herald.set_role(ADMIN, OPS, "operator")
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="alice's")
    assert s.id is not None
    # another member of the tenant: refused for the role, and told so (issue 33)
    with pytest.raises(PermissionDenied) as shown:
        await herald.show_schedule(BOB, s.id)
    assert str(shown.value) == (
        f"Schedule {s.id} is another member's: only its owner, operators and admins can see it."
    )
    with pytest.raises(PermissionDenied, match="only its owner or an admin can change it"):
        await herald.cancel_schedule(BOB, s.id)
    with pytest.raises(PermissionDenied):
        await herald.list_schedules(BOB, everyone=True)
    assert await herald.list_schedules(BOB) == []
    # operator: sees everything, changes only their own
    assert (await herald.show_schedule(OPS, s.id)).schedule.id == s.id
    assert [x.id for x in await herald.list_schedules(OPS, everyone=True)] == [s.id]
    with pytest.raises(PermissionDenied, match="only its owner or an admin"):
        await herald.pause_schedule(OPS, s.id)
    # admin: may act on anything, and the audit says who did it
    await herald.pause_schedule(ADMIN, s.id)
    trail = await audit_trail(herald.store, "schedule", str(s.id))
    assert [(a.actor, a.action) for a in trail] == [
        (ALICE, "schedule.create"),
        (BOB, "schedule.show.denied"),  # every refusal is audited
        (BOB, "schedule.change.denied"),
        (OPS, "schedule.change.denied"),
        (ADMIN, "schedule.pause"),
    ]
    with pytest.raises(PermissionDenied):
        await herald.set_role(OPS, BOB, "admin")


async def test_edit_moves_the_job_and_a_stale_version_is_refused(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="v1")
    assert s.id is not None
    edited = await herald.edit_schedule(
        ALICE, s.id, when="2026-03-02 18:30", text="v2", to="slack:C0123", expected_version=1
    )
    assert (edited.body, edited.destination, edited.version) == ("v2", "slack:C0123", 2)
    jobs = await herald.store.schedule_jobs(s.id)
    pending = [j for j in jobs if j.state == JobState.PENDING]
    assert [j.due_at for j in pending] == [START.replace(hour=18, minute=30)]
    before = await snapshot(herald)
    with pytest.raises(Conflict, match="version 2, not 1"):
        await herald.edit_schedule(ALICE, s.id, text="stale", expected_version=1)
    with pytest.raises(InvalidInput, match="Nothing to change"):
        await herald.edit_schedule(ALICE, s.id)
    assert await snapshot(herald) == before


async def test_pause_resume_cancel_lifecycle(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="x")
    assert s.id is not None
    paused = await herald.pause_schedule(ALICE, s.id)
    assert paused.state == "paused" and paused.next_run_at is None
    assert {j.state for j in await herald.store.schedule_jobs(s.id)} == {JobState.CANCELLED}
    with pytest.raises(Conflict, match="already paused"):
        await herald.pause_schedule(ALICE, s.id)
    resumed = await herald.resume_schedule(ALICE, s.id)
    assert resumed.state == "active" and resumed.next_run_at == s.starts_at
    assert [j.state for j in await herald.store.schedule_jobs(s.id)] == [JobState.PENDING]
    cancelled = await herald.cancel_schedule(ALICE, s.id)
    assert cancelled.state == "cancelled"
    assert {j.state for j in await herald.store.schedule_jobs(s.id)} == {JobState.CANCELLED}
    with pytest.raises(Conflict, match="cancelled, so it cannot be resumed"):
        await herald.resume_schedule(ALICE, s.id)
    with pytest.raises(Conflict, match="cannot be edited"):
        await herald.edit_schedule(ALICE, s.id, text="late")


async def test_resuming_a_one_off_whose_time_passed_is_refused(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="x")
    assert s.id is not None
    await herald.pause_schedule(ALICE, s.id)
    clock.advance(timedelta(hours=4))
    with pytest.raises(InvalidInput, match="passed while it was paused"):
        await herald.resume_schedule(ALICE, s.id)
    assert (await herald.store.get_schedule(s.id)).state == "paused"  # type: ignore[union-attr]


async def test_list_filters(herald: Herald) -> None:
    a, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="Deploy the app")
    b, _ = await herald.create_schedule(ALICE, to="slack:C0123", when=LATER, text="Lunch")
    assert b.id is not None
    await herald.pause_schedule(ALICE, b.id)
    assert [s.id for s in await herald.list_schedules(ALICE, state="paused")] == [b.id]
    assert [s.id for s in await herald.list_schedules(ALICE, destination="log:")] == [a.id]
    assert [s.id for s in await herald.list_schedules(ALICE, text="deploy")] == [a.id]
    with pytest.raises(InvalidInput, match="Unknown state 'sleeping'"):
        await herald.list_schedules(ALICE, state="sleeping")


async def test_actor_ids_are_checked(herald: Herald) -> None:
    with pytest.raises(InvalidInput, match="not a member id"):
        await herald.list_schedules("alice")


async def test_channel_options_are_checked_and_stored(herald: Herald) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*Hi*"}}]
    s, _ = await herald.create_schedule(
        ALICE,
        to="slack:C0123",
        when=LATER,
        text="Hi",
        options={"username": "Bot", "blocks": blocks},
    )
    assert s.options == {"username": "Bot", "blocks": blocks}
    with pytest.raises(InvalidInput, match="Unknown option 'colour'"):
        await herald.create_schedule(
            ALICE, to="log:", when=LATER, text="x", options={"colour": "red"}
        )
    with pytest.raises(InvalidInput, match="must be a list"):
        await herald.create_schedule(
            ALICE, to="log:", when=LATER, text="x", options={"blocks": "x"}
        )


async def test_skip_moves_a_recurring_schedule_past_its_next_occurrence(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every day at 13:00", text="x")
    assert s.id is not None and s.next_run_at == START.replace(hour=13)
    skipped = await herald.skip_next(ALICE, s.id)
    assert skipped.next_run_at == START.replace(hour=13) + timedelta(days=1)
    pending = [j for j in await herald.store.schedule_jobs(s.id) if j.state == JobState.PENDING]
    assert [j.due_at for j in pending] == [skipped.next_run_at]
    once, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="once")
    with pytest.raises(InvalidInput, match="happens only once"):
        await herald.skip_next(ALICE, once.id)


async def test_platform_admins_are_admins_while_the_platform_says_so(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="x")
    owner = "slack:U0OWNER"
    assert (await herald.sync_member(owner, display_name="Olga", platform_admin=True)).is_admin
    await herald.pause_schedule(owner, s.id)
    assert not (await herald.sync_member(owner, platform_admin=False)).is_admin
    with pytest.raises(PermissionDenied, match="another member's"):
        await herald.resume_schedule(owner, s.id)
    trail = await audit_trail(herald.store, "member", owner)
    assert [(a.actor, a.details) for a in trail] == [
        ("system:slack", {"platform_admin": True}),
        ("system:slack", {"platform_admin": False}),
    ]


async def test_zones_are_read_as_people_name_them_and_stored_ones_keep_working(
    herald: Herald,
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when=LATER, text="x", tz="berlin")
    assert s.timezone == "Europe/Berlin"
    assert await herald.set_timezone(ALICE, "new york") == "America/New_York"
    with pytest.raises(InvalidInput, match="EST is ambiguous"):
        await herald.set_timezone(ALICE, "EST")
    with pytest.raises(InvalidInput, match="EST is ambiguous"):
        await herald.create_schedule(ALICE, to="log:", when=LATER, text="x", tz="EST")
    # a zone stored before (a fixed EST) is still the member's, and schedules still read in it
    await herald.store.save_member("local", BOB, now=START, timezone="EST")
    old, _ = await herald.create_schedule(BOB, to="log:", when=LATER, text="x")
    assert old.timezone == "EST" and old.starts_at == START.replace(hour=20)  # 15:00 -05:00
    moved = await herald.edit_schedule(BOB, old.id, when="2026-03-02 16:00")
    assert moved.timezone == "EST" and moved.starts_at == START.replace(hour=21)


async def test_a_rule_without_a_time_takes_the_tenants_default(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every day", text="x", tz="UTC")
    assert s.starts_at == START.replace(day=3, hour=9)  # 09:00 has passed on the 2nd
    local_at_13 = herald.settings.model_copy(
        update={"tenant_default_times": {"local": START.replace(hour=13).time()}}
    )
    other = Herald(herald.store, local_at_13, herald.clock)
    later, _ = await other.create_schedule(ALICE, to="log:", when="every day", text="y", tz="UTC")
    assert later.starts_at == START.replace(hour=13)
