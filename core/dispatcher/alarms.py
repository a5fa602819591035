"""The service's alarm clock: APScheduler (3.x) wakes the loop, sweeps and does the
housekeeping; the database stays the queue."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from core.errors import HeraldError

log = logging.getLogger("core.dispatcher")

#: A periodic job: (its coroutine function, its interval in seconds).
Periodic = tuple[Callable[[], Awaitable[Any]], float]


def alarm_clock(
    *,
    sweep_seconds: float,
    sweep: Callable[[], Awaitable[Any]],
    housekeeping: Callable[[], Awaitable[Any]],
    periodic: Mapping[str, Periodic],
) -> Any:
    """An AsyncIOScheduler (not started) running ``sweep`` every ``sweep_seconds``,
    ``housekeeping`` at minute 17 of every hour and each of ``periodic`` at its
    interval; their errors are logged, none stops the others."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.add_job(
        _logged("sweep", sweep, "sweep failed", HeraldError),
        "interval",
        seconds=sweep_seconds,
        id="sweep",
        coalesce=True,
        max_instances=1,
        next_run_time=datetime.now(UTC) + timedelta(seconds=sweep_seconds),
    )
    scheduler.add_job(
        _logged("housekeeping", housekeeping, "housekeeping failed", HeraldError),
        "cron",
        minute=17,
        id="housekeeping",
        coalesce=True,
        max_instances=1,
    )
    for name, (job, seconds) in periodic.items():
        scheduler.add_job(
            # a periodic job's failure, whatever it is, must not stop the dispatcher
            _logged(name, job, "periodic job failed", Exception),
            "interval",
            seconds=seconds,
            id=name,
            coalesce=True,
            max_instances=1,
        )
    return scheduler


def wake_time(
    upcoming: datetime, now: datetime, prefetch: float, *, holding: bool
) -> datetime | None:
    """When to wake the loop for the next job, due at ``upcoming`` (None: now): the
    prefetch before it. Jobs claimed ahead of time (``holding``) wait for their moment,
    and claiming more then would keep the loop busy just when they are due: the rest
    are claimed at that moment."""
    wake_at = upcoming - timedelta(seconds=prefetch)
    if wake_at > now:
        return wake_at
    if holding and upcoming > now:
        return upcoming
    return None


def _logged(
    name: str, job: Callable[[], Awaitable[Any]], said: str, caught: type[Exception]
) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run() -> None:
        try:
            await job()
        except caught:
            log.exception(said, extra={"job": name})

    return run
