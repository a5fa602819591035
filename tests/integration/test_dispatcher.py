"""The dispatcher over real SQLite and PostgreSQL, with an injected clock and drain mode."""

from __future__ import annotations

import logging
import random
from datetime import timedelta

import pytest

from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig, backoff_delay
from core.errors import NotFound, PermissionDenied
from core.models import JobState
from tests.conftest import START
from tests.support.channels import RecordingChannel
from tests.support.dispatching import settle
from tests.support.store import audit_trail

ALICE, ADMIN = "local:alice", "local:root-admin"
CONFIG = DispatcherConfig(max_attempts=4, backoff_base=5, backoff_cap=60, max_lateness=3600)


def make_dispatcher(herald: Herald, channel: RecordingChannel, **kw) -> Dispatcher:
    config = kw.pop("config", CONFIG)
    return Dispatcher(
        herald.store,
        {channel.kind: channel},
        clock=herald.clock,
        config=config,
        rng=random.Random(7),
        **kw,
    )


async def jobs_of(herald: Herald, schedule_id: int):
    return sorted(await herald.store.schedule_jobs(schedule_id), key=lambda j: j.occurrence_at)


async def test_one_off_is_delivered_once_and_completes(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 5 minutes", text="hello")
    channel = RecordingChannel()
    d = make_dispatcher(herald, channel)
    assert (await d.drain()).as_dict()["delivered"] == 0  # nothing due yet
    clock.advance(timedelta(minutes=5))
    summary = await d.drain()
    assert summary.as_dict() == {
        "delivered": 1,
        "retrying": 0,
        "dead": 0,
        "expired": 0,
        "waiting": 0,
    }
    assert [x.body for x in channel.deliveries] == ["hello"]
    detail = await herald.show_schedule(ALICE, s.id)
    assert detail.schedule.state == "completed" and detail.schedule.next_run_at is None
    [job] = detail.jobs
    assert (job.state, job.attempts, job.lease_owner) == (JobState.DELIVERED, 1, None)
    [attempt] = detail.attempts
    assert (attempt.outcome, attempt.status_code, attempt.provider_message_id) == (
        "ok",
        200,
        f"msg-{job.id}",
    )
    assert attempt.worker == d.worker_id
    assert (await d.drain()).as_dict()["delivered"] == 0  # never twice


async def test_retries_back_off_then_succeed_with_the_same_key(
    herald: Herald, clock: ManualClock
) -> None:
    calls = []

    def flaky(delivery):
        calls.append(delivery.attempt)
        if len(calls) < 3:
            return DeliveryResult.retry("503 from provider", status_code=503)
        return DeliveryResult.ok(200)

    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    channel = RecordingChannel(flaky)
    clock.advance(60)
    summary = await make_dispatcher(herald, channel).drain(retry_window=3600)
    assert summary.outcomes["delivered"] == 1 and summary.outcomes["retrying"] == 2
    assert calls == [1, 2, 3]
    assert len(channel.per_key()) == 1  # every try carried the job's idempotency key
    detail = await herald.show_schedule(ALICE, s.id)
    assert [a.outcome for a in reversed(detail.attempts)] == ["retry", "retry", "ok"]
    assert detail.jobs[0].attempts == 3


def test_backoff_is_full_jitter_within_bounds() -> None:
    rng = random.Random(1)
    for attempt, ceiling in [(1, 5), (2, 10), (3, 20), (4, 40), (9, 60), (30, 60)]:
        delays = [backoff_delay(attempt, 5, 60, rng) for _ in range(200)]
        assert all(0 <= x <= ceiling for x in delays)
        assert max(delays) > ceiling * 0.8  # the whole range is used


async def test_retry_after_is_obeyed_and_not_counted(herald: Herald, clock: ManualClock) -> None:
    answers = iter(
        [DeliveryResult.retry("rate limited", 429, retry_after=120), DeliveryResult.ok()]
    )
    channel = RecordingChannel(lambda d: next(answers))
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(60)
    d = make_dispatcher(herald, channel)
    await d.drain()
    [job] = await jobs_of(herald, s.id)
    assert job.state == JobState.RETRYING and job.attempts == 0
    first_try = clock.now()
    assert job.due_at == first_try + timedelta(seconds=120)
    clock.advance(119)
    assert (await d.drain()).outcomes["delivered"] == 0
    clock.advance(1)
    assert (await d.drain()).outcomes["delivered"] == 1


async def test_permanent_failure_is_dead_at_once(herald: Herald, clock: ManualClock) -> None:
    channel = RecordingChannel(
        lambda d: DeliveryResult.permanent("channel_not_found: invite the bot", 404)
    )
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(60)
    summary = await make_dispatcher(herald, channel).drain(retry_window=3600)
    assert summary.outcomes["dead"] == 1 and len(channel.deliveries) == 1
    [letter] = await herald.dead_letters(ALICE)
    assert letter.schedule_id == s.id and "invite the bot" in (letter.last_error or "")


async def test_attempts_exhausted_become_a_dead_letter(herald: Herald, clock: ManualClock) -> None:
    channel = RecordingChannel(lambda d: DeliveryResult.retry("timeout"))
    await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(60)
    summary = await make_dispatcher(herald, channel).drain(retry_window=24 * 3600)
    assert len(channel.deliveries) == CONFIG.max_attempts
    assert summary.outcomes["dead"] == 1
    [letter] = await herald.dead_letters(ALICE)
    assert letter.last_error == f"Gave up after {CONFIG.max_attempts} tries: timeout"


async def test_dead_letter_retry_needs_an_admin(herald: Herald, clock: ManualClock) -> None:
    failing = True
    channel = RecordingChannel(
        lambda d: DeliveryResult.permanent("gone") if failing else DeliveryResult.ok()
    )
    await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(60)
    d = make_dispatcher(herald, channel)
    await d.drain()
    [letter] = await herald.dead_letters(ALICE)
    key = channel.deliveries[0].idempotency_key

    # a member asks; nothing moves until an admin decides
    assert await herald.retry_dead_letters(ALICE, [letter.job_id]) == ("requested", 1)
    [asked] = await herald.dead_letters(ADMIN)
    assert asked.retry_requested_by == ALICE
    with pytest.raises(PermissionDenied):
        await herald.reject_dead_retry(ALICE, [letter.job_id])
    with pytest.raises(PermissionDenied):
        await herald.discard_dead_letters(ALICE, [letter.job_id])
    assert (await d.drain()).outcomes["delivered"] == 0

    # the admin approves: fresh budget, same key, delivered
    failing = False
    assert await herald.retry_dead_letters(ADMIN, [letter.job_id]) == ("retried", 1)
    assert (await d.drain()).outcomes["delivered"] == 1
    assert channel.deliveries[-1].idempotency_key == key
    assert channel.deliveries[-1].attempt == 1
    assert await herald.dead_letters(ADMIN) == []
    trail = await audit_trail(herald.store, "job", str(letter.job_id))
    assert [(a.actor, a.action) for a in trail] == [
        (ALICE, "dead.retry_request"),
        (ALICE, "dead.retry_reject.denied"),  # every refusal is audited
        (ALICE, "dead.discard.denied"),
        (ADMIN, "dead.retry"),
    ]
    with pytest.raises(PermissionDenied):  # the chat buttons' admin-only decision
        await herald.decide_dead_letters(ALICE, [letter.job_id], "discard")
    with pytest.raises(NotFound):
        await herald.retry_dead_letters(ADMIN, [letter.job_id])


async def test_expired_after_downtime_and_recurring_continues(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every day at 13:00", text="daily", tz="UTC"
    )  # START is 12:00, first run today 13:00
    channel = RecordingChannel()
    clock.advance(timedelta(days=2, hours=3))  # down for two days: now 15:00 on day 3
    summary = await make_dispatcher(herald, channel).drain()
    assert summary.outcomes["expired"] == 1 and channel.deliveries == []
    jobs = await jobs_of(herald, s.id)
    assert [(j.state, j.occurrence_at) for j in jobs] == [
        (JobState.EXPIRED, START.replace(hour=13)),
        (JobState.PENDING, START.replace(hour=13) + timedelta(days=3)),  # next future one
    ]
    assert "late" in (jobs[0].last_error or "")


async def test_recurring_schedule_runs_each_occurrence_once(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every day at 9am", text="standup", tz="Europe/Berlin"
    )
    channel = RecordingChannel()
    d = make_dispatcher(herald, channel)
    summary = await d.drain(retry_window=3 * 86400 - 3600)
    assert summary.outcomes["delivered"] == 3
    times = [x.occurrence_at for x in channel.deliveries]
    assert [t.isoformat() for t in times] == [
        "2026-03-03T08:00:00+00:00",
        "2026-03-04T08:00:00+00:00",
        "2026-03-05T08:00:00+00:00",
    ]
    assert len(channel.per_key()) == 3
    schedule = (await herald.show_schedule(ALICE, s.id)).schedule
    assert schedule.state == "active"
    assert (
        schedule.next_run_at is not None
        and schedule.next_run_at.isoformat() == "2026-03-06T08:00:00+00:00"
    )


async def test_a_paused_schedule_gets_no_next_job(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every hour", text="tick")
    clock.advance(timedelta(hours=1))
    now = clock.now()
    claimed = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(minutes=1), limit=10
    )
    assert len(claimed) == 1
    await herald.pause_schedule(ALICE, s.id)  # while the job is in flight
    from core.store import Verdict

    nxt = now + timedelta(hours=1)
    await herald.store.finish(
        [Verdict(claimed[0], "delivered", next_run=nxt)], worker="w1", now=now
    )
    states = [j.state for j in await jobs_of(herald, s.id)]
    assert states == [JobState.DELIVERED]


async def test_a_dead_workers_jobs_are_reclaimed_with_the_same_key(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="x")
    clock.advance(60)
    now = clock.now()
    [held] = await herald.store.claim_due(
        now=now, worker="crashed", lease_until=now + timedelta(seconds=60), limit=10
    )
    channel = RecordingChannel()
    d = make_dispatcher(herald, channel)
    assert (await d.drain()).outcomes["delivered"] == 0  # the lease still holds
    clock.advance(61)
    assert (await d.drain()).outcomes["delivered"] == 1
    assert channel.deliveries[0].idempotency_key == held.idempotency_key
    # the crashed worker's late answer changes nothing
    from core.store import Verdict

    assert (
        await herald.store.finish(
            [Verdict(held, "dead", error="late")], worker="crashed", now=clock.now()
        )
        == set()
    )
    [job] = await jobs_of(herald, s.id)
    assert job.state == JobState.DELIVERED


async def test_unknown_channel_retries_with_a_clear_error(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.create_schedule(ALICE, to="slack:C0123", when="in 1 minute", text="x")
    clock.advance(60)
    d = make_dispatcher(herald, RecordingChannel())
    summary = await d.drain()
    assert summary.outcomes["retrying"] == 1
    [job] = [
        j
        for s in await herald.list_schedules(ALICE)
        for j in await herald.store.schedule_jobs(s.id)
    ]
    assert job.last_error == "No slack channel is configured on this dispatcher."


async def test_housekeeping_archives_old_history_and_caps_dead_letters(
    herald: Herald, clock: ManualClock
) -> None:
    from dataclasses import replace

    ok = RecordingChannel()
    for i in range(3):
        await herald.create_schedule(ALICE, to="log:", when=f"in {i + 1} minutes", text=f"m{i}")
    clock.advance(300)
    d = make_dispatcher(herald, ok)
    assert (await d.drain()).outcomes["delivered"] == 3
    failing = RecordingChannel(lambda x: DeliveryResult.permanent("gone"))
    for i in range(3):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"d{i}")
        clock.advance(60)
        await make_dispatcher(herald, failing).drain()
    assert len(await herald.dead_letters(ADMIN)) == 3
    clock.advance(timedelta(days=31))
    keeper = make_dispatcher(herald, ok, config=replace(CONFIG, dead_letter_max=2))
    result = await keeper.housekeeping()
    assert result == {
        "archived_jobs": 3,  # the delivered ones; dead letters keep their attempts
        "archived_attempts": 3,
        "pruned_jobs": 0,
        "pruned_attempts": 0,
        "events": 0,
        "notices": 0,
        "receipts_seen": 0,
        "lateness": 4,  # the minutes of lateness counts the four drains wrote
        "dead_discarded": 1,
    }
    letters = await herald.dead_letters(ADMIN)
    assert [x.body for x in letters] == ["d2", "d1"]  # the newest two stay
    assert (await herald.store.job_counts()) == {"dead": 2, "discarded": 1}
    trail = await audit_trail(herald.store, "job", str(letters[-1].job_id - 1))  # d0
    assert [(a.actor, a.action) for a in trail] == [("system:housekeeping", "dead.discard")]


async def test_max_lateness_is_per_schedule(herald: Herald, clock: ManualClock) -> None:
    strict, _ = await herald.create_schedule(
        ALICE, to="log:", when="in 1 minute", text="strict", max_lateness=30
    )
    lenient, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="lenient")
    clock.advance(60 + 45)  # 45 s late
    channel = RecordingChannel()
    summary = await make_dispatcher(herald, channel).drain()
    assert (summary.outcomes["expired"], summary.outcomes["delivered"]) == (1, 1)
    assert [d.body for d in channel.deliveries] == ["lenient"]


