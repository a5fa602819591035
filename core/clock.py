"""Time sources. Nothing in ``core`` reads the wall clock directly: it is given a clock."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Something that tells the current time (aware UTC) and can wait."""

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """Wait at least ``seconds``. uvloop's timers count whole milliseconds and fire
        up to a millisecond early (a quarter of short sleeps, measured): what is left
        is waited for again, so no message leaves before its time or its send slot."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        end = time.monotonic() + seconds
        await asyncio.sleep(seconds)
        while (left := end - time.monotonic()) > 0:  # noqa: ASYNC110 - a deadline, not an event
            await asyncio.sleep(left)


class ManualClock:
    """A clock tests move by hand; ``sleep`` moves it instead of waiting.

    Sleepers wake in the order of the moments they asked for, each moving the clock
    to its own moment (unless it is past it already): tasks waiting at the same time,
    like deliveries each waiting for their send slot, see the time each asked for,
    not the sum of everyone's waits."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._waking = False

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()
        at = self._now + timedelta(seconds=seconds)
        heapq.heappush(self._sleepers, (at, next(self._order), wake))
        if not self._waking:
            # after the tasks already running have had their turn (and perhaps gone to
            # sleep too): then the earliest moment first
            self._waking = True
            loop.call_soon(self._wake_next, loop)
        await wake

    def _wake_next(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wake the earliest sleeper; the next one only after it has run, so one that
        wakes at 12:00:00.2 sees that time and not a later sleeper's."""
        while self._sleepers:
            at, _, wake = heapq.heappop(self._sleepers)
            if wake.done():  # cancelled while asleep
                continue
            self._now = max(self._now, at)
            wake.set_result(None)
            loop.call_soon(self._wake_next, loop)
            return
        self._waking = False

    def set(self, when: datetime) -> None:
        self._now = when.astimezone(UTC)

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        self._now += step
        return self._now
