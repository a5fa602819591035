"""Lateness from bucketed counts (core.lateness) and what the dispatcher's reporting
counts per delivery (core.dispatcher.reporting): percentiles are bucket bounds, never an
exact figure the counts do not hold; a try past HERALD_LATE_AFTER is counted delayed."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

from core.dispatcher import reporting
from core.lateness import (
    DELAYED,
    LATENESS_BUCKETS,
    WIDTH,
    LateMinutes,
    LatenessFigures,
    late_for,
    quantile,
    said,
    summed,
)
from core.metrics import Metrics
from core.store import AttemptRecord, ClaimedJob, Verdict

DUE = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def counted(lates: list[float]) -> list[int]:
    minutes = LateMinutes()
    for late in lates:
        minutes.add(0, late, late > 60)
    [counts] = minutes.take().values()
    return counts


def test_percentiles_are_the_bounds_of_the_buckets_that_hold_them() -> None:
    # 1,000 sends: 900 within 10 ms, 90 at 3 s, 9 at 4 minutes, 1 two hours late
    counts = counted([0.004] * 900 + [3.0] * 90 + [240.0] * 9 + [7200.0])
    assert quantile(counts, 0.5) == 0.005
    assert quantile(counts, 0.9) == 0.005  # the 900th is still within 5 ms
    assert quantile(counts, 0.95) == 5
    assert quantile(counts, 0.99) == 5  # the 990th
    assert quantile(counts, 0.995) == 300
    assert quantile(counts, 1.0) == math.inf
    figures = LatenessFigures.of("last hour", counts)
    assert (figures.sends, figures.delayed) == (1000, 10)
    assert figures.line() == "last hour  p50 ≤ 5 ms  p95 ≤ 5 s  p99 ≤ 5 s  10 of 1,000 delayed"


def test_a_percentile_never_lies_below_the_true_value() -> None:
    """For random lateness, the bound said is at or above the exact percentile and the
    bucket below it is under it: the true figure lies in the bucket said."""
    rng = random.Random(38)
    lates = sorted(rng.expovariate(1 / 30) for _ in range(5000))
    counts = counted(lates)
    for q in (0.5, 0.95, 0.99):
        exact = lates[math.ceil(q * len(lates)) - 1]
        bound = quantile(counts, q)
        assert bound is not None and exact <= bound
        below = [b for b in LATENESS_BUCKETS if b < bound]
        assert not below or exact > below[-1]


def test_bounds_are_said_as_people_say_them() -> None:
    assert [said(b) for b in (None, 0.001, 0.1, 2, 60, 120, 1800, 3600, math.inf)] == [
        "-",
        "≤ 1 ms",
        "≤ 100 ms",
        "≤ 2 s",
        "≤ 1 min",
        "≤ 2 min",
        "≤ 30 min",
        "≤ 1 h",
        "> 1 h",
    ]
    assert [late_for(s) for s in (61, 119.6, 240, 3 * 3600)] == [
        "delayed 61 s",
        "delayed 120 s",
        "delayed 4 min",
        "delayed 3 h",
    ]
    assert quantile([0] * WIDTH, 0.99) is None
    assert LatenessFigures.of("last day", [0] * WIDTH).line() == "last day   no first tries counted"


def test_minutes_are_taken_whole_once_then_kept_while_they_may_grow() -> None:
    minutes = LateMinutes()
    minutes.add(100, 0.002, False)
    minutes.add(100, 90, True)
    taken = minutes.take()
    at = datetime.fromtimestamp(6000, UTC)
    assert list(taken) == [at] and sum(taken[at]) == 3 and taken[at][DELAYED] == 1
    assert minutes.take() == {}  # nothing new
    minutes.add(100, 1.5, False)  # a slow send of that minute finished later
    assert sum(minutes.take()[at]) == 4  # the minute's whole counts, written again
    minutes.add(100 + 500, 1.5, False)  # much later: minute 100 is forgotten
    minutes.put_back(minutes.take())  # a failed write is written with the next take
    assert list(minutes.take()) == [datetime.fromtimestamp(600 * 60, UTC)]


def test_a_failed_write_of_minutes_too_old_to_keep_is_written_again() -> None:
    minutes = LateMinutes()
    minutes.add(100, 0.002, False)
    minutes.add(400, 90, True)  # a write failing for hours: the take forgets minute 100
    minutes.put_back(minutes.take())
    taken = minutes.take()
    assert {int(at.timestamp()) // 60: sum(counts) for at, counts in taken.items()} == {
        100: 1,
        400: 2,
    }


def test_rows_of_another_width_are_left_out_of_sums() -> None:
    assert summed([[1] * WIDTH, [2] * WIDTH, [9] * (WIDTH - 1)]) == [3] * WIDTH


def settled(due_late: float, attempts: int = 1) -> Verdict:
    job = ClaimedJob(
        id=1,
        schedule_id=1,
        occurrence_at=DUE,
        due_at=DUE,
        attempts=attempts,
        idempotency_key="k",
        destination="slack:C01",
        body="hi",
        rrule=None,
        max_lateness_s=None,
        options={},
    )
    started = DUE + timedelta(seconds=due_late)
    attempt = AttemptRecord(started, started + timedelta(milliseconds=20), "ok", 200)
    return Verdict(job, "delivered", attempt=attempt)


def test_reporting_counts_delayed_tries_and_first_tries_lateness() -> None:
    metrics = Metrics()
    for late, attempts in [(0.5, 1), (60, 1), (60.002, 1), (300, 1), (600, 2)]:
        reporting.record(settled(late, attempts), metrics, "w1", late_after=60)
    sample = metrics.registry.get_sample_value
    assert sample("herald_delayed_total", {"channel": "slack"}) == 3  # the retry too
    assert sample("herald_delivery_lateness_seconds_count", {"channel": "slack"}) == 4
    assert (
        sample("herald_delivery_lateness_seconds_bucket", {"channel": "slack", "le": "60.0"}) == 2
    )
    taken = metrics.late_minutes.take()  # by the minute each try started in
    assert [at.minute for at in sorted(taken)] == [0, 1, 5]
    figures = LatenessFigures.of("last hour", summed(list(taken.values())))
    assert (figures.sends, figures.delayed) == (4, 2)  # first tries only
