"""How late sends started, per dispatcher and minute (the console's percentiles)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

import sqlalchemy as sa

from core.lateness import summed
from core.models import Lateness
from core.store.base import Gateway

LATENESS = Lateness.__table__  # type: ignore[attr-defined]
#: The most rows a read adds up: 200 dispatchers counting in every minute of a day.
READ_ROWS = 200 * 24 * 60


class LatenessQueries(Gateway):
    """How late sends started, per dispatcher and minute (the console's percentiles).

    A row's ``counts`` are a minute's :class:`core.lateness.LateMinutes` counts as a
    JSON array: one per bucket of ``core.lateness.LATENESS_BUCKETS`` and one for what is
    later than the last bound, then the tries marked delayed."""

    async def write_lateness(self, worker: str, minutes: Mapping[datetime, Sequence[int]]) -> None:
        """Write ``worker``'s whole counts of each minute (a row written before for the
        same minute is replaced: the dispatcher keeps a minute's counts whole while it
        may still count in it)."""
        if not minutes:
            return
        insert = self._insert()(LATENESS)
        stmt = insert.on_conflict_do_update(
            index_elements=["worker", "minute"], set_={"counts": insert.excluded.counts}
        )
        rows = [
            {"worker": worker, "minute": minute, "counts": json.dumps(list(counts))}
            for minute, counts in sorted(minutes.items())
        ]
        async with self._tx() as conn:
            await conn.execute(stmt, rows)

    async def lateness_since(self, since: datetime) -> list[int]:
        """Every dispatcher's counts of the minutes from ``since`` on, added up (the
        newest :data:`READ_ROWS` rows)."""
        query = (
            sa.select(LATENESS.c.counts)
            .where(LATENESS.c.minute >= since)
            .order_by(LATENESS.c.minute.desc())
            .limit(READ_ROWS)
        )
        async with self._read() as conn:
            rows = (await conn.execute(query)).scalars().all()
        return summed([json.loads(text) for text in rows])

    async def prune_lateness(self, *, before: datetime) -> int:
        """Delete the counts of minutes before ``before``. Returns how many rows went."""
        async with self._tx() as conn:
            result = await conn.execute(LATENESS.delete().where(LATENESS.c.minute < before))
            return int(result.rowcount)
