"""Console tests: SQLite only (no query here is dialect-specific except the overview's
per-minute buckets, which test_console_store also runs on PostgreSQL)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
import textual._wait
from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from core.cases import Herald
from core.clock import ManualClock
from core.models import Feed
from core.settings import Settings
from core.store import AttemptRecord, AuditEntry, FetchRecord, Verdict
from tests.calendars.conftest import data
from tests.support.calendars import (
    attach_skip_calendars,
    ics,  # noqa: F401 - a fixture for the calendar screen
)
from tui.app import HeraldConsole, make_app
from tui.screens.base import ConsoleScreen
from tui.widgets.table import PageTable

ADMIN = "local:root-admin"
OPERATOR = "local:olive"
MEMBER = "local:bob"
FAILING = "webhook:https://hooks.example.com/broken"


@pytest.fixture
def db_url(sqlite_url: str) -> str:
    return sqlite_url


#: Textual's idle test (textual._wait.wait_for_idle: sleep a window, idle when the
#: process used under a twentieth of it in CPU), which Pilot runs twice after every key
#: and in every pause: a 5 ms window instead of its 20 ms.
IDLE_WINDOW = 0.005


@pytest.fixture(autouse=True)
def _short_idle_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 20 ms, a key took ~100 ms on a busy machine (two windows at least, and any
    window that caught a redraw, the cursor blinking say, counts as busy): typing into a
    form was most of a console test's time. The test is the same, on a shorter window:
    a key is sent once the process is idle after the last one (the messages a key sets
    off run as soon as they are queued, within the first window), Pilot still waits for
    the screen to handle every message queued by the keys, and what a test asserts it
    waits for with ``settle`` (the workers done and the screen's data drawn, however
    long that takes). If Textual renames these, monkeypatch fails every console test
    rather than leave them slow."""
    monkeypatch.setattr(textual._wait, "SLEEP_GRANULARITY", IDLE_WINDOW)
    monkeypatch.setattr(textual._wait, "SLEEP_IDLE", IDLE_WINDOW / 20)


async def deliver(herald: Herald, clock: ManualClock, *, fail: bool, error: str = "") -> int:
    """Claim what is due and record one attempt each: ok, or dead with ``error``."""
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=100
    )
    results = []
    for job in jobs:
        attempt = AttemptRecord(
            started_at=now,
            finished_at=now + timedelta(milliseconds=40),
            outcome="permanent" if fail else "ok",
            status_code=410 if fail else 200,
            error=error or None,
            message_id=None if fail else f"m-{job.id}",
        )
        state = "dead" if fail else "delivered"
        results.append(Verdict(job, state, attempt=attempt, error=error or None))
    await herald.store.finish(results, worker="w1", now=now)
    return len(jobs)


