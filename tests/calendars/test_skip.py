"""Skip calendars: occurrences on holidays are skipped, and the timeline says why."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from bot.logs import QUIETED_LOGGERS
from core import timeexpr
from core.calendars import Blackouts, CalendarError, next_allowed, skipped_between
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.models import JobState
from core.settings import Settings, load_settings
from core.timeexpr import expand
from core.timeexpr.metered import BUDGET, PER_OCCURRENCE
from tests.calendars.conftest import data
from tests.fakes.ics import ICSServer
from tests.support.calendars import attach_skip_calendars
from tests.support.channels import RecordingChannel
from tests.support.meters import examined

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
    s = await attach_skip_calendars(herald, ALICE, s.id, [url])
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
    s = await attach_skip_calendars(
        herald, ALICE, s.id, files={"holidays.ics": data("holidays.ics")}
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
    await attach_skip_calendars(herald, ALICE, s.id, files={"h.ics": data("holidays.ics")})
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
    root logger, httpx quietened); put the quietened loggers back for the tests that
    follow (the root logger is put back by the conftest's ``_logging_as_it_was``)."""
    quieted = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    yield
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
    from core.cases import ImportRejected, import_schedules

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


# --- one budget for every occurrence a skip passes over (issue 32) -----------------------
#
# next_allowed passes over up to 1,000 skipped occurrences. It asked for each with a
# budget of its own, so a rule built to be costly between occurrences, on a calendar
# that skips them all, held the dispatcher for up to 1,000 budgets (the second rule
# below: ~14.8 million candidates, ~5 s of CPU). Now one expansion on one meter looks at
# all of them: a budget, and what each occurrence asked for adds (as when listing that
# many), then the rule is refused as too costly, which the dispatcher logs (no next run).

LIMIT = 1000  # next_allowed's default
#: What one next_allowed may examine: a budget, an occurrence's share for each it looks
#: at, and the small walk that checks whether a line ever happens (a meter of its own).
ONE_BUDGET = BUDGET + (LIMIT + 1) * PER_OCCURRENCE + expand._PROBE_BUDGET
BACKSTOP = 2.0  # seconds of CPU, against a path the meters do not see
CLOSED = Blackouts({}, [(utc(2000, 1, 1), utc(3100, 1, 1), "Closed for good")])


@pytest.mark.parametrize(
    "rule",
    [
        # an hourly clock 161 h apart that must land on a Tuesday: ~3,000 candidates an
        # occurrence; 1,000 skipped ones were ~3.1 million
        "DTSTART;TZID=UTC:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=161;BYDAY=TU",
        # every 997 minutes, on a Tuesday at 05:05: one every ~19 years, each ~270,000
        # candidates; passing over them was ~14.8 million and ~5 s of CPU
        "DTSTART;TZID=UTC:20260302T000000\n"
        "RRULE:FREQ=MINUTELY;INTERVAL=997;BYDAY=TU;BYHOUR=5;BYMINUTE=5",
    ],
)
def test_passing_over_skipped_occurrences_costs_one_budget(rule: str) -> None:
    assert timeexpr.occurrences(rule, count=1, after=utc(2026, 3, 6))  # it does happen
    out, spent, cpu = examined(lambda: next_allowed(rule, utc(2026, 3, 6), CLOSED))
    assert spent <= ONE_BUDGET, f"{spent:,} candidates examined"
    assert cpu < BACKSTOP, f"{cpu:.1f} s of CPU"
    assert isinstance(out, InvalidInput), out
    assert str(out).startswith("This rule is too costly to expand")


