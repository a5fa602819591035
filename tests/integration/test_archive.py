"""Archive, then prune (issue 38): finished history past HERALD_RETENTION_DAYS moves to
the archive tables with its attempts, dead letters and live jobs stay, a crash inside a
batch moves nothing, the archive is pruned after HERALD_ARCHIVE_DAYS, and ``herald
show --archived``, the API and the console read it back within the reader's tenant.
Over real SQLite and PostgreSQL, the dispatcher in drain mode, time on a ManualClock."""

from __future__ import annotations

import io
import random
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from bot.http_guard import HttpLimits, guarded_app
from core.actors import Principal, Surface
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput, NotFound
from core.models import ATTEMPT_ARCHIVE, JOB_ARCHIVE, Attempt, Event, Job
from core.settings import Settings
from tests.support.channels import RecordingChannel

MEMBER, ADMIN = "local:bob", "local:root-admin"
STRANGER = Principal("slack:UX", "slack:TX")
CONFIG = DispatcherConfig(max_attempts=1, retention_days=30, archive_days=0)
JOB, ATTEMPT = Job.__table__, Attempt.__table__  # type: ignore[attr-defined]


def keeper(herald: Herald, config: DispatcherConfig = CONFIG) -> Dispatcher:
    return Dispatcher(
        herald.store,
        {"log": RecordingChannel()},
        clock=herald.clock,
        config=config,
        rng=random.Random(7),
    )