async def seed(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """Three members' schedules; two delivered jobs, three dead letters (one with a
    retry request), a recurring schedule and a waiting one."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    ids: dict[str, Any] = {}
    for name, actor, to, when, text in [
        ("ok1", MEMBER, "log:", "in 1 minute", "Deploy window opens"),
        ("ok2", OPERATOR, "log:", "in 1 minute", "Coffee is ready"),
        ("dead1", MEMBER, FAILING, "in 2 minutes", "Broken hook one"),
        ("dead2", OPERATOR, FAILING, "in 2 minutes", "Broken hook two"),
        ("dead3", MEMBER, "slack:C0GONE", "in 2 minutes", "Channel archived"),
    ]:
        s, _ = await herald.create_schedule(actor, to=to, when=when, text=text, tz="UTC")
        ids[name] = s.id
    clock.advance(61)
    await deliver(herald, clock, fail=False)
    clock.advance(60)
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=100
    )
    results = [
        Verdict(
            job,
            "dead",
            attempt=AttemptRecord(
                started_at=now,
                finished_at=now,
                outcome="permanent",
                status_code=410 if job.destination == FAILING else 404,
                error="HTTP 410 Gone" if job.destination == FAILING else "channel_not_found",
            ),
            error="HTTP 410 Gone" if job.destination == FAILING else "channel_not_found",
        )
        for job in jobs
    ]
    await herald.store.finish(results, worker="w1", now=now)
    ids["dead_jobs"] = sorted(job.id for job in jobs)
    s, _ = await herald.create_schedule(
        MEMBER, to="slack:C0STANDUP", when="every weekday at 9am", text="Standup", tz="UTC"
    )
    ids["standup"] = s.id
    s, _ = await herald.create_schedule(
        OPERATOR, to="discord:123456789012345678", when="in 2 hours", text="Release", tz="UTC"
    )
    ids["release"] = s.id
    dead_of_bob = [d.job_id for d in await herald.dead_letters(MEMBER) if d.destination == FAILING]
    await herald.retry_dead_letters(MEMBER, dead_of_bob)  # a request: bob is a member
    ids["requested"] = dead_of_bob
    return ids


@pytest.fixture
async def seeded(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    return await seed(herald, clock)


CALENDAR_SECRET = "tok-5ecret-cal"
TEAM_URL = f"https://calendar.example.com/private/team.ics?token={CALENDAR_SECRET}"
HOLIDAYS_URL = "https://holidays.example.org/de/holidays.ics"


async def seed_calendars(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """Three calendars: a URL feed calendar (the admin's) whose refreshes fail for 30
    minutes, with an error as an older Herald stored it (the URL and its token in full);
    bob's URL skip calendar, refreshed fine; and an uploaded file nothing uses."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    store = herald.store
    now = clock.now()
    team = await store.save_calendar(
        ADMIN, TEAM_URL, body=data("team.ics"), name="Team events", now=now
    )
    assert team.id is not None
    feed = await store.add_feed(
        Feed(
            calendar_id=team.id,
            owner=ADMIN,
            destination="slack:C0TEAM",
            before_s=600,
            template="{event.summary} in 10 minutes",
            timezone="UTC",
            created_at=now,
            updated_at=now,
        ),
        audit=AuditEntry(ADMIN, "feed.add", "feed"),
        now=now,
    )
    await herald.sync_feed(feed, team)
    holidays = await store.save_calendar(
        MEMBER, HOLIDAYS_URL, body=data("holidays.ics"), name="Holidays", now=now
    )
    s, _ = await herald.create_schedule(
        MEMBER, to="log:", when="every weekday at 9am", text="Stand-up", tz="UTC"
    )
    await attach_skip_calendars(herald, MEMBER, s.id, loaded=[holidays])
    upload = await herald.load_calendar(
        await herald.actor(OPERATOR), "holidays.ics", data("holidays.ics")
    )
    error = f"Fetching {TEAM_URL} answered HTTP 503."
    assert team.id is not None and holidays.id is not None
    for _ in range(3):
        clock.advance(timedelta(minutes=15))
        await store.record_fetch(team.id, FetchRecord(error=error), now=clock.now())
        await store.record_fetch(holidays.id, FetchRecord(), now=clock.now())
    return {"team": team.id, "holidays": holidays.id, "upload": upload.id, "feed": feed.id}


@pytest.fixture
def console(settings: Settings, herald: Herald) -> Callable[..., HeraldConsole]:
    """Build the console as someone; live refresh is driven by the test."""

    def build(actor_id: str = ADMIN, mode: str = "overview") -> HeraldConsole:
        return make_app(settings, herald, actor_id, refresh_interval=3600, mode=mode)

    return build


async def settle(pilot: Pilot[Any]) -> None:
    """Let workers finish and the screen redraw: at least until the screen shown has
    drawn its data once (on a busy machine its first read can start after a few
    rounds of the loop), however many rounds that takes."""
    app = pilot.app
    for round_ in range(500):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # a newer read replaced it: wait for that one
            continue
        screen = app.screen
        drawn = not isinstance(screen, ConsoleScreen) or screen.loads > 0
        if round_ >= 4 and drawn and not screen_busy(app):
            break
    await pilot.pause()


def screen_busy(app: HeraldConsole) -> bool:
    """A worker is running, a read whose data is still to be drawn, or a table whose
    scroll position is still to settle after drawing new rows."""
    return (
        any(worker.is_running for worker in app.workers)
        or bool(app._reads)
        or any(t.settling for t in app.screen.query(PageTable))
    )


_TEXT = re.compile(
    r'<text [^>]*?x="([\d.]+)"[^>]*?textLength="([\d.]+)"[^>]*?line-(\d+)\)">(.*?)</text>'
)


def svg_lines(svg: str, width: int) -> list[str]:
    """The terminal lines an SVG screenshot shows, as plain text (column-accurate)."""
    rows: dict[int, list[str]] = {}
    for x, length, line, raw in _TEXT.findall(svg):
        text = html.unescape(raw).replace("\xa0", " ")
        cell = float(length) / max(1, len(text))
        column = round(float(x) / cell) if cell else 0  # x is 0 at the first column
        row = rows.setdefault(int(line), [" "] * width)
        for offset, char in enumerate(text):
            if 0 <= column + offset < width:
                row[column + offset] = char
    last = max(rows, default=-1)
    return ["".join(rows.get(n, [])).rstrip() for n in range(last + 1)]


def table(app: Any, selector: str = "#table") -> PageTable:
    """The screen's list (or the table ``selector`` names)."""
    return app.screen.query_one(selector, PageTable)


def flat(text: str) -> str:
    """``text`` with every run of whitespace (line ends too) one space."""
    return " ".join(text.split())


def screen_text(app: HeraldConsole) -> str:
    """What the terminal shows now, one string with a line per row."""
    return "\n".join(svg_lines(app.export_screenshot(), app.size.width))


@asynccontextmanager
async def run(app: HeraldConsole, size: tuple[int, int] = (80, 24)) -> AsyncIterator[Any]:
    """``app.run_test`` at ``size``, with notifications kept (tests read them); after
    it, the reads still running finish before the test's store closes (as the CLI's
    console does)."""
    try:
        async with app.run_test(size=size, notifications=True) as pilot:
            yield pilot
    finally:
        await app.finish_reads()


def notes(app: HeraldConsole) -> list[str]:
    """The notifications shown so far, as ``title: message``."""
    return [f"{n.title}: {n.message}" for n in app._notifications]
