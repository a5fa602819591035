"""Skip calendars: occurrences on holidays are skipped, and the timeline says why."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.models import JobState
from core.usecases import Herald
from tests.calendars.conftest import data
from tests.fakes.ics import ICSServer
from tests.support.channels import RecordingChannel

ALICE = "local:alice"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


async def timeline(herald: Herald, sid: int) -> list[tuple[datetime, str, str | None]]:
    jobs = await herald.store.schedule_jobs(sid)
    return sorted((j.occurrence_at, j.state, j.last_error) for j in jobs)


async def test_holidays_are_skipped_and_shown(
    herald: Herald, clock: ManualClock, ics: ICSServer
) -> None:
    clock.set(utc(2026, 4, 1, 12))
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every weekday at 9am", text="stand-up", tz="Europe/Berlin"
    )
    s = await herald.attach_skip_calendars(ALICE, s.id, [url])
    assert s.skip_calendars and s.options["skip"]["days"]["2026-04-03"] == "Good Friday"
    rows = await timeline(herald, s.id)
    assert rows[:3] == [
        (utc(2026, 4, 2, 7), JobState.PENDING, None),
        (utc(2026, 4, 3, 7), JobState.SKIPPED, "Skipped: Good Friday"),
        (utc(2026, 4, 6, 7), JobState.SKIPPED, "Skipped: Easter Monday"),
    ]
    assert (utc(2026, 5, 1, 7), JobState.SKIPPED, "Skipped: Labour Day") in rows
    assert (utc(2026, 12, 24, 8), JobState.SKIPPED, "Skipped: Christmas break") in rows

    channel = RecordingChannel()
    d = Dispatcher(
        herald.store,
        {channel.kind: channel},
        clock=clock,
        config=DispatcherConfig(),
        rng=random.Random(1),
    )
    clock.set(utc(2026, 4, 2, 7))
    assert (await d.drain()).as_dict()["delivered"] == 1
    rows = await timeline(herald, s.id)
    assert (utc(2026, 4, 7, 7), JobState.PENDING, None) in rows  # past Good Friday + Easter
    assert (await herald.store.get_schedule(s.id)).next_run_at == utc(2026, 4, 7, 7)


async def test_a_waiting_job_on_a_holiday_is_skipped_from_an_uploaded_file(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc(2026, 4, 2, 12))
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every weekday at 9am", text="x", tz="Europe/Berlin"
    )
    assert s.next_run_at == utc(2026, 4, 3, 7)
    s = await herald.attach_skip_calendars(
        ALICE, s.id, files={"holidays.ics": data("holidays.ics")}
    )
    assert s.next_run_at == utc(2026, 4, 7, 7)
    rows = await timeline(herald, s.id)
    assert rows[0] == (utc(2026, 4, 3, 7), JobState.SKIPPED, "Skipped: Good Friday")
    assert rows[2] == (utc(2026, 4, 7, 7), JobState.PENDING, None)
    pending = [r for r in rows if r[1] == JobState.PENDING]
    assert len(pending) == 1


async def test_export_leaves_out_skipped_days(herald: Herald, clock: ManualClock) -> None:
    import icalendar
    import recurring_ical_events

    clock.set(utc(2026, 4, 1, 12))
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when="every weekday at 9am", text="x", tz="Europe/Berlin"
    )
    await herald.attach_skip_calendars(ALICE, s.id, files={"h.ics": data("holidays.ics")})
    cal = icalendar.Calendar.from_ical(await herald.export_ics(ALICE))
    days = {
        e["DTSTART"].dt.date()
        for e in recurring_ical_events.of(cal).between(utc(2026, 4, 1), utc(2026, 4, 10))
    }
    assert [d.day for d in sorted(days)] == [2, 7, 8, 9]