async def history(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """Two delivered one-offs, a dead letter and a schedule still waiting (in 90 days):
    their ids, and every row of the job and attempt tables as it was."""
    sent = []
    for text in ("first", "second"):
        s, _ = await herald.create_schedule(MEMBER, to="log:", when="in 1 minute", text=text)
        sent.append(s.id)
    waiting, _ = await herald.create_schedule(MEMBER, to="log:", when="in 90 days", text="later")
    clock.advance(61)
    await keeper(herald).drain()
    dead, _ = await herald.create_schedule(MEMBER, to="log:", when="in 1 minute", text="dead")
    clock.advance(61)
    failing = RecordingChannel(lambda _: DeliveryResult.permanent("404 channel_not_found"))
    await Dispatcher(
        herald.store, {"log": failing}, clock=clock, config=CONFIG, rng=random.Random(7)
    ).drain()
    return {
        "sent": sent,
        "waiting": waiting.id,
        "dead": dead.id,
        "jobs": await rows(herald, JOB),
        "attempts": await rows(herald, ATTEMPT),
    }


async def rows(herald: Herald, table: sa.Table) -> dict[int, dict[str, Any]]:
    async with herald.store._read() as conn:
        return {r.id: dict(r._mapping) for r in await conn.execute(sa.select(table))}


async def test_old_finished_jobs_move_with_their_attempts_and_only_once(
    herald: Herald, clock: ManualClock
) -> None:
    before = await history(herald, clock)
    clock.advance(timedelta(days=31))
    moved = await keeper(herald).housekeeping()
    assert (moved["archived_jobs"], moved["archived_attempts"]) == (2, 2)
    jobs, attempts = await rows(herald, JOB), await rows(herald, ATTEMPT)
    assert {j["schedule_id"] for j in jobs.values()} == {before["waiting"], before["dead"]}
    [dead_job] = [j for j in jobs.values() if j["state"] == "dead"]
    [dead_try] = attempts.values()  # the dead letter keeps its attempt
    assert dead_try["job_id"] == dead_job["id"]
    archived_jobs = await rows(herald, JOB_ARCHIVE)
    archived_attempts = await rows(herald, ATTEMPT_ARCHIVE)
    gone = {i: j for i, j in before["jobs"].items() if i not in jobs}
    assert archived_jobs == gone  # every column as it was
    assert archived_attempts == {i: a for i, a in before["attempts"].items() if a["job_id"] in gone}
    again = await keeper(herald).housekeeping()
    assert (again["archived_jobs"], again["archived_attempts"]) == (0, 0)
    assert await rows(herald, JOB_ARCHIVE) == archived_jobs


async def test_a_batch_interrupted_between_its_statements_moves_nothing(
    herald: Herald, clock: ManualClock
) -> None:
    """A failure after the copies, before the deletes: the batch's transaction rolls
    back whole; the next run moves everything exactly once."""
    before = await history(herald, clock)
    clock.advance(timedelta(days=31))
    engine = herald.store._engine.sync_engine

    def crash(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE FROM ATTEMPT"):
            raise RuntimeError("the process died here")

    sa.event.listen(engine, "before_cursor_execute", crash)
    try:
        with pytest.raises(RuntimeError):
            await herald.store.archive_finished(before=clock.now() - timedelta(days=30))
    finally:
        sa.event.remove(engine, "before_cursor_execute", crash)
    assert await rows(herald, JOB) == before["jobs"]
    assert await rows(herald, ATTEMPT) == before["attempts"]
    assert await rows(herald, JOB_ARCHIVE) == {}
    assert await rows(herald, ATTEMPT_ARCHIVE) == {}
    moved = await herald.store.archive_finished(before=clock.now() - timedelta(days=30), batch=1)
    assert moved == {"jobs": 2, "attempts": 2}  # a batch of one job, twice, then none


async def test_an_archived_id_is_never_given_to_a_new_job(
    herald: Herald, clock: ManualClock
) -> None:
    """SQLite gives a new row the greatest id in its table + 1: were the newest job
    archived, the next job would take its id and the next housekeeping would fail on
    the archive's key, every hour from then on."""
    made = []
    for text in ("first", "second"):
        s, _ = await herald.create_schedule(MEMBER, to="log:", when="in 1 minute", text=text)
        clock.advance(61)
        await keeper(herald).drain()
        clock.advance(timedelta(days=31))
        await keeper(herald).housekeeping()
        made.append(s.id)
    active, archived = await rows(herald, JOB), await rows(herald, JOB_ARCHIVE)
    assert not set(active) & set(archived)
    assert sorted(j["schedule_id"] for j in [*active.values(), *archived.values()]) == made
    assert made[0] in {j["schedule_id"] for j in archived.values()}


async def test_the_archive_and_its_events_are_pruned_after_archive_days(
    herald: Herald, clock: ManualClock
) -> None:
    await history(herald, clock)
    async with herald.store._read() as conn:
        events = (await conn.execute(sa.select(sa.func.count()).select_from(Event))).scalar()
    assert events  # the dead letter's job.dead at least
    async with herald.store._read() as conn:
        last_event = (await conn.execute(sa.select(sa.func.max(Event.id)))).scalar()
    clock.advance(timedelta(days=31))
    await keeper(herald).housekeeping()
    clock.advance(timedelta(days=11))
    kept_for_ever = await keeper(herald).housekeeping()
    assert "pruned_jobs" not in kept_for_ever and "events" not in kept_for_ever
    assert len(await rows(herald, JOB_ARCHIVE)) == 2
    pruned = await keeper(herald, replace(CONFIG, archive_days=10)).housekeeping()
    assert (pruned["pruned_jobs"], pruned["pruned_attempts"], pruned["events"]) == (2, 2, events)
    assert await rows(herald, JOB_ARCHIVE) == {}
    assert await rows(herald, ATTEMPT_ARCHIVE) == {}
    assert len(await rows(herald, JOB)) == 2  # the dead letter and the waiting job stay
    # every event pruned: the next one still comes after them (cursors are positions)
    async with herald.store._read() as conn:
        assert (await conn.execute(sa.select(sa.func.count()).select_from(Event))).scalar() == 0
    async with herald.store._session() as s:
        s.add(Event(tenant="local", type="job.dead", at=clock.now(), data="{}"))
    async with herald.store._read() as conn:
        newest = (await conn.execute(sa.select(sa.func.min(Event.id)))).scalar()
    assert newest is not None and newest > last_event


async def cli(herald: Herald, settings: Settings, *argv: str) -> str:
    """What ``herald <argv>`` prints, as the member, through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(MEMBER, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_show_the_api_and_the_console_read_archived_history_when_asked(
    herald: Herald, clock: ManualClock, settings: Settings
) -> None:
    before = await history(herald, clock)
    sid = before["sent"][0]
    [(job_id, job)] = [(i, j) for i, j in before["jobs"].items() if j["schedule_id"] == sid]
    clock.advance(timedelta(days=31))
    await keeper(herald).housekeeping()

    plain = await herald.show_schedule(MEMBER, sid)
    assert (plain.jobs, plain.attempts) == ([], [])
    detail = await herald.show_schedule(MEMBER, sid, archived=True)
    assert [(j.id, j.state) for j in detail.archived_jobs] == [(job_id, "delivered")]
    assert [a.job_id for a in detail.archived_attempts] == [job_id]

    shown = await cli(herald, settings, "show", str(sid), "--archived")
    [job_line] = [line for line in shown.splitlines() if line.strip().startswith(str(job_id))]
    assert "delivered" in job_line and job_line.endswith("archived")
    assert f"job {job_id}  ok" in shown
    assert str(job_id) not in (await cli(herald, settings, "show", str(sid))).split("jobs:")[1]

    minted = await herald.create_token(ADMIN, MEMBER, tenant="local", scope="read", expires="1d")
    auth = {"Authorization": f"Bearer {minted.secret}"}
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as client:
        live = await (await client.get(f"/v1/schedules/{sid}/jobs", headers=auth)).json()
        got = await client.get(f"/v1/schedules/{sid}/jobs?archived=true", headers=auth)
        assert got.status == 200, await got.text()
        body = await got.json()
    assert (live["jobs"], live["attempts"]) == ([], [])
    assert [(j["id"], j["archived"]) for j in body["jobs"]] == [(job_id, True)]
    assert [(a["job_id"], a["outcome"], a["archived"]) for a in body["attempts"]] == [
        (job_id, "ok", True)
    ]
    assert body["jobs"][0]["idempotency_key"] == job["idempotency_key"]

    timeline = await herald.timeline(MEMBER, schedule_id=sid, archived=True)
    marked = [(e.kind, e.job_id) for e in timeline.events if e.archived]
    assert ("attempt", job_id) in marked and ("planned", job_id) in marked
    assert not any(e.archived for e in (await herald.timeline(MEMBER, schedule_id=sid)).events)
    focused = await herald.timeline(MEMBER, job_id=job_id, archived=True)
    assert focused.focus_job == job_id
    assert {e.job_id for e in focused.events if e.kind == "attempt"} == {job_id}
    with pytest.raises(InvalidInput):
        await herald.timeline(MEMBER, job_id=job_id)  # not without asking for the archive


async def test_an_archived_job_older_than_the_latest_fifty_has_its_timeline(
    herald: Herald, clock: ManualClock
) -> None:
    """The console's timeline of one archived job tells its attempt even when the
    schedule's archive holds more recent jobs than a detail reads (50)."""
    before = await history(herald, clock)
    sid = before["sent"][0]
    [(job_id, job)] = [(i, j) for i, j in before["jobs"].items() if j["schedule_id"] == sid]
    clock.advance(timedelta(days=31))
    await keeper(herald).housekeeping()
    later = [
        job | {"id": 10_000 + n, "occurrence_at": job["occurrence_at"] + timedelta(days=n + 1)}
        for n in range(50)
    ]
    async with herald.store._tx() as conn:
        await conn.execute(sa.insert(JOB_ARCHIVE), later)
    focused = await herald.timeline(MEMBER, job_id=job_id, archived=True)
    assert focused.focus_job == job_id
    assert [(e.kind, e.archived) for e in focused.events if e.kind == "attempt"] == [
        ("attempt", True)
    ]


async def test_archived_history_is_read_only_within_its_tenant(
    herald: Herald, clock: ManualClock
) -> None:
    before = await history(herald, clock)
    sid = before["sent"][0]
    [job_id] = [i for i, j in before["jobs"].items() if j["schedule_id"] == sid]
    clock.advance(timedelta(days=31))
    await keeper(herald).housekeeping()
    store = herald.store
    assert [j.id for j in await store.archived_jobs(sid, tenant="local")] == [job_id]
    assert await store.archived_jobs(sid, tenant=STRANGER.tenant) == []
    assert await store.archived_job(job_id, tenant=STRANGER.tenant) is None
    assert await store.archived_attempts([job_id], tenant=STRANGER.tenant) == []
    with pytest.raises(NotFound):
        await herald.show_schedule(STRANGER, sid, archived=True)
    with pytest.raises(InvalidInput):
        await herald.timeline(STRANGER, job_id=job_id, archived=True)


async def test_postgresql_vacuums_the_queue_after_a_large_archive(herald: Herald) -> None:
    """Many rows archived at once: PostgreSQL's job and attempt tables are vacuumed then,
    not when autovacuum comes (the claim would walk the dead rows meanwhile)."""
    store = herald.store
    assert not await store.vacuum_after_archive(10)
    ran = await store.vacuum_after_archive(1_000_000)
    assert ran == (store.backend == "postgresql")
    if ran:
        async with store._read() as conn:
            vacuumed = await conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_user_tables "
                    "WHERE relname IN ('job', 'attempt') AND schemaname = current_schema() "
                    "AND last_vacuum IS NOT NULL"
                )
            )
            assert vacuumed.scalar() == 2
