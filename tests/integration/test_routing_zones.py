"""Each recipient's hour (issue 35): with "their time" a recipient gets the schedule's
wall time in its own zone, so a DST change in either zone moves only that recipient's
job; channels keep the author's zone. Table tests of ``routing.due_for`` and of whole
schedules driven day by day through the dispatcher (injected clock, drain mode), on
SQLite and PostgreSQL.

2026's changes: the US springs forward on 8 March and falls back on 1 November, the EU
on 29 March and 25 October; India keeps UTC+05:30 all year."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from core import routing, views
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.support.channels import RecordingChannel

ALICE, ADMIN = "local:alice", "local:root-admin"
BERLIN, NEW_YORK, KOLKATA = "Europe/Berlin", "America/New_York", "Asia/Kolkata"
#: Late jobs are still sent: the walk drains once a day, after every recipient's hour.
CONFIG = DispatcherConfig(max_attempts=3, backoff_base=5, backoff_cap=60, max_lateness=86400)


def utc(text: str) -> datetime:
    """``"2026-03-08 13:00"`` as a UTC instant."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- routing.due_for ----------------------------------------------------------------

DUE_FOR = [
    # occurrence (UTC), the schedule's zone, the recipient's zone -> when it is sent (UTC)
    # both in winter time: Berlin 09:00 = 08:00Z, New York 09:00 = 14:00Z
    ("2026-03-06 08:00", BERLIN, NEW_YORK, "2026-03-06 14:00"),
    ("2026-03-06 08:00", BERLIN, KOLKATA, "2026-03-06 03:30"),
    # the US has changed, the EU not yet: only New York's hour moves
    ("2026-03-09 08:00", BERLIN, NEW_YORK, "2026-03-09 13:00"),
    ("2026-03-09 08:00", BERLIN, KOLKATA, "2026-03-09 03:30"),
    ("2026-03-09 08:00", BERLIN, BERLIN, "2026-03-09 08:00"),
    ("2026-03-09 08:00", BERLIN, None, "2026-03-09 08:00"),
    # both in summer time
    ("2026-03-30 07:00", BERLIN, NEW_YORK, "2026-03-30 13:00"),
    ("2026-03-30 07:00", BERLIN, KOLKATA, "2026-03-30 03:30"),
    # the EU is back on winter time, the US not yet
    ("2026-10-26 08:00", BERLIN, NEW_YORK, "2026-10-26 13:00"),
    ("2026-11-02 08:00", BERLIN, NEW_YORK, "2026-11-02 14:00"),
    # the author in New York, a recipient in Berlin: the other way round
    ("2026-03-09 13:00", NEW_YORK, BERLIN, "2026-03-09 08:00"),
    ("2026-03-30 13:00", NEW_YORK, BERLIN, "2026-03-30 07:00"),
    # a spring-forward gap: 02:30 does not exist in New York on 8 March; it is sent at
    # the instant the offset before the change gives (the clock reads 03:30 EDT)
    ("2026-03-07 01:30", BERLIN, NEW_YORK, "2026-03-07 07:30"),
    ("2026-03-08 01:30", BERLIN, NEW_YORK, "2026-03-08 07:30"),
    ("2026-03-09 01:30", BERLIN, NEW_YORK, "2026-03-09 06:30"),
    # an autumn fold: 01:30 happens twice in New York on 1 November; the first (EDT)
    ("2026-11-01 00:30", BERLIN, NEW_YORK, "2026-11-01 05:30"),
    ("2026-11-02 00:30", BERLIN, NEW_YORK, "2026-11-02 06:30"),
    # a fold in the schedule's own zone: either 02:30 of 25 October in Berlin is 02:30
    # in New York (EDT there)
    ("2026-10-25 00:30", BERLIN, NEW_YORK, "2026-10-25 06:30"),
    ("2026-10-25 01:30", BERLIN, NEW_YORK, "2026-10-25 06:30"),
]


@pytest.mark.parametrize(("occurrence", "schedule_zone", "zone", "due"), DUE_FOR)
def test_due_for_is_the_same_wall_time_in_the_recipients_zone(
    occurrence: str, schedule_zone: str, zone: str | None, due: str
) -> None:
    sent = routing.due_for(utc(occurrence), schedule_zone, zone)
    assert sent == utc(due)
    if zone is not None:  # the same date and hour on the recipient's clock (gap aside)
        wall = utc(occurrence).astimezone(ZoneInfo(schedule_zone))
        theirs = sent.astimezone(ZoneInfo(zone))
        assert theirs.date() == wall.date()
        assert theirs.time() == wall.time() or (theirs - timedelta(hours=1)).time() == wall.time()


# --- whole schedules ----------------------------------------------------------------


async def their_time_schedule(herald: Herald, when: str, to: list[str]) -> int:
    await herald.set_member_timezone(ADMIN, "email:ny@example.com", NEW_YORK)
    await herald.set_member_timezone(ADMIN, "email:in@example.com", KOLKATA)
    s, _ = await herald.create_schedule(
        ALICE, to=to, when=when, text="Stand-up", tz=BERLIN, their_time=True
    )
    assert s.id is not None
    return s.id


