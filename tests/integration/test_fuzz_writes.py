"""Fuzzed requests through the use case: either a schedule is created whole (schedule,
job and audit row) or the domain error is raised and nothing at all is written."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.cases import Herald
from core.clock import ManualClock
from core.errors import HeraldError
from core.settings import load_settings
from core.store import AuditFilter, ScheduleQuery, Store

CASES = int(os.environ.get("HERALD_FUZZ_WRITES", "150"))

destinations = st.one_of(
    st.sampled_from(
        [
            "log:",
            "slack:C0123ABC",
            "discord:123456789012345678",
            "email:a@b.co",
            "webhook:https://example.com/h",
            "nope:x",
            "slack:",
            "email:@",
        ]
    ),
    st.text(max_size=40),
)
whens = st.one_of(
    st.sampled_from(
        [
            "in 5 minutes",
            "every weekday at 9am",
            "2001-01-01 10:00",
            "25:00",
            "2026-02-30",
            "every 0 minutes",
            "tomorrow at noon",
            "",
        ]
    ),
    st.text(max_size=40),
)
texts = st.one_of(st.text(max_size=50), st.just(""), st.just("x" * 4001))


async def _counts(store: Store) -> tuple[int, int, int]:
    jobs = sum((await store.job_counts()).values())
    schedules = len(await store.list_schedules(ScheduleQuery(limit=100_000)))
    audits = len(await store.audit_page(AuditFilter(), limit=100_000))
    return schedules, jobs, audits


@settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    to=destinations,
    when=whens,
    text=texts,
    tz=st.sampled_from([None, "UTC", "Europe/Berlin", "Mars/Base"]),
)
@example(to="log:", when="in 5 minutes", text="hi", tz="UTC")  # the "written whole" branch
@example(to="log:", when="every weekday at 9am", text="stand-up", tz="Europe/Berlin")
async def test_a_request_is_written_whole_or_not_at_all(
    sqlite_url: str, to, when, text, tz
) -> None:
    store = await Store.open(sqlite_url)
    try:
        herald = Herald(
            store,
            load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None),
            ManualClock(datetime(2026, 3, 2, 12, tzinfo=UTC)),
        )
        before = await _counts(store)
        try:
            await herald.create_schedule("local:fuzz", to=to, when=when, text=text, tz=tz)
        except HeraldError:
            assert await _counts(store) == before
        else:
            after = await _counts(store)
            assert after == (before[0] + 1, before[1] + 1, before[2] + 1)
    finally:
        await store.close()
