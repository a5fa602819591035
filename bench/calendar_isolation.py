"""Where a hostile calendar should be read: on the event loop, in a thread, or in a
worker process (``python -m bench.calendar_isolation``).

The calendar holds ``EVENTS`` events ``RRULE:FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30``:
each keeps recurring-ical-events searching (to year 9999) without yielding an
occurrence, so no cap on occurrences stops it; only a deadline can. Each way reads it
with a ``DEADLINE`` s deadline while a ticker on the event loop measures how late its
10 ms sleeps wake (the lag every delivery and health check would see), and then
measures how much CPU the read still burns in the ``AFTER`` s after the deadline.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from core import calendars
from core.calendars import CalendarError, CalendarReader

EVENTS = 5
DEADLINE = 2.0
AFTER = 3.0
START = datetime(2026, 1, 1, tzinfo=UTC)


def hostile(events: int = EVENTS) -> str:
    body = "".join(
        f"BEGIN:VEVENT\nUID:e{n}\nDTSTAMP:20260101T000000Z\nDTSTART:20260101T000000Z\n"
        "RRULE:FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30\nEND:VEVENT\n"
        for n in range(events)
    )
    return f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:bench\n{body}END:VCALENDAR\n"


def _read(text: str, ended: list[float], done: threading.Event) -> calendars.Blackouts:
    try:
        return calendars.blackouts([calendars.parse(text)], START, zone=ZoneInfo("UTC"))
    finally:
        ended.append(time.perf_counter())
        done.set()


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def _ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - before - 0.01)


async def _measure(way: str, text: str) -> dict[str, Any]:
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lags, stop))
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    ended: list[float] = []
    done = threading.Event()
    outcome = "read"
    try:
        if way == "loop":
            _read(text, ended, done)  # what Herald did: no deadline can interrupt it
        elif way == "thread":
            await asyncio.wait_for(asyncio.to_thread(_read, text, ended, done), DEADLINE)
        else:
            await CalendarReader(timeout=DEADLINE).blackouts([("bench", text)], START, "UTC")
    except (TimeoutError, CalendarError):
        outcome = "refused"
    returned = time.perf_counter() - started
    cpu = _cpu()
    await asyncio.sleep(AFTER)
    burnt = _cpu() - cpu
    stop.set()
    await ticker
    lags.sort()
    if way == "thread":  # a thread cannot be stopped: it runs on after its deadline
        await asyncio.to_thread(done.wait)
    gone = (ended[0] if ended else started + returned) - started
    return {
        "way": way,
        "outcome": outcome,
        "returned_after_s": round(returned, 2),
        "loop_lag_max_ms": round(lags[-1] * 1000, 1),
        "loop_lag_p99_ms": round(lags[int(len(lags) * 0.99)] * 1000, 1),
        f"cpu_s_in_{AFTER:g}s_after": round(burnt, 2),
        "work_stopped_after_s": round(gone, 2),
    }


def run(ways: Sequence[str] = ("process", "thread", "loop")) -> list[dict[str, Any]]:
    """The figures of each way (each in a fresh event loop)."""
    return [asyncio.run(_measure(way, hostile())) for way in ways]


if __name__ == "__main__":
    for row in run(sys.argv[1:] or ("process", "thread", "loop")):
        print(json.dumps(row))  # noqa: T201
