"""A calendar that fails to refresh: its last good state stays, the failure is on the
calendar (since when, how many in a row, the error without secrets), in the metrics
(also right after a restart) and gone again once a refresh works."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bot.service import serve
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher
from core.metrics import Metrics
from core.models import JobState
from core.settings import Settings
from core.store import Store
from tests.calendars.conftest import data
from tests.fakes import unused_port
from tests.fakes.http import Scripted
from tests.fakes.ics import ICSServer
from tests.support.calendars import attach_skip_calendars

ADMIN, ALICE = "local:root-admin", "local:alice"
SECRET = "s3cret-calendar-token"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def sample(metrics: Metrics, name: str, calendar_id: int | None = None) -> float | None:
    labels = {} if calendar_id is None else {"calendar_id": str(calendar_id)}
    return metrics.registry.get_sample_value(name, labels)


async def state(herald: Herald, sid: int) -> tuple[object, ...]:
    """What a failed refresh must not change: the schedule's skip data and jobs."""
    schedule = await herald.store.get_schedule(sid)
    jobs = await herald.store.schedule_jobs(sid)
    assert schedule is not None
    return (
        schedule.options.get("skip"),
        schedule.next_run_at,
        sorted((j.occurrence_at, j.state, j.last_error) for j in jobs),
    )


async def test_a_failing_calendar_keeps_its_last_good_state(
    store: Store, settings: Settings, clock: ManualClock, ics: ICSServer
) -> None:
    metrics = Metrics()
    herald = Herald(store, settings, clock, metrics=metrics)
    clock.set(utc(2026, 3, 1, 12))
    team = ics.publish("/team.ics", data("team.ics")) + f"?token={SECRET}"
    holidays = ics.publish("/holidays.ics", data("holidays.ics"))
    feed = await herald.add_feed(ADMIN, calendar=team, to="log:", before="10m")
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every weekday at 9am", text="stand-up", tz="Europe/Berlin"
    )
    s = await attach_skip_calendars(herald, ALICE, s.id, [holidays])
    [skip_calendar] = s.skip_calendars
    report = await herald.refresh_calendars()
    assert sorted(report.unchanged) == sorted([feed.calendar_id, skip_calendar])
    assert sample(metrics, "herald_calendars_failing") == 0
    last_ok = sample(metrics, "herald_calendar_last_success_timestamp_seconds", skip_calendar)
    assert last_ok == clock.now().timestamp()
    good_reminders = await herald.store.feed_reminders(feed.id)
    good_state = await state(herald, s.id)
    assert (utc(2026, 4, 3, 7), JobState.SKIPPED, "Skipped: Good Friday") in good_state[2]
    first_ok = clock.now()

    # two refreshes fail: the server errs, then answers something that is no calendar
    clock.advance(timedelta(minutes=15))
    failed_at = clock.now()
    ics.script(Scripted(status=500, body="down"), Scripted(body="<html>login</html>"))
    report = await herald.refresh_calendars()
    assert set(report.failed) == {feed.calendar_id, skip_calendar}
    assert "HTTP 500" in report.failed[feed.calendar_id]
    clock.advance(timedelta(minutes=15))
    ics.script(Scripted(status=503), Scripted(status=503))
    report = await herald.refresh_calendars()
    assert set(report.failed) == {feed.calendar_id, skip_calendar}

    [cal] = await herald.store.get_calendars([feed.calendar_id])
    assert (cal.failures, cal.error_at, cal.fetched_at) == (2, failed_at, first_ok)
    assert cal.checked_at == clock.now() and cal.body == data("team.ics")
    assert "HTTP 503" in (cal.last_error or "") and "127.0.0.1" in (cal.last_error or "")
    for text in (cal.last_error or "", *report.failed.values()):
        assert SECRET not in text and "team.ics" not in text  # host only: no path or query
    assert await herald.store.feed_reminders(feed.id) == good_reminders
    assert await state(herald, s.id) == good_state

    assert sample(metrics, "herald_calendars_failing") == 2
    since = sample(metrics, "herald_calendar_failing_since_timestamp_seconds", feed.calendar_id)
    assert since == failed_at.timestamp()
    last = sample(metrics, "herald_calendar_last_success_timestamp_seconds", feed.calendar_id)
    assert last == first_ok.timestamp()
    failures = "herald_calendar_refresh_failures_total"
    assert sample(metrics, failures, feed.calendar_id) == 2

    # it works again: the failure is cleared, its series are gone
    clock.advance(timedelta(minutes=15))
    report = await herald.refresh_calendars()
    assert report.failed == {}
    [cal] = await herald.store.get_calendars([feed.calendar_id])
    assert (cal.failures, cal.error_at, cal.last_error) == (0, None, None)
    assert cal.fetched_at == clock.now()
    assert sample(metrics, "herald_calendars_failing") == 0
    assert sample(metrics, "herald_calendar_failing_since_timestamp_seconds", skip_calendar) is None
    assert sample(metrics, failures, feed.calendar_id) == 2


async def test_calendar_metrics_after_a_restart_come_from_the_database(
    herald: Herald, settings: Settings, clock: ManualClock, ics: ICSServer
) -> None:
    """`herald run` sets the calendar gauges before its first refresh (15 minutes away)."""
    url = ics.publish("/team.ics", data("team.ics"))
    feed = await herald.add_feed(ADMIN, calendar=url, to="log:")
    ics.script(Scripted(status=500))
    clock.advance(timedelta(minutes=15))
    await herald.refresh_calendars()  # no metrics yet: as if an earlier process did it
    failed_at = clock.now()

    port = unused_port()
    live = settings.model_copy(update={"http_host": "127.0.0.1", "http_port": port})
    stop = asyncio.Event()
    started = asyncio.Event()
    seen: list[Dispatcher] = []

    def ready(_: Herald, dispatcher: Dispatcher) -> None:
        seen.append(dispatcher)
        started.set()

    running = asyncio.create_task(serve(live, stop=stop, ready=ready))
    try:
        await asyncio.wait_for(started.wait(), 10)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            text = (await client.get("/metrics")).text
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    label = (("calendar_id", str(feed.calendar_id)),)
    assert samples[("herald_calendars_failing", ())] == 1
    since = samples[("herald_calendar_failing_since_timestamp_seconds", label)]
    assert since == failed_at.timestamp()
    assert url not in text and "team.ics" not in text
