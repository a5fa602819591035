"""The shared rate slots and provider pauses of one dispatcher.

A rate-limited destination's sends take slots from its bucket, a row every dispatcher
shares (``DispatchStore.reserve_slots``): when each claimed job may be sent. A job
that would wait longer than ``max_rate_wait`` is handed back, due when its bucket
allows, so no dispatcher holds jobs another could send sooner. A send that missed its
slot takes a fresh one; a provider's Retry-After pauses the destination here at once
and, through the bucket, for every other dispatcher.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from core.channels import parse_destination
from core.channels.base import Channel
from core.clock import Clock
from core.destinations import Destination
from core.dispatcher.config import DispatcherConfig
from core.dispatcher.verdicts import wait_for_limit
from core.errors import HeraldError
from core.preferences import RANK, URGENT
from core.ratelimit import Pacer, Pauses, RateLimit
from core.store import ClaimedJob, DispatchStore, HandBack

log = logging.getLogger("core.dispatcher")

#: The rank whose jobs pass the slots a bucket handed out already (core.preferences).
URGENT_RANK = RANK[URGENT]


def _rank(job: ClaimedJob) -> int:
    return job.priority


#: A job that missed its slot: its destination, its limit and where its fresh slot
#: (None: none) is answered.
_Asker = tuple[str, RateLimit, asyncio.Future[datetime | None]]


class ParsedDestinations:
    """Parsed destinations (and their canonical text, the key of their rate slots) by
    URI: the hot path parses each distinct one once."""

    __slots__ = ("_parsed",)

    def __init__(self) -> None:
        self._parsed: dict[str, tuple[Destination, str]] = {}

    def parsed(self, job: ClaimedJob) -> tuple[Destination, str]:
        """The job's destination and its canonical text; HeraldError if it cannot be
        read."""
        parsed = self._parsed.get(job.destination)
        if parsed is None:
            destination = parse_destination(job.destination)
            if len(self._parsed) >= 10_000:
                self._parsed.clear()
            parsed = self._parsed[job.destination] = (destination, str(destination))
        return parsed


class RateSlots:
    """Send slots, this process's pace and the providers' pauses, by destination.

    ``parsed`` reads a job's destination and its canonical text (HeraldError when it
    cannot be read); ``channels`` give each kind's default limit."""

    def __init__(
        self,
        store: DispatchStore,
        channels: Mapping[str, Channel],
        config: DispatcherConfig,
        clock: Clock,
        parsed: Callable[[ClaimedJob], tuple[Destination, str]],
    ) -> None:
        self._store = store
        self._channels = channels
        self._config = config
        self._clock = clock
        self._parsed = parsed
        #: Destinations a provider asked to leave alone for a while.
        self.pauses = Pauses()
        #: This process's own pace per destination (the loop takes from it per send).
        self.pacer = Pacer()
        #: Each destination's limit, by canonical destination.
        self._limits: dict[str, RateLimit] = {}
        #: Jobs that missed their slot, waiting for the next fresh reservation between
        #: them, and the task making those reservations (:meth:`fresh_slot`).
        self._askers: list[_Asker] = []
        self.reserving_fresh: asyncio.Task[None] | None = None
        #: Provider pauses being written to the shared buckets.
        self.sharing: set[asyncio.Task[None]] = set()

    def limit(self, key: str, channel: Channel) -> RateLimit:
        """The limit of the destination ``key`` (configured, else its channel's)."""
        limit = self._limits.get(key)
        if limit is None:
            if len(self._limits) >= 10_000:
                self._limits.clear()
            limit = self._config.rate_limits.for_destination(key, channel.rate_limit)
            self._limits[key] = limit
        return limit

    async def reserve(
        self, jobs: list[ClaimedJob], now: datetime
    ) -> tuple[dict[int, datetime], dict[int, HandBack]]:
        """Send slots for the rate-limited ones among jobs just claimed: when each may
        be sent, and the jobs that would wait longer than ``max_rate_wait``, handed
        back due when their bucket allows. A destination's jobs take its slots in order
        of rank, and urgent ones take theirs ahead of the slots its bucket handed out
        already (``DispatchStore.reserve_slots``)."""
        by_key, limits = self._by_destination(jobs)
        if not by_key:
            return {}, {}
        slots: dict[int, datetime] = {}
        later: dict[int, HandBack] = {}
        urgent: dict[str, tuple[int, datetime | None]] = {}
        for key, group in by_key.items():
            group.sort(key=_rank)
            first = [job for job in group if job.priority <= URGENT_RANK]
            if first:
                urgent[key] = (len(first), min(job.due_at for job in first))
        wanted = {key: (len(group), limits[key]) for key, group in by_key.items()}
        # claimed ahead of their time (prefetch), jobs are sent when due: a slot before
        # then would be past its grace by the time they go
        due = {key: min(job.due_at for job in group) for key, group in by_key.items()}
        try:
            granted = await self._store.reserve_slots(
                wanted,
                now=now,
                window=self._config.max_rate_wait,
                not_before=due,
                urgent=urgent,
            )
        except Exception:  # noqa: BLE001 - the jobs are handed back, not lost
            log.exception("could not take rate-limit slots; handing the jobs back")
            retry = now + timedelta(seconds=1)
            for group in by_key.values():
                for job in group:
                    later[job.id] = wait_for_limit(job, retry, now, "")
            return slots, later
        grace = timedelta(seconds=self._config.slot_grace)
        for key, group in by_key.items():
            taken = granted[key]
            kind = key.partition(":")[0]
            for job, at in zip(group, taken.times, strict=False):
                slots[job.id] = at
            for at in taken.times[: taken.ahead]:  # this process's pace lets them pass
                self.pacer.let_pass(key, at + grace)
            for job in group[len(taken.times) :]:
                later[job.id] = wait_for_limit(job, taken.next_free, now, kind)
        return slots, later

    def _by_destination(
        self, jobs: list[ClaimedJob]
    ) -> tuple[dict[str, list[ClaimedJob]], dict[str, RateLimit]]:
        """The rate-limited jobs by canonical destination, and each one's limit (a job
        whose destination cannot be read, or has no channel, is said when tried)."""
        by_key: dict[str, list[ClaimedJob]] = {}
        limits: dict[str, RateLimit] = {}
        for job in jobs:
            try:
                destination, key = self._parsed(job)
            except HeraldError:
                continue
            channel = self._channels.get(destination.kind)
            if channel is None:
                continue
            limit = self.limit(key, channel)
            if limit.unlimited:
                continue
            by_key.setdefault(key, []).append(job)
            limits[key] = limit
        return by_key, limits

    async def fresh_slot(self, key: str, limit: RateLimit) -> datetime | None:
        """A new send slot from ``key``'s shared bucket for a job that missed its own
        (None: none within ``max_rate_wait``, or the store failed). One reservation (one
        transaction) is under way at a time, for every job that asked before it began,
        for any destination; those who ask meanwhile share the next: a reservation per
        asker would make a dispatcher that fell behind its slots fall further behind."""
        answer: asyncio.Future[datetime | None] = asyncio.get_running_loop().create_future()
        self._askers.append((key, limit, answer))
        if self.reserving_fresh is None or self.reserving_fresh.done():
            self.reserving_fresh = asyncio.create_task(
                self._reserve_while_asked(), name="herald-reslot"
            )
        return await answer

    async def _reserve_while_asked(self) -> None:
        """Reserve fresh slots for the jobs waiting for one (see :meth:`fresh_slot`)
        until none is left waiting; each is answered, also when this is cancelled."""
        batch: list[_Asker] = []
        try:
            while self._askers:
                await asyncio.sleep(0)  # those missing their slots in the same moment join
                # an asker cancelled meanwhile (a lost lease) needs no slot
                batch = [asked for asked in self._askers if not asked[2].done()]
                self._askers = []
                if batch:
                    await self._reserve_fresh(batch)
                batch = []
        finally:
            # cancelled (a shutdown) or failed: no one waits for good; those not
            # answered are handed back
            for _, _, future in batch + self._askers:
                if not future.done():
                    future.set_result(None)
            self._askers = []

    async def _reserve_fresh(self, batch: list[_Asker]) -> None:
        """One reservation for every asker of ``batch``, each answered in order."""
        counts = Counter(k for k, _, _ in batch)
        limits = {k: lim for k, lim, _ in batch}
        granted: dict[str, list[datetime]] = {}
        try:
            slots = await self._store.reserve_slots(
                {k: (n, limits[k]) for k, n in counts.items()},
                now=self._clock.now(),
                window=self._config.max_rate_wait,
            )
            granted = {k: list(v.times) for k, v in slots.items()}
        except Exception:  # noqa: BLE001 - the jobs are handed back, not lost
            log.exception("could not take fresh rate-limit slots; handing the jobs back")
        for k, _, future in batch:
            times = granted.get(k)
            if not future.done():
                future.set_result(times.pop(0) if times else None)

    def pause(self, job_id: int, key: str, until: datetime) -> None:
        """The provider asked for no sends to ``key`` before ``until``: this process
        waits at once, and the shared bucket makes every other dispatcher wait too."""
        news = self.pauses.pause(key, until)
        limit = self._limits.get(key)
        if not news or limit is None or limit.unlimited:
            return
        task = asyncio.create_task(self._share_pause(job_id, key, until, limit))
        self.sharing.add(task)
        task.add_done_callback(self.sharing.discard)

    async def _share_pause(self, job_id: int, key: str, until: datetime, limit: RateLimit) -> None:
        try:
            await self._store.pause_bucket(key, until, limit)
        except HeraldError:
            # this process still waits; others learn it from the provider themselves
            log.exception("could not share a provider's pause", extra={"job_id": job_id})

    async def stop_reserving(self) -> None:
        """No delivery is left to take a fresh slot: stop the reservation under way (it
        may wait for a lock for long); its askers are answered None."""
        if self.reserving_fresh is not None:
            self.reserving_fresh.cancel()
            await asyncio.gather(self.reserving_fresh, return_exceptions=True)

    async def pauses_shared(self) -> None:
        """Wait until every provider pause under way is written to its bucket."""
        await asyncio.gather(*self.sharing, return_exceptions=True)
