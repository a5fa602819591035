"""Event hooks and the pull feed (issue 38) over real SQLite and PostgreSQL: who may
register and manage a hook, what each hook hears (its tenant, its owner's schedules,
its types, schedule and key prefix), cursors that start at registration and never pass
an event committed later, and the audit trail."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa

from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.models import Audit, EventHook
from core.settings import load_settings
from core.store import Store
from core.store.events import EventScope, last_position
from tests.conftest import START
from tests.support.events import settled

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)  # a member of A
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A
ARNO = Principal("slack:UARNO", A)  # another member of A
BEA = Principal("slack:UBEA", B, platform_admin=True)  # an admin of B
URL = "https://hooks.example.com/herald"
ALL = ["job.delivered", "job.retrying", "job.dead", "job.expired"]


async def record(
    store: Store,
    tenant: str,
    kind: str,
    owner: str,
    *,
    schedule_id: int = 1,
    key: str = "k",
    settle: bool = True,
) -> None:
    """One committed event, written as the outcome's transaction writes it (and, unless
    ``settle`` is off, readable: see :func:`settled`)."""
    async with store._engine.begin() as conn:
        await insert_event(conn, tenant, kind, owner, schedule_id=schedule_id, key=key)
    if settle:
        await settled(store)


async def insert_event(
    conn: sa.ext.asyncio.AsyncConnection,
    tenant: str,
    kind: str,
    owner: str,
    *,
    schedule_id: int = 1,
    key: str = "k",
) -> None:
    tx = "pg_current_xact_id()::text::bigint" if conn.dialect.name == "postgresql" else "0"
    await conn.execute(
        sa.text(
            f"INSERT INTO event (tx, tenant, type, at, schedule_id, job_id, owner, key, data) "
            f"VALUES ({tx}, :tenant, :type, :at, :sid, 7, :owner, :key, :data)"
        ),
        {
            "tenant": tenant,
            "type": kind,
            "at": ManualClock(START).now(),
            "sid": schedule_id,
            "owner": owner,
            "key": key,
            "data": json.dumps({"schedule_id": schedule_id, "idempotency_key": key}),
        },
    )


async def heard(store: Store, hook: EventHook, *, advance: bool = True) -> list[tuple[str, str]]:
    """What ``hook`` hears now (type, key), its cursor moved past it as a push would."""
    fresh = await store.get_hook(hook.tenant, hook.id or 0)
    assert fresh is not None
    events, _ = await store.hook_batch(fresh, limit=100)
    if advance and events:
        now = ManualClock(START).now()
        claimed = await store.claim_hook(
            fresh.id or 0, worker="w", now=now, lease_until=now + timedelta(minutes=1)
        )
        assert claimed is not None
        await store.hook_pushed(
            fresh.id or 0,
            worker="w",
            now=now,
            through=last_position(events),
            delivered=len(events),
        )
    return [(e.type, e.key or "") for e in events]


async def audits(store: Store, action: str) -> list[Audit]:
    async with store._read() as conn:
        table = Audit.__table__  # type: ignore[attr-defined]
        rows = await conn.execute(table.select().where(table.c.action == action))
        return [Audit.model_validate(dict(r._mapping)) for r in rows]


async def test_register_shows_the_secret_once_and_audits_without_it(herald: Herald) -> None:
    made = await herald.register_hook(ADA, URL + "/path?token=abc", ["job.dead"])
    assert made.secret.startswith("whsec_") and made.hook.tenant_wide
    assert (made.hook.tenant, made.hook.owner, made.hook.types) == (A, ADA.id, ["job.dead"])
    [audit] = await audits(herald.store, "hook.create")
    text = json.dumps(audit.details)
    assert made.secret not in text and "token=abc" not in text
    assert audit.object_id == str(made.hook.id) and audit.tenant == A
    mine = await herald.register_hook(ANNA, URL, ["job.delivered", "job.dead"])
    assert not mine.hook.tenant_wide and mine.secret != made.secret


@pytest.mark.parametrize(
    ("url", "types", "prefix", "said"),
    [
        ("ftp://hooks.example.com/x", ["job.dead"], None, "http(s) URL"),
        ("hooks.example.com", ["job.dead"], None, "http(s) URL"),
        (URL, [], None, "needs an event type"),
        (URL, ["job.exploded"], None, "Unknown event type"),
        (URL, ["job.dead"], "k" * 201, "prefix"),
    ],
)
async def test_register_refuses_bad_input(
    herald: Herald, url: str, types: list[str], prefix: str | None, said: str
) -> None:
    with pytest.raises(InvalidInput, match=said.replace("(", r"\(").replace(")", r"\)")):
        await herald.register_hook(ADA, url, types, key_prefix=prefix)


async def test_internal_addresses_are_refused_unless_allowed(
    store: Store, db_url: str, clock: ManualClock
) -> None:
    strict = Herald(
        store,
        load_settings(HERALD_DATABASE_URL=db_url, HERALD_DEFAULT_TZ="UTC", _env_file=None),
        clock,
    )
    for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://[::1]/x"):
        with pytest.raises(InvalidInput, match="internal address"):
            await strict.register_hook(ADA, url, ["job.dead"])
    assert await strict.list_hooks(ADA) == []


async def test_a_tenant_holds_at_most_the_cap(
    store: Store, db_url: str, clock: ManualClock
) -> None:
    capped = Herald(
        store,
        load_settings(HERALD_DATABASE_URL=db_url, HERALD_MAX_EVENT_HOOKS="2", _env_file=None),
        clock,
    )
    await capped.register_hook(ADA, URL, ["job.dead"])
    await capped.register_hook(ANNA, URL, ["job.dead"])
    with pytest.raises(InvalidInput, match="2 event hooks already"):
        await capped.register_hook(ARNO, URL, ["job.dead"])
    await capped.register_hook(BEA, URL, ["job.dead"])  # another tenant's count


async def test_members_manage_their_own_hooks_admins_every_one_of_their_tenant(
    herald: Herald,
) -> None:
    admins = (await herald.register_hook(ADA, URL, ["job.dead"])).hook
    annas = (await herald.register_hook(ANNA, URL, ["job.dead"])).hook
    b_hook = (await herald.register_hook(BEA, URL, ["job.dead"])).hook
    assert [h.id for h in await herald.list_hooks(ANNA)] == [annas.id]
    assert [h.id for h in await herald.list_hooks(ADA)] == [admins.id, annas.id]
    assert [h.id for h in await herald.list_hooks(BEA)] == [b_hook.id]
    for who, hook_id in ((ANNA, admins.id), (ARNO, annas.id), (ADA, b_hook.id)):
        with pytest.raises(NotFound, match="no event hook"):
            await herald.remove_hook(who, hook_id or 0)
        with pytest.raises(NotFound):
            await herald.show_hook(who, hook_id or 0)
    assert len(await audits(herald.store, "hook.remove.denied")) == 2
    removed = await herald.remove_hook(ADA, annas.id or 0)
    assert removed.id == annas.id
    assert [h.id for h in await herald.list_hooks(ADA)] == [admins.id]
    [audit] = await audits(herald.store, "hook.remove")
    assert (audit.actor, audit.object_id) == (ADA.id, str(annas.id))


async def test_a_schedule_filter_names_a_schedule_the_actor_sees(herald: Herald) -> None:
    theirs, _ = await herald.create_schedule(ARNO, to="log:", when="in 1 hour", text="x")
    with pytest.raises(PermissionDenied):
        await herald.register_hook(ANNA, URL, ["job.dead"], schedule_id=theirs.id)
    with pytest.raises(NotFound):
        await herald.register_hook(BEA, URL, ["job.dead"], schedule_id=theirs.id)
    made = await herald.register_hook(ADA, URL, ["job.dead"], schedule_id=theirs.id)
    assert made.hook.schedule_id == theirs.id


async def test_each_hook_hears_its_tenant_its_owner_types_schedule_and_prefix(
    herald: Herald,
) -> None:
    store = herald.store
    await record(store, A, "job.dead", ANNA.id, key="before")  # before any hook: unheard
    admin_all = (await herald.register_hook(ADA, URL, ALL)).hook
    annas = (await herald.register_hook(ANNA, URL, ALL)).hook
    dead_only = (await herald.register_hook(ADA, URL, ["job.dead"])).hook
    by_schedule = (await herald.register_hook(ADA, URL, ALL, schedule_id=None)).hook
    by_prefix = (await herald.register_hook(ADA, URL, ALL, key_prefix="order-")).hook
    b_hook = (await herald.register_hook(BEA, URL, ALL)).hook
    async with store._session() as s:  # a schedule filter, set as registering stores it
        found = await s.get(EventHook, by_schedule.id)
        assert found is not None
        found.schedule_id = 2
    await record(store, A, "job.delivered", ANNA.id, schedule_id=1, key="order-1")
    await record(store, A, "job.dead", ARNO.id, schedule_id=2, key="invoice-1")
    await record(store, B, "job.dead", "slack:UBEN", schedule_id=3, key="order-2")
    await record(store, A, "schedule.paused", ANNA.id, schedule_id=1, key="order-3")

    assert await heard(store, admin_all) == [
        ("job.delivered", "order-1"),
        ("job.dead", "invoice-1"),
    ]
    assert await heard(store, annas) == [("job.delivered", "order-1")]
    assert await heard(store, dead_only) == [("job.dead", "invoice-1")]
    assert await heard(store, by_schedule) == [("job.dead", "invoice-1")]
    assert await heard(store, by_prefix) == [("job.delivered", "order-1")]
    assert await heard(store, b_hook) == [("job.dead", "order-2")]
    # each heard once: the cursors moved on
    for hook in (admin_all, annas, dead_only, by_schedule, by_prefix, b_hook):
        assert await heard(store, hook) == []
    await record(store, A, "job.dead", ANNA.id, key="order-9")
    assert await heard(store, annas) == [("job.dead", "order-9")]


async def test_listening_counts_active_hooks_only(herald: Herald) -> None:
    assert await herald.store.listening() == {}
    made = (await herald.register_hook(ADA, URL, ["job.delivered"])).hook
    await herald.register_hook(ANNA, URL, ["job.retrying", "job.delivered"])
    await herald.register_hook(BEA, URL, ["schedule.ended"])
    assert await herald.store.listening() == {
        A: frozenset({"job.delivered", "job.retrying"}),
        B: frozenset({"schedule.ended"}),
    }
    now = herald.clock.now()
    assert await herald.store.disable_hook(made.id or 0, now=now, reason="it failed for 24 h")
    assert not await herald.store.disable_hook(made.id or 0, now=now, reason="again")
    assert (await herald.store.listening())[A] == frozenset({"job.delivered", "job.retrying"})
    # the disable is audited always; a chat owner is told
    [audit] = await audits(herald.store, "hook.disable")
    assert (audit.actor, audit.tenant, audit.surface) == ("system:event-hooks", A, "system")
    async with herald.store._read() as conn:
        notices = list(await conn.execute(sa.text("SELECT owner, kind, reason FROM notice")))
    assert [(n.owner, n.kind) for n in notices] == [(ADA.id, "hook_disabled")]
    assert "it failed for 24 h" in notices[0].reason


async def test_enable_resets_the_failures_and_is_audited(herald: Herald) -> None:
    made = (await herald.register_hook(ANNA, URL, ["job.dead"])).hook
    store, now = herald.store, herald.clock.now()
    claimed = await store.claim_hook(
        made.id or 0, worker="w", now=now, lease_until=now + timedelta(minutes=1)
    )
    assert claimed is not None
    failing = await store.hook_pushed(
        made.id or 0,
        worker="w",
        now=now,
        through=None,
        delivered=0,
        failure=("it answered 503", now + timedelta(minutes=5)),
    )
    assert failing is not None and (failing.tries, failing.failing_since) == (1, now)
    assert await store.due_hooks(now=now) == []  # backing off
    await store.disable_hook(made.id or 0, now=now, reason="gone")
    enabled = await herald.enable_hook(ANNA, made.id or 0)
    assert (enabled.state, enabled.tries, enabled.failing_since, enabled.last_error) == (
        "active",
        0,
        None,
        None,
    )
    assert [h.id for h in await store.due_hooks(now=now)] == [made.id]
    [audit] = await audits(store, "hook.enable")
    assert audit.details["was"] == "disabled"


async def test_a_lease_keeps_a_hook_to_one_worker(herald: Herald) -> None:
    made = (await herald.register_hook(ADA, URL, ["job.dead"])).hook
    store, now = herald.store, herald.clock.now()
    later = now + timedelta(minutes=2)
    assert await store.claim_hook(made.id or 0, worker="w1", now=now, lease_until=later)
    assert await store.claim_hook(made.id or 0, worker="w2", now=now, lease_until=later) is None
    # a push by a worker that lost the lease changes nothing
    assert (
        await store.hook_pushed(made.id or 0, worker="w2", now=now, through=(0, 99), delivered=1)
        is None
    )
    # the lease runs out: another worker takes it
    after = later + timedelta(seconds=1)
    assert await store.claim_hook(
        made.id or 0, worker="w2", now=after, lease_until=after + timedelta(minutes=2)
    )


async def test_the_pull_feed_pages_with_an_opaque_cursor_scoped_to_the_actor(
    herald: Herald,
) -> None:
    store = herald.store
    for n in range(5):
        await record(store, A, "job.dead", ANNA.id if n % 2 == 0 else ARNO.id, key=f"k{n}")
    await record(store, B, "job.dead", "slack:UBEN", key="b")
    first = await herald.events_after(ADA, None, limit=2)
    assert [e.key for e in first.events] == ["k0", "k1"]
    second = await herald.events_after(ADA, first.next_cursor, limit=2)
    assert [e.key for e in second.events] == ["k2", "k3"]
    rest = await herald.events_after(ADA, second.next_cursor, limit=10)
    assert [e.key for e in rest.events] == ["k4"]
    empty = await herald.events_after(ADA, rest.next_cursor, limit=10)
    assert empty.events == [] and empty.next_cursor == rest.next_cursor
    await record(store, A, "job.dead", ANNA.id, key="k5")
    assert [e.key for e in (await herald.events_after(ADA, rest.next_cursor)).events] == ["k5"]
    annas = await herald.events_after(ANNA, None, limit=100)
    assert [e.key for e in annas.events] == ["k0", "k2", "k4", "k5"]
    assert [e.key for e in (await herald.events_after(BEA, None)).events] == ["b"]
    for bad in ("nope", "x" * 100, "LTEuMA"):
        with pytest.raises(InvalidInput, match="not an events cursor"):
            await herald.events_after(ADA, bad)
    with pytest.raises(InvalidInput, match="1 to 500"):
        await herald.events_after(ADA, None, limit=501)


async def test_on_postgresql_a_cursor_never_passes_an_event_committed_later(
    herald: Herald, db_url: str
) -> None:
    """Two writers: the first inserts an event and stays open while a later one commits.
    Neither is read until the first commits; then both are, each once, in order."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: its events commit in id order")
    store = herald.store
    hook = (await herald.register_hook(ADA, URL, ALL)).hook
    async with store._engine.connect() as slow:
        await slow.begin()
        await insert_event(slow, A, "job.dead", ANNA.id, key="first")
        await record(store, A, "job.dead", ANNA.id, key="second", settle=False)
        assert await heard(store, hook) == []
        assert (await herald.events_after(ADA, None)).events == []
        await slow.commit()
    await settled(store)
    assert await heard(store, hook) == [("job.dead", "first"), ("job.dead", "second")]
    assert await heard(store, hook) == []
    assert [e.key for e in (await herald.events_after(ADA, None)).events] == ["first", "second"]


async def test_an_events_scope_without_an_owner_is_the_whole_tenant(herald: Herald) -> None:
    await record(herald.store, A, "job.dead", ANNA.id, key="x")
    events = await herald.store.events_after(EventScope(A), None, limit=10)
    assert [e.key for e in events] == ["x"]
