"""Tries recorded at known minutes with known lateness, on a fixed clock: what the
overview's plot of the last hour reads (tests/tui/test_overview_plots.py and
tests/integration/test_overview_late_hour.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.actors import ActorRef
from core.cases import Herald
from core.clock import ManualClock
from core.store import AttemptRecord, Verdict
from tests.conftest import START
from tests.tui.conftest import MEMBER


def at(hh_mm: str, seconds: float = 0) -> datetime:
    hours, minutes = (int(x) for x in hh_mm.split(":"))
    return START.replace(hour=hours, minute=minutes) + timedelta(seconds=seconds)


async def tries(
    herald: Herald,
    clock: ManualClock,
    due: str,
    late_s: list[float],
    *,
    fail: int = 0,
    author: ActorRef = MEMBER,
) -> None:
    """Jobs of ``author`` due at ``due`` (one per lateness), each tried ``late_s``
    seconds after it fell due: the last ``fail`` of them failed for good, the others
    delivered."""
    clock.set(at(due) - timedelta(minutes=1))
    for i in range(len(late_s)):
        await herald.create_schedule(author, to="log:", when="in 1 minute", text=f"m{i}", tz="UTC")
    clock.set(at(due) + timedelta(seconds=max(late_s)))
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=100
    )
    assert [job.due_at for job in jobs] == [at(due)] * len(late_s)
    results = []
    for i, (job, late) in enumerate(zip(jobs, late_s, strict=True)):
        failed = i >= len(late_s) - fail
        started = job.due_at + timedelta(seconds=late)
        attempt = AttemptRecord(
            started_at=started,
            finished_at=started + timedelta(milliseconds=40),
            outcome="permanent" if failed else "ok",
            status_code=410 if failed else 200,
        )
        results.append(Verdict(job, "dead" if failed else "delivered", attempt=attempt))
    await herald.store.finish(results, worker="w1", now=now)


#: The console reads at 13:05:30: the hour's minutes are 12:06 … 13:05, its five-minute
#: slots end at 12:10, 12:15, … 13:05 (-55, -50, … 0 minutes ago).
NOW = "13:05"


async def seed_hour(herald: Herald, clock: ManualClock) -> None:
    await tries(herald, clock, "12:05", [1.0])  # 12:05:01: before the hour, not counted
    await tries(herald, clock, "12:10", [0.1, 0.2, 0.3, 2.0])  # slot -55
    await tries(herald, clock, "12:38", [1.0, 5.0], fail=1)  # started 12:38: slot -25
    await tries(herald, clock, "12:49", [60.0])  # started 12:50:00: slot -15
    await tries(herald, clock, "13:05", [0.5])  # this minute: slot 0
    clock.set(at(NOW, 30))
