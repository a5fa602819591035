"""The dispatcher's loop: claims due jobs, sends them, records what happened.

One loop claims due jobs in batches (up to ``max_inflight`` in flight), each job is
sent by its channel under a global concurrency limit and its destination's shared
rate slots (:mod:`.rates`), started a part at a time by the feeder (:mod:`.feeder`),
and a flusher records the outcomes (:mod:`.verdicts`) in batches. A lease guards every
claimed job and a job is sent only while it still holds with a margin
(:mod:`.liveness`): a dispatcher that stalled past it drops the job. A job whose
worker died is reclaimed, at start-up and by every sweep, and sent again with the same
idempotency key. APScheduler (3.x) is only the alarm clock (:mod:`.alarms`): the
database is the queue and the source of truth."""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import core.dispatcher.message as message
import core.dispatcher.reporting as reporting
import core.dispatcher.verdicts as verdicts
from core import tracing
from core.channels.base import Channel, Delivery, DeliveryResult
from core.clock import Clock
from core.dispatcher.alarms import Periodic, alarm_clock, wake_time
from core.dispatcher.config import (
    DispatcherConfig,
    claim_room,
    default_worker_id,
    first_claim,
    prefetch_seconds,
)
from core.dispatcher.drain import DrainSummary, drain_wait, left_reasons, waiting
from core.dispatcher.feeder import Feeder
from core.dispatcher.hooks import HookPusher
from core.dispatcher.housekeeping import housekeeping
from core.dispatcher.liveness import Liveness
from core.dispatcher.rates import ParsedDestinations, RateSlots
from core.dispatcher.recipients import Recipients
from core.errors import HeraldError
from core.events import OutcomePolicy
from core.metrics import Metrics
from core.ratelimit import ClaimCaps, RateLimit
from core.scrub import Scrubber
from core.store import ClaimedJob, DispatchStore, Settled

log = reporting.log

#: Called with every outcome recorded (the chat adapters' dead-letter alerts).
Observer = Callable[[Settled], None]

