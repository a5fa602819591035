"""An event that leaves a feed's calendar (or its window) and comes back is reminded
again, once: the reminder a refresh cancelled gives up the event's key to the event's
new reminder (before, the event was never reminded again). A reminder a person
cancelled stays cancelled. On SQLite and PostgreSQL."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.models import Feed
from tests.fakes.ics import ICSServer
from tests.support.channels import RecordingChannel

ADMIN = "local:root-admin"
EMPTY = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nEND:VCALENDAR\r\n"
BOARD = EMPTY.replace(
    "END:VCALENDAR",
    "BEGIN:VEVENT\r\nUID:board-42@example.com\r\nDTSTAMP:20260301T000000Z\r\n"
    "DTSTART:20260310T100000Z\r\nDTEND:20260310T110000Z\r\nSUMMARY:Board call\r\n"
    "END:VEVENT\r\nEND:VCALENDAR",
)
#: the board call put off to 20 May: past the feed's 60 days from early March
LATER = BOARD.replace("20260310T1", "20260520T1")
REMINDER_AT = datetime(2026, 3, 10, 9, 50, tzinfo=UTC)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


async def board_feed(herald: Herald, ics: ICSServer) -> Feed:
    url = ics.publish("/board.ics", BOARD)
    feed = await herald.add_feed(
        ADMIN, calendar=url, to="log:", before="10m", tz="UTC", template="{event.summary}"
    )
    assert feed.id is not None
    return feed


async def reminders(herald: Herald, feed: Feed) -> list[tuple[datetime, str]]:
    found = await herald.store.feed_reminders(feed.id or 0)  # type: ignore[attr-defined]
    return sorted((s.starts_at, s.state) for s in found)


async def refresh(herald: Herald, ics: ICSServer, clock: ManualClock, text: str) -> dict[str, int]:
    """The calendar now reads ``text``, an hour later; the counts of the refresh."""
    ics.publish("/board.ics", text)
    clock.advance(3600)
    return (await herald.refresh_calendars()).reminders


async def sent_at_reminder_time(herald: Herald, clock: ManualClock) -> list[str]:
    """What the dispatcher sends when the reminder comes due."""
    clock.set(REMINDER_AT)
    channel = RecordingChannel()
    dispatcher = Dispatcher(
        herald.store,
        {"log": channel},
        clock=clock,
        config=DispatcherConfig(max_attempts=2),
        rng=random.Random(1),
    )
    await dispatcher.drain()
    return [d.body for d in channel.deliveries]


@pytest.mark.parametrize("gone", [EMPTY, LATER], ids=["deleted", "put-off-past-the-window"])
async def test_an_event_that_comes_back_is_reminded_again_once(
    herald: Herald, ics: ICSServer, clock: ManualClock, gone: str
) -> None:
    feed = await board_feed(herald, ics)
    assert await reminders(herald, feed) == [(REMINDER_AT, "active")]
    cancelled = {"created": 0, "moved": 0, "cancelled": 1}
    created = {"created": 1, "moved": 0, "cancelled": 0}

    assert await refresh(herald, ics, clock, gone) == cancelled
    assert await reminders(herald, feed) == [(REMINDER_AT, "cancelled")]
    # back in the calendar: reminded again (before: never, its key was taken)
    assert await refresh(herald, ics, clock, BOARD) == created
    assert await reminders(herald, feed) == [(REMINDER_AT, "active"), (REMINDER_AT, "cancelled")]
    # unchanged: nothing more
    assert await refresh(herald, ics, clock, BOARD) == {"created": 0, "moved": 0, "cancelled": 0}
    # out and back once more
    assert await refresh(herald, ics, clock, gone) == cancelled
    assert await refresh(herald, ics, clock, BOARD) == created
    rows = await reminders(herald, feed)
    assert [state for _, state in rows].count("active") == 1 and len(rows) == 3

    # one reminder is sent, by the one active schedule
    assert await sent_at_reminder_time(herald, clock) == ["Board call"]


async def test_a_reminder_its_owner_cancelled_stays_cancelled(
    herald: Herald, ics: ICSServer, clock: ManualClock
) -> None:
    """The feed's owner cancels one event's reminder: later refreshes, even after the
    event left the calendar and came back, do not bring it back."""
    feed = await board_feed(herald, ics)
    [reminder] = await herald.store.feed_reminders(feed.id or 0)  # type: ignore[attr-defined]
    assert reminder.id is not None
    await herald.cancel_schedule(ADMIN, reminder.id)
    nothing = {"created": 0, "moved": 0, "cancelled": 0}
    assert (
        await refresh(herald, ics, clock, BOARD.replace("Board call", "Board meeting")) == nothing
    )
    assert await refresh(herald, ics, clock, EMPTY) == nothing
    assert await refresh(herald, ics, clock, BOARD) == nothing
    assert await reminders(herald, feed) == [(REMINDER_AT, "cancelled")]
    assert await sent_at_reminder_time(herald, clock) == []
