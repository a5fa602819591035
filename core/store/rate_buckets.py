"""Queries of the shared rate limits: send slots taken from each destination's bucket,
and a provider's pause written into it, shared by every dispatcher (the arithmetic is
:mod:`core.ratelimit`)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from core.models import RateBucket, sqlite_utc_text
from core.ratelimit import RateLimit, allocate, allocate_ahead, next_slot, pause
from core.store.base import Gateway, aware, sqlite_datetime

BUCKET = RateBucket.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Slots:
    """Send slots taken from a destination's shared bucket, in order, and when its
    next one is free (for the jobs that got none)."""

    times: list[datetime]
    next_free: datetime
    #: How many of the first times are urgent jobs' slots taken ahead of slots handed
    #: out already (core.ratelimit.allocate_ahead).
    ahead: int = 0


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_EPOCH_TEXT = sqlite_utc_text(_EPOCH)
_SQLITE_BUCKET_INSERT = (
    "INSERT INTO rate_bucket (destination, tat) VALUES (?, ?) ON CONFLICT (destination) DO NOTHING"
)
_SQLITE_BUCKET_SELECT = (
    "SELECT destination, tat FROM rate_bucket WHERE destination IN (SELECT value FROM json_each(?))"
)
_SQLITE_BUCKET_UPDATE = "UPDATE rate_bucket SET tat = ? WHERE destination = ?"


def lane(key: str) -> str:
    """The bucket row of ``key``'s urgent lane: a name no destination has (no channel
    kind is ``urgent``), short whatever the destination's length."""
    return "urgent:" + hashlib.sha256(key.encode()).hexdigest()


class RateBucketQueries(Gateway):
    """The shared rate-limit buckets, one row per destination."""

    async def reserve_slots(
        self,
        wanted: Mapping[str, tuple[int, RateLimit]],
        *,
        now: datetime,
        window: float,
        not_before: Mapping[str, datetime] | None = None,
        urgent: Mapping[str, tuple[int, datetime | None]] | None = None,
    ) -> dict[str, Slots]:
        """Take send slots from the shared buckets of destinations: for each, up to the
        count wanted, none before its ``not_before`` (when its first job is due) and
        none later than ``window`` seconds from now, under its limit. One transaction;
        the buckets' rows are locked in one order, so dispatchers taking slots at the
        same moment queue behind each other and share each limit.

        ``urgent``: how many of a destination's count are urgent jobs (the first ones)
        and when the first of them is due: they take their slots ahead of those the
        bucket handed out already, from its urgent lane, a row of its own
        (:func:`core.ratelimit.allocate_ahead` says what the destination then sees)."""
        if not wanted:
            return {}
        ahead = {k: u for k, u in (urgent or {}).items() if u[0] > 0 and k in wanted}
        keys = sorted(wanted)
        found: dict[str, Slots] = {}
        starts = not_before or {}

        def take(tats: dict[str, datetime | None]) -> None:
            for key in keys:
                count, limit = wanted[key]
                tat, slots, passed = tats.get(key), list[datetime](), 0
                if key in ahead:
                    first, due = ahead[key]
                    first = min(first, count)
                    slots, tat, tats[lane(key)], passed = allocate_ahead(
                        tat, tats.get(lane(key)), now, first, limit, window, start=due
                    )
                    count = count - first if len(slots) == first else 0
                rest, tat = allocate(tat, now, count, limit, window, start=starts.get(key))
                tats[key] = tat
                found[key] = Slots(slots + rest, next_slot(tat, now, limit), passed)

        await self._buckets(sorted(keys + [lane(k) for k in ahead]), take)
        return found

    async def pause_bucket(self, key: str, until: datetime, limit: RateLimit) -> None:
        """The provider asked that ``key`` be left alone until ``until`` (Retry-After):
        its shared bucket hands out no slot before then, to any dispatcher."""

        def paused(tats: dict[str, datetime | None]) -> None:
            tats[key] = pause(tats.get(key), until, limit)

        await self._buckets([key], paused)

    async def _buckets(
        self, keys: list[str], change: Callable[[dict[str, datetime | None]], None]
    ) -> None:
        """The buckets of ``keys`` (sorted), locked for one transaction: ``change`` is
        given their theoretical arrival times, by key, and what it sets is written back.

        The statements do not depend on how many keys there are (the rows are
        inserted and updated as one statement run for many rows), so each is compiled
        once, not per call: a statement of a row per key cost more to compile than the
        database took to run it, on the event loop. On SQLite the whole transaction,
        ``change`` included, is one round trip to the driver's thread
        (:meth:`Gateway._sqlite_run`): a reservation made of a round trip per
        statement waited ~10 ms in a webhook burst, and the sends waited for it."""
        if self.backend == "sqlite":

            def work(sqlite: sqlite3.Connection) -> None:
                sqlite.executemany(_SQLITE_BUCKET_INSERT, [(k, _EPOCH_TEXT) for k in keys])
                rows = sqlite.execute(_SQLITE_BUCKET_SELECT, (json.dumps(keys),)).fetchall()
                tats: dict[str, datetime | None] = {row[0]: sqlite_datetime(row[1]) for row in rows}
                change(tats)
                sqlite.executemany(
                    _SQLITE_BUCKET_UPDATE,
                    [(sqlite_utc_text(t), k) for k in keys if (t := tats[k]) is not None],
                )

            await self._sqlite_run(work)
            return
        async with self._tx() as conn:
            await conn.execute(
                self._insert()(BUCKET).on_conflict_do_nothing(index_elements=["destination"]),
                [{"destination": k, "tat": _EPOCH} for k in keys],
            )
            locked = (
                sa.select(BUCKET.c.destination, BUCKET.c.tat)
                .where(BUCKET.c.destination.in_(keys))
                # one order for every dispatcher: two taking slots queue, never deadlock
                .order_by(BUCKET.c.destination)
                .with_for_update()
            )
            tats = {row[0]: aware(row[1]) for row in await conn.execute(locked)}
            change(tats)
            await conn.execute(
                sa.update(BUCKET)
                .where(BUCKET.c.destination == sa.bindparam("key"))
                .values(tat=sa.bindparam("new_tat")),
                [{"key": k, "new_tat": tats[k]} for k in keys],
            )
