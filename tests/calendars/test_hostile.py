"""Hostile calendars: each is refused at a limit it names, within its deadline, in a
worker process, while deliveries and health checks go on as if nothing happened."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.service import serve
from core.calendars import CalendarError, CalendarReader
from core.cases import Herald, import_schedules
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher
from core.settings import load_settings
from core.store import Settled, Store
from tests.calendars.conftest import data
from tests.fakes import unused_port
from tests.fakes.ics import ICSServer
from tests.support.channels import RecordingChannel
from tests.support.waiting import until

ADMIN = "local:root-admin"
CAP = "HERALD_CALENDAR_MAX_OCCURRENCES"
TIMEOUT = "HERALD_CALENDAR_READ_TIMEOUT"
#: A rule that never matches: recurring-ical-events searches to year 9999 for it
#: (~6 s each on an idle core) and yields nothing, so no count can stop it.
NEVER = "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30"
JANUARY = datetime(2026, 1, 1, tzinfo=UTC)


def calendar(*rules: str, start: datetime | None = None) -> str:
    """A calendar with one event per rule, all starting at ``start`` (default
    1 January 2026, 09:00 UTC)."""
    at = f"{start or JANUARY + timedelta(hours=9):%Y%m%dT%H%M%SZ}"
    events = "".join(
        f"BEGIN:VEVENT\nUID:e{n}@example.org\nDTSTAMP:20260101T000000Z\n"
        f"DTSTART:{at}\nRRULE:{rule}\n"
        f"SUMMARY:event {n}\nEND:VEVENT\n"
        for n, rule in enumerate(rules)
    )
    return f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//hostile//EN\n{events}END:VCALENDAR\n"


async def _ticker(lags: list[float], stop: asyncio.Event) -> None:
    """How late the event loop wakes a 10 ms sleep: what every delivery would see."""
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - before - 0.01)


@pytest.mark.parametrize(
    ("rules", "now", "limit"),
    [
        pytest.param(["FREQ=SECONDLY"], JANUARY, CAP, id="secondly"),
        pytest.param(["FREQ=MINUTELY;COUNT=1000000"], JANUARY, CAP, id="million-instances"),
        pytest.param(["FREQ=SECONDLY"] * 20, JANUARY, CAP, id="twenty-secondly"),
        # the rule's seconds since January come before the window: only the deadline
        # stops that search
        pytest.param(["FREQ=SECONDLY"], JANUARY + timedelta(days=300), TIMEOUT, id="secondly-old"),
        pytest.param([NEVER] * 5, JANUARY, TIMEOUT, id="never-matching"),
    ],
)
async def test_a_hostile_calendar_is_refused_within_the_deadline(
    rules: list[str], now: datetime, limit: str
) -> None:
    deadline = 3.0
    reader = CalendarReader(timeout=deadline)
    started = time.perf_counter()
    with pytest.raises(CalendarError) as refused:
        await reader.check("https://example.org/x.ics", calendar(*rules), now)
    took = time.perf_counter() - started
    message = str(refused.value)
    assert limit in message and "https://example.org/x.ics" in message
    if limit == CAP:
        assert "more than 10,000 event occurrences in the 400 days" in message
    else:
        assert "longer than 3 s" in message
        assert took >= deadline
    assert took < deadline + 2  # killed at the deadline, never read to the end


async def test_a_calendar_under_the_limits_reads_as_before() -> None:
    reader = CalendarReader(timeout=10)
    since = datetime(2026, 3, 1, tzinfo=UTC)
    found = await reader.instances(
        ("team", data("team.ics")), since, since + timedelta(days=60), "America/New_York"
    )
    assert len(found) == 11 and found[0].summary == "Team stand-up"
    # the same calendar with a lower cap: refused, naming it
    with pytest.raises(CalendarError, match="more than 8 event occurrences in the 400 days"):
        await CalendarReader(timeout=10, max_occurrences=8).check(
            "team", calendar("FREQ=DAILY;COUNT=9"), datetime(2026, 1, 1, tzinfo=UTC)
        )


@pytest.fixture
async def sqlite_store(sqlite_url: str) -> AsyncIterator[Store]:
    store = await Store.open(sqlite_url)
    try:
        yield store
    finally:
        await store.close()


async def test_deliveries_keep_their_lateness_while_hostile_calendars_are_read(
    sqlite_url: str, sqlite_store: Store, ics: ICSServer
) -> None:
    deadline, burst = 5.0, 500
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_ADMINS=ADMIN,
        HERALD_CALENDAR_READ_TIMEOUT=str(deadline),
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",  # the calendar server is on loopback
        _env_file=None,
    )
    now = datetime.now(UTC)
    reader = CalendarReader.from_settings(settings)
    herald = Herald(
        sqlite_store, settings, ManualClock(now - timedelta(minutes=1)), calendar_reader=reader
    )
    # a feed that was fine, and whose calendar then holds a million-instance rule
    good = ics.publish("/team.ics", data("team.ics"))
    feed = await herald.add_feed(ADMIN, calendar=good, to="log:", before="10m")
    reminders = await herald.store.feed_reminders(feed.id)  # type: ignore[attr-defined]
    ics.publish("/team.ics", calendar("FREQ=MINUTELY;COUNT=1000000", start=now))
    never = ics.publish("/never.ics", calendar(*[NEVER] * 10))
    due = now - timedelta(seconds=30)  # the writer's future, already due for real
    lines = [
        json.dumps(
            {"to": "log:", "when": f"{due:%Y-%m-%dT%H:%M:%SZ}", "text": f"m{i}", "key": f"k{i}"}
        )
        for i in range(burst)
    ]
    assert (await import_schedules(herald, "local:alice", lines)).imported == burst

    channel = RecordingChannel()
    finished: list[Settled] = []
    dispatcher = Dispatcher(
        sqlite_store, {"log": channel}, clock=SystemClock(), observer=finished.append
    )
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lags, stop))
    started = time.perf_counter()
    reads = asyncio.gather(
        herald.refresh_calendars(),
        herald.add_feed(ADMIN, calendar=never, to="log:"),
        return_exceptions=True,
    )
    await until(lambda: reader.running >= 1, every=0.005)  # a calendar is being read
    drain_started = datetime.now(UTC)
    summary = await dispatcher.drain()
    delivered_after = time.perf_counter() - started
    assert not reads.done()  # the burst did not wait for the calendars
    report, refused = await reads
    read_for = time.perf_counter() - started
    stop.set()
    await ticker

    assert summary.as_dict()["delivered"] == burst == len(channel.deliveries)
    lateness = sorted(
        (f.attempt.started_at - drain_started).total_seconds()
        for f in finished
        if f.attempt is not None
    )
    assert lateness[-1] < 2.0, lateness[-10:]  # every one started within 2 s of the drain
    assert max(lags) < 1.0, sorted(lags)[-5:]  # the loop never stalled
    assert delivered_after < deadline <= read_for < deadline + 3

    assert isinstance(refused, CalendarError) and TIMEOUT in str(refused)
    assert feed.calendar_id in report.failed and CAP in report.failed[feed.calendar_id]
    [cal] = await herald.store.get_calendars([feed.calendar_id])  # type: ignore[attr-defined]
    assert cal.body == data("team.ics") and cal.failures == 1  # its last good copy stays
    assert await herald.store.feed_reminders(feed.id) == reminders  # type: ignore[attr-defined]
    assert len(await herald.list_feeds(ADMIN)) == 1  # the refused one was not added


class _Said(logging.Handler):
    """Sets ``event`` when a log record with ``message`` comes."""

    def __init__(self, message: str) -> None:
        super().__init__(logging.INFO)
        self.message = message
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == self.message:
            self.event.set()


def big_calendar(events: int = 15_000) -> str:
    """~4 MB of plain events (under the 5 MB a fetch takes; parsing it takes ~3 s on
    an idle core), then never-matching rules, so that reading it passes the deadline
    however fast the machine parses."""
    hostile = calendar(*[NEVER] * 5)
    never = hostile[hostile.index("BEGIN:VEVENT") : hostile.index("END:VCALENDAR")]
    body = never + "".join(
        f"BEGIN:VEVENT\nUID:big-{n}@example.org\nDTSTAMP:20260101T000000Z\n"
        f"DTSTART:20260101T090000Z\nDTEND:20260101T100000Z\nSUMMARY:event {n}\n"
        f"DESCRIPTION:{'x' * 160}\nEND:VEVENT\n"
        for n in range(events)
    )
    return f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//big//EN\n{body}END:VCALENDAR\n"


@pytest.mark.parametrize("how", ["uploaded-never-matching", "fetched-4MB"])
async def test_healthz_answers_while_a_hostile_calendar_is_read(
    sqlite_url: str, ics: ICSServer, how: str
) -> None:
    deadline = 4.0
    if how == "fetched-4MB":
        source, body = ics.publish("/big.ics", big_calendar()), None
    else:
        source, body = "hostile.ics", calendar(*[NEVER] * 10)
    port = unused_port()
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_ADMINS=ADMIN,
        HERALD_ADAPTERS="none",
        HERALD_HTTP_HOST="127.0.0.1",
        HERALD_HTTP_PORT=str(port),
        HERALD_CALENDAR_READ_TIMEOUT=str(deadline),
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",  # the calendar server is on loopback
        _env_file=None,
    )
    stop = asyncio.Event()
    up: asyncio.Future[Herald] = asyncio.get_running_loop().create_future()
    started = _Said("dispatcher started")
    said = logging.getLogger("core.dispatcher")
    level = said.level
    said.setLevel(logging.INFO)
    said.addHandler(started)
    running = asyncio.create_task(serve(settings, stop=stop, ready=lambda h, _: up.set_result(h)))
    try:
        herald = await asyncio.wait_for(up, 15)
        # its start-up (a full garbage collection, ~0.4 s here) is over before we look
        await asyncio.wait_for(started.event.wait(), 15)
        reading = asyncio.create_task(herald.add_feed(ADMIN, calendar=source, to="log:", body=body))
        answers: list[tuple[int, float]] = []  # (status, when it came)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            while not reading.done():
                status = (await client.get("/healthz")).status_code
                answers.append((status, time.perf_counter()))
                await asyncio.sleep(0.05)
        with pytest.raises(CalendarError, match=TIMEOUT):
            await reading
    finally:
        said.removeHandler(started)
        said.setLevel(level)
        stop.set()
        await asyncio.wait_for(running, 15)
    assert len(answers) >= 20  # ~4 s of asking, every 50 ms plus the answer
    assert {status for status, _ in answers} == {200}
    # asked every 50 ms: no answer came more than half a second after the one before
    gaps = sorted(b - a for (_, a), (_, b) in zip(answers, answers[1:], strict=False))
    assert gaps[-1] < 0.5, gaps[-5:]
