"""Leases as one dispatcher holds them, and whether another dispatcher still lives.

A claimed job's lease ends at the time this worker last wrote for it; the worker itself
counts as alive until its last heartbeat plus the grace other dispatchers give it
(``dead_after``), after which they may hand its jobs to someone else. A job is sent
only while both still hold with ``margin`` to spare: a worker that stalled past either
drops the job instead of sending what another may already have delivered.

Another worker is *provably dead* when it ran on this machine (same kernel boot and
PID namespace) and its process no longer runs, or when it has not heartbeated for
``dead_after`` seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from functools import cache


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
