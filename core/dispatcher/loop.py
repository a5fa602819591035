"""The dispatcher: delivers every due job, retries what fails, parks what keeps failing.

APScheduler (3.x) is only the clock: a date job wakes the loop at the earliest due
time, an interval job sweeps (reclaims expired leases, heartbeats) and a cron job does
housekeeping. The database is the queue and the source of truth.

One loop claims due jobs in batches (up to ``concurrency * 2`` in flight), each job is
sent by its channel under a global concurrency limit and a per-destination token
bucket, and a flusher records finished jobs in batches. A lease (renewed, with the
worker's heartbeat, while sending) guards every claimed job, and a job is sent only
while its lease still holds with a margin (:mod:`core.leases`): a dispatcher that
stalled past it drops the job. A job whose worker died is reclaimed, at start-up and
by every sweep, and sent again with the same idempotency key.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import logging
import os
import random
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from core import calendars, limits, templates, timeexpr
from core.actors import Surface
from core.calendars import Blackouts
from core.channels import parse_destination
from core.channels.base import Channel, Delivery, DeliveryResult, Outcome
from core.clock import Clock
from core.destinations import Destination
from core.errors import HeraldError
from core.leases import Leases, machine_id, process_gone
from core.metrics import Metrics
from core.models import JobState
from core.ratelimit import LATENESS, ClaimCaps, Pacer, Pauses, RateLimit, RateLimits
from core.scrub import Scrubber
from core.settings import Settings
from core.store import (
    AttemptRecord,
    AuditEntry,
    Backlog,
    ClaimedJob,
    DispatchStore,
    HandBack,
    Settled,
    Verdict,
)

#: One logger for the whole package: operators' logging configuration names it.
log = logging.getLogger("core.dispatcher")

Observer = Callable[[Settled], None]

# Job states as plain strings: ``JobState.X.value`` is an enum attribute lookup, and
# the hot path would do it several times per delivery.
_PENDING, _RETRYING, _DELIVERED, _DEAD, _EXPIRED = (
    JobState.PENDING.value,
    JobState.RETRYING.value,
    JobState.DELIVERED.value,
    JobState.DEAD.value,
    JobState.EXPIRED.value,
)

#: How long the flusher lets more deliveries finish before writing a small batch.
FLUSH_GATHER_SECONDS = 0.002
#: Sends with a slot looked at before the feeder's part is resized (:meth:`Dispatcher._kept`),
#: the smallest part, and how the part shrinks and grows.
PART_WINDOW, PART_LEAST, PART_SHRINK, PART_GROW = 32, 8, 0.7, 8


@dataclass(frozen=True)
class DispatcherConfig:
    concurrency: int = 64
    batch_size: int = 2000
    lease_seconds: float = 60.0
    sweep_seconds: float = 5.0
    #: Another dispatcher that has not heartbeated for this many sweeps is dead: its
    #: jobs are handed back at once, whatever their leases say.
    dead_after_sweeps: int = 3
    max_attempts: int = 8
    backoff_base: float = 5.0
    backoff_cap: float = 3600.0
    max_lateness: float = 3600.0
    shutdown_timeout: float = 30.0
    retention_days: float = 30.0
    dead_letter_days: float = 90.0
    dead_letter_max: int = 100_000
    #: A job that would wait longer than this for its destination's rate limit is
    #: handed back (due when the limit allows) as soon as it is claimed.
    max_rate_wait: float = 10.0
    #: A rate-limited destination never has more jobs claimed, by every dispatcher
    #: together, than it sends in this many seconds at its pace (core.ratelimit.
    #: claim_cap: at most rate × horizon). A claim puts off the rest, due again as
    #: their slots come near. (The settings set max_rate_wait to the same.)
    claim_horizon: float = 10.0
    #: A rate-limited send that could not start within this many seconds of its slot
    #: (a stalled loop, a busy machine) takes a fresh slot rather than crowd the next
    #: ones. Slots leave room for this lateness (core.ratelimit.spacing), so no second
    #: sees more than the limit; a larger grace than ratelimit.LATENESS would void that.
    slot_grace: float = LATENESS
    #: Limits by destination prefix; others keep their channel's default.
    rate_limits: RateLimits = RateLimits()
    #: In service mode, claim jobs this many seconds before they fall due and send
    #: each at its exact time: the claim's round trip is then not part of lateness.
    #: Longer when claiming a full batch takes longer here (:meth:`Dispatcher.prefetch`).
    prefetch_seconds: float = 0.05
    #: Whether messages into shared channels say who scheduled them, and per tenant
    #: over it (Settings ``scheduled_by``; off here unless the settings say so).
    scheduled_by: bool = False
    tenant_scheduled_by: Mapping[str, bool] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, s: Settings) -> DispatcherConfig:
        return cls(
            concurrency=s.concurrency,
            batch_size=s.batch_size,
            lease_seconds=s.lease_seconds,
            sweep_seconds=s.sweep_seconds,
            dead_after_sweeps=s.dead_after_sweeps,
            max_attempts=s.max_attempts,
            backoff_base=s.backoff_base,
            backoff_cap=s.backoff_cap,
            max_lateness=s.max_lateness,
            shutdown_timeout=s.shutdown_timeout,
            retention_days=s.retention_days,
            dead_letter_days=s.dead_letter_days,
            dead_letter_max=s.dead_letter_max,
            rate_limits=RateLimits.parse(s.rate_limits),
            max_rate_wait=s.claim_horizon,
            claim_horizon=s.claim_horizon,
            scheduled_by=s.scheduled_by,
            tenant_scheduled_by=dict(s.tenant_scheduled_by),
        )

    def credits(self, job: ClaimedJob, destination: Destination) -> str | None:
        """The name to show under ``job``'s message ("scheduled by NAME"), or None: only
        into a shared channel (a Slack or Discord channel, not a direct message, a
        webhook or an email), when the owner's tenant wants it. The owner's name as
        Herald knows it, else their member id on their platform (``U0123ABC``): never
        nobody."""
        if not shared_channel(destination, job.tenant):
            return None
        if not self.tenant_scheduled_by.get(job.tenant, self.scheduled_by):
            return None
        return job.owner_name.strip() or job.owner.partition(":")[2] or job.owner or None

    @property
    def max_inflight(self) -> int:
        return max(self.concurrency * 2, self.batch_size * 2)

    @property
    def dead_after(self) -> float:
        """Seconds without a heartbeat after which a dispatcher counts as dead."""
        return self.sweep_seconds * self.dead_after_sweeps

    @property
    def keep_alive_seconds(self) -> float:
        """How often the heartbeat is written and the leases renewed: three times in
        the shorter of a lease and the silence that makes a dispatcher dead."""
        return min(self.lease_seconds, self.dead_after) / 3

    @property
    def lease_margin(self) -> float:
        """A job is sent only while its lease (and this dispatcher's life) last this
        much longer: time for the request to leave, and for clocks to disagree."""
        return min(self.lease_seconds, self.dead_after) / 4


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(n-1))]."""
    ceiling = min(cap, base * (2 ** max(0, attempt - 1)))
    return rng.uniform(0, ceiling)


@dataclass
class DrainSummary:
    """What a drain run did, by final state, and what it left waiting and why."""

    outcomes: Counter[str] = field(default_factory=Counter)
    waiting: int = 0
    #: Why jobs were left: one sentence per reason (empty when nothing was left).
    left: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        keys = ("delivered", "retrying", "dead", "expired")
        return {**{k: self.outcomes.get(k, 0) for k in keys}, "waiting": self.waiting}


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{random.randrange(16**6):06x}"


class Dispatcher:
    """Delivers due jobs from ``store`` through ``channels`` (keyed by destination kind).

    The store is anything with the methods of :class:`DispatchStore` (the whole
    :class:`~core.store.Store` in production)."""

    def __init__(
        self,
        store: DispatchStore,
        channels: Mapping[str, Channel],
        *,
        clock: Clock,
        config: DispatcherConfig | None = None,
        worker_id: str | None = None,
        rng: random.Random | None = None,
        observer: Observer | None = None,
        metrics: Metrics | None = None,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.store = store
        self.channels = dict(channels)
        self.clock = clock
        self.config = config or DispatcherConfig()
        self.worker_id = worker_id or default_worker_id()
        self.rng = rng or random.Random()
        self.observer = observer
        self.metrics = metrics or Metrics()
        #: Every error text is scrubbed before it is recorded, logged or observed: a
        #: provider may echo a token or a password (``Scrubber.from_settings``).
        self.scrub = scrubber or Scrubber()
        #: ``time.monotonic()`` of the loop's last tick (readiness checks it).
        self.last_tick = time.monotonic()
        self.outcomes: Counter[str] = Counter()
        self._pauses = Pauses()
        self._pacer = Pacer()
        #: Jobs that missed their slot, waiting for the next fresh reservation between
        #: them, and the task making those reservations (:meth:`_fresh_slot`).
        self._reslots: list[tuple[str, RateLimit, asyncio.Future[datetime | None]]] = []
        self._reslotting: asyncio.Task[None] | None = None
        #: Provider pauses being written to the shared buckets.
        self._sharing: set[asyncio.Task[None]] = set()
        #: Each destination's limit (and its kind), by canonical destination.
        self._limits: dict[str, RateLimit] = {}
        #: What a claim may take of each rate-limited destination (every claim passes
        #: them: the store counts the jobs every dispatcher holds).
        self._caps = ClaimCaps.of(
            self.config.rate_limits,
            {kind: channel.rate_limit for kind, channel in self.channels.items()},
            self.config.claim_horizon,
        )
        self._inflight: dict[int, ClaimedJob] = {}
        self._leases = Leases(self.config.lease_margin)
        self._keeping_alive: asyncio.Task[None] | None = None
        self._host, self._pid, self._machine = socket.gethostname(), os.getpid(), machine_id()
        #: Deliveries running (one task per claimed job), and the feeder starting them.
        self._tasks: set[asyncio.Task[None]] = set()
        #: Deliveries holding a sending slot: the others started (``_tasks`` less the
        #: feeder) are waiting for one (or for their due time).
        self._sending = 0
        #: Set when few started deliveries are left waiting: the feeder starts more.
        self._room: asyncio.Event | None = None
        #: How many deliveries the feeder starts at a time, and how few must be left
        #: waiting before it starts more: the concurrency, less while sends start late
        #: after their slots (:meth:`_kept`).
        self._part = float(self.config.concurrency)
        self._late_seen = 0
        self._late_most = 0.0
        #: Claimed jobs the feeder has yet to start, by due time (and claim order).
        self._backlog: list[tuple[datetime, int, ClaimedJob]] = []
        self._order = itertools.count()
        #: The one feeder starting them, while there are any.
        self._feeder: asyncio.Task[None] | None = None
        #: Set while a feeder takes send slots (the flusher lets it go first: both
        #: are write transactions, one at a time, and a reservation is what sends wait
        #: for); set to done when it has them.
        self._reserving: asyncio.Event | None = None
        #: Parsed destinations (and their canonical text) by URI: the hot path parses
        #: each distinct one once.
        self._destinations: dict[str, tuple[Destination, str]] = {}
        self._done: list[Settled] = []
        self._sem: asyncio.Semaphore | None = None
        self._kick: asyncio.Event | None = None
        self._flushed: asyncio.Event | None = None
        self._stopping = False
        self._flusher: asyncio.Task[None] | None = None
        #: Seconds a claim took per job claimed (the slowest recent claim of a tenth of
        #: a batch or more, decaying), for :meth:`prefetch`.
        self._claim_per_job = 0.0
        #: Whether due jobs may be waiting that the last claim left for lack of room:
        #: False once a claim found fewer than it asked for (what falls due later has
        #: its wake planned, and a new or moved job calls :meth:`wake`). A flush then
        #: asks for a claim only when this holds or it put jobs back in the queue.
        self._saturated = True

    # --- wiring -----------------------------------------------------------------------

    def _events(self) -> tuple[asyncio.Semaphore, asyncio.Event, asyncio.Event]:
        if self._sem is None or self._kick is None or self._flushed is None:
            self._sem = asyncio.Semaphore(self.config.concurrency)
            self._kick = asyncio.Event()
            self._flushed = asyncio.Event()
        return self._sem, self._kick, self._flushed

    def wake(self, at: datetime | None = None) -> None:
        """A job was created or moved (due at ``at``): look at the queue again now.
        Safe to call from the event loop at any time."""
        _, kick, _ = self._events()
        kick.set()

    # --- claiming and sending ---------------------------------------------------------

    async def pump(self, lookahead: float = 0.0) -> int:
        """Claim jobs due (within ``lookahead`` seconds) up to the free capacity and
        start sending them, each no earlier than its due time."""
        claimed_total = 0
        threshold = min(self.config.batch_size, self.config.max_inflight // 2)
        while not self._stopping:
            room = self.config.max_inflight - len(self._inflight)
            if room <= 0 or (room < threshold and self._inflight):
                self._saturated = True
                break  # wait for a bigger gap: fewer, larger claims
            want = full = min(room, self.config.batch_size)
            if lookahead and not self._inflight:
                # idle, and perhaps the start of a burst: claim first what can be claimed
                # within the prefetch (a claim of 2,000 outlasts it, and the first would
                # go late); a full claim follows at once, ahead, while these wait
                want = min(want, self._first_claim())
            now = self.clock.now()
            lease_until = now + timedelta(seconds=self.config.lease_seconds)
            started = time.monotonic()
            jobs = await self.store.claim_due(
                now=now + timedelta(seconds=lookahead),
                worker=self.worker_id,
                lease_until=lease_until,
                limit=want,
                caps=self._caps or None,
            )
            if len(jobs) * 10 >= self.config.batch_size:
                took = (time.monotonic() - started) / len(jobs)
                self._claim_per_job = max(took, self._claim_per_job * 0.9)
            self._leases.claimed((job.id for job in jobs), lease_until)
            for job in jobs:
                self._inflight[job.id] = job
            if jobs:
                await self._take(jobs, now)
            claimed_total += len(jobs)
            if jobs:
                self.metrics.claims.observe(len(jobs))
            if len(jobs) < want:
                self._saturated = False
                break
            if jobs[-1].due_at > now and want == full:
                self._saturated = True
                # claimed ahead of their time: keep the loop free so they start on the
                # dot; more are claimed as these finish (after a small first claim, a
                # full one still goes ahead: its reply comes while the first are sent)
                break

        return claimed_total

    def prefetch(self) -> float:
        """How many seconds before jobs fall due the service claims them: the configured
        prefetch, or one and a half times what a full batch took to claim here lately
        (PostgreSQL on a busy machine: 100-300 ms for 2,000 jobs), at most a second."""
        expected = 1.5 * self._claim_per_job * self.config.batch_size
        return min(max(self.config.prefetch_seconds, expected), 1.0)

    def _first_claim(self) -> int:
        """How many jobs an idle service claims first: what it can send at once (twice
        the concurrency), or more where claims are fast enough to claim more within
        the configured prefetch (SQLite: a full batch)."""
        batch = self.config.batch_size
        least = min(batch, 2 * self.config.concurrency)
        if self._claim_per_job <= 0:
            return least
        return max(least, min(batch, int(self.config.prefetch_seconds / self._claim_per_job)))

    def _parsed(self, job: ClaimedJob) -> tuple[Destination, str]:
        """The job's destination and its canonical text (parsed once per distinct one);
        HeraldError if it cannot be read."""
        parsed = self._destinations.get(job.destination)
        if parsed is None:
            destination = parse_destination(job.destination)
            if len(self._destinations) >= 10_000:
                self._destinations.clear()
            parsed = self._destinations[job.destination] = (destination, str(destination))
        return parsed

    def _limit(self, key: str, channel: Channel) -> RateLimit:
        limit = self._limits.get(key)
        if limit is None:
            if len(self._limits) >= 10_000:
                self._limits.clear()
            limit = self.config.rate_limits.for_destination(key, channel.rate_limit)
            self._limits[key] = limit
        return limit

    async def _slots(
        self, jobs: list[ClaimedJob], now: datetime
    ) -> tuple[dict[int, datetime], dict[int, HandBack]]:
        """Send slots for the rate-limited jobs just claimed, from their destinations'
        buckets shared by every dispatcher: when each may be sent, and the jobs that
        would wait longer than ``max_rate_wait``, handed back due when their bucket
        allows (so no dispatcher holds jobs another could send sooner)."""
        by_key: dict[str, list[ClaimedJob]] = {}
        limits: dict[str, RateLimit] = {}
        for job in jobs:
            try:
                destination, key = self._parsed(job)
            except HeraldError:
                continue  # said when it is tried
            channel = self.channels.get(destination.kind)
            if channel is None:
                continue
            limit = self._limit(key, channel)
            if limit.unlimited:
                continue
            by_key.setdefault(key, []).append(job)
            limits[key] = limit
        if not by_key:
            return {}, {}
        slots: dict[int, datetime] = {}
        later: dict[int, HandBack] = {}
        wanted = {key: (len(group), limits[key]) for key, group in by_key.items()}
        # claimed ahead of their time (prefetch), jobs are sent when due: a slot before
        # then would be past its grace by the time they go
        due = {key: min(job.due_at for job in group) for key, group in by_key.items()}
        try:
            granted = await self.store.reserve_slots(
                wanted, now=now, window=self.config.max_rate_wait, not_before=due
            )
        except Exception:  # noqa: BLE001 - the jobs are handed back, not lost
            log.exception("could not take rate-limit slots; handing the jobs back")
            retry = now + timedelta(seconds=1)
            for group in by_key.values():
                for job in group:
                    later[job.id] = self._wait_for_limit(job, retry, now, "")
            return slots, later
        for key, group in by_key.items():
            taken = granted[key]
            kind = key.partition(":")[0]
            for job, at in zip(group, taken.times, strict=False):
                slots[job.id] = at
            for job in group[len(taken.times) :]:
                later[job.id] = self._wait_for_limit(job, taken.next_free, now, kind)
        return slots, later

    async def _take(self, jobs: list[ClaimedJob], now: datetime) -> None:
        """Start sending jobs just claimed: the first part at once when no feeder is
        at work and no more than a part is waiting, the rest through the one feeder,
        in order of due time with what it has yet to start. (A feeder per claim, each
        starting parts as room appeared, put two or three parts at once in the queue
        for sending slots at the start of a burst, and their last jobs missed their
        slots.)"""
        rest, part = jobs, int(self._part)
        if self._feeder is None and self._waiting() <= part:
            rest = jobs[part:]
            await self._start(jobs[:part], now)
        for job in rest:
            heapq.heappush(self._backlog, (job.due_at, next(self._order), job))
        if self._backlog and self._feeder is None:
            self._feeder = asyncio.create_task(self._feed())
            self._tasks.add(self._feeder)

    async def _start(self, jobs: list[ClaimedJob], now: datetime) -> bool:
        """Take the send slots of these claimed jobs and start sending them (those
        that would wait too long for their limit are handed back). True when some
        took a slot."""
        slots, later = await self._slots(jobs, now)
        for job in jobs:
            if job.id in later:
                continue
            # unnamed (a name costs a microsecond); ``_run`` removes it from the set
            self._tasks.add(asyncio.create_task(self._run(job, slots.get(job.id))))
        if later:
            self._hand_back(list(later.values()))
        return bool(slots or later)

    def _notify(self) -> None:
        """Wake the feeder when no more than a part is left waiting (see :meth:`_feed`)."""
        if self._room is not None and self._waiting() <= self._part:
            self._room.set()

    def _kept(self, late: float) -> None:
        """A job with a slot took a sending slot ``late`` seconds after its slot
        (negative: early, it waits for the slot without it). Every ``PART_WINDOW`` of
        them, the feeder's part shrinks when the latest came near the slot grace (more
        waited for a sending slot than the sends can carry within it: on a slower
        machine, part after part missed its slots and took fresh ones), and grows back,
        up to the concurrency, when all came well within it. An early one counts as
        well within it (nothing queued before it): counting only those sent or late
        shrank the parts further and cost 5 % of a webhook burst (12 interleaved
        rounds)."""
        self._late_most = max(self._late_most, late)
        self._late_seen += 1
        if self._late_seen < PART_WINDOW:
            return
        grace = self.config.slot_grace
        if self._late_most > 0.6 * grace:
            self._part = max(min(PART_LEAST, self.config.concurrency), self._part * PART_SHRINK)
        elif self._late_most < 0.3 * grace:
            self._part = min(float(self.config.concurrency), self._part + PART_GROW)
        self._late_seen, self._late_most = 0, 0.0

    def _waiting(self) -> int:
        """Deliveries started and not yet sending (waiting for a slot or their time)."""
        return len(self._tasks) - self._feeding - self._sending

    @property
    def _feeding(self) -> int:
        """Feeders at work (0 or 1; the feeder is also in ``_tasks``)."""
        return 0 if self._feeder is None else 1

    async def _feed(self) -> None:
        """Start the claimed jobs not yet started (``_backlog``) a part at a time, each
        part once no more than a part of the deliveries before it is left waiting for
        a sending slot (one feeder at a time, see :meth:`_take`): a
        rate-limited job's slot is taken shortly before it can be sent, not when it
        was claimed. A batch of slots taken at once would mostly pass their grace
        waiting for a sending slot, and those jobs would be handed back (their slots
        wasted) and claimed again.

        A part is as many as are sent at once (``concurrency``; fewer while sends
        start late after their slots, see :meth:`_kept`), and their answers
        tend to come back together: with a part waiting when a wave of answers comes
        in, the next wave leaves at once while the next part takes its slots. Started
        only once the waiting were nearly all sending (a quarter of a part), parts
        took their slots after every send had left, and a webhook burst sent in
        waves with nothing in flight between them (0.6x the bare client's rate)."""
        backlog = self._backlog
        limited = True
        try:
            while backlog:
                part = int(self._part)
                if limited:
                    while self._waiting() > part and not self._stopping:
                        if self._room is None:
                            self._room = asyncio.Event()
                        self._room.clear()
                        await self._room.wait()
                        part = int(self._part)
                if self._stopping:
                    backlog.clear()  # handed back with the others in flight
                    return
                jobs = [heapq.heappop(backlog)[2] for _ in range(min(part, len(backlog)))]
                reserving = self._reserving = asyncio.Event()
                try:
                    limited = await self._start(jobs, self.clock.now())
                finally:
                    if self._reserving is reserving:
                        self._reserving = None
                    reserving.set()
        finally:
            self._feeder = None
            self._tasks.discard(asyncio.current_task())

    def _wait_for_limit(
        self, job: ClaimedJob, until: datetime, now: datetime, kind: str
    ) -> HandBack:
        wait = (until - now).total_seconds()
        return HandBack(
            job,
            _RETRYING if job.attempts > 1 else _PENDING,
            error=f"Waiting {_duration(wait)} for {kind or 'its'} rate limits.",
            retry_at=until,
        )

    def _hand_back(self, items: list[HandBack]) -> None:
        """Record these (claimed, not tried) with the next flush."""
        self._done.extend(items)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="herald-flush")

    async def _run(self, job: ClaimedJob, slot: datetime | None) -> None:
        try:
            finished = await self._attempt(job, slot)
        finally:
            self._tasks.discard(asyncio.current_task())
            self._notify()
        # append only after the await: the flusher swaps ``_done`` for a new list while
        # deliveries run, and ``self._done.append(await ...)`` would bind the old one
        self._done.append(finished)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="herald-flush")

    async def _flush(self) -> None:
        """Record finished jobs in batches: one transaction for everything finished
        so far, after letting a few more finish when many are still in flight."""
        _, kick, flushed = self._events()
        while self._done:
            if len(self._done) < self.config.batch_size // 2 and len(self._done) < len(
                self._inflight
            ):
                await asyncio.sleep(FLUSH_GATHER_SECONDS)
            while self._reserving is not None:
                # a feeder is taking send slots: sends wait for it, records need not
                # (and one more finished meanwhile joins this batch)
                await self._reserving.wait()
            batch, self._done = self._done, []
            try:
                owned = await self.store.finish(batch, worker=self.worker_id, now=self.clock.now())
            except HeraldError:
                log.exception("could not record outcomes; retrying", extra={"jobs": len(batch)})
                self._done[:0] = batch
                await asyncio.sleep(1.0)
                continue
            requeued = False
            for item in batch:
                self._inflight.pop(item.job.id, None)
                self._leases.forget(item.job.id)
                if item.state != _DELIVERED or item.next_run is not None:
                    requeued = True  # to try again, or a next occurrence: due when?
            if self._saturated or requeued:
                # room for the next claim, which can start while these are counted (with
                # nothing due left unclaimed, a claim would only find nothing, holding
                # the write lock the sends' slot reservations wait for)
                kick.set()
            counted: Counter[str] = Counter()
            for item in batch:
                if item.job.id not in owned:
                    self._lost_lease(item)
                    continue
                counted[item.state] += 1
                self._record(item)
                if self.observer is not None:
                    self.observer(item)
            self.outcomes.update(counted)
            if counted and log.isEnabledFor(logging.INFO):
                log.info(
                    "jobs recorded",
                    extra={
                        "event": "jobs.recorded",
                        "jobs": counted.total(),
                        **counted,
                        "worker": self.worker_id,
                    },
                )
            flushed.set()

    def _lost_lease(self, item: Settled) -> None:
        """The job's lease expired while it was being sent and another try took over;
        this outcome is kept in the delivery log only."""
        log.warning(
            "outcome of a job whose lease was lost",
            extra={
                "event": "job.lease_lost",
                "job_id": item.job.id,
                "schedule_id": item.job.schedule_id,
                "attempt": item.job.attempts,
                "outcome": item.attempt.outcome if item.attempt else None,
                "worker": self.worker_id,
            },
        )

    def _record(self, item: Settled) -> None:
        """Metrics and one structured log event per recorded outcome (never the text):
        a failure (retrying, dead, expired, handed back) at WARNING with every field,
        a delivery at DEBUG. At INFO, :meth:`_flush` logs one line per recorded batch
        with its counts: a line per delivery doubled the CPU a null burst takes."""
        job, attempt = item.job, item.attempt
        kind = job.destination.partition(":")[0]
        m = self.metrics.channel(kind)
        duration_ms = None
        if attempt is not None:
            m.outcome(attempt.outcome).inc()
            took = (attempt.finished_at - attempt.started_at).total_seconds()
            duration_ms = round(took * 1000, 1)
            m.duration.observe(took)
            if job.attempts == 1:
                late = (attempt.started_at - job.due_at).total_seconds()
                m.lateness.observe(max(0.0, late))
            if attempt.status_code == 429:
                m.provider_429.inc()
        if item.state == _RETRYING and attempt is not None:
            m.retries.inc()
        level = logging.DEBUG if item.state == _DELIVERED else logging.WARNING
        if log.isEnabledFor(level):
            log.log(
                level,
                f"job {item.state}",
                extra={
                    "event": f"job.{item.state}",
                    "job_id": job.id,
                    "schedule_id": job.schedule_id,
                    "destination": kind,
                    "attempt": job.attempts,
                    "outcome": attempt.outcome if attempt else None,
                    "status_code": attempt.status_code if attempt else None,
                    "duration_ms": duration_ms,
                    "worker": self.worker_id,
                    "error": item.error,
                },
            )

    async def _attempt(self, job: ClaimedJob, slot: datetime | None) -> Settled:
        """Send one claimed job, no earlier than its due time and its rate-limit
        ``slot``, and say what happened."""
        clock = self.clock
        now = clock.now()
        if job.due_at > now:  # claimed ahead of time (prefetch): wait for the exact moment
            await clock.sleep((job.due_at - now).total_seconds())
            now = clock.now()
        limit = job.max_lateness_s if job.max_lateness_s is not None else self.config.max_lateness
        late = (now - job.due_at).total_seconds()
        if late > limit:
            return Verdict(
                job,
                _EXPIRED,
                error=(
                    f"Not sent: it was {_duration(late)} late, over the {_duration(limit)} "
                    "limit (the dispatcher was probably down)."
                ),
                next_run=self._next_run(job, now),
            )
        if job.attempts > self.config.max_attempts:
            return self._dead(job, None, f"Gave up after {job.attempts - 1} tries.", now)
        try:
            destination, key = self._parsed(job)
        except HeraldError as exc:
            return self._dead(job, None, self.scrub(str(exc)), now)
        channel = self.channels.get(destination.kind)
        if channel is None:
            result = DeliveryResult.retry(
                f"No {destination.kind} channel is configured on this dispatcher."
            )
            return self._outcome(job, result, now, now, destination_key=key)
        wait = (slot - now).total_seconds() if slot is not None else 0.0
        paused = self._pauses.paused_until(key, now) if self._pauses else None
        if paused is not None:
            wait = max(wait, (paused - now).total_seconds())
            if wait > self.config.max_rate_wait:
                return self._wait_for_limit(job, paused, now, destination.kind)
        if wait > 0:
            self.metrics.channel(destination.kind).rate_limit_waits.inc()
            await clock.sleep(wait)
        sem, _, _ = self._events()
        delivery = Delivery(
            job_id=job.id,
            schedule_id=job.schedule_id,
            destination=destination,
            body=_body(job),
            idempotency_key=job.idempotency_key,
            attempt=job.attempts,
            occurrence_at=job.occurrence_at,
            due_at=job.due_at,
            options=job.options,
            scheduled_by=self.config.credits(job, destination),
        )
        pacing = self._limit(key, channel) if slot is not None else None
        while True:
            missed = False
            async with sem:
                self._sending += 1
                self._notify()
                try:
                    if not await self._lease_holds(job):  # may renew: a round trip
                        return self._lapsed(job)
                    started = clock.now()
                    late = (started - slot).total_seconds() if slot is not None else 0.0
                    if slot is not None:
                        self._kept(late)
                    if late > self.config.slot_grace and pacing is not None:
                        # this dispatcher ran late: sent now, it would crowd the sends of
                        # the slots after this one; it takes a fresh slot instead, here
                        # (handed back to the queue, a burst the dispatcher cannot keep
                        # up with would go round the queue at the pace of hand-backs),
                        # without its sending slot meanwhile (held, every sending slot
                        # could wait for the database while no request is in flight)
                        missed = True
                        pace = 0.0
                    elif slot is not None and slot > started:
                        pace = (slot - started).total_seconds()  # waited for below
                    elif pacing is not None:
                        pace = self._pacer.take(key, started, pacing)
                    else:
                        pace = 0.0
                    if not missed and pace <= 0:
                        result = await self._send(channel, delivery)
                        break
                finally:
                    self._sending -= 1
            if missed:
                assert pacing is not None
                fresh = await self._fresh_slot(key, pacing)
                now = clock.now()
                if fresh is None:
                    return self._wait_for_limit(job, now, now, destination.kind)
                slot = fresh
                pace = (slot - now).total_seconds()
            if pace > 0:
                await clock.sleep(pace)  # not holding a sending slot meanwhile
        if result.error is not None:  # failures only: the provider's words, scrubbed
            result = replace(result, error=self.scrub(result.error))
        return self._outcome(
            job, result, started, clock.now(), destination_key=key, body=delivery.body
        )

    async def _fresh_slot(self, key: str, limit: RateLimit) -> datetime | None:
        """A new send slot from ``key``'s shared bucket for a job that missed its own
        (None: none within ``max_rate_wait``, or the store failed). One reservation (one
        transaction) is under way at a time, for every job that asked before it began,
        for any destination; those who ask meanwhile share the next. (A reservation per
        asker made a dispatcher that fell behind its slots fall further behind: 1,800
        reservations for a 2,000-webhook burst, at a fifth of its usual rate.)"""
        answer: asyncio.Future[datetime | None] = asyncio.get_running_loop().create_future()
        self._reslots.append((key, limit, answer))
        if self._reslotting is None or self._reslotting.done():
            self._reslotting = asyncio.create_task(self._reslot(), name="herald-reslot")
        return await answer

    async def _reslot(self) -> None:
        """Reserve fresh slots for the jobs waiting for one (see :meth:`_fresh_slot`)
        until none is left waiting; each is answered, also when this is cancelled."""
        batch: list[tuple[str, RateLimit, asyncio.Future[datetime | None]]] = []
        try:
            while self._reslots:
                await asyncio.sleep(0)  # those missing their slots in the same moment join
                # an asker cancelled meanwhile (a lost lease) needs no slot
                batch = [asked for asked in self._reslots if not asked[2].done()]
                self._reslots = []
                if not batch:
                    continue
                counts = Counter(k for k, _, _ in batch)
                limits = {k: lim for k, lim, _ in batch}
                granted: dict[str, list[datetime]] = {}
                try:
                    slots = await self.store.reserve_slots(
                        {k: (n, limits[k]) for k, n in counts.items()},
                        now=self.clock.now(),
                        window=self.config.max_rate_wait,
                    )
                    granted = {k: list(v.times) for k, v in slots.items()}
                except Exception:  # noqa: BLE001 - the jobs are handed back, not lost
                    log.exception("could not take fresh rate-limit slots; handing the jobs back")
                for k, _, future in batch:
                    times = granted.get(k)
                    if not future.done():
                        future.set_result(times.pop(0) if times else None)
                batch = []
        finally:
            # cancelled (a shutdown) or failed: no one waits for good; those not
            # answered are handed back
            for _, _, future in batch + self._reslots:
                if not future.done():
                    future.set_result(None)
            self._reslots = []

    @staticmethod
    async def _send(channel: Channel, delivery: Delivery) -> DeliveryResult:
        try:
            return await channel.send(delivery)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a channel bug must not lose the job
            kind = delivery.destination.kind
            log.exception("channel raised", extra={"job_id": delivery.job_id, "destination": kind})
            return DeliveryResult.retry(f"Internal error in the {kind} channel.")

    def _outcome(
        self,
        job: ClaimedJob,
        result: DeliveryResult,
        started: datetime,
        finished: datetime,
        *,
        destination_key: str,
        body: str | None = None,
    ) -> Verdict:
        """What to record of a try: its attempt (with ``body``, the text it sent; the
        delivery log shows it) and the job's next state."""
        attempt = AttemptRecord(
            started_at=started,
            finished_at=finished,
            outcome=result.outcome.value,
            status_code=result.status_code,
            error=result.error,
            message_id=result.message_id,
            body=body,
        )
        if result.outcome is Outcome.OK:
            return Verdict(job, _DELIVERED, attempt, next_run=self._next_run(job, finished))
        if result.outcome is Outcome.PERMANENT:
            return self._dead(job, attempt, result.error or "The provider refused it.", finished)
        if result.retry_after is not None:
            self._pause(job, destination_key, finished + timedelta(seconds=result.retry_after))
        rate_limited = result.retry_after is not None and result.status_code == 429
        if job.attempts >= self.config.max_attempts and not rate_limited:
            return self._dead(
                job, attempt, f"Gave up after {job.attempts} tries: {result.error}", finished
            )
        delay = (
            result.retry_after
            if result.retry_after is not None
            else backoff_delay(
                job.attempts, self.config.backoff_base, self.config.backoff_cap, self.rng
            )
        )
        return Verdict(
            job,
            _RETRYING,
            attempt,
            error=result.error,
            retry_at=finished + timedelta(seconds=delay),
            refund_attempt=rate_limited,
        )

    def _pause(self, job: ClaimedJob, key: str, until: datetime) -> None:
        """The provider asked for no sends to ``key`` before ``until``: this process
        waits at once, and the shared bucket makes every other dispatcher wait too."""
        news = self._pauses.pause(key, until)
        limit = self._limits.get(key)
        if not news or limit is None or limit.unlimited:
            return
        task = asyncio.create_task(self._share_pause(job, key, until, limit))
        self._sharing.add(task)
        task.add_done_callback(self._sharing.discard)

    async def _share_pause(
        self, job: ClaimedJob, key: str, until: datetime, limit: RateLimit
    ) -> None:
        try:
            await self.store.pause_bucket(key, until, limit)
        except HeraldError:
            # this process still waits; others learn it from the provider themselves
            log.exception("could not share a provider's pause", extra={"job_id": job.id})

    async def _lease_holds(self, job: ClaimedJob) -> bool:
        """The job may be sent now: its lease and this dispatcher's life both last
        the margin, renewing them first when they are close (one keep-alive for every
        job that finds it so)."""
        if self._leases.sendable(job.id, self.clock.now()):
            return True
        try:
            await self.keep_alive()
        except HeraldError:
            log.exception("could not renew leases before sending")
            return False
        return self._leases.sendable(job.id, self.clock.now())

    def _lapsed(self, job: ClaimedJob) -> HandBack:
        """Not sent: the lease lapsed (this dispatcher stalled, or could not reach the
        database) and another may hold the job now; handed back if it is still ours."""
        self.metrics.leases_lapsed.inc()
        return HandBack(
            job,
            _RETRYING if job.attempts > 1 else _PENDING,
            "Not sent: this dispatcher's lease lapsed before sending; handed back.",
        )

    def _dead(
        self, job: ClaimedJob, attempt: AttemptRecord | None, error: str, now: datetime
    ) -> Verdict:
        return Verdict(job, _DEAD, attempt, error=error, next_run=self._next_run(job, now))

    def _next_run(self, job: ClaimedJob, now: datetime) -> datetime | None:
        """A recurring schedule's next occurrence after this one and after now (no
        burst of stale repeats after downtime)."""
        if job.rrule is None:
            return None
        try:
            after = max(job.occurrence_at, now)
            skip = job.options.get("skip")
            if skip:
                # Occurrences on a skip calendar's dates: their ``skipped`` jobs were
                # recorded when the calendar was attached or refreshed (core.cases.calendars).
                return calendars.next_allowed(job.rrule, after, Blackouts.from_json(skip))[0]
            return timeexpr.next_occurrence(job.rrule, after)
        except HeraldError:
            log.exception("stored rule cannot be read", extra={"schedule_id": job.schedule_id})
            return None

    # --- leases -----------------------------------------------------------------------

    async def sweep(self) -> int:
        """Reclaim jobs whose worker died or whose lease expired; refresh the gauges
        read from the database."""
        now = self.clock.now()
        self.tick()
        stats = await self.store.queue_stats(now=now)
        self.metrics.set_job_counts(stats.counts)
        self.metrics.dead_awaiting.set(stats.dead_awaiting)
        self.metrics.overdue_seconds.set(stats.oldest_overdue_seconds)
        return await self.reclaim()

    async def reclaim(self) -> int:
        """Hand back the jobs of dispatchers that are provably dead (their process no
        longer runs on this machine, or no heartbeat for ``dead_after`` seconds), and
        jobs whose lease expired. Returns how many."""
        now = self.clock.now()
        gone = []
        if self._machine is not None:
            gone = [
                w.id
                for w in await self.store.running_workers()
                if w.machine == self._machine and w.id != self.worker_id and process_gone(w.pid)
            ]
        dead, handed_back = await self.store.reclaim_dead_workers(
            now=now,
            silent_since=now - timedelta(seconds=self.config.dead_after),
            gone=gone,
            me=self.worker_id,
        )
        if dead:
            log.warning(
                "dispatchers found dead; their jobs were handed back",
                extra={"workers": dead, "jobs": handed_back},
            )
        expired = await self.store.reclaim_expired(now=now)
        if expired:
            log.warning("reclaimed jobs with expired leases", extra={"jobs": expired})
        if handed_back or expired:
            self.wake()
        return handed_back + expired

    def tick(self) -> None:
        """The loop is alive."""
        self.last_tick = time.monotonic()
        self.metrics.tick()

    async def keep_alive(self) -> None:
        """Write this dispatcher's heartbeat and renew its leases, in one transaction;
        callers at the same moment share one write."""
        task = self._keeping_alive
        if task is None or task.done():
            task = self._keeping_alive = asyncio.create_task(self._keep_alive_once())
        await asyncio.shield(task)

    async def _keep_alive_once(self) -> None:
        now = self.clock.now()
        until = now + timedelta(seconds=self.config.lease_seconds)
        asked = list(self._inflight)
        kept = await self.store.keep_alive(
            self.worker_id,
            host=self._host,
            pid=self._pid,
            machine=self._machine,
            now=now,
            job_ids=asked,
            until=until,
        )
        if kept.revived:
            log.warning(
                "this dispatcher had been declared dead; jobs another took are not sent",
                extra={"worker": self.worker_id, "jobs": len(asked) - len(kept.held)},
            )
        alive_until = now + timedelta(seconds=self.config.dead_after)
        self._leases.renewed(asked, kept.held, until, alive_until)

    async def _keep_alive_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.keep_alive_seconds)
            try:
                await self.keep_alive()
            except HeraldError:
                log.exception("could not renew leases")

    # --- housekeeping -----------------------------------------------------------------

    async def housekeeping(self) -> dict[str, int]:
        """Prune old attempts and finished jobs; cap the dead letters by age and count,
        with a warning (never silently)."""
        now = self.clock.now()
        await self.store.optimize()
        retention = timedelta(days=self.config.retention_days)
        pruned = await self.store.prune_finished(before=now - retention)
        capped = await self.store.cap_dead_letters(
            older_than=now - timedelta(days=self.config.dead_letter_days),
            keep=self.config.dead_letter_max,
            now=now,
            audit=AuditEntry(
                "system:housekeeping",
                "dead.discard",
                "job",
                details={
                    "reason": "dead-letter cap",
                    "max": self.config.dead_letter_max,
                    "max_age_days": self.config.dead_letter_days,
                },
                surface=Surface.SYSTEM.value,
            ),
        )
        if capped:
            log.warning(
                "discarded dead letters over the cap",
                extra={
                    "jobs": capped,
                    "max": self.config.dead_letter_max,
                    "max_age_days": self.config.dead_letter_days,
                },
            )
        return {**pruned, "dead_discarded": capped}

    # --- drain mode -------------------------------------------------------------------

    async def _stopped_heartbeat(self) -> None:
        """Record that this dispatcher stopped (its jobs are free to reclaim at once)."""
        await self.store.heartbeat(
            self.worker_id,
            host=self._host,
            pid=self._pid,
            machine=self._machine,
            now=self.clock.now(),
            stopped=True,
        )

    async def drain(self, retry_window: float = 0.0) -> DrainSummary:
        """Deliver everything due now; keep going while retries fall due, or leases of
        jobs other dispatchers hold run out, within ``retry_window`` seconds (waiting
        on the clock); then stop and summarise what was done and what was left."""
        deadline = self.clock.now() + timedelta(seconds=retry_window)
        _, _, flushed = self._events()
        before = Counter(self.outcomes)
        await self.store.optimize()
        await self.keep_alive()
        renewer = asyncio.create_task(self._keep_alive_forever(), name="herald-renew")
        try:
            await self.reclaim()
            while True:
                claimed = await self.pump()
                if self._inflight:
                    flushed.clear()
                    await flushed.wait()
                    continue
                if claimed:
                    continue
                if await self.reclaim():
                    continue
                backlog = await self.store.backlog(worker=self.worker_id, after=deadline)
                now = self.clock.now()
                at = min(
                    (t for t in (backlog.next_due_at, backlog.next_lease_end) if t is not None),
                    default=None,
                )
                if at is None or at > deadline:
                    break
                if backlog.held_elsewhere:
                    # a dead dispatcher may be found dead before its leases end
                    at = min(at, now + timedelta(seconds=self.config.sweep_seconds))
                await self.clock.sleep(max(0.0, (at - now).total_seconds()))
        finally:
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
            await self._stopped_heartbeat()
        summary = DrainSummary(self.outcomes - before)
        counts = await self.store.job_counts()
        summary.waiting = sum(counts.get(s, 0) for s in ("pending", "retrying", "claimed"))
        if summary.waiting:
            summary.left = _left(
                await self.store.backlog(worker=self.worker_id, after=deadline),
                self.clock.now(),
                retry_window,
            )
        return summary

    async def settle(self) -> None:
        """Wait until every delivery started so far has finished and been recorded."""
        flushing = self._flusher is not None and not self._flusher.done()
        while self._tasks or self._done or self._sharing or flushing:
            if self._tasks or self._sharing:
                await asyncio.gather(*self._tasks, *self._sharing, return_exceptions=True)
            if self._flusher is not None:
                await asyncio.gather(self._flusher, return_exceptions=True)
            flushing = self._flusher is not None and not self._flusher.done()

    # --- service mode -----------------------------------------------------------------

    async def serve(
        self,
        stop: asyncio.Event,
        periodic: Mapping[str, tuple[Callable[[], Awaitable[Any]], float]] | None = None,
    ) -> None:
        """Run until ``stop`` is set, then shut down gracefully: stop claiming, let
        deliveries in flight finish (up to ``shutdown_timeout``), hand back the rest.
        ``periodic`` adds named interval jobs to the same scheduler (name: (coroutine
        function, seconds)), e.g. refreshing calendars; their errors are logged."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        _, kick, _ = self._events()
        await self.store.optimize()
        # What exists now (modules, settings, pools, adapters) lives as long as the
        # service: keep it out of the cyclic collector's full passes, which otherwise
        # stall the loop for ~50 ms every few thousand deliveries.
        gc.collect()
        gc.freeze()
        scheduler = AsyncIOScheduler(timezone=UTC)
        try:
            await self.keep_alive()  # alive before anything is claimed
            await self.reclaim()  # a dead predecessor's jobs: now, not when leases end
        except HeraldError:
            log.exception("start-up reclaim failed; the sweep will retry")

        async def on_sweep() -> None:
            kick.set()  # the safety net: whatever is due gets claimed within a sweep
            try:
                await self.sweep()
            except HeraldError:
                log.exception("sweep failed")

        async def on_wake() -> None:
            kick.set()

        scheduler.add_job(
            on_sweep,
            "interval",
            seconds=self.config.sweep_seconds,
            id="sweep",
            coalesce=True,
            max_instances=1,
            next_run_time=datetime.now(UTC) + timedelta(seconds=self.config.sweep_seconds),
        )

        async def on_housekeeping() -> None:
            try:
                await self.housekeeping()
            except HeraldError:
                log.exception("housekeeping failed")

        scheduler.add_job(
            on_housekeeping, "cron", minute=17, id="housekeeping", coalesce=True, max_instances=1
        )
        for name, (job, seconds) in (periodic or {}).items():
            scheduler.add_job(
                _logged(name, job),
                "interval",
                seconds=seconds,
                id=name,
                coalesce=True,
                max_instances=1,
            )
        self._on_wake = on_wake
        scheduler.start()
        renewer = asyncio.create_task(self._keep_alive_forever(), name="herald-renew")
        stopper = asyncio.create_task(stop.wait(), name="herald-stop")
        log.info("dispatcher started", extra={"worker": self.worker_id})
        kick.set()
        try:
            while not stop.is_set():
                kicked = asyncio.create_task(kick.wait())
                await asyncio.wait({kicked, stopper}, return_when=asyncio.FIRST_COMPLETED)
                kicked.cancel()
                if stop.is_set():
                    break
                kick.clear()
                self.tick()
                try:
                    await self.pump(lookahead=self.prefetch())
                    if len(self._inflight) < self.config.max_inflight:
                        await self._plan_wake(scheduler)
                except HeraldError:
                    log.exception("dispatcher loop failed; retrying at the next sweep")
        finally:
            await self._shutdown(renewer, scheduler)
            gc.unfreeze()

    async def _plan_wake(self, scheduler: Any) -> None:
        upcoming = await self.store.next_due_at()
        if upcoming is None:
            return
        now = self.clock.now()
        wake_at = upcoming - timedelta(seconds=self.prefetch())
        if wake_at <= now:
            if not (self._inflight and upcoming > now):
                self.wake()
                return
            # jobs claimed ahead of time wait for their moment: claiming more now would
            # keep the loop busy just when they are due; claim the rest at that moment
            wake_at = upcoming
        scheduler.add_job(
            self._on_wake,
            "date",
            run_date=wake_at,
            id="wake",
            replace_existing=True,
            misfire_grace_time=None,
        )

    async def _shutdown(self, renewer: asyncio.Task[None], scheduler: Any) -> None:
        self._stopping = True
        if self._room is not None:
            self._room.set()  # feeders stop starting deliveries
        scheduler.shutdown(wait=False)
        senders = list(self._tasks)
        if senders:
            log.info("waiting for deliveries in flight", extra={"jobs": len(senders)})
            _, pending = await asyncio.wait(senders, timeout=self.config.shutdown_timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._reslotting is not None:
            # the deliveries are over: no one is left to take a fresh slot (one under
            # way may wait for a lock for long)
            self._reslotting.cancel()
            await asyncio.gather(self._reslotting, return_exceptions=True)
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        await self._flush()
        await asyncio.gather(*self._sharing, return_exceptions=True)
        renewer.cancel()
        await asyncio.gather(renewer, return_exceptions=True)
        leftover = list(self._inflight)
        if leftover:
            released = await self.store.release(
                leftover, worker=self.worker_id, now=self.clock.now()
            )
            log.info("handed back jobs not sent", extra={"jobs": released})
        self._inflight.clear()
        await self._stopped_heartbeat()
        for channel in self.channels.values():
            await channel.close()
        log.info("dispatcher stopped", extra={"worker": self.worker_id})

    _on_wake: Callable[[], Any]


def _logged(
    name: str, job: Callable[[], Awaitable[Any]]
) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run() -> None:
        try:
            await job()
        except Exception:  # a periodic job's failure must not stop the dispatcher
            log.exception("periodic job failed", extra={"job": name})

    return run


def shared_channel(destination: Destination, tenant: str) -> bool:
    """Whether a destination is a channel others read: a Slack channel (``C…``, a
    private ``G…``; not a direct message ``D…`` or a person ``U…``/``@…``), or a
    Discord channel of a server (not of a direct-message tenant ``discord:@…``)."""
    if destination.kind == "discord" and tenant.startswith("discord:@"):
        return False
    return limits.shared_channel(destination)


def _body(job: ClaimedJob) -> str:
    """The text to send: a schedule whose text uses variables gets them filled in for
    this occurrence (checked when it was saved; if that check has since changed, the
    text goes out as written rather than not at all)."""
    if not job.options.get("template"):
        return job.body
    try:
        return templates.render_schedule(
            job.body, schedule_id=job.schedule_id, occurrence=job.occurrence_at, zone=job.timezone
        )
    except (HeraldError, ValueError, ZoneInfoNotFoundError):
        log.warning("schedule text could not be filled in", extra={"job_id": job.id})
        return job.body


def _left(backlog: Backlog, now: datetime, window: float) -> list[str]:
    """Why a drain left jobs, in sentences."""
    reasons = []
    if backlog.due_later:
        when = ""
        if backlog.next_due_at is not None:
            when = f" (the next in {_duration((backlog.next_due_at - now).total_seconds())})"
        reasons.append(
            f"{backlog.due_later} due after the {_duration(window)} drain timeout{when}."
        )
    if backlog.held_elsewhere:
        when = ""
        if backlog.next_lease_end is not None:
            ends = (backlog.next_lease_end - now).total_seconds()
            when = f", the first lease ending in {_duration(ends)}"
        reasons.append(f"{backlog.held_elsewhere} held by another dispatcher{when}.")
    return reasons


def _duration(seconds: float) -> str:
    """A wait or a lateness in a notice: ``45s``, ``12 min``, ``1.5 h``."""
    return timeexpr.describe_duration(seconds, rough=True)