async def walk(herald: Herald, clock: ManualClock, sid: int, days: int) -> dict[date, list[str]]:
    """Drain once a day at 23:00 UTC (after every recipient's hour) for ``days`` days;
    each occurrence's (by its Berlin date) due times, "HH:MM" UTC, in recipient order."""
    channels = [RecordingChannel(kind="slack"), RecordingChannel(kind="email")]
    d = Dispatcher(
        herald.store,
        {c.kind: c for c in channels},
        clock=clock,
        config=CONFIG,
        rng=random.Random(7),
    )
    day = clock.now().date()
    for n in range(days):
        clock.set(datetime.combine(day + timedelta(days=n), time(23), tzinfo=UTC))
        summary = await d.drain()
        assert summary.outcomes["dead"] == summary.outcomes["expired"] == 0
    table: dict[date, list[tuple[int, str]]] = {}
    for job in await herald.store.schedule_jobs(sid, limit=10_000):
        on = job.occurrence_at.astimezone(ZoneInfo(BERLIN)).date()
        table.setdefault(on, []).append((job.recipient, f"{job.due_at:%m-%d %H:%M}"))
    return {on: [due for _, due in sorted(rows)] for on, rows in table.items()}


async def test_spring_each_recipients_job_moves_with_its_own_zone(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-03-05 12:00"))
    sid = await their_time_schedule(
        herald,
        "every day at 9am",
        ["slack:C0OPS", "email:ny@example.com", "email:in@example.com", "email:x@example.com"],
    )
    s = await herald.store.get_schedule(sid)
    # a channel keeps the author's zone; a person without one gets the author's, said
    assert [r.get("zone") for r in s.recipients] == [None, NEW_YORK, KOLKATA, BERLIN]
    assert views.recipient_times(s) == (
        "email:ny@example.com 09:00 America/New_York = 14:00Z, "
        "email:in@example.com 09:00 Asia/Kolkata = 03:30Z, "
        "email:x@example.com 09:00 Europe/Berlin = 08:00Z"
    )
    table = await walk(herald, clock, sid, days=27)
    #            #ops (Berlin)   New York        Kolkata         x (Berlin)
    expected = {
        date(2026, 3, 6): ["03-06 08:00", "03-06 14:00", "03-06 03:30", "03-06 08:00"],
        date(2026, 3, 7): ["03-07 08:00", "03-07 14:00", "03-07 03:30", "03-07 08:00"],
        # the US springs forward (Sunday 8 March): only New York's job moves
        date(2026, 3, 8): ["03-08 08:00", "03-08 13:00", "03-08 03:30", "03-08 08:00"],
        date(2026, 3, 9): ["03-09 08:00", "03-09 13:00", "03-09 03:30", "03-09 08:00"],
        date(2026, 3, 28): ["03-28 08:00", "03-28 13:00", "03-28 03:30", "03-28 08:00"],
        # the EU springs forward (Sunday 29 March): Berlin's jobs move, not the others
        date(2026, 3, 29): ["03-29 07:00", "03-29 13:00", "03-29 03:30", "03-29 07:00"],
        date(2026, 3, 30): ["03-30 07:00", "03-30 13:00", "03-30 03:30", "03-30 07:00"],
    }
    assert {on: table[on] for on in expected} == expected
    assert len(table) >= 27 and all(len(rows) == 4 for rows in table.values())


async def test_autumn_each_recipients_job_moves_with_its_own_zone(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-10-22 12:00"))
    sid = await their_time_schedule(
        herald, "every day at 9am", ["slack:C0OPS", "email:ny@example.com", "email:in@example.com"]
    )
    table = await walk(herald, clock, sid, days=12)
    expected = {
        date(2026, 10, 24): ["10-24 07:00", "10-24 13:00", "10-24 03:30"],
        # the EU falls back (Sunday 25 October)
        date(2026, 10, 25): ["10-25 08:00", "10-25 13:00", "10-25 03:30"],
        date(2026, 10, 31): ["10-31 08:00", "10-31 13:00", "10-31 03:30"],
        # the US falls back (Sunday 1 November)
        date(2026, 11, 1): ["11-01 08:00", "11-01 14:00", "11-01 03:30"],
        date(2026, 11, 2): ["11-02 08:00", "11-02 14:00", "11-02 03:30"],
    }
    assert {on: table[on] for on in expected} == expected


async def test_a_recipients_spring_gap_and_autumn_fold(herald: Herald, clock: ManualClock) -> None:
    clock.set(utc("2026-03-06 12:00"))
    gap = await their_time_schedule(herald, "every day at 2:30am", ["email:ny@example.com"])
    table = await walk(herald, clock, gap, days=3)
    # 02:30 does not exist in New York on 8 March: sent at 03:30 EDT, as 02:30 EST would be
    assert [table[date(2026, 3, d)] for d in (7, 8, 9)] == [
        ["03-07 07:30"],
        ["03-08 07:30"],
        ["03-09 06:30"],
    ]

    await herald.cancel_schedule(ALICE, gap)
    clock.set(utc("2026-10-30 12:00"))
    fold = await their_time_schedule(herald, "every day at 1:30am", ["email:ny@example.com"])
    table = await walk(herald, clock, fold, days=3)
    # 01:30 happens twice in New York on 1 November: sent once, at the first (EDT)
    assert [table[date(2026, m, d)] for m, d in ((10, 31), (11, 1), (11, 2))] == [
        ["10-31 05:30"],
        ["11-01 05:30"],
        ["11-02 06:30"],
    ]
