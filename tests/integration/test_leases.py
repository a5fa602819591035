"""Leases on real SQLite and PostgreSQL with an injected clock: a dispatcher that stalled
past its lease (or past the silence that makes it dead) sends nothing another one
delivered, and a dead dispatcher's jobs are delivered at once, not when leases end."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections import Counter
from datetime import timedelta

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.dispatcher.liveness import machine_id
from core.models import JobState
from tests.support.channels import RecordingChannel
from tests.support.dispatching import settle

ALICE = "local:alice"
CONFIG = DispatcherConfig(lease_seconds=60, sweep_seconds=5, dead_after_sweeps=3)
JOBS = 12


class StalledClock:
    """The shared clock's time, but every wait lasts until the test resumes it: the
    dispatcher using it is frozen (a stalled process) while time moves on."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.resumed = asyncio.Event()

    def now(self):
        return self.clock.now()

    async def sleep(self, seconds: float) -> None:
        await self.resumed.wait()


def dispatcher(herald: Herald, channel: RecordingChannel, clock=None, **kw) -> Dispatcher:
    return Dispatcher(
        herald.store,
        {channel.kind: channel},
        clock=clock or herald.clock,
        config=kw.pop("config", CONFIG),
        rng=random.Random(3),
        **kw,
    )


async def due_in_ten_seconds(herald: Herald, n: int = JOBS) -> None:
    for i in range(n):
        await herald.create_schedule(ALICE, to="log:", when="in 10 seconds", text=f"m{i}")


async def stall_with_jobs(herald: Herald, clock: ManualClock) -> tuple[Dispatcher, StalledClock]:
    """Dispatcher A claims every job ahead of its time, then freezes before sending."""
    frozen = StalledClock(clock)
    a = dispatcher(herald, RecordingChannel(), clock=frozen)
    await a.keep_alive()
    assert await a.pump(lookahead=30) == JOBS
    await asyncio.sleep(0)  # its deliveries start and wait (frozen)
    return a, frozen


async def every_job_state(herald: Herald) -> Counter[str]:
    counts = await herald.store.job_counts()
    return Counter({k: v for k, v in counts.items() if v})


def sent(*channels: RecordingChannel) -> Counter[str]:
    total: Counter[str] = Counter()
    for channel in channels:
        total.update(channel.per_key())
    return total


async def test_a_stall_past_the_lease_sends_nothing_twice(
    herald: Herald, clock: ManualClock
) -> None:
    await due_in_ten_seconds(herald)
    a, frozen = await stall_with_jobs(herald, clock)
    clock.advance(10 + CONFIG.lease_seconds + 1)  # the stall outlasts the lease
    b_channel = RecordingChannel()
    assert (await dispatcher(herald, b_channel).drain()).outcomes["delivered"] == JOBS
    frozen.resumed.set()  # A wakes up, still holding its jobs in memory
    await settle(a)
    a_channel = a.channels["log"]
    assert a_channel.deliveries == []  # type: ignore[attr-defined]
    keys = sent(a_channel, b_channel)  # type: ignore[arg-type]
    assert len(keys) == JOBS and set(keys.values()) == {1}
    assert a.metrics.leases_lapsed._value.get() == JOBS
    assert await every_job_state(herald) == {JobState.DELIVERED.value: JOBS}


async def test_a_lease_inside_the_margin_is_renewed_not_dropped(
    herald: Herald, clock: ManualClock
) -> None:
    await due_in_ten_seconds(herald)
    a, frozen = await stall_with_jobs(herald, clock)
    # a 60 s lease with a 3.75 s margin: 2 s left when A wakes; nobody declared it dead
    clock.advance(CONFIG.lease_seconds - 2)
    frozen.resumed.set()
    await settle(a)
    assert len(a.channels["log"].deliveries) == JOBS  # type: ignore[attr-defined]
    assert a.metrics.leases_lapsed._value.get() == 0
    assert await every_job_state(herald) == {JobState.DELIVERED.value: JOBS}


