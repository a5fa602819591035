"""The feeder: starts the claimed jobs a part at a time, so that a rate-limited job
takes its send slot shortly before it can be sent, not when it was claimed.

A batch of slots taken at once would mostly pass their grace waiting for a sending
slot, and those jobs would be handed back (their slots wasted) and claimed again. A
part is as many as are sent at once (the concurrency; fewer while sends start late
after their slots, :meth:`Feeder.record_lateness`), and it is started once no more
than a part of the deliveries before it is left waiting for a sending slot: their
answers tend to come back together, and with a part waiting when a wave of answers
comes in, the next wave leaves at once while the next part takes its slots.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from datetime import datetime

from core.dispatcher.config import DispatcherConfig
from core.preferences import RANK, URGENT
from core.store import ClaimedJob

#: The rank started at once, not a part at a time (core.preferences).
URGENT_RANK = RANK[URGENT]

#: Sends with a slot looked at before the part is resized (:meth:`Feeder.record_lateness`),
#: the smallest part, and how the part shrinks and grows.
PART_WINDOW, PART_LEAST, PART_SHRINK, PART_GROW = 32, 8, 0.7, 8

#: Takes the send slots of these claimed jobs and starts sending them; True when some
#: took a slot (or were handed back for lack of one).
Start = Callable[[list[ClaimedJob], datetime], Awaitable[bool]]


class Feeder:
    """The one feeder of a dispatcher and the deliveries it paces.

    ``start`` takes the send slots of a part and starts it; ``tasks`` is the
    dispatcher's set of running deliveries (the feeder's own task
    joins it while it runs); the dispatcher counts in :attr:`sending` those holding a
    sending slot, and calls :meth:`notify` when that count or the set shrinks."""

    def __init__(
        self,
        start: Start,
        now: Callable[[], datetime],
        tasks: set[asyncio.Task[None]],
        config: DispatcherConfig,
    ) -> None:
        self._start = start
        self._now = now
        self._tasks = tasks
        concurrency = self._concurrency = config.concurrency
        self._grace = config.slot_grace
        #: Deliveries holding a sending slot: the others started are waiting for one
        #: (or for their due time).
        self.sending = 0
        #: How many deliveries are started at a time, and how few must be left waiting
        #: before more are: the concurrency, less while sends start late after their slots.
        self.part = float(concurrency)
        self._late_seen = 0
        self._late_most = 0.0
        #: Claimed jobs not yet started, by rank, then due time (and claim order).
        self._backlog: list[tuple[int, datetime, int, ClaimedJob]] = []
        self._order = itertools.count()
        #: The feeder's task while it has jobs to start.
        self._task: asyncio.Task[None] | None = None
        #: Set when few started deliveries are left waiting: the feeder starts more.
        self._room: asyncio.Event | None = None
        #: Set while the feeder takes send slots (the flusher lets it go first: both are
        #: write transactions, one at a time, and a reservation is what sends wait for);
        #: set to done when it has them.
        self.reserving: asyncio.Event | None = None
        self._stopping = False

    @property
    def running(self) -> bool:
        """Whether the feeder has jobs it is yet to start."""
        return self._task is not None

    def waiting(self) -> int:
        """Deliveries started and not yet sending (waiting for a slot or their time)."""
        return len(self._tasks) - (self._task is not None) - self.sending

    def notify(self) -> None:
        """Wake the feeder when no more than a part is left waiting."""
        if self._room is not None and self.waiting() <= self.part:
            self._room.set()

    async def take(self, jobs: list[ClaimedJob], now: datetime) -> None:
        """Start sending jobs just claimed: the first part at once when the feeder is
        idle and no more than a part is waiting, the rest by the feeder, in order of rank
        and due time with what it has yet to start (one feeder for every claim: a
        feeder per claim put several parts at once in the queue for sending slots).
        Urgent jobs start at once, whatever waits: behind a part of bulk jobs waiting
        for their slots they would wait for those slots to pass."""
        rest, part = jobs, int(self.part)
        urgent = [job for job in jobs if job.priority <= URGENT_RANK]
        if urgent and (self._task is not None or self.waiting() > part):
            rest = [job for job in jobs if job.priority > URGENT_RANK]
            await self._start(urgent, now)
        elif self._task is None and self.waiting() <= part:
            rest = jobs[part:]
            await self._start(jobs[:part], now)
        for job in rest:
            heapq.heappush(self._backlog, (job.priority, job.due_at, next(self._order), job))
        if self._backlog and self._task is None:
            self._task = asyncio.create_task(self._feed())
            self._tasks.add(self._task)

    def record_lateness(self, late: float) -> None:
        """A job with a slot took a sending slot ``late`` seconds after its slot
        (negative: early, it waits for the slot without it). Every ``PART_WINDOW`` of
        them, the part shrinks when the latest came near the slot grace (more waited
        for a sending slot than the sends can carry within it: on a slower machine,
        part after part missed its slots and took fresh ones), and grows back, up to
        the concurrency, when all came well within it. An early one counts as well
        within it (nothing queued before it)."""
        self._late_most = max(self._late_most, late)
        self._late_seen += 1
        if self._late_seen < PART_WINDOW:
            return
        if self._late_most > 0.6 * self._grace:
            self.part = max(min(PART_LEAST, self._concurrency), self.part * PART_SHRINK)
        elif self._late_most < 0.3 * self._grace:
            self.part = min(float(self._concurrency), self.part + PART_GROW)
        self._late_seen, self._late_most = 0, 0.0

    def stop(self) -> None:
        """Start nothing more (what is left is handed back with the jobs in flight)."""
        self._stopping = True
        if self._room is not None:
            self._room.set()

    async def _feed(self) -> None:
        """Start the backlog a part at a time, each part once no more than a part is
        left waiting (after a part that took no slot, the next goes at once)."""
        backlog = self._backlog
        took_slots = True  # the part before took send slots: wait for room first
        try:
            while backlog:
                part = await self._room_for_part() if took_slots else int(self.part)
                if self._stopping:
                    backlog.clear()  # handed back with the others in flight
                    return
                jobs = [heapq.heappop(backlog)[3] for _ in range(min(part, len(backlog)))]
                reserving = self.reserving = asyncio.Event()
                try:
                    took_slots = await self._start(jobs, self._now())
                finally:
                    if self.reserving is reserving:
                        self.reserving = None
                    reserving.set()
        finally:
            self._task = None
            self._tasks.discard(asyncio.current_task())

    async def _room_for_part(self) -> int:
        """Wait until no more than a part is left waiting (or the feeder stops); the
        part's size then."""
        part = int(self.part)
        while self.waiting() > part and not self._stopping:
            if self._room is None:
                self._room = asyncio.Event()
            self._room.clear()
            await self._room.wait()
            part = int(self.part)
        return part