async def test_after_two_hours_down_the_lateness_policy_is_exact(
    herald: Herald, clock: ManualClock
) -> None:
    """Started after 2 h of downtime: a job 59 min late is sent, one 61 min late is
    expired, and a recurring schedule resumes at its next future occurrence."""
    await herald.create_schedule(ALICE, to="log:", when="in 91 minutes", text="ok")  # 13:31
    too_late, _ = await herald.create_schedule(ALICE, to="log:", when="in 89 minutes", text="old")
    hourly, _ = await herald.create_schedule(ALICE, to="log:", when="every hour", text="tick")
    clock.advance(timedelta(hours=2, minutes=30))  # 14:30: "ok" 59 min late, "old" 61 min
    channel = RecordingChannel()
    summary = await make_dispatcher(herald, channel).drain()
    assert sorted(d.body for d in channel.deliveries) == ["ok"]
    assert summary.outcomes["expired"] == 2  # "old" and the hourly 13:00 (90 min late)
    [old_job] = await herald.store.schedule_jobs(too_late.id)
    assert old_job.state == JobState.EXPIRED
    jobs = await jobs_of(herald, hourly.id)
    assert [(j.state, j.occurrence_at.hour) for j in jobs] == [
        (JobState.EXPIRED, 13),
        (JobState.PENDING, 15),  # the next one after 14:30, no burst of stale ones
    ]


