"""The overview's lateness: p50/p95/p99 of first tries over the last hour and day, and
the tries delayed, as the dispatchers counted them (bounds of buckets, never a figure
the counts do not hold)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from core.cases import Herald
from core.clock import ManualClock
from core.lateness import LateMinutes
from tests.tui.conftest import ADMIN, MEMBER, run, screen_text, settle


def minute(clock: ManualClock, ago: timedelta) -> int:
    return int((clock.now() - ago).timestamp()) // 60


async def test_the_overview_says_how_late_sends_started(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    counts = LateMinutes()
    recent = minute(clock, timedelta(minutes=5))
    for _ in range(90):
        counts.add(recent, 0.02, False)  # on time: within 50 ms
    for _ in range(10):
        counts.add(recent, 240, True)  # a catch-up: 4 minutes late
    for _ in range(5):
        counts.add(minute(clock, timedelta(hours=3)), 7200, True)  # earlier: two hours late
    await herald.store.write_lateness("w1", counts.take())
    app = console(ADMIN)
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "last hour  p50 ≤ 50 ms  p95 ≤ 5 min  p99 ≤ 5 min  10 of 100 delayed" in text
    assert "last day   p50 ≤ 50 ms  p95 ≤ 5 min  p99 > 1 h  15 of 105 delayed" in text
    # the counts are every tenant's together: a tenant's member is told whose they are
    app = console(MEMBER)
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "10 of 100 delayed" not in text
    assert "every tenant's together: operators and admins see it" in text


async def test_with_nothing_counted_the_overview_says_so(console: Any) -> None:
    app = console(ADMIN)
    async with run(app) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "last hour  no first tries counted" in text
