"""What recording a batch of outcomes writes besides the outcomes (core.events): events
for the hooks and the pull feed, notices for chat authors, each schedule's failure
streak, and the pause of a recurring schedule that keeps failing. Run inside the
transaction of :meth:`core.store.queue.QueueQueries.finish`, on either database; a
batch with nothing to tell runs no statement here.

Events that happen outside the dispatcher (a person's pause, a provider's receipt) are
written by :func:`record_events` in their own transaction, when someone listens."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa

from core.events import (
    ALWAYS,
    AUTO_PAUSE_ACTOR,
    CHAT_PLATFORMS,
    EventRow,
    EventType,
    NoticeKind,
    NoticeRow,
    OutcomePolicy,
    auto_pause_reason,
    job_events,
    job_notices,
    schedule_data,
)
from core.models import WAITING_SQL, Event, Notice

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

#: Failed outcomes of a recurring schedule's jobs (what a streak counts).
FAILED_STATES = frozenset({"dead", "expired"})

_EVENT_INSERT = """
INSERT INTO event (tx, tenant, type, at, schedule_id, job_id, owner, key, data)
VALUES (0, %s, %s, %s, %s, %s, %s, %s, %s)
"""
_NOTICE_INSERT = """
INSERT INTO notice (tenant, owner, kind, schedule_id, job_id, reason, at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
# once per occurrence: a second recipient's failure of the same occurrence counts no
# more, and an occurrence another recipient was delivered is not a failed one
_STREAK = """
UPDATE schedule SET failed_streak = failed_streak + 1, failed_through = %s
WHERE id = %s AND (failed_through IS NULL OR failed_through < %s)
    AND NOT EXISTS (SELECT 1 FROM job WHERE job.schedule_id = schedule.id
        AND job.occurrence_at = %s AND job.state = 'delivered')
"""
# a delivery in the batch resets the streak even when a failure came after it
_RESET = """
UPDATE schedule SET failed_streak = 0 WHERE id IN {ids} AND failed_streak > 0
"""
_PAUSE = """
UPDATE schedule SET state = 'paused', next_run_at = NULL, version = version + 1,
    updated_at = %s
WHERE id IN {ids} AND state = 'active' AND rrule IS NOT NULL AND auto_pause
    AND failed_streak >= %s
RETURNING id, tenant, owner, failed_streak
"""
_CANCEL_WAITING = f"""
UPDATE job SET state = 'cancelled', finished_at = %s, updated_at = %s
WHERE schedule_id IN {{ids}} AND {WAITING_SQL}
"""
_AUDIT_INSERT = """
INSERT INTO audit (at, tenant, actor, action, object_type, object_id, details, surface)
VALUES (%s, %s, %s, 'schedule.pause', 'schedule', %s, %s, 'system')
"""


class Db(Protocol):
    """The recorder's statements (core.store.queue._Recorder on SQLite, _PgRecorder)."""

    def at(self, value: datetime | None) -> Any: ...
    def ids(self, ids: Sequence[int]) -> Any: ...
    def rows(self, statement: str, params: tuple[Any, ...]) -> list[Any]: ...
    def run(self, statement: str, params: tuple[Any, ...]) -> None: ...
    def many(self, statement: str, rows: list[tuple[Any, ...]]) -> None: ...


def failed_occurrences(
    items: Sequence[Any], owned: set[int], failed: set[int]
) -> dict[int, datetime]:
    """Recurring schedules among ``failed`` (whose latest outcome in the batch failed)
    and the latest occurrence of theirs that failed."""
    latest: dict[int, datetime] = {}
    for item in items:
        job = item.job
        if (
            item.state in FAILED_STATES
            and job.id in owned
            and job.rrule is not None
            and job.schedule_id in failed
        ):
            seen = latest.get(job.schedule_id)
            if seen is None or seen < job.occurrence_at:
                latest[job.schedule_id] = job.occurrence_at
    return latest


def delivered_too(items: Sequence[Any], owned: set[int], failed: Sequence[int]) -> list[int]:
    """Schedules among ``failed`` that had a job delivered in the batch too (their
    streak is reset: the outcome the batch read last is only the last in its order)."""
    among = set(failed)
    return sorted(
        {
            item.job.schedule_id
            for item in items
            if item.state == "delivered" and item.job.id in owned and item.job.schedule_id in among
        }
    )


def record(
    db: Db,
    items: Sequence[Any],
    owned: set[int],
    failed: Sequence[int],
    now: datetime,
    policy: OutcomePolicy,
) -> None:
    """Events, notices, streaks and pauses of a recorded batch (``failed``: the
    schedules whose latest outcome in it failed)."""
    events = job_events(items, owned, now, policy)
    notices = job_notices(items, owned, now)
    streaks = failed_occurrences(items, owned, set(failed)) if failed else {}
    if streaks:
        at = db.at(now)
        reset = delivered_too(items, owned, failed)
        if reset:
            db.run(_RESET, (db.ids(reset),))
        db.many(_STREAK, [(db.at(o), sid, db.at(o), db.at(o)) for sid, o in streaks.items()])
        if policy.auto_pause_after > 0:
            paused = db.rows(_PAUSE, (at, db.ids(sorted(streaks)), policy.auto_pause_after))
            if paused:
                _paused(db, paused, now, events, notices)
    write_events(db, events)
    write_notices(db, notices)


def _paused(
    db: Db,
    paused: list[Any],
    now: datetime,
    events: list[EventRow],
    notices: list[NoticeRow],
) -> None:
    at = db.at(now)
    db.run(_CANCEL_WAITING, (at, at, db.ids([int(row[0]) for row in paused])))
    audits = pause_told(paused, now, events, notices)
    db.many(_AUDIT_INSERT, [(at, *audit) for audit in audits])


def pause_told(
    paused: list[Any], now: datetime, events: list[EventRow], notices: list[NoticeRow]
) -> list[tuple[str, str, str, str]]:
    """For each schedule the system paused (``(id, tenant, owner, streak)`` rows): its
    event and its chat owner's notice (appended), and its audit row's ``(tenant,
    actor, schedule id, details)``. A pause by the system is an event whether or not a
    hook hears it, as failures are (it is as rare, and the pull feed shows it); a
    person's pause only when heard (:func:`record_events`)."""
    audits = []
    for schedule_id, tenant, owner, streak in paused:
        reason = auto_pause_reason(int(streak))
        details = json.dumps({"reason": reason, "failed": int(streak), "by": "system"})
        audits.append((tenant, AUTO_PAUSE_ACTOR, str(schedule_id), details))
        events.append(
            EventRow(
                tenant=tenant,
                type=EventType.SCHEDULE_PAUSED.value,
                at=now,
                schedule_id=int(schedule_id),
                job_id=None,
                owner=owner,
                key=None,
                data=schedule_data(int(schedule_id), reason, now, by="system"),
            )
        )
        if str(owner).startswith(CHAT_PLATFORMS):
            notices.append(
                NoticeRow(
                    tenant, owner, NoticeKind.PAUSED.value, int(schedule_id), None, reason, now
                )
            )
    return audits


def write_events(db: Db, events: list[EventRow]) -> None:
    db.many(
        _EVENT_INSERT,
        [
            (e.tenant, e.type, db.at(e.at), e.schedule_id, e.job_id, e.owner, e.key, e.data)
            for e in events
        ],
    )


def write_notices(db: Db, notices: list[NoticeRow]) -> None:
    db.many(
        _NOTICE_INSERT,
        [
            (n.tenant, n.owner, n.kind, n.schedule_id, n.job_id, n.reason, db.at(n.at))
            for n in notices
        ],
    )


# --- PostgreSQL: the same, the batch as arrays ------------------------------------------

_PG_EVENTS = """
INSERT INTO event (tx, tenant, type, at, schedule_id, job_id, owner, key, data)
SELECT pg_current_xact_id()::text::bigint, e.*
FROM unnest(%(tenant)s::text[], %(type)s::text[], %(at)s::timestamptz[], %(schedule_id)s::int[],
    %(job_id)s::bigint[], %(owner)s::text[], %(key)s::text[], %(data)s::text[])
    AS e(tenant, type, at, schedule_id, job_id, owner, key, data)
"""
_PG_NOTICES = """
INSERT INTO notice (tenant, owner, kind, schedule_id, job_id, reason, at)
SELECT * FROM unnest(%(tenant)s::text[], %(owner)s::text[], %(kind)s::text[],
    %(schedule_id)s::int[], %(job_id)s::bigint[], %(reason)s::text[], %(at)s::timestamptz[])
"""
_PG_STREAKS = """
UPDATE schedule SET failed_streak = failed_streak + 1, failed_through = n.occurrence
FROM unnest(%(ids)s::int[], %(occurrence)s::timestamptz[]) AS n(id, occurrence)
WHERE schedule.id = n.id
    AND (schedule.failed_through IS NULL OR schedule.failed_through < n.occurrence)
    AND NOT EXISTS (SELECT 1 FROM job WHERE job.schedule_id = n.id
        AND job.occurrence_at = n.occurrence AND job.state = 'delivered')
"""
_PG_RESET = """
UPDATE schedule SET failed_streak = 0 WHERE id = ANY(%(ids)s::int[]) AND failed_streak > 0
"""
_PG_PAUSE = """
UPDATE schedule SET state = 'paused', next_run_at = NULL, version = version + 1,
    updated_at = %(now)s
WHERE id = ANY(%(ids)s::int[]) AND state = 'active' AND rrule IS NOT NULL AND auto_pause
    AND failed_streak >= %(after)s
RETURNING id, tenant, owner, failed_streak
"""
_PG_CANCEL_WAITING = f"""
UPDATE job SET state = 'cancelled', finished_at = %(now)s, updated_at = %(now)s
WHERE schedule_id = ANY(%(ids)s::int[]) AND {WAITING_SQL}
"""
_PG_AUDIT = """
INSERT INTO audit (at, tenant, actor, action, object_type, object_id, details, surface)
SELECT %(now)s, a.tenant, a.actor, 'schedule.pause', 'schedule', a.object_id,
    a.details::json, 'system'
FROM unnest(%(tenant)s::text[], %(actor)s::text[], %(object_id)s::text[],
    %(details)s::text[]) AS a(tenant, actor, object_id, details)
"""


async def record_pg(
    conn: AsyncConnection,
    items: Sequence[Any],
    owned: set[int],
    failed: Sequence[int],
    now: datetime,
    policy: OutcomePolicy,
) -> None:
    """:func:`record` on PostgreSQL."""
    events = job_events(items, owned, now, policy)
    notices = job_notices(items, owned, now)
    streaks = failed_occurrences(items, owned, set(failed)) if failed else {}
    if streaks:
        ids = sorted(streaks)
        reset = delivered_too(items, owned, failed)
        if reset:
            await conn.exec_driver_sql(_PG_RESET, {"ids": reset})
        await conn.exec_driver_sql(
            _PG_STREAKS, {"ids": ids, "occurrence": [streaks[i] for i in ids]}
        )
        if policy.auto_pause_after > 0:
            paused = list(
                await conn.exec_driver_sql(
                    _PG_PAUSE, {"now": now, "ids": ids, "after": policy.auto_pause_after}
                )
            )
            if paused:
                await conn.exec_driver_sql(
                    _PG_CANCEL_WAITING, {"now": now, "ids": [int(r[0]) for r in paused]}
                )
                audits = pause_told(paused, now, events, notices)
                await conn.exec_driver_sql(
                    _PG_AUDIT,
                    {
                        "now": now,
                        "tenant": [a[0] for a in audits],
                        "actor": [a[1] for a in audits],
                        "object_id": [a[2] for a in audits],
                        "details": [a[3] for a in audits],
                    },
                )
    await write_events_pg(conn, events)
    if notices:
        await conn.exec_driver_sql(_PG_NOTICES, columns(notices))


async def write_events_pg(conn: AsyncConnection, events: list[EventRow]) -> None:
    if events:
        await conn.exec_driver_sql(_PG_EVENTS, columns(events))


def columns(rows: Sequence[EventRow] | Sequence[NoticeRow]) -> dict[str, list[Any]]:
    """Rows of one kind as one array per field (PostgreSQL's ``unnest`` parameters)."""
    return {f.name: [getattr(r, f.name) for r in rows] for f in dataclasses.fields(rows[0])}


# --- events recorded outside the dispatcher ---------------------------------------------

_EVENT = Event.__table__  # type: ignore[attr-defined]
_NOTICE = Notice.__table__  # type: ignore[attr-defined]


async def record_notices(conn: AsyncConnection, rows: Sequence[NoticeRow]) -> None:
    """Write chat authors' notices in the caller's transaction (outside the
    dispatcher's batch: a receipt that made a dead letter)."""
    if rows:
        await conn.execute(_NOTICE.insert(), [dataclasses.asdict(n) for n in rows])


_HEARD = sa.text("SELECT types FROM event_hook WHERE tenant = :t AND state = 'active'")


async def heard(conn: AsyncConnection, tenant: str) -> frozenset[str]:
    """The event types the active hooks of ``tenant`` hear, read in the caller's
    transaction (a person's pause, a receipt: never the dispatcher's hot path)."""
    types: set[str] = set()
    for (value,) in await conn.execute(_HEARD, {"t": tenant}):
        listed = json.loads(value) if isinstance(value, str) else value
        types.update(str(t) for t in listed or ())
    return frozenset(types)


async def record_events(conn: AsyncConnection, rows: Sequence[EventRow]) -> int:
    """Write the events of ``rows`` someone listens to (:data:`core.events.ALWAYS`
    types, and the types a hook of their tenant hears) in the caller's transaction,
    on either database: ``tx`` is the writing transaction on PostgreSQL, 0 on SQLite.
    Returns how many were written."""
    hearing: dict[str, frozenset[str]] = {}
    wanted: list[EventRow] = []
    for row in rows:
        if row.type not in ALWAYS:
            if row.tenant not in hearing:
                hearing[row.tenant] = await heard(conn, row.tenant)
            if row.type not in hearing[row.tenant]:
                continue
        wanted.append(row)
    if not wanted:
        return 0
    tx: Any = (
        sa.literal_column("pg_current_xact_id()::text::bigint")
        if conn.dialect.name == "postgresql"
        else 0
    )
    await conn.execute(_EVENT.insert().values(tx=tx), [dataclasses.asdict(e) for e in wanted])
    return len(wanted)


def ended_events(ended: Sequence[tuple[int, str, str]], now: datetime) -> list[EventRow]:
    """The ``schedule.ended`` events of schedules that completed (``(id, tenant,
    owner)``): their last occurrence was tried and nothing of theirs waits."""
    return [
        EventRow(
            tenant=tenant,
            type=EventType.SCHEDULE_ENDED.value,
            at=now,
            schedule_id=schedule_id,
            job_id=None,
            owner=owner,
            key=None,
            data=schedule_data(schedule_id, "its last occurrence was tried", now),
        )
        for schedule_id, tenant, owner in ended
    ]
