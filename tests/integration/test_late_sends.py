"""Late is said (issue 38): a send that starts more than HERALD_LATE_AFTER after its due
time (a catch-up after an outage) is marked delayed in its attempt, the timeline, the
JSON of ``herald show`` and the metrics, and the console's overview counts it; a send on
time is not. The dispatcher runs in drain mode on a manual clock; the lateness counts
it keeps reach the database with its sweep (and when it stops), on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import sqlalchemy as sa

from core import views
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.lateness import WIDTH
from core.metrics import Metrics
from core.models import Event
from tests.support.channels import RecordingChannel

ALICE, ADMIN = "local:alice", "local:root-admin"


def dispatcher(herald: Herald, channel: RecordingChannel, metrics: Metrics) -> Dispatcher:
    return Dispatcher(
        herald.store,
        {channel.kind: channel},
        clock=herald.clock,
        config=DispatcherConfig(late_after=60, max_lateness=3600),
        rng=random.Random(7),
        metrics=metrics,
    )


def delayed_total(metrics: Metrics, channel: str) -> float:
    value = metrics.registry.get_sample_value("herald_delayed_total", {"channel": channel})
    return value or 0.0


async def test_a_catch_up_five_minutes_late_is_said_delayed_and_an_on_time_send_is_not(
    herald: Herald, clock: ManualClock
) -> None:
    late = [
        (await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"late {i}"))[0]
        for i in range(3)
    ]
    channel, metrics = RecordingChannel(), Metrics()
    clock.advance(timedelta(minutes=6))  # the dispatchers were down: 5 minutes past due
    assert (await dispatcher(herald, channel, metrics).drain()).outcomes["delivered"] == 3
    on_time, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="now")
    clock.advance(timedelta(minutes=1))
    assert (await dispatcher(herald, channel, metrics).drain()).outcomes["delivered"] == 1

    for s in late:
        [attempt] = (await herald.show_schedule(ALICE, s.id)).attempts
        assert (attempt.delayed, attempt.late_ms) == (True, 300_000)
        assert views.delay(attempt) == "delayed 5 min"
    detail = await herald.show_schedule(ALICE, on_time.id)
    [attempt] = detail.attempts
    assert (attempt.delayed, attempt.late_ms, views.delay(attempt)) == (False, 0, None)
    [shown] = views.detail_dict(detail)["attempts"]
    assert (shown["delayed"], shown["late_s"]) == (False, 0)

    timeline = await herald.timeline(ALICE, schedule_id=late[0].id)
    [tried] = [e for e in timeline.events if e.kind == "attempt"]
    assert "· delayed 5 min" in tried.text
    timeline = await herald.timeline(ALICE, schedule_id=on_time.id)
    assert not any("delayed" in e.text for e in timeline.events)

    assert delayed_total(metrics, "log") == 3
    lateness = metrics.registry.get_sample_value(
        "herald_delivery_lateness_seconds_bucket", {"channel": "log", "le": "300.0"}
    )
    assert lateness == 4  # every first try, the three late ones in the bucket up to 5 min

    overview = await herald.overview(ADMIN)
    for figures in overview.lateness:
        assert (figures.sends, figures.delayed) == (4, 3)
        assert figures.line().endswith("p50 ≤ 5 min  p95 ≤ 5 min  p99 ≤ 5 min  3 of 4 delayed")
    assert [f.window for f in overview.lateness] == ["last hour", "last day"]

    clock.advance(timedelta(hours=2))  # out of the last hour, still in the last day
    hour, day = (await herald.overview(ADMIN)).lateness
    assert (hour.sends, day.sends, day.delayed) == (0, 4, 3)
    assert hour.line() == "last hour  no first tries counted"


async def test_a_late_send_that_dies_is_delayed_alike_in_its_attempt_event_and_metric(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="gone")
    channel, metrics = (
        RecordingChannel(lambda d: DeliveryResult.permanent("410 Gone", 410)),
        Metrics(),
    )
    clock.advance(timedelta(minutes=6))  # the dispatchers were down: 5 minutes past due
    assert (await dispatcher(herald, channel, metrics).drain()).outcomes["dead"] == 1

    [attempt] = (await herald.show_schedule(ALICE, s.id)).attempts
    assert (attempt.delayed, attempt.late_ms) == (True, 300_000)
    event = Event.__table__  # type: ignore[attr-defined]
    async with herald.store._read() as conn:
        [dead] = await conn.execute(
            sa.select(event.c.type, event.c.data).where(event.c.schedule_id == s.id)
        )
    data = json.loads(dead.data)
    assert (dead.type, data["delayed"], data["late_s"]) == ("job.dead", True, 300.0)
    assert delayed_total(metrics, "log") == 1


async def test_lateness_counts_are_written_whole_per_dispatcher_and_minute(
    herald: Herald, clock: ManualClock
) -> None:
    """A minute written again replaces its counts (a dispatcher keeps each minute whole
    while it may still count in it); dispatchers' counts add up; housekeeping's prune
    drops minutes before its horizon."""
    store, now = herald.store, clock.now().replace(second=0, microsecond=0)
    first = [0] * WIDTH
    first[0], first[-1] = 2, 0
    await store.write_lateness("w1", {now: first})
    again = [0] * WIDTH
    again[0], again[-2], again[-1] = 2, 1, 1  # one more, over an hour late and delayed
    await store.write_lateness("w1", {now: again})
    other = [0] * WIDTH
    other[0] = 5
    old = now - timedelta(days=3)
    await store.write_lateness("w2", {now: other, old: other})
    counts = await store.lateness_since(now - timedelta(days=1))
    assert (counts[0], counts[-2], counts[-1], sum(counts)) == (7, 1, 1, 9)
    assert sum(await store.lateness_since(now - timedelta(days=4))) == 14
    assert await store.prune_lateness(before=now - timedelta(days=2)) == 1
    assert sum(await store.lateness_since(now - timedelta(days=4))) == 9