async def test_a_silent_dispatcher_is_dead_before_its_leases_end(
    herald: Herald, clock: ManualClock
) -> None:
    await due_in_ten_seconds(herald)
    a, frozen = await stall_with_jobs(herald, clock)
    # silent for longer than three sweeps, well within the 60 s lease
    clock.advance(10 + CONFIG.dead_after + 1)
    b_channel = RecordingChannel()
    b = dispatcher(herald, b_channel)
    assert (await b.drain()).outcomes["delivered"] == JOBS
    [a_row] = [w for w in await herald.store.workers() if w.id == a.worker_id]
    assert a_row.stopped_at is not None  # declared dead
    frozen.resumed.set()
    await settle(a)  # A comes back: its leases look valid, its life had lapsed
    assert a.channels["log"].deliveries == []  # type: ignore[attr-defined]
    keys = sent(b_channel)
    assert len(keys) == JOBS and set(keys.values()) == {1}


async def test_a_fresh_heartbeat_keeps_the_jobs(herald: Herald, clock: ManualClock) -> None:
    await due_in_ten_seconds(herald)
    a, frozen = await stall_with_jobs(herald, clock)
    clock.advance(CONFIG.dead_after - 1)  # silent one second short of dead
    b = dispatcher(herald, RecordingChannel())
    assert (await b.drain()).outcomes["delivered"] == 0
    frozen.resumed.set()
    await settle(a)  # 1 s of life left, inside the margin: renewed, then sent
    assert a.metrics.leases_lapsed._value.get() == 0
    assert len(a.channels["log"].deliveries) == JOBS  # type: ignore[attr-defined]


def _dead_pid() -> int:
    """The pid of a process that has finished (and been reaped)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


async def test_a_dead_process_on_this_machine_is_reclaimed_at_once(
    herald: Herald, clock: ManualClock
) -> None:
    await due_in_ten_seconds(herald)
    clock.advance(10)
    now = clock.now()
    store = herald.store
    here, elsewhere = "crashed-here", "busy-elsewhere"
    pid = _dead_pid()
    await store.heartbeat(here, host="h", pid=pid, now=now, machine=machine_id())
    await store.heartbeat(elsewhere, host="h", pid=pid, now=now, machine="another-machine")
    lease = now + timedelta(seconds=CONFIG.lease_seconds)
    held = await store.claim_due(now=now, worker=here, lease_until=lease, limit=JOBS // 2)
    kept = await store.claim_due(now=now, worker=elsewhere, lease_until=lease, limit=JOBS)
    assert len(held) == JOBS // 2 and len(kept) == JOBS - JOBS // 2
    channel = RecordingChannel()
    summary = await dispatcher(herald, channel).drain()  # no time passes
    if machine_id() is None:  # no /proc: only heartbeats can tell
        assert summary.outcomes["delivered"] == 0
        return
    assert summary.outcomes["delivered"] == len(held)
    assert set(channel.per_key()) == {j.idempotency_key for j in held}
    assert summary.waiting == len(kept)
    assert summary.left == [
        f"{len(kept)} held by another dispatcher, the first lease ending in 60s."
    ]


async def test_drain_waits_for_leases_that_end_within_its_timeout(
    herald: Herald, clock: ManualClock
) -> None:
    await due_in_ten_seconds(herald)
    clock.advance(10)
    now = clock.now()
    held = await herald.store.claim_due(
        now=now, worker="gone", lease_until=now + timedelta(seconds=30), limit=JOBS
    )
    channel = RecordingChannel()
    d = dispatcher(herald, channel)
    short = await d.drain(retry_window=20)
    assert short.outcomes["delivered"] == 0 and short.waiting == JOBS
    assert short.left == [f"{JOBS} held by another dispatcher, the first lease ending in 30s."]
    assert clock.now() == now  # nothing could be sent within its timeout
    long = await d.drain(retry_window=90)
    assert long.outcomes["delivered"] == JOBS and long.waiting == 0 and long.left == []
    assert set(channel.per_key()) == {j.idempotency_key for j in held}
    assert clock.now() == now + timedelta(seconds=30)  # woke when the leases ended
