"""The dispatcher's statements on PostgreSQL do work in proportion to the batch, on a
fresh schema whose planner has no statistics yet (what a burst right after an import
meets): the plans the store really runs, captured with auto_explain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from bot.cli.bench import schedule_rows
from core import db
from core.channels.local import NullChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.store import AttemptRecord, Store, Verdict
from tests.conftest import START
from tests.support.dispatching import settle
from tests.support.plans import explained_store, work

BATCH = 600


@pytest.fixture
async def explained(pg_url: str) -> AsyncIterator[tuple[Store, list[dict[str, Any]]]]:
    """A store whose every statement's plan (with actual rows) lands in the list."""
    async with explained_store(pg_url) as found:
        yield found


def _nodes(node: dict[str, Any]) -> list[str]:
    names = [f"{node['Node Type']} {node.get('Index Name', '')}".strip()]
    for child in node.get("Plans", []):
        names.extend(_nodes(child))
    return names


def _plan_of(plans: list[dict[str, Any]], start: str) -> list[dict[str, Any]]:
    return [p for p in plans if p.get("Query Text", "").lstrip().startswith(start)]


async def test_claim_and_finish_stay_linear_without_planner_statistics(
    explained: tuple[Store, list[dict[str, Any]]],
) -> None:
    store, plans = explained
    rows = schedule_rows(3 * BATCH, START, 0.0, "null:")
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:test", action="test", now=START
    )
    plans.clear()

    jobs = await store.claim_due(
        now=START, worker="w", lease_until=START + timedelta(minutes=1), limit=BATCH
    )
    assert len(jobs) == BATCH
    done = START + timedelta(seconds=1)
    results = [Verdict(job, "delivered", AttemptRecord(START, done, "ok")) for job in jobs[:-2]] + [
        Verdict(jobs[-2], "retrying", AttemptRecord(START, done, "retry"), "down", done),
        Verdict(jobs[-1], "dead", AttemptRecord(START, done, "permanent"), "gone"),
    ]
    owned = await store.finish(results, worker="w", now=done)
    assert owned == {job.id for job in jobs}

    claims = _plan_of(plans, "WITH share AS")
    assert len(claims) == 1
    claim = claims[0]["Plan"]
    # the waiting index gives the first jobs due in order, by rank (issue 37): nothing
    # sorts every waiting row
    assert "Index Scan ix_job_waiting_priority" in _nodes(claim)
    assert not any(name.startswith(("Sort", "Incremental Sort")) for name in _nodes(claim))
    recording = _plan_of(plans, "WITH tried AS") + _plan_of(plans, "WITH s AS")
    assert len(recording) == 2
    for plan in [*claims, *recording]:
        # a nested loop over the batch on both sides would be BATCH² (360,000) rows
        assert work(plan["Plan"]) < 30 * BATCH, plan["Query Text"]

    counts = await store.job_counts()
    assert counts == {"delivered": BATCH - 2, "retrying": 1, "dead": 1, "pending": 2 * BATCH}


async def test_an_idle_dispatcher_claims_a_little_first_and_claims_ahead_as_long_as_claims_take(
    pg_url: str,
) -> None:
    """A claim of a full batch on PostgreSQL takes longer than the configured prefetch
    (100-300 ms for 2,000 jobs on a busy machine). An idle service claims first what it
    can send at once, then a full batch at once, so the first jobs of a burst start while
    the rest are claimed; and it learns how long claims take and claims that much
    earlier."""
    db.upgrade(pg_url)
    store = await Store.open(pg_url)
    try:
        rows = schedule_rows(40, START, 0.0, "null:")
        await store.create_schedules_bulk(
            rows, details=[{} for _ in rows], actor="local:test", action="test", now=START
        )
        config = DispatcherConfig(batch_size=20, concurrency=1, prefetch_seconds=0.0)
        dispatcher = Dispatcher(
            store, {"null": NullChannel()}, clock=ManualClock(START), config=config
        )
        assert dispatcher.prefetch() == 0.0  # nothing measured yet: as configured
        # 2 (twice the concurrency), then a full batch at once: 22, not 20
        assert await dispatcher.pump(lookahead=0.001) == 22
        claims = dispatcher.metrics.registry.get_sample_value("herald_claim_batch_size_count")
        assert claims == 2
        # the time a claim really took, per job, times one and a half batches
        assert 0.0 < dispatcher.prefetch() <= 1.0
        await settle(dispatcher)
    finally:
        await store.close()
