"""A rate-limited destination never has more jobs claimed, by every dispatcher
together, than its limit sends within the claim horizon (``HERALD_CLAIM_HORIZON``) at
its pace (``core.ratelimit.claim_cap``: at most rate × horizon). The claim statement
itself counts what everyone holds; the jobs past the cap stay in the queue, due again
as their turn nears, and other destinations' jobs are claimed in the same claims. On
real SQLite and PostgreSQL, time from a ManualClock."""

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
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.ratelimit import ClaimCaps, RateLimit, RateLimits, claim_cap
from core.store import CAPPED_ERROR, AttemptRecord, ClaimedJob, Store, Verdict
from core.store.base import JOB, SCHEDULE
from tests.conftest import START
from tests.support.channels import RecordingChannel
from tests.support.plans import explained_store, work

LIMITED = "webhook:https://hooks.example/one"
OTHER = "null:"
TEN = RateLimit(rate=10.0, burst=1.0)
#: 10/s with a 10 s horizon: one every 10.7 ms slot (room for a late send) within
#: 10 s: 93, no more than rate × horizon.
CAP = 93


async def _fill(store: Store, limited: int, other: int) -> None:
    """``limited`` jobs to LIMITED and ``other`` to OTHER, interleaved, all due now."""
    every = (limited + other) // other
    rows = schedule_rows(
        limited + other, START, 0.0, lambda i: OTHER if i % every == every - 1 else LIMITED
    )
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:test", action="test", now=START
    )


async def _claimed_to(store: Store, destination: str) -> int:
    """Jobs claimed (by anyone) to ``destination``."""
    q = (
        sa.select(sa.func.count())
        .select_from(JOB.join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id))
        .where(JOB.c.state == "claimed", SCHEDULE.c.destination == destination)
    )
    async with store._engine.connect() as conn:
        return int((await conn.execute(q)).scalar_one())


def _delivered(job: ClaimedJob, at: datetime) -> Verdict:
    return Verdict(job, "delivered", AttemptRecord(at, at, "ok"))


def test_the_cap_is_what_a_destination_sends_at_its_pace_within_the_horizon() -> None:
    assert claim_cap(TEN, 10.0) == CAP <= 10.0 * 10
    assert claim_cap(RateLimit(rate=10.0, burst=10.0), 10.0) == CAP  # a burst is not kept
    assert claim_cap(RateLimit(rate=0.5, burst=1.0), 10.0) == 4  # 30/min: one per 2.07 s
    assert claim_cap(RateLimit(rate=1 / 60, burst=1.0), 10.0) == 1  # never none
    assert claim_cap(TEN, 60.0) == 560
    caps = ClaimCaps.of(
        RateLimits.parse(f"{LIMITED}=10/s,slack:C0ALERTS=1/s:5"),
        {"webhook": RateLimit(10.0, 10.0), "slack": RateLimit(1.0, 3.0), "null": RateLimit(0, 0)},
        10.0,
    )
    # as RateLimits.for_destination: a configured prefix first, else the channel's own
    assert caps.for_destination(LIMITED) == CAP
    assert caps.for_destination("webhook:https://hooks.example/two") == CAP
    assert caps.for_destination("slack:C0ALERTS") == caps.for_destination("slack:C0OTHER") == 9
    assert caps.for_destination(OTHER) is None  # no limit, no cap
    assert not ClaimCaps.of(RateLimits(), {"null": RateLimit(0, 0)}, 10.0)


