"""Calendar workers: every iCalendar text is parsed and expanded in a child process with
a hard wall-clock deadline, never on an event loop.

A calendar comes from a member (any URL or file), and reading one is CPU-bound and
unbounded: one ``RRULE:FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30`` keeps the expansion
searching for 6 s without yielding an occurrence, and a thread cannot be stopped (it
keeps the CPU and the GIL long after its caller gave up). A process can: the
:class:`CalendarReader` starts ``python -m core.calendars.worker`` for each read (about
0.1 s: the worker imports only :mod:`core.calendars.read`, through the package's lazy
face), hands it the texts on stdin, and
kills it when the deadline passes. The worker limits its own memory, gets no secret in
its environment, and answers one JSON object on stdout.

The occurrence cap is enforced inside the worker while it iterates
(:func:`core.calendars.read.instances`); the deadline and the number of workers running at
once here. Every refusal is a :class:`~core.calendars.CalendarError` naming the limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from core.calendars.read import (
    MAX_INSTANCES,
    Blackouts,
    CalendarError,
    EventInstance,
    blackouts,
    calendar_name,
    instances,
    parse,
)
from core.scrub import scrub

if TYPE_CHECKING:  # the worker process must not import pydantic for nothing
    from core.settings import Settings

log = logging.getLogger(__name__)

#: Seconds one read may take, start-up included (``HERALD_CALENDAR_READ_TIMEOUT``).
READ_TIMEOUT = 20.0
#: Calendar workers one process runs at once; more reads wait for a free one.
WORKERS = 2
#: The address space a worker may use: a calendar whose expansion needs more is refused.
MEMORY_BYTES = 1024 * 1024 * 1024

Source = tuple[str, str]  # (where it came from, for messages; its text)


class CalendarReader:
    """Reads calendars in worker processes: at most ``workers`` at once, each killed
    after ``timeout`` seconds, each refusing more than ``max_occurrences`` occurrences
    in the window it reads. Every method raises CalendarError with a sentence."""

    def __init__(
        self,
        *,
        timeout: float = READ_TIMEOUT,
        max_occurrences: int = MAX_INSTANCES,
        workers: int = WORKERS,
        memory_bytes: int = MEMORY_BYTES,
    ) -> None:
        self.timeout = timeout
        self.max_occurrences = max_occurrences
        self.workers = workers
        self.memory_bytes = memory_bytes
        self._slots: asyncio.Semaphore | None = None
        #: How many workers are running now.
        self.running = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> CalendarReader:
        """The reader ``HERALD_CALENDAR_READ_TIMEOUT`` and
        ``HERALD_CALENDAR_MAX_OCCURRENCES`` describe."""
        return cls(
            timeout=settings.calendar_read_timeout,
            max_occurrences=settings.calendar_max_occurrences,
        )

    async def check(self, source: str, text: str, now: datetime) -> str:
        """Check that ``text`` is a calendar whose events in the coming
        :data:`~core.calendars.HORIZON` can be read within the limits; its name."""
        answer = await self._run("check", [(source, text)], start=now, zone="UTC")
        return str(answer["name"])

    async def blackouts(
        self, sources: Sequence[Source], start: datetime, zone: str, end: datetime | None = None
    ) -> Blackouts:
        """The blackout dates of calendars, read in the schedule's ``zone``
        (:func:`core.calendars.read.blackouts`)."""
        if not sources:
            return Blackouts()
        answer = await self._run("blackouts", sources, start=start, end=end, zone=zone)
        return Blackouts.from_json(answer["blackouts"])

    async def instances(
        self, source: Source, start: datetime, end: datetime, zone: str
    ) -> list[EventInstance]:
        """The events of one calendar between ``start`` and ``end``, read in ``zone``
        (:func:`core.calendars.read.instances`)."""
        answer = await self._run("instances", [source], start=start, end=end, zone=zone)
        return [EventInstance.from_json(item) for item in answer["instances"]]

    async def _run(
        self,
        op: str,
        sources: Sequence[Source],
        *,
        start: datetime,
        zone: str,
        end: datetime | None = None,
    ) -> dict[str, Any]:
        request = json.dumps(
            {
                "op": op,
                "sources": [list(s) for s in sources],
                "start": start.isoformat(),
                "end": None if end is None else end.isoformat(),
                "zone": zone,
                "limit": self.max_occurrences,
                "memory": self.memory_bytes,
            }
        ).encode()
        name = sources[0][0] if len(sources) == 1 else "One of the calendars"
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        async with self._slots:
            out, err, code = await self._spawn(request, name)
        if code != 0:
            log.warning(
                "calendar worker failed",
                extra={"exit_code": code, "error": scrub(err.decode(errors="replace")[-500:])},
            )
            raise CalendarError(f"{name} could not be read (the calendar reader stopped).")
        answer: dict[str, Any] = json.loads(out)
        if answer.get("memory"):
            raise CalendarError(
                f"Reading {name} needed more than {self.memory_bytes / 2**20:,.0f} MB of "
                "memory, the most Herald gives one calendar; it was not used."
            )
        if not answer.get("ok"):
            raise CalendarError(str(answer.get("error")))
        return answer

    async def _spawn(self, request: bytes, name: str) -> tuple[bytes, bytes, int]:
        """Run one worker on ``request``; CalendarError when it outlives the deadline
        (it is killed then, and when the caller is cancelled)."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "core.calendars.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # the worker reads hostile input: it inherits no secret, only where Python is
            env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        self.running += 1
        try:
            out, err = await asyncio.wait_for(proc.communicate(request), self.timeout)
        except TimeoutError:
            raise CalendarError(
                f"Reading {name} took longer than {self.timeout:g} s, the most Herald "
                "spends on one calendar (HERALD_CALENDAR_READ_TIMEOUT); it was not used."
            ) from None
        finally:
            self.running -= 1
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode is not None
        return out, err, proc.returncode


# --- the worker process -------------------------------------------------------------


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """What a worker answers to one request (a CalendarError becomes ``error``)."""
    sources = [(str(s), str(t)) for s, t in request["sources"]]
    start = datetime.fromisoformat(request["start"])
    end = datetime.fromisoformat(request["end"]) if request.get("end") else None
    zone = ZoneInfo(request["zone"])
    limit = int(request["limit"])
    try:
        parsed = [parse(text, source) for source, text in sources]
        names = [source for source, _ in sources]
        if request["op"] == "instances":
            assert end is not None
            found = instances(parsed[0], start, end, zone, limit=limit, source=names[0])
            return {"ok": True, "instances": [e.to_json() for e in found]}
        skips = blackouts(parsed, start, end, zone, limit=limit, sources=names)
        if request["op"] == "check":
            return {"ok": True, "name": calendar_name(parsed[0])}
        return {"ok": True, "blackouts": skips.to_json()}
    except CalendarError as exc:
        return {"ok": False, "error": str(exc)}


def main() -> None:
    """``python -m core.calendars.worker``: one request on stdin, one answer on stdout.
    The worker limits its own address space to the request's ``memory`` first."""
    request = json.loads(sys.stdin.buffer.read())
    try:
        import resource

        memory = int(request.get("memory") or MEMORY_BYTES)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ImportError, ValueError, OSError):  # not on this platform: the deadline holds
        pass
    try:
        reply = answer(request)
    except MemoryError:  # what it had built is gone by now: there is room to say so
        reply = {"ok": False, "memory": True}
    sys.stdout.buffer.write(json.dumps(reply).encode())


if __name__ == "__main__":
    main()