#: How long the flusher lets more deliveries finish before writing a small batch.
FLUSH_GATHER_SECONDS = 0.002


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
        self.config = config = config or DispatcherConfig()
        self.worker_id = worker_id or default_worker_id()
        self.rng = rng or random.Random()
        self.observer = observer
        self.metrics = metrics or Metrics()
        reporting.attach_channels(self.channels, store, self.metrics)
        #: Every error text is scrubbed before it is recorded, logged or observed: a
        #: provider may echo a token or a password (``Scrubber.from_settings``).
        self.scrub = scrubber or Scrubber()
        self.last_tick = time.monotonic()  # of the loop's last tick (readiness checks it)
        self.outcomes: Counter[str] = Counter()
        #: Claimed jobs not yet recorded, by id.
        self._inflight: dict[int, ClaimedJob] = {}
        #: Deliveries running (one task per claimed job), and the feeder starting them.
        self._tasks: set[asyncio.Task[None]] = set()
        self._furnish()
        #: Outcomes not yet recorded, and the task recording them.
        self._done: list[Settled] = []
        self._flusher: asyncio.Task[None] | None = None
        self._sem: asyncio.Semaphore | None = None
        self._kick: asyncio.Event | None = None
        self._flushed: asyncio.Event | None = None
        self._stopping = False
        #: Seconds a claim took per job claimed (the slowest recent claim of a tenth of
        #: a batch or more, decaying), for :meth:`prefetch`.
        self._claim_per_job = 0.0
        #: Whether due jobs may be waiting that the last claim left for lack of room:
        #: False once a claim found fewer than it asked for (what falls due later has
        #: its wake planned, and a new or moved job calls :meth:`wake`). A flush then
        #: asks for a claim only when this holds or it put jobs back in the queue.
        self._saturated = True

    # --- wiring -----------------------------------------------------------------------

    def _furnish(self) -> None:
        """The rooms the loop holds, each given what it needs (never the loop)."""
        config, clock = self.config, self.clock
        #: What a claim may take of each rate-limited destination (every claim passes
        #: them: the store counts the jobs every dispatcher holds).
        self._caps = ClaimCaps.of(
            config.rate_limits,
            {kind: channel.rate_limit for kind, channel in self.channels.items()},
            config.claim_horizon,
        )
        self._parsed = ParsedDestinations().parsed
        #: What recording a batch tells (core.events); its ``listening`` kept fresh.
        self.policy = OutcomePolicy(config.late_after, config.auto_pause_after)
        self._hooks = HookPusher(
            self.store, clock, config, self.policy, self.metrics, self.worker_id, self.channels
        )
        self._rates = RateSlots(self.store, self.channels, config, clock, self._parsed)
        self._pauses, self._pacer = self._rates.pauses, self._rates.pacer
        self._feeder = Feeder(self._start, clock.now, self._tasks, config)
        self._people = Recipients(self.store, clock, config, self._to_record)
        self._liveness = Liveness(
            self.store,
            clock,
            config,
            self.worker_id,
            self._inflight,
            self.metrics,
            wake=self.wake,
            tick=self.tick,
        )
        self._leases = self._liveness.leases

    def _events(self) -> tuple[asyncio.Semaphore, asyncio.Event, asyncio.Event]:
        """The loop's semaphore and events, made on the running loop at first use."""
        if self._sem is None or self._kick is None or self._flushed is None:
            self._sem = asyncio.Semaphore(self.config.concurrency)
            self._kick = asyncio.Event()
            self._flushed = asyncio.Event()
        return self._sem, self._kick, self._flushed

    def wake(self) -> None:
        """A job was created or moved: look at the queue again now. Safe to call from
        the event loop at any time."""
        _, kick, _ = self._events()
        kick.set()

    def tick(self) -> None:
        """The loop is alive."""
        self.last_tick = time.monotonic()
        self.metrics.tick()

    # --- claiming ---------------------------------------------------------------------

    async def pump(self, lookahead: float = 0.0) -> int:
        """Claim jobs due (within ``lookahead`` seconds) up to the free capacity and
        start sending them, each no earlier than its due time."""
        claimed_total = 0
        while not self._stopping:
            want = full = claim_room(self.config, len(self._inflight))
            if want <= 0:
                self._saturated = True
                break  # wait for a bigger gap: fewer, larger claims
            if lookahead and not self._inflight:
                # idle, and perhaps the start of a burst: claim first what can be claimed
                # within the prefetch (a claim of 2,000 outlasts it, and the first would
                # go late); a full claim follows at once, ahead, while these wait
                want = min(want, first_claim(self.config, self._claim_per_job))
            jobs, now = await self._claim(want, lookahead)
            claimed_total += len(jobs)
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

    async def _claim(self, want: int, lookahead: float) -> tuple[list[ClaimedJob], datetime]:
        """Claim up to ``want`` jobs due within ``lookahead`` seconds and start them;
        the jobs, and the time the claim began."""
        now = self.clock.now()
        lease_until = now + timedelta(seconds=self.config.lease_seconds)
        started = time.monotonic()
        with tracing.span("herald.claim", root=True) as span:
            jobs = await self.store.claim_due(
                now=now + timedelta(seconds=lookahead),
                worker=self.worker_id,
                lease_until=lease_until,
                limit=want,
                caps=self._caps or None,
            )
            span.set_attribute("herald.claimed", len(jobs))
        if len(jobs) * 10 >= self.config.batch_size:
            took = (time.monotonic() - started) / len(jobs)
            self._claim_per_job = max(took, self._claim_per_job * 0.9)
        self._leases.claimed((job.id for job in jobs), lease_until)
        for job in jobs:
            self._inflight[job.id] = job
        if jobs:
            await self._feeder.take(await self._people.screen(jobs), now)  # their say now
            self.metrics.observe_claim(jobs)  # its size, and its jobs by priority
        return jobs, now

    def prefetch(self) -> float:
        """How many seconds before jobs fall due the service claims them (see
        :func:`~core.dispatcher.config.prefetch_seconds`)."""
        return prefetch_seconds(self.config, self._claim_per_job)

    async def _start(self, jobs: list[ClaimedJob], now: datetime) -> bool:
        """Take the send slots of these claimed jobs and start sending them (those
        that would wait too long for their limit are handed back). True when some
        took a slot or were handed back."""
        slots, later = await self._rates.reserve(jobs, now)
        for job in jobs:
            if job.id in later:
                continue
            # unnamed (a name costs a microsecond); ``_run`` removes it from the set
            self._tasks.add(asyncio.create_task(self._run(job, slots.get(job.id))))
        if later:
            self._to_record(later.values())
        return bool(slots or later)

    def _to_record(self, items: Iterable[Settled]) -> None:
        """Record these with the next flush (starting one when none runs)."""
        self._done.extend(self._people.restored(items))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="herald-flush")

    # --- sending ----------------------------------------------------------------------

    async def _run(self, job: ClaimedJob, slot: datetime | None) -> None:
        try:
            settled = await self._attempt(job, slot)
        finally:
            self._tasks.discard(asyncio.current_task())
            self._feeder.notify()
        # recorded only after the await: the flusher swaps ``_done`` for a new list while
        # deliveries run, and ``self._done.append(await ...)`` would bind the old one
        self._to_record((settled,))

    async def _attempt(self, job: ClaimedJob, slot: datetime | None) -> Settled:
        """Send one claimed job, no earlier than its due time and its rate-limit
        ``slot``, and say what happened."""
        clock = self.clock
        now = clock.now()
        if job.due_at > now:  # claimed ahead of time (prefetch): wait for the exact moment
            await clock.sleep((job.due_at - now).total_seconds())
            now = clock.now()
        unsent = verdicts.before_sending(job, now, self.config)
        if unsent is not None:
            return unsent
        try:
            destination, key = self._parsed(job)
            delivery = message.delivery(job, destination, self.config)
        except HeraldError as exc:
            return verdicts.dead(job, None, self.scrub(str(exc)), now)
        channel = self.channels.get(destination.kind)
        if channel is None:
            missing = f"No {destination.kind} channel is configured on this dispatcher."
            return self._judge(job, DeliveryResult.retry(missing), now, now, key)
        wait = (slot - now).total_seconds() if slot is not None else 0.0
        paused = self._pauses.paused_until(key, now) if self._pauses else None
        if paused is not None:
            wait = max(wait, (paused - now).total_seconds())
            if wait > self.config.max_rate_wait:
                return verdicts.wait_for_limit(job, paused, now, destination.kind)
        if wait > 0:
            self.metrics.channel(destination.kind).rate_limit_waits.inc()
            await clock.sleep(wait)
        return await self._deliver(job, delivery, channel, key, slot)

    async def _deliver(
        self,
        job: ClaimedJob,
        delivery: Delivery,
        channel: Channel,
        key: str,
        slot: datetime | None,
    ) -> Settled:
        """Send ``delivery`` under a sending slot, once its lease holds and its rate
        slot has come (a job that missed its slot by more than the grace takes a fresh
        one first, without its sending slot meanwhile: held, every sending slot could
        wait for the database while no request is in flight)."""
        clock, sem, feeder = self.clock, self._events()[0], self._feeder
        pacing = self._rates.limit(key, channel) if slot is not None else None
        while True:
            async with sem:
                feeder.sending += 1
                feeder.notify()
                try:
                    if not (
                        self._leases.sendable(job.id, clock.now())
                        or await self._liveness.renewed_holds(job.id)  # a round trip
                    ):
                        self.metrics.leases_lapsed.inc()
                        return verdicts.lapsed(job)
                    started = clock.now()
                    pace = 0.0 if slot is None else self._pace(key, slot, started, pacing)
                    if pace is not None and pace <= 0:
                        result = await message.send(channel, delivery, started)
                        break
                finally:
                    feeder.sending -= 1
            if pace is None:  # missed its slot: a fresh one, here (handed back to the
                # queue, a burst the dispatcher cannot keep up with would go round the
                # queue at the pace of hand-backs)
                assert pacing is not None
                slot = await self._rates.fresh_slot(key, pacing)
                now = clock.now()
                if slot is None:
                    return verdicts.wait_for_limit(job, now, now, delivery.destination.kind)
                pace = (slot - now).total_seconds()
            if pace > 0:
                await clock.sleep(pace)  # not holding a sending slot meanwhile
        if result.error is not None:  # failures only: the provider's words, scrubbed
            result = replace(result, error=self.scrub(result.error))
        return self._judge(job, result, started, clock.now(), key, delivery.body)

    def _pace(
        self, key: str, slot: datetime, started: datetime, pacing: RateLimit | None
    ) -> float | None:
        """Seconds a send with a rate ``slot`` waits before it may start at ``started``
        (0.0: now), or None when it is past the slot's grace: sent now, it would crowd
        the sends of the slots after it (this dispatcher ran late)."""
        late = (started - slot).total_seconds()
        self._feeder.record_lateness(late)
        if late > self.config.slot_grace and pacing is not None:
            return None
        if slot > started:
            return (slot - started).total_seconds()
        if pacing is not None:
            return self._pacer.take(key, started, pacing)
        return 0.0

    def _judge(
        self,
        job: ClaimedJob,
        result: DeliveryResult,
        started: datetime,
        finished: datetime,
        key: str,
        body: str | None = None,
    ) -> Settled:
        """The verdict on a try; a provider's Retry-After pauses its destination."""
        pause = verdicts.asked_pause(result, finished)
        if pause is not None:
            self._rates.pause(job.id, key, pause)
        return verdicts.judge(job, result, started, finished, self.config, self.rng, body)

    # --- recording --------------------------------------------------------------------

    async def _flush(self) -> None:
        """Record finished jobs in batches: one transaction for everything finished
        so far, after letting a few more finish when many are still in flight."""
        _, _, flushed = self._events()
        while self._done:
            if len(self._done) < self.config.batch_size // 2 and len(self._done) < len(
                self._inflight
            ):
                await asyncio.sleep(FLUSH_GATHER_SECONDS)
            while self._feeder.reserving is not None:
                # a feeder is taking send slots: sends wait for it, records need not
                # (and one more finished meanwhile joins this batch)
                await self._feeder.reserving.wait()
            batch, self._done = self._done, []
            try:
                with tracing.span("herald.record", {"herald.jobs": len(batch)}, root=True):
                    owned = await self.store.finish(
                        batch, worker=self.worker_id, now=self.clock.now(), policy=self.policy
                    )
            except HeraldError:
                log.exception("could not record outcomes; retrying", extra={"jobs": len(batch)})
                self._done[:0] = batch
                await asyncio.sleep(1.0)
                continue
            self._recorded(batch, owned)
            flushed.set()

    def _recorded(self, batch: list[Settled], owned: set[int]) -> None:
        """After a batch is written: its jobs leave the flight, the next claim is asked
        for when it may find something, and each outcome is counted, said and observed
        (an outcome whose lease was lost is only logged)."""
        requeued = False
        for item in batch:
            self._inflight.pop(item.job.id, None)
            self._leases.forget(item.job.id)
            if verdicts.requeues(item):
                requeued = True  # to try again, a next occurrence or a ladder: due when?
        if self._saturated or requeued:
            # room for the next claim, which can start while these are counted (with
            # nothing due left unclaimed, a claim would only find nothing, holding
            # the write lock the sends' slot reservations wait for)
            self._events()[1].set()
        counted: Counter[str] = Counter()
        for item in batch:
            if item.job.id not in owned:
                reporting.lost_lease(item, self.worker_id)
                continue
            counted[item.state] += 1
            reporting.record(item, self.metrics, self.worker_id, self.config.late_after)
            if self.observer is not None:
                self.observer(item)
        self.outcomes.update(counted)
        reporting.recorded_batch(counted, self.worker_id)

    # --- liveness and housekeeping ----------------------------------------------------

    async def keep_alive(self) -> None:
        """Write the heartbeat and renew the leases (:meth:`Liveness.keep_alive`)."""
        await self._liveness.keep_alive()

    async def sweep(self) -> int:
        """Reclaim and refresh the gauges (:meth:`Liveness.sweep`); how many came back."""
        return await self._liveness.sweep()

    async def housekeeping(self) -> dict[str, int]:
        """Prune old attempts and finished jobs; cap the dead letters."""
        return await housekeeping(self.store, self.clock, self.config)

    # --- drain mode -------------------------------------------------------------------

    async def drain(self, retry_window: float = 0.0) -> DrainSummary:
        """Deliver everything due now; keep going while retries fall due, or leases of
        jobs other dispatchers hold run out, within ``retry_window`` seconds (waiting
        on the clock); then stop and summarise what was done and what was left."""
        deadline = self.clock.now() + timedelta(seconds=retry_window)
        before = Counter(self.outcomes)
        await self.store.optimize()
        await self.keep_alive()
        await self._hooks.refresh()  # what hooks hear is recorded (drain pushes nothing)
        self._liveness.start_renewing()
        try:
            await self._liveness.reclaim()
            while await self._drained_once(deadline):
                pass
        finally:
            await self._liveness.stop_renewing()
            await self._liveness.stopped()
        summary = DrainSummary(self.outcomes - before, waiting(await self.store.job_counts()))
        if summary.waiting:
            backlog = await self.store.backlog(worker=self.worker_id, after=deadline)
            summary.left = left_reasons(backlog, self.clock.now(), retry_window)
        return summary

    async def _drained_once(self, deadline: datetime) -> bool:
        """One round of a drain: claim, wait for what is in flight, reclaim, or sleep
        until the next job falls due or lease ends. False when nothing is left to do
        before ``deadline``."""
        claimed = await self.pump()
        if self._inflight:
            _, _, flushed = self._events()
            flushed.clear()
            await flushed.wait()
            return True
        if claimed or await self._liveness.reclaim():
            return True
        backlog = await self.store.backlog(worker=self.worker_id, after=deadline)
        wait = drain_wait(backlog, self.clock.now(), deadline, self.config.sweep_seconds)
        if wait is None:
            return False
        await self.clock.sleep(wait)
        return True

    # --- service mode -----------------------------------------------------------------

    async def serve(
        self, stop: asyncio.Event, periodic: Mapping[str, Periodic] | None = None
    ) -> None:
        """Run until ``stop`` is set, then shut down gracefully: stop claiming, let
        deliveries in flight finish (up to ``shutdown_timeout``), hand back the rest.
        ``periodic`` adds named interval jobs to the same scheduler (name: (coroutine
        function, seconds)), e.g. refreshing calendars; their errors are logged."""
        _, kick, _ = self._events()
        await self.store.optimize()
        # What exists now (modules, settings, pools, adapters) lives as long as the
        # service: keep it out of the cyclic collector's full passes, which otherwise
        # stall the loop for ~50 ms every few thousand deliveries.
        gc.collect()
        gc.freeze()
        try:
            await self.keep_alive()  # alive before anything is claimed
            await self._liveness.reclaim()  # a dead predecessor's jobs: now, not when leases end
            await self._hooks.refresh()  # the types hooks hear, before the first outcome
        except HeraldError:
            log.exception("start-up reclaim failed; the sweep will retry")

        async def on_sweep() -> None:
            kick.set()  # the safety net: whatever is due gets claimed within a sweep
            await self.sweep()

        scheduler = alarm_clock(
            sweep_seconds=self.config.sweep_seconds,
            sweep=on_sweep,
            housekeeping=self.housekeeping,
            periodic={**(periodic or {}), **self._hooks.periodic()},
        )
        scheduler.start()
        self._liveness.start_renewing()
        log.info("dispatcher started", extra={"worker": self.worker_id})
        try:
            await self._serve_until(stop, scheduler)
        finally:
            await self._shutdown(scheduler)
            gc.unfreeze()

    async def _serve_until(self, stop: asyncio.Event, scheduler: Any) -> None:
        """Claim whenever kicked (a wake, a sweep, a flush with room) until ``stop``."""
        _, kick, _ = self._events()
        stopper = asyncio.create_task(stop.wait(), name="herald-stop")
        kick.set()
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

    async def _plan_wake(self, scheduler: Any) -> None:
        """Set the alarm for when the next job falls due (less the prefetch)."""
        upcoming = await self.store.next_due_at()
        if upcoming is None:
            return
        at = wake_time(upcoming, self.clock.now(), self.prefetch(), holding=bool(self._inflight))
        if at is None:
            self.wake()
            return
        scheduler.add_job(
            self._on_wake,
            "date",
            run_date=at,
            id="wake",
            replace_existing=True,
            misfire_grace_time=None,
        )

    async def _on_wake(self) -> None:
        self.wake()

    async def _shutdown(self, scheduler: Any) -> None:
        """Stop claiming and starting; let deliveries in flight finish (up to
        ``shutdown_timeout``); record what finished; hand back the rest."""
        self._stopping = True
        self._feeder.stop()
        scheduler.shutdown(wait=False)
        senders = list(self._tasks)
        if senders:
            log.info("waiting for deliveries in flight", extra={"jobs": len(senders)})
            _, pending = await asyncio.wait(senders, timeout=self.config.shutdown_timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        # the deliveries are over: no one is left to take a fresh slot
        await self._rates.stop_reserving()
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        await self._flush()
        await self._rates.pauses_shared()
        await self._liveness.stop_renewing()
        leftover = list(self._inflight)
        if leftover:
            released = await self.store.release(
                leftover, worker=self.worker_id, now=self.clock.now()
            )
            log.info("handed back jobs not sent", extra={"jobs": released})
        self._inflight.clear()
        await self._liveness.stopped()
        await self._hooks.close()
        for channel in self.channels.values():
            await channel.close()
        log.info("dispatcher stopped", extra={"worker": self.worker_id})
