"""Priorities in the queue (issue 37): among due jobs, claims take urgent before
normal before bulk, bulk keeps its share of every claim (core.store.queue.BULK_SHARE),
and a rate-limited destination's urgent job takes a send slot ahead of the slots its
bucket handed out already (core.ratelimit.allocate_ahead), shared by every dispatcher.
On real SQLite and PostgreSQL, time from a ManualClock, dispatchers in drain mode."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from bot.cli.bench import schedule_rows
from core.channels.base import Delivery, DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.preferences import RANK
from core.ratelimit import Pacer, RateLimit, RateLimits, allocate_ahead, spacing
from core.store import AttemptRecord, ClaimedJob, Store, Verdict
from core.store.base import JOB, AuditEntry
from core.store.queue import BULK_SHARE, bulk_share
from tests.conftest import START
from tests.support.channels import RecordingChannel
from tests.support.plans import explained_store, work

UNTIL = START + timedelta(minutes=5)
FIFTY = RateLimit(rate=50.0, burst=1.0)


async def _add(
    store: Store, priority: str, n: int, first: datetime, step: float = 0.001, **extra: Any
) -> None:
    """``n`` one-off schedules of ``priority`` to ``log:``, the i-th due ``first + i *
    step`` seconds, their text naming their priority."""
    rows = schedule_rows(n, first, step, "log:")
    for i, row in enumerate(rows):
        row.update(priority=priority, body=f"{priority} {i}", **extra)
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:test", action="test", now=START
    )


async def _claim(store: Store, limit: int, worker: str = "w") -> list[ClaimedJob]:
    return await store.claim_due(now=START, worker=worker, lease_until=UNTIL, limit=limit)


def _names(jobs: list[ClaimedJob]) -> list[str]:
    return [job.body for job in jobs]


def test_bulk_keeps_a_tenth_of_every_claim_of_ten_or_more() -> None:
    assert BULK_SHARE == 0.1
    assert [bulk_share(n) for n in (1, 9, 10, 99, 2000)] == [0, 0, 1, 9, 200]


async def test_claims_take_urgent_then_normal_then_bulk(store: Store) -> None:
    await _add(store, "bulk", 3, START - timedelta(seconds=30))
    await _add(store, "normal", 3, START - timedelta(seconds=20))
    await _add(store, "urgent", 3, START - timedelta(seconds=10))
    await _add(store, "urgent", 2, START + timedelta(seconds=1))  # not yet due
    first = await _claim(store, 5)
    assert _names(first) == ["urgent 0", "urgent 1", "urgent 2", "normal 0", "normal 1"]
    assert [job.priority for job in first] == [0, 0, 0, 1, 1]
    rest = await _claim(store, 100)
    assert _names(rest) == ["normal 2", "bulk 0", "bulk 1", "bulk 2"]
    assert await _claim(store, 100) == []  # the urgent ones of the future wait


async def test_bulk_is_not_starved_by_a_flood_of_urgent_or_normal(store: Store) -> None:
    await _add(store, "bulk", 30, START - timedelta(hours=1))
    await _add(store, "urgent", 60, START - timedelta(seconds=10))
    await _add(store, "normal", 60, START - timedelta(seconds=10))
    seen: list[str] = []
    for _ in range(3):  # urgent fills every claim but its bulk share
        jobs = await _claim(store, 20)
        assert Counter(job.priority for job in jobs) == {0: 18, 2: 2}
        seen += [job.body for job in jobs if job.priority == 2]
    jobs = await _claim(store, 20)
    assert Counter(job.priority for job in jobs) == {0: 6, 1: 12, 2: 2}
    seen += [job.body for job in jobs if job.priority == 2]
    assert seen == [f"bulk {i}" for i in range(8)]  # the oldest due first


async def test_a_recurring_schedules_next_job_and_an_edit_keep_its_rank(store: Store) -> None:
    await _add(store, "bulk", 1, START - timedelta(seconds=1), rrule="FREQ=DAILY")
    [job] = await _claim(store, 10)
    assert job.priority == RANK["bulk"]
    tomorrow = job.occurrence_at + timedelta(days=1)
    done = Verdict(job, "delivered", AttemptRecord(START, START, "ok"), next_run=tomorrow)
    assert await store.finish([done], worker="w", now=START) == {job.id}
    ranks = sa.select(JOB.c.priority).where(JOB.c.state == "pending")
    async with store._engine.connect() as conn:
        assert list((await conn.execute(ranks)).scalars()) == [RANK["bulk"]]
    await store.change_schedule(
        job.schedule_id,
        expected_version=1,
        values={"priority": "urgent"},
        now=START,
        audit=AuditEntry("local:test", "schedule.edit", "schedule"),
    )
    async with store._engine.connect() as conn:
        assert list((await conn.execute(ranks)).scalars()) == [RANK["urgent"]]


async def test_two_claims_at_once_on_postgresql_keep_the_order(pg_url: str) -> None:
    """Two dispatchers claiming at the same moment (each its own transaction, SKIP
    LOCKED) together take every urgent job before any normal one, each its bulk share,
    and no job twice."""
    from core import db

    db.upgrade(pg_url)
    store = await Store.open(pg_url)
    try:
        await _add(store, "bulk", 50, START - timedelta(hours=1))
        await _add(store, "normal", 50, START - timedelta(minutes=1))
        await _add(store, "urgent", 50, START - timedelta(seconds=1))
        a, b = await asyncio.gather(_claim(store, 40, "a"), _claim(store, 40, "b"))
        ids = [job.id for job in a + b]
        assert len(ids) == len(set(ids)) == 80
        assert Counter(job.priority for job in a + b) == {0: 50, 1: 22, 2: 8}
        assert Counter(job.priority for job in a)[2] == Counter(job.priority for job in b)[2]
    finally:
        await store.close()


async def test_two_dispatchers_on_postgresql_serve_urgent_first(pg_url: str) -> None:
    """Two Dispatcher instances on one database, each claiming batches of ten: what
    they take together is every urgent job, then the bulk share of each claim."""
    from core import db

    db.upgrade(pg_url)
    store = await Store.open(pg_url)
    clock = ManualClock(START)
    config = DispatcherConfig(concurrency=4, batch_size=10)
    try:
        await _add(store, "bulk", 40, START - timedelta(hours=1))
        await _add(store, "normal", 40, START - timedelta(minutes=1))
        await _add(store, "urgent", 40, START - timedelta(seconds=1))
        channels = [RecordingChannel(), RecordingChannel()]
        ds = [
            Dispatcher(store, {"log": c}, clock=clock, config=config, rng=random.Random(i))
            for i, c in enumerate(channels)
        ]
        await asyncio.gather(*(d.pump() for d in ds))
        # each claim of ten: its bulk share (one), then urgent ones; a normal one only
        # once every urgent one is taken (read from what each claimed, not from what is
        # in flight: on a busy machine a pump that sent and recorded its first batch
        # may claim again, and its fifth claim of the two finds 4 urgent ones left)
        for d in ds:
            assert _claimed(d)["bulk"] >= 1
        taken = _claimed(ds[0]) + _claimed(ds[1])
        assert taken["normal"] == 0 or taken["urgent"] == 40
        assert taken["urgent"] >= 9 * len(ds)  # the first claims' nine each
        await asyncio.gather(*(d.drain() for d in ds))
        sent = [d.body.split()[0] for c in channels for d in c.deliveries]
        assert Counter(sent) == {"urgent": 40, "normal": 40, "bulk": 40}
        assert sum(_claimed(d)["urgent"] for d in ds) == 40
    finally:
        await store.close()


def _claimed(dispatcher: Dispatcher) -> Counter[str]:
    """What ``dispatcher`` claimed so far, by priority (herald_claimed_total)."""
    return Counter(
        {
            sample.labels["priority"]: int(sample.value)
            for metric in dispatcher.metrics.registry.collect()
            if metric.name == "herald_claimed"
            for sample in metric.samples
            if sample.name == "herald_claimed_total"
        }
    )


def test_an_urgent_send_passes_this_processs_pace_and_the_next_one_makes_room() -> None:
    """The pacer lets one urgent send pass the sends it paces, and holds the next one
    back by one interval: a window of an interval or more sees no more than before."""
    key, step = "webhook:https://hooks.example/", spacing(FIFTY)
    pacer, now = Pacer(), START
    for _ in range(2):  # the burst (one) and the pacer's one extra
        assert pacer.take(key, now, FIFTY) == 0.0
    assert pacer.take(key, now, FIFTY) == pytest.approx(step.total_seconds())  # the next waits
    pacer.let_pass(key, now + timedelta(seconds=0.05))
    assert pacer.take(key, now, FIFTY) == 0.0  # the urgent one goes now
    held = pacer.take(key, now, FIFTY)
    assert held == pytest.approx(2 * step.total_seconds())  # one interval more than before
    pacer.let_pass(key, now)  # a pass not used in time lapses
    later = now + timedelta(seconds=1)
    assert [pacer.take(key, later, FIFTY) > 0 for _ in range(3)] == [False, False, True]


def test_urgent_slots_go_ahead_of_a_busy_bucket_and_push_it_back() -> None:
    step = spacing(FIFTY)
    busy = START + 100 * step  # 100 slots handed out
    slots, tat, lane, passed = allocate_ahead(busy, None, START, 2, FIFTY, 10.0)
    assert (slots, tat, lane, passed) == (
        [START, START + step],
        busy + 2 * step,
        START + 2 * step,
        2,
    )
    # a free bucket: its own slots, no pass
    slots, tat, lane, passed = allocate_ahead(None, None, START, 1, FIFTY, 10.0)
    assert (slots, tat, lane, passed) == ([START], START + step, None, 0)


async def test_an_urgent_slot_goes_ahead_of_the_slots_handed_out(store: Store) -> None:
    """One dispatcher holds 400 bulk slots of a 50/s destination (8 s ahead); another's
    urgent job gets the next slot now, from the same bucket, and pushes the bucket back
    one slot for everyone; a second urgent one is paced after the first."""
    key, step = "webhook:https://hooks.example/", spacing(FIFTY)
    taken = await store.reserve_slots({key: (400, FIFTY)}, now=START, window=10)
    assert len(taken[key].times) == 400
    tat = taken[key].times[-1] + step
    due = START + timedelta(seconds=2)
    urgent = await store.reserve_slots(
        {key: (2, FIFTY)}, now=due, window=10, not_before={key: due}, urgent={key: (2, due)}
    )
    assert urgent[key].times == [due, due + step]
    after = await store.reserve_slots({key: (1, FIFTY)}, now=due, window=10)
    assert after[key].times == [tat + 2 * step]  # pushed back by the two urgent slots


class HeldClock(ManualClock):
    """A ManualClock whose sleepers wake only up to a moment the test lets time run
    to (:meth:`run_until`): the claims' and reservations' real round trips do not let
    the deliveries' sleeps run the clock on meanwhile."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.until = start

    def _wake_next(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._sleepers and self._sleepers[0][0] <= self.until:
            super()._wake_next(loop)
        else:
            self._waking = False

    async def run_until(self, until: datetime) -> None:
        """Wake every sleeper up to ``until``, in order, each run before the next."""
        self.until = until
        loop = asyncio.get_running_loop()
        for _ in range(100):  # what was just started goes to sleep first (no waiting)
            await asyncio.sleep(0)
        while self._sleepers and self._sleepers[0][0] <= until:
            if not self._waking:
                self._waking = True
                loop.call_soon(self._wake_next, loop)
            for _ in range(10):
                await asyncio.sleep(0)
        self.set(max(self.now(), until))


async def test_an_urgent_webhook_is_not_held_behind_a_rate_limited_import(store: Store) -> None:
    """The issue's scenario, scaled down: 500 bulk messages to one destination limited
    to 50/s (10 s of sends) due at once, and one urgent to the same destination due 5 s
    later: the urgent one is sent within a second of its due time, not after the
    backlog (without priorities: 5.7 s late); every message goes once, and a second
    never sees more than the limit."""
    clock = HeldClock(START)
    await _add(store, "bulk", 500, START, step=0.0)
    urgent_due = START + timedelta(seconds=5)
    await _add(store, "urgent", 1, urgent_due)
    sent: dict[str, datetime] = {}

    def record(d: Delivery) -> DeliveryResult:
        sent[d.body] = clock.now()
        return DeliveryResult.ok()

    # every claimed job starts (and takes its slot) at once: the sends wait on the clock
    config = DispatcherConfig(concurrency=500, rate_limits=RateLimits.parse("log:=50/s"))
    d = Dispatcher(store, {"log": RecordingChannel(record)}, clock=clock, config=config)
    assert await d.pump() == 467  # the destination's claim cap (core.ratelimit.claim_cap)
    await clock.run_until(urgent_due)
    assert 200 < len(sent) < 300 and "urgent 0" not in sent
    # the urgent one, past the cap bulk jobs fill (and the bulk ones put off meanwhile)
    assert await d.pump() >= 1
    assert any(job.priority == 0 for job in d._inflight.values())
    await clock.run_until(urgent_due + timedelta(seconds=1))
    late = (sent["urgent 0"] - urgent_due).total_seconds()
    assert 0 <= late < 1.0
    await clock.run_until(START + timedelta(seconds=30))  # what it holds, then the rest
    clock.until = START + timedelta(days=1)
    await d.drain(retry_window=60)
    assert len(sent) == 501
    times = sorted(sent.values())
    assert max(times) - START > timedelta(seconds=9)  # the import took its 10 s
    assert all(b - a >= timedelta(seconds=1) for a, b in zip(times, times[50:], strict=False))


@pytest.fixture
async def explained(pg_url: str) -> AsyncIterator[tuple[Store, list[dict[str, Any]]]]:
    async with explained_store(pg_url) as found:
        yield found


async def test_a_claim_never_reads_the_future_jobs_of_a_higher_rank(
    explained: tuple[Store, list[dict[str, Any]]],
) -> None:
    """On PostgreSQL without planner statistics: 1,500 urgent and 1,500 normal jobs due
    tomorrow, 20 bulk due now. The claim reads each rank's due range of the priority
    index and stops at its first job not yet due: its work is the batch's, not the
    queue's, and nothing is sorted."""
    store, plans = explained
    tomorrow = START + timedelta(days=1)
    await _add(store, "urgent", 1500, tomorrow)
    await _add(store, "normal", 1500, tomorrow)
    await _add(store, "bulk", 20, START - timedelta(seconds=1))
    plans.clear()
    jobs = await _claim(store, 100)
    assert len(jobs) == 20
    [claim] = [p for p in plans if "cand AS MATERIALIZED" in p.get("Query Text", "")]
    assert work(claim["Plan"]) < 400
    text = str(claim["Plan"])
    assert "ix_job_waiting_priority" in text and "'Sort'" not in text
