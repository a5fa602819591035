"""Liveness: this dispatcher's heartbeat and leases, and whether others still live.

A claimed job's lease ends at the time this worker last wrote for it; the worker itself
counts as alive until its last heartbeat plus the grace other dispatchers give it
(``dead_after``), after which they may hand its jobs to someone else. A job is sent
only while both still hold with ``margin`` to spare: a worker that stalled past either
drops the job instead of sending what another may already have delivered.

Another worker is *provably dead* when it ran on this machine (same kernel boot and
PID namespace) and its process no longer runs, or when it has not heartbeated for
``dead_after`` seconds: a sweep (and a start) reclaims its jobs, and jobs whose lease
expired, at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from functools import cache

from core.clock import Clock
from core.dispatcher.config import DispatcherConfig
from core.errors import HeraldError
from core.metrics import Metrics
from core.store import ClaimedJob, DispatchStore

log = logging.getLogger("core.dispatcher")


@cache
def machine_id() -> str | None:
    """This kernel boot and PID namespace, as text; None where it cannot be read (then
    no other worker is judged by its pid, only by its heartbeat). Two containers that
    share a host name have different PID namespaces, so a pid is only compared with
    pids of the same namespace."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}"[:100] if boot else None


def process_gone(pid: int) -> bool:
    """The process ``pid`` (of this machine) no longer runs: no such process, or a
    zombie waiting for its parent. A pid taken over by an unrelated process counts as
    running (the heartbeat then decides)."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False
    # "pid (comm) state ...": comm may hold spaces and parentheses
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class Leases:
    """Until when this worker may still send each job it holds.

    ``alive_until`` is None until the worker's first heartbeat is written: before that
    no other worker can judge it dead by its heartbeat."""

    __slots__ = ("_until", "alive_until", "margin")

    def __init__(self, margin: float) -> None:
        self.margin = margin
        self._until: dict[int, datetime] = {}
        self.alive_until: datetime | None = None

    def claimed(self, job_ids: Iterable[int], until: datetime) -> None:
        for job_id in job_ids:
            self._until[job_id] = until

    def renewed(
        self, asked: Iterable[int], held: set[int], until: datetime, alive_until: datetime
    ) -> None:
        """A keep-alive wrote ``until`` for the ``held`` ones among ``asked``; the rest
        were taken over by another worker (or finished) and may not be sent."""
        for job_id in asked:
            if job_id in held:
                self._until[job_id] = until
            else:
                self._until.pop(job_id, None)
        self.alive_until = alive_until

    def forget(self, job_id: int) -> None:
        self._until.pop(job_id, None)

    def sendable(self, job_id: int, now: datetime) -> bool:
        """The job's lease, and this worker's life, both last ``margin`` more seconds."""
        until = self._until.get(job_id)
        if until is None:
            return False
        if self.alive_until is not None and self.alive_until < until:
            until = self.alive_until
        return (until - now).total_seconds() >= self.margin


class Liveness:
    """This dispatcher's heartbeat, the renewal of the leases of the jobs it holds
    (``inflight``), and the reclaiming of what dead or stalled dispatchers held.

    ``wake`` asks the loop to look at the queue again (jobs were handed back); ``tick``
    says the loop is alive (a sweep runs on it)."""

    def __init__(
        self,
        store: DispatchStore,
        clock: Clock,
        config: DispatcherConfig,
        worker_id: str,
        inflight: Mapping[int, ClaimedJob],
        metrics: Metrics,
        *,
        wake: Callable[[], None],
        tick: Callable[[], None],
    ) -> None:
        self._store = store
        self._clock = clock
        self._config = config
        self._worker_id = worker_id
        self._inflight = inflight
        self._metrics = metrics
        self._wake = wake
        self._tick = tick
        self.leases = Leases(config.lease_margin)
        self._host, self._pid, self._machine = socket.gethostname(), os.getpid(), machine_id()
        self._keeping_alive: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None

    async def keep_alive(self) -> None:
        """Write this dispatcher's heartbeat and renew its leases, in one transaction;
        callers at the same moment share one write."""
        task = self._keeping_alive
        if task is None or task.done():
            task = self._keeping_alive = asyncio.create_task(self._keep_alive_once())
        await asyncio.shield(task)

    async def _keep_alive_once(self) -> None:
        now = self._clock.now()
        until = now + timedelta(seconds=self._config.lease_seconds)
        asked = list(self._inflight)
        kept = await self._store.keep_alive(
            self._worker_id,
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
                extra={"worker": self._worker_id, "jobs": len(asked) - len(kept.held)},
            )
        alive_until = now + timedelta(seconds=self._config.dead_after)
        self.leases.renewed(asked, kept.held, until, alive_until)

    def start_renewing(self) -> None:
        """Keep alive every ``keep_alive_seconds`` from now on (until
        :meth:`stop_renewing`)."""
        self._renewer = asyncio.create_task(self._keep_alive_forever(), name="herald-renew")

    async def stop_renewing(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
            self._renewer = None

    async def _keep_alive_forever(self) -> None:
        while True:
            await asyncio.sleep(self._config.keep_alive_seconds)
            try:
                await self.keep_alive()
            except HeraldError:
                log.exception("could not renew leases")

    async def renewed_holds(self, job_id: int) -> bool:
        """For a job whose lease is close to its end: renew (one keep-alive for every
        job that finds it so), then whether its lease and this dispatcher's life last
        the margin now."""
        try:
            await self.keep_alive()
        except HeraldError:
            log.exception("could not renew leases before sending")
            return False
        return self.leases.sendable(job_id, self._clock.now())

    async def stopped(self) -> None:
        """Record that this dispatcher stopped (its jobs are free to reclaim at once),
        with the last of its lateness counts."""
        await self.write_lateness()
        await self._store.heartbeat(
            self._worker_id,
            host=self._host,
            pid=self._pid,
            machine=self._machine,
            now=self._clock.now(),
            stopped=True,
        )

    async def sweep(self) -> int:
        """Reclaim jobs whose worker died or whose lease expired; refresh the gauges
        read from the database."""
        now = self._clock.now()
        self._tick()
        stats = await self._store.queue_stats(now=now)
        self._metrics.set_job_counts(stats.counts)
        self._metrics.set_waiting(stats.waiting)
        self._metrics.dead_awaiting.set(stats.dead_awaiting)
        self._metrics.overdue_seconds.set(stats.oldest_overdue_seconds)
        await self.write_lateness()
        return await self.reclaim()

    async def write_lateness(self) -> None:
        """Write the minutes of lateness counted in since the last write (the console's
        percentiles); kept to write again with the next sweep when the write fails."""
        minutes = self._metrics.late_minutes.take()
        try:
            await self._store.write_lateness(self._worker_id, minutes)
        except HeraldError:
            self._metrics.late_minutes.put_back(minutes)
            log.exception("could not write lateness counts; the next sweep tries again")

    async def reclaim(self) -> int:
        """Hand back the jobs of dispatchers that are provably dead (their process no
        longer runs on this machine, or no heartbeat for ``dead_after`` seconds), and
        jobs whose lease expired. Returns how many."""
        now = self._clock.now()
        dead, handed_back = await self._store.reclaim_dead_workers(
            now=now,
            silent_since=now - timedelta(seconds=self._config.dead_after),
            gone=await self._gone(),
            me=self._worker_id,
        )
        if dead:
            log.warning(
                "dispatchers found dead; their jobs were handed back",
                extra={"workers": dead, "jobs": handed_back},
            )
        expired = await self._store.reclaim_expired(now=now)
        if expired:
            log.warning("reclaimed jobs with expired leases", extra={"jobs": expired})
        if handed_back or expired:
            self._wake()
        return handed_back + expired

    async def _gone(self) -> list[str]:
        """The other dispatchers of this machine whose process no longer runs."""
        if self._machine is None:
            return []
        return [
            w.id
            for w in await self._store.running_workers()
            if w.machine == self._machine and w.id != self._worker_id and process_gone(w.pid)
        ]