async def test_four_claimers_never_hold_more_than_the_cap_and_drain_everything(
    store: Store, db_url: str
) -> None:
    """The finding: one of four dispatchers held 2,647 claimed jobs for one URL limited
    to 10/s. Here four stores (four processes) claim 600 at a time, together, from
    1,000 jobs due now to a URL limited to 10/s (ten times its cap) and 200 to an
    unlimited destination; the URL's jobs are sent at its rate (20 every 2 s of a
    ManualClock). On PostgreSQL the four claims run at once: without the claim's lock
    each counted the others' jobs as unclaimed and the four held 4 × the cap."""
    limited, other = 1_000, 200
    await _fill(store, limited, other)
    caps = ClaimCaps.of(RateLimits.parse(f"{LIMITED}=10/s"), {"null": RateLimit(0, 0)}, 10.0)
    assert caps.for_destination(LIMITED) == CAP
    stores = [store] + [await Store.open(db_url) for _ in range(3)]
    held: dict[str, list[ClaimedJob]] = {f"w{i}": [] for i in range(4)}
    delivered: Counter[int] = Counter()
    now, rounds, most = START, 0, 0
    try:

        async def claim(s: Store, worker: str) -> list[ClaimedJob]:
            until = now + timedelta(minutes=5)
            return await s.claim_due(
                now=now, worker=worker, lease_until=until, limit=600, caps=caps
            )

        while sum(delivered.values()) < limited + other and rounds < 400:
            rounds += 1
            got = await asyncio.gather(*(claim(s, w) for s, w in zip(stores, held, strict=True)))
            for worker, jobs in zip(held, got, strict=True):
                held[worker] += jobs
            most = max(most, await _claimed_to(store, LIMITED))
            if rounds == 1:
                # the unlimited destination's jobs came in the same claims, all of them
                others = [job for jobs in got for job in jobs if job.destination == OTHER]
                assert len(others) == other
                assert sum(job.destination == LIMITED for jobs in got for job in jobs) == CAP
                waiting = await store.job_counts()
                assert waiting == {"claimed": CAP + other, "pending": limited - CAP}
            # two seconds go by: every OTHER job is sent, and 20 of LIMITED (its rate)
            now += timedelta(seconds=2)
            budget = 20
            for s, (worker, jobs) in zip(stores, held.items(), strict=True):
                jobs.sort(key=lambda job: (job.due_at, job.id))
                sent = []
                for job in jobs:
                    if job.destination == OTHER or budget > 0:
                        budget -= job.destination == LIMITED
                        sent.append(job)
                if sent:
                    assert await s.finish(
                        [_delivered(j, now) for j in sent], worker=worker, now=now
                    )
                    delivered.update(job.id for job in sent)
                    sent_ids = {job.id for job in sent}
                    held[worker] = [job for job in jobs if job.id not in sent_ids]
    finally:
        for s in stores[1:]:
            await s.close()
    assert most == CAP  # reached, never passed, by the four together
    # nothing lost, nothing twice; at the URL's rate (1,000 at 10/s: 50 rounds of 2 s)
    assert len(delivered) == limited + other and set(delivered.values()) == {1}
    assert rounds <= 55
    assert await store.job_counts() == {"delivered": limited + other}
    async with store._engine.connect() as conn:
        attempts = (await conn.execute(sa.select(sa.func.max(JOB.c.attempts)))).scalar_one()
    assert attempts == 1  # being put off is not a try