async def test_logs_one_line_per_batch_and_every_field_of_a_failure(
    herald: Herald, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """At INFO a batch of deliveries is one line with its counts (a line per delivery
    cost 43 % of a burst); a failure keeps its own WARNING line with every field; each
    delivery's line is there at DEBUG."""

    def script(delivery):
        if delivery.body == "refused":
            return DeliveryResult.permanent("404 from provider", status_code=404)
        return DeliveryResult.ok(200)

    for text in ("a", "b", "c", "refused"):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=text)
    clock.advance(timedelta(minutes=1))
    d = make_dispatcher(herald, RecordingChannel(script))
    caplog.set_level(logging.INFO, logger="core.dispatcher")
    assert (await d.drain()).as_dict()["delivered"] == 3
    records = [r for r in caplog.records if r.name == "core.dispatcher"]
    batches = [r for r in records if getattr(r, "event", None) == "jobs.recorded"]
    assert batches and all(r.levelno == logging.INFO for r in batches)
    assert sum(getattr(r, "delivered", 0) for r in batches) == 3
    assert sum(getattr(r, "dead", 0) for r in batches) == 1
    assert not [r for r in records if getattr(r, "event", None) == "job.delivered"]
    [dead] = [r for r in records if getattr(r, "event", None) == "job.dead"]
    assert dead.levelno == logging.WARNING
    assert {
        "job_id": dead.job_id,
        "destination": dead.destination,
        "attempt": dead.attempt,
        "outcome": dead.outcome,
        "status_code": dead.status_code,
        "worker": dead.worker,
    } == {
        "job_id": dead.job_id,
        "destination": "log",
        "attempt": 1,
        "outcome": "permanent",
        "status_code": 404,
        "worker": d.worker_id,
    }
    assert dead.schedule_id and dead.duration_ms is not None and "404" in dead.error

    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="core.dispatcher")
    await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="d")
    clock.advance(timedelta(minutes=1))
    assert (await d.drain()).as_dict()["delivered"] == 1
    [one] = [r for r in caplog.records if getattr(r, "event", None) == "job.delivered"]
    assert one.levelno == logging.DEBUG and one.outcome == "ok" and one.duration_ms is not None


async def test_an_idle_service_claims_the_start_of_a_burst_small_first(
    herald: Herald, clock: ManualClock
) -> None:
    """The first claim of a burst takes what can be sent at once, so the first message
    need not wait for a claim of thousands (and its rate-limit slots); the rest follow."""
    for i in range(30):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"m{i}")
    clock.advance(timedelta(minutes=1))
    channel = RecordingChannel()
    config = DispatcherConfig(concurrency=4, max_attempts=4, max_lateness=3600)
    d = make_dispatcher(herald, channel, config=config)
    limits: list[int] = []
    claim = herald.store.claim_due

    async def spy(**kw):
        limits.append(kw["limit"])
        return await claim(**kw)

    herald.store.claim_due = spy  # type: ignore[method-assign]
    assert await d.pump(lookahead=0.05) == 30
    await settle(d)
    assert limits[0] == 8 and limits[1] > 8
    assert len(channel.deliveries) == 30
