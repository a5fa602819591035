"""The store's contract, run on real SQLite and real PostgreSQL alike."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from core.errors import Conflict
from core.models import JobState, Schedule, ScheduleState
from core.store import AuditEntry, ScheduleQuery, Store
from tests.conftest import START
from tests.support.store import audit_trail


def make(
    owner: str = "local:alice", *, when=START + timedelta(hours=1), key=None, **kw
) -> Schedule:
    fields = dict(
        owner=owner,
        destination="log:",
        body="hello",
        expression="in 1 hour",
        timezone="UTC",
        starts_at=when,
        next_run_at=when,
        idempotency_key=key,
        created_at=START,
        updated_at=START,
    )
    fields.update(kw)
    return Schedule(**fields)


def audit(action: str = "schedule.create") -> AuditEntry:
    return AuditEntry("local:alice", action, "schedule")


async def test_create_writes_schedule_job_and_audit_together(store: Store) -> None:
    schedule, created = await store.create_schedule(
        make(), first_run=START + timedelta(hours=1), audit=audit(), now=START
    )
    assert created and schedule.id is not None
    stored = await store.get_schedule(schedule.id)
    assert stored is not None and stored.body == "hello"
    assert stored.starts_at == START + timedelta(hours=1)
    assert stored.starts_at.tzinfo is not None and stored.starts_at.utcoffset() == timedelta(0)
    jobs = await store.schedule_jobs(schedule.id)
    assert [(j.state, j.due_at) for j in jobs] == [(JobState.PENDING, START + timedelta(hours=1))]
    assert len(jobs[0].idempotency_key) <= 25
    trail = await audit_trail(store, "schedule", str(schedule.id))
    assert [(a.actor, a.action) for a in trail] == [("local:alice", "schedule.create")]


async def test_same_key_returns_the_existing_schedule(store: Store) -> None:
    first, created1 = await store.create_schedule(
        make(key="k"), first_run=START, audit=audit(), now=START
    )
    again, created2 = await store.create_schedule(
        make(key="k", body="other"), first_run=START, audit=audit(), now=START
    )
    assert (created1, created2) == (True, False)
    assert again.id == first.id and again.body == "hello"
    other_owner, created3 = await store.create_schedule(
        make("local:bob", key="k"), first_run=START, audit=audit(), now=START
    )
    assert created3 and other_owner.id != first.id


async def test_concurrent_creates_with_one_key_make_one_schedule(store: Store) -> None:
    results = await asyncio.gather(
        *[
            store.create_schedule(make(key="race"), first_run=START, audit=audit(), now=START)
            for _ in range(5)
        ]
    )
    assert len({s.id for s, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_list_filters_and_orders_by_next_run(store: Store) -> None:
    late = await store.create_schedule(
        make(when=START + timedelta(days=2), body="Deploy 100% done_ok"),
        first_run=START + timedelta(days=2),
        audit=audit(),
        now=START,
    )
    soon = await store.create_schedule(
        make(when=START + timedelta(hours=1), destination="slack:C0123"),
        first_run=START + timedelta(hours=1),
        audit=audit(),
        now=START,
    )
    bobs = await store.create_schedule(make("local:bob"), first_run=START, audit=audit(), now=START)
    everyone = await store.list_schedules(ScheduleQuery())
    # bob's first run is at START: soonest first
    assert [s.id for s in everyone] == [bobs[0].id, soon[0].id, late[0].id]
    alice = await store.list_schedules(ScheduleQuery(owner="local:alice"))
    assert [s.id for s in alice] == [soon[0].id, late[0].id]
    assert [s.id for s in await store.list_schedules(ScheduleQuery(destination="slack:C0123"))] == [
        soon[0].id
    ]
    # LIKE wildcards in the search text are literal
    assert [s.id for s in await store.list_schedules(ScheduleQuery(text="100% DONE_"))] == [
        late[0].id
    ]
    assert await store.list_schedules(ScheduleQuery(text="100%x")) == []
    assert await store.list_schedules(ScheduleQuery(states=("paused",))) == []
    assert len(await store.list_schedules(ScheduleQuery(limit=1))) == 1


async def test_change_is_refused_at_a_stale_version(store: Store) -> None:
    s, _ = await store.create_schedule(make(), first_run=START, audit=audit(), now=START)
    assert s.id is not None
    changed = await store.change_schedule(
        s.id, expected_version=1, values={"body": "v2"}, now=START, audit=audit("schedule.edit")
    )
    assert (changed.body, changed.version) == ("v2", 2)
    with pytest.raises(Conflict, match="changed by someone else"):
        await store.change_schedule(
            s.id,
            expected_version=1,
            values={"body": "stale"},
            now=START,
            audit=audit("schedule.edit"),
        )
    stored = await store.get_schedule(s.id)
    assert stored is not None and (stored.body, stored.version) == ("v2", 2)
    # the refused change wrote no audit row
    actions = [a.action for a in await audit_trail(store, "schedule", str(s.id))]
    assert actions == ["schedule.create", "schedule.edit"]


async def test_pause_then_resume_revives_the_same_job(store: Store) -> None:
    due = START + timedelta(hours=1)
    s, _ = await store.create_schedule(make(when=due), first_run=due, audit=audit(), now=START)
    assert s.id is not None
    [job] = await store.schedule_jobs(s.id)
    await store.change_schedule(
        s.id,
        expected_version=1,
        values={"state": ScheduleState.PAUSED.value, "next_run_at": None},
        cancel_open_jobs=True,
        now=START,
        audit=audit("schedule.pause"),
    )
    assert [j.state for j in await store.schedule_jobs(s.id)] == [JobState.CANCELLED]
    resumed = await store.change_schedule(
        s.id,
        expected_version=2,
        values={"state": ScheduleState.ACTIVE.value},
        arm_at=due,
        now=START,
        audit=audit("schedule.resume"),
    )
    assert resumed.next_run_at == due
    jobs = await store.schedule_jobs(s.id)
    assert [(j.id, j.state, j.idempotency_key) for j in jobs] == [
        (job.id, JobState.PENDING, job.idempotency_key)
    ]


async def test_bulk_create_keeps_input_order_and_reports_existing_keys(store: Store) -> None:
    rows = [
        make(key=f"k{i}", body=f"m{i}", when=START + timedelta(minutes=i)).model_dump(
            exclude={"id"}
        )
        for i in range(1, 1201)
    ]
    ids = await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:alice", action="schedule.import", now=START
    )
    assert len(ids) == 1200 == len(set(ids))
    for sid, i in ((ids[0], 1), (ids[599], 600), (ids[-1], 1200)):
        stored = await store.get_schedule(sid)
        assert stored is not None and stored.body == f"m{i}"
        [job] = await store.schedule_jobs(sid)
        assert job.due_at == START + timedelta(minutes=i)
    found = await store.existing_keys("local:alice", ["k1", "k1200", "nope"])
    assert found == {"k1", "k1200"}
    assert await store.existing_keys("local:bob", ["k1"]) == set()
    with pytest.raises(Conflict):
        await store.create_schedules_bulk(
            rows[:1], details=[{}], actor="local:alice", action="schedule.import", now=START
        )


async def test_members_are_created_then_updated(store: Store) -> None:
    assert await store.get_member("slack:T1", "slack:U1") is None
    m = await store.save_member("slack:T1", "slack:U1", now=START, timezone="Europe/Berlin")
    assert (m.role, m.timezone) == ("member", "Europe/Berlin")
    m = await store.save_member("slack:T1", "slack:U1", now=START, role="operator")
    assert (m.role, m.timezone) == ("operator", "Europe/Berlin")
    # a role is held per tenant: the same person elsewhere is someone else's member
    assert await store.get_member("slack:T2", "slack:U1") is None
    other = await store.save_member("slack:T2", "slack:U1", now=START)
    assert other.role == "member"
    again = await store.get_member("slack:T1", "slack:U1")
    assert again is not None and again.role == "operator"