def test_a_weekday_rule_passes_over_holidays_and_a_long_closure_on_one_meter() -> None:
    rule = "DTSTART;TZID=Europe/Berlin:20260105T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    easter = Blackouts(
        {
            date(2026, 4, 3): "Good Friday",
            date(2026, 4, 6): "Easter Monday",
        }
    )
    meter = timeexpr.Meter()
    found, skipped = next_allowed(rule, utc(2026, 4, 2, 12), easter, meter=meter)
    assert found == utc(2026, 4, 7, 7)
    assert skipped == [(utc(2026, 4, 3, 7), "Good Friday"), (utc(2026, 4, 6, 7), "Easter Monday")]
    assert 0 < meter.spent <= BUDGET // 20

    # closed for three and a half years: ~900 weekdays passed over, on one meter
    reopens = utc(2029, 10, 1)
    closure = Blackouts({}, [(utc(2026, 4, 1), reopens, "Closed for works")])
    meter = timeexpr.Meter()
    found, skipped = next_allowed(rule, utc(2026, 4, 1), closure, meter=meter)
    assert found == utc(2029, 10, 1, 7) and len(skipped) == 913
    assert skipped[0] == (utc(2026, 4, 1, 7), "Closed for works")
    assert meter.spent <= BUDGET // 10, f"{meter.spent:,} candidates"

    # closed for longer than the limit looks: no next occurrence, cheaply
    meter = timeexpr.Meter()
    found, skipped = next_allowed(rule, utc(2026, 4, 1), CLOSED, meter=meter)
    assert found is None and len(skipped) == LIMIT
    assert meter.spent <= BUDGET // 10


def test_many_holidays_cost_one_walk_not_a_budget_each() -> None:
    """Recording what a calendar skips walked the rule once per blackout window, each
    walk with a budget of its own: 200 holidays (every other day) on the costly rule
    above examined ~86 million candidates, ~8 s of CPU on the event loop. Now one walk
    on one meter goes from window to window."""
    rule = "DTSTART;TZID=UTC:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=161;BYDAY=TU"
    now = utc(2026, 3, 6)
    holidays = Blackouts({date(2026, 3, 7) + timedelta(days=2 * k): f"day {k}" for k in range(200)})
    until = now + timedelta(days=400)
    out, spent, cpu = examined(lambda: skipped_between(rule, now, now, until, holidays))
    assert spent <= BUDGET, f"{spent:,} candidates examined"
    assert cpu < BACKSTOP, f"{cpu:.1f} s of CPU"
    expected = [
        (instant, name)
        for instant in timeexpr.occurrences(rule, count=20, after=now)
        if instant < until and (name := holidays.hit(instant, ZoneInfo("UTC"))) is not None
    ]
    assert out == expected and len(expected) >= 3

    weekdays = "DTSTART;TZID=Europe/Berlin:20260105T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    easter = Blackouts({date(2026, 4, 3): "Good Friday", date(2026, 4, 6): "Easter Monday"})
    assert skipped_between(weekdays, now, now, until, easter, "Europe/Berlin") == [
        (utc(2026, 4, 3, 7), "Good Friday"),
        (utc(2026, 4, 6, 7), "Easter Monday"),
    ]


async def test_a_schedule_whose_rule_is_too_costly_does_not_stop_the_refresh(
    herald: Herald, clock: ManualClock, ics: ICSServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored rule that turned too costly (written before its budget, say) is logged
    and left; the other schedules skipping the same calendar still get its new days."""
    clock.set(utc(2026, 4, 1, 12))
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    ids = []
    for text in ("costly", "stand-up"):
        s, _ = await herald.create_schedule(
            ALICE, to="log:", when="every weekday at 9am", text=text, tz="Europe/Berlin"
        )
        await attach_skip_calendars(herald, ALICE, s.id, [url])
        ids.append(s.id)
    costly = "DTSTART;TZID=Europe/Berlin:20260402T090000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU"
    async with herald.store._engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE schedule SET rrule = :rule WHERE id = :id"),
            {"rule": costly, "id": ids[0]},
        )
    closed = data("holidays.ics").replace(
        "END:VCALENDAR",
        "BEGIN:VEVENT\nUID:closed@example.com\nDTSTAMP:20260101T000000Z\nSUMMARY:Office closed\n"
        "DTSTART;VALUE=DATE:20260402\nDTEND;VALUE=DATE:20260403\nEND:VEVENT\nEND:VCALENDAR",
    )
    ics.publish("/holidays.ics", closed)
    with caplog.at_level(logging.WARNING, logger="core.cases.calendars"):
        report = await herald.refresh_calendars()
    assert report.changed
    rows = await timeline(herald, ids[1])
    assert rows[0] == (utc(2026, 4, 2, 7), JobState.SKIPPED, "Skipped: Office closed")
    said = "skip calendars could not be applied"
    [warning] = [r for r in caplog.records if r.getMessage() == said]
    assert warning.schedule_id == ids[0]  # type: ignore[attr-defined]
