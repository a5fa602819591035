"""Skip calendars: occurrences on holidays are skipped, and the timeline says why."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from bot.logs import QUIETED_LOGGERS
from core.calendars import CalendarError
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.models import JobState
from core.settings import Settings, load_settings
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


# --- "… except holidays from <url>" -----------------------------------------------------


async def test_the_except_phrase_creates_a_schedule_that_skips(
    herald: Herald, clock: ManualClock, ics: ICSServer
) -> None:
    clock.set(utc(2026, 4, 1, 12))
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    s, created = await herald.create_schedule(
        ALICE,
        to="log:",
        when=f"every weekday at 9am except holidays from {url}",
        text="stand-up",
        tz="Europe/Berlin",
    )
    assert created and s.expression == "every weekday at 9am" and s.skip_calendars
    rows = await timeline(herald, s.id)
    assert (utc(2026, 4, 3, 7), JobState.SKIPPED, "Skipped: Good Friday") in rows
    assert (utc(2026, 4, 6, 7), JobState.SKIPPED, "Skipped: Easter Monday") in rows


async def test_a_schedule_stored_before_its_skips_are_recorded_still_skips(
    herald: Herald, clock: ManualClock, ics: ICSServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops right after the schedule is stored, before the skipped
    occurrences are written: it must still not post on the holidays."""
    clock.set(utc(2026, 4, 2, 12))  # Thursday; Friday 3rd and Monday 6th are holidays
    url = ics.publish("/holidays.ics", data("holidays.ics"))

    async def stopped(*args: object, **kwargs: object) -> None:
        raise SystemExit("process stopped")

    monkeypatch.setattr(herald, "_apply_skips", stopped)
    with pytest.raises(SystemExit):
        await herald.create_schedule(
            ALICE,
            to="log:",
            when=f"every weekday at 9am except holidays from {url}",
            text="stand-up",
            tz="Europe/Berlin",
        )
    [s] = await herald.list_schedules(ALICE)
    assert s.next_run_at == utc(2026, 4, 7, 7)
    channel = RecordingChannel()
    d = Dispatcher(herald.store, {"log": channel}, clock=clock, config=DispatcherConfig())
    for day in (3, 6, 7, 8):
        clock.set(utc(2026, 4, day, 7))
        await d.drain()
    sent = sorted(x.occurrence_at for x in channel.deliveries)
    assert sent == [utc(2026, 4, 7, 7), utc(2026, 4, 8, 7)]


async def test_a_calendar_that_cannot_be_read_creates_nothing(
    herald: Herald, clock: ManualClock, ics: ICSServer
) -> None:
    ics.publish("/holidays.ics", data("holidays.ics"))
    good = ics.url + "/holidays.ics"
    with pytest.raises(CalendarError, match="answered HTTP 404"):
        await herald.create_schedule(
            ALICE,
            to="log:",
            when=f"every weekday at 9am except holidays from {good} and {ics.url}/gone.ics",
            text="x",
        )
    with pytest.raises(InvalidInput, match="needs the calendar"):
        await herald.create_schedule(
            ALICE, to="log:", when="every weekday at 9am except holidays", text="x"
        )
    assert await herald.list_schedules(ALICE) == []


def cli(argv: list[str], settings: Settings) -> int:
    from bot.cli import main

    return main(argv, settings=settings)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The CLI's ``main`` configures logging for its process (a stderr handler on the
    root logger, httpx quietened); put it back for the tests that follow."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quieted = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, old in quieted.items():
        logging.getLogger(name).setLevel(old)


async def test_the_cli_previews_and_schedules_the_phrase(
    sqlite_url: str, ics: ICSServer, capsys: pytest.CaptureFixture[str], restored_logging: None
) -> None:
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url, HERALD_WEBHOOK_ALLOW_PRIVATE="true", _env_file=None
    )
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    when = f"every weekday at 9am except holidays from {url}"
    preview = ["when", when, "--tz", "Europe/Berlin", "--now", "2026-04-01T12:00:00Z"]
    assert await asyncio.to_thread(cli, [*preview, "--count", "3"], settings) == 0
    out = capsys.readouterr().out
    assert "Thu 02 Apr 2026 09:00 Europe/Berlin" in out
    assert "Tue 07 Apr 2026 09:00 Europe/Berlin" in out
    assert "Fri 03 Apr 2026 09:00 Europe/Berlin   skipped: Good Friday" in out
    assert "Mon 06 Apr 2026 09:00 Europe/Berlin   skipped: Easter Monday" in out

    assert await asyncio.to_thread(cli, [*preview, "--json"], settings) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["skip_calendars"] == [url]
    assert shown["skipped"][0] == {"at": "2026-04-03T07:00:00Z", "event": "Good Friday"}

    argv = [
        "schedule",
        "--to",
        "log:",
        "--when",
        when,
        "--text",
        "hi",
        "--tz",
        "Europe/Berlin",
        "-q",
    ]
    assert await asyncio.to_thread(cli, argv, settings) == 0
    sid = capsys.readouterr().out.strip()
    assert await asyncio.to_thread(cli, ["show", sid], settings) == 0
    out = capsys.readouterr().out
    assert "every weekday at 9am" in out and "skips:   the event dates of calendar 1" in out

    bad = ["schedule", "--to", "log:", "--when", f"daily at 9 except holidays from {url}x"]
    assert await asyncio.to_thread(cli, [*bad, "--text", "x"], settings) == 2
    assert "answered HTTP 404" in capsys.readouterr().err
    assert await asyncio.to_thread(cli, ["list"], settings) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2  # the header and one


async def test_the_phrase_is_refused_plainly_where_calendars_cannot_be_named(
    herald: Herald,
) -> None:
    from core.cases.importer import ImportRejected, import_schedules

    phrase = "every weekday at 9am except holidays from https://example.org/h.ics"
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every day at 9am", text="x")
    with pytest.raises(InvalidInput, match="only when you create a schedule"):
        await herald.edit_schedule(ALICE, s.id, when=phrase)
    line = json.dumps({"to": "log:", "when": phrase, "text": "x"})
    with pytest.raises(ImportRejected) as rejected:
        await import_schedules(herald, ALICE, [line])
    assert "only when you create a schedule" in str(rejected.value)
    assert [x.id for x in await herald.list_schedules(ALICE)] == [s.id]
    assert (await herald.store.get_schedule(s.id)).expression == "every day at 9am"