async def test_a_job_put_off_says_why_and_keeps_its_attempts(store: Store) -> None:
    await _fill(store, 200, 20)
    caps = ClaimCaps.of(RateLimits.parse(f"{LIMITED}=10/s"), {}, 10.0)
    until = START + timedelta(minutes=5)
    jobs = await store.claim_due(now=START, worker="w", lease_until=until, limit=50, caps=caps)
    assert len(jobs) == 50  # below the cap: the claim takes what it looked at
    first = Counter(job.destination for job in jobs)[LIMITED]
    jobs = await store.claim_due(now=START, worker="w", lease_until=until, limit=500, caps=caps)
    # of LIMITED, as many more as reach the cap (the first claim's count); the others
    # are put off, and every OTHER job is claimed
    assert Counter(job.destination for job in jobs) == {
        LIMITED: CAP - first,
        OTHER: 20 - 50 + first,
    }
    async with store._engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.select(JOB.c.state, JOB.c.attempts, JOB.c.last_error, JOB.c.due_at)
                .where(JOB.c.state == "pending")
                .order_by(JOB.c.due_at, JOB.c.id)
            )
        ).all()
    assert len(rows) == 200 - CAP
    assert {(r.state, r.attempts, r.last_error) for r in rows} == {("pending", 0, CAPPED_ERROR)}
    # due again when its turn nears: a slot (10.7 ms) later for each place past the
    # cap, rounded up to a tenth of the horizon (a second), so they come due nine at a
    # time (what the destination sends in that second), not one claim per slot
    due = [(_aware(r.due_at) - START).total_seconds() for r in rows]
    assert due == [float(-(-(i + 1) * 107_000 // 1_000_000)) for i in range(len(rows))]
    assert Counter(due)[1.0] == 9
    # nothing is due now: the next claim finds none of them (no claim reads them again)
    again = await store.claim_due(now=START, worker="w2", lease_until=until, limit=500, caps=caps)
    assert again == []


class TenPerSecond(RecordingChannel):
    """A channel whose provider's documented limit is 10/s."""

    rate_limit = TEN


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=START.tzinfo)


async def test_a_dispatcher_claims_no_more_than_the_cap_and_sends_the_rest_later(
    herald: Herald, clock: ManualClock
) -> None:
    """The dispatcher passes its caps with every claim (here from its channel's own
    limit, nothing configured); what a claim leaves comes due as the window moves."""
    rows = schedule_rows(300, START, 0.0, "log:")
    await herald.store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:test", action="test", now=START
    )
    config = DispatcherConfig(claim_horizon=10)
    channel = TenPerSecond()
    d = Dispatcher(herald.store, {"log": channel}, clock=clock, config=config, rng=random.Random(4))
    most = 0
    real = herald.store.claim_due

    async def counted(**kw: object) -> list[ClaimedJob]:
        nonlocal most
        jobs = await real(**kw)  # type: ignore[arg-type]
        most = max(most, await _claimed_to(herald.store, "log:"))
        return jobs

    herald.store.claim_due = counted  # type: ignore[method-assign]
    assert await d.pump() == CAP
    # the rest come due as the window moves: a drain waiting on the clock sends them
    summary = await d.drain(retry_window=120)
    assert summary.outcomes["delivered"] == 300 and summary.waiting == 0
    assert len(channel.deliveries) == 300 and set(channel.per_key().values()) == {1}
    assert most == CAP  # with every claim of the drain


BATCH = 600


@pytest.fixture
async def explained(pg_url: str) -> AsyncIterator[tuple[Store, list[dict[str, Any]]]]:
    """A store whose every statement's plan (with actual rows) lands in the list."""
    async with explained_store(pg_url) as found:
        yield found


async def test_a_capped_claim_stays_linear_without_planner_statistics(
    explained: tuple[Store, list[dict[str, Any]]],
) -> None:
    """On a fresh PostgreSQL schema (no statistics, as after an import), with a long
    history of delivered messages to the limited destination and some of its jobs held
    by a dispatcher without caps: the capped claim reads the claimed jobs and the jobs it
    looks at by primary key, never every schedule the destination ever had, and is not
    priced (its window's sort under enable_sort = off) into a JIT compilation."""
    store, plans = explained
    until = START + timedelta(minutes=5)
    await _fill(store, 2 * BATCH, BATCH // 10)  # the history: sent, finished
    history = await store.claim_due(now=START, worker="h", lease_until=until, limit=10_000)
    assert await store.finish([_delivered(job, START) for job in history], worker="h", now=START)
    await _fill(store, 3 * BATCH, 3 * BATCH // 10)
    taken = await store.claim_due(now=START, worker="uncapped", lease_until=until, limit=50)
    held = sum(job.destination == LIMITED for job in taken)
    caps = ClaimCaps.of(RateLimits.parse(f"{LIMITED}=10/s"), {}, 10.0)
    plans.clear()
    jobs = await store.claim_due(now=START, worker="w", lease_until=until, limit=BATCH, caps=caps)
    # the cap counts the jobs the other holds
    assert Counter(job.destination for job in jobs)[LIMITED] == CAP - held
    claims = [p for p in plans if "cand AS MATERIALIZED" in p.get("Query Text", "")]
    assert len(claims) == 1
    assert "JIT" not in claims[0]
    assert work(claims[0]["Plan"]) < 30 * BATCH
