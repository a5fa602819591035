"""Queries about calendars (skip calendars and event feeds) and their effects on schedules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from core import routing
from core.errors import Conflict
from core.models import (
    LOCAL_TENANT,
    OPEN_STATE_VALUES,
    CalendarSource,
    Feed,
    FeedState,
    JobState,
    Member,
    Schedule,
)
from core.store.arming import first_job
from core.store.base import AUDIT, JOB, SCHEDULE, AuditEntry, Gateway

CALENDAR = CalendarSource.__table__  # type: ignore[attr-defined]
FEED = Feed.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FetchRecord:
    """The outcome of one refresh: ``body`` None when unchanged (or failed), ``error``
    set when it failed (the last good body is kept)."""

    body: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    name: str | None = None
    error: str | None = None


MEMBER = Member.__table__  # type: ignore[attr-defined]

#: How much of a calendar's last error the console reads.
ERROR_CHARS = 500


@dataclass(frozen=True)
class CalendarStatus:
    """One URL calendar's refresh state: its last successful fetch (new content or
    304) and, while its refreshes fail, since when."""

    calendar_id: int
    last_success: datetime | None
    failing_since: datetime | None


@dataclass(frozen=True)
class CalendarHealth:
    """What the metrics say about calendars, read from the database."""

    failing: int
    calendars: list[CalendarStatus]


@dataclass(frozen=True)
class FeedUse:
    """A feed that posts reminders of a calendar, and how many of them wait."""

    feed_id: int
    owner: str
    destination: str
    before_s: int
    pending: int


@dataclass(frozen=True)
class CalendarRow:
    """A calendar as the console lists it. ``fetched_at`` is the last success,
    ``checked_at`` the last try, ``error_at`` the first failure of the current run."""

    id: int
    owner: str
    source: str
    name: str
    fetched_at: datetime | None
    checked_at: datetime | None
    error_at: datetime | None
    failures: int
    last_error: str | None
    feeds: tuple[FeedUse, ...] = ()
    #: Active or paused schedules that skip its event dates.
    skipping: int = 0

    @property
    def is_url(self) -> bool:
        return not self.source.startswith("file:")

    @property
    def failing(self) -> bool:
        return self.last_error is not None

    @property
    def pending(self) -> int:
        """Reminders waiting to be sent, over all its feeds."""
        return sum(f.pending for f in self.feeds)


@dataclass(frozen=True)
class CalendarPage:
    rows: list[CalendarRow]
    #: Calendars in scope (not only on this page), and how many of them fail.
    calendars: int
    failing: int


class CalendarQueries(Gateway):
    """Calendars, feeds, and skipped occurrences."""

    # --- calendars ----------------------------------------------------------------

    async def save_calendar(
        self,
        owner: str,
        source: str,
        *,
        body: str,
        name: str,
        now: datetime,
        tenant: str = LOCAL_TENANT,
        **fetch: Any,
    ) -> CalendarSource:
        """Create or replace the owner's calendar for ``source`` with good content."""
        async with self._session() as s:
            found = await s.execute(
                select(CalendarSource).where(
                    col(CalendarSource.tenant) == tenant,
                    col(CalendarSource.owner) == owner,
                    col(CalendarSource.source) == source,
                )
            )
            cal = found.scalars().first()
            if cal is None:
                cal = CalendarSource(
                    tenant=tenant, owner=owner, source=source, created_at=now, updated_at=now
                )
                s.add(cal)
            cal.body, cal.name, cal.fetched_at, cal.checked_at = body, name, now, now
            cal.etag = fetch.get("etag")
            cal.last_modified = fetch.get("last_modified")
            cal.last_error, cal.error_at, cal.failures, cal.updated_at = None, None, 0, now
            await s.flush()
            return cal

    async def get_calendars(self, ids: Sequence[int]) -> list[CalendarSource]:
        if not ids:
            return []
        async with self._session() as s:
            stmt = select(CalendarSource).where(col(CalendarSource.id).in_(list(ids)))
            return list((await s.execute(stmt.order_by(col(CalendarSource.id)))).scalars())

    async def url_calendars(self) -> list[CalendarSource]:
        """Every calendar that is refreshed from a URL."""
        stmt = select(CalendarSource).where(~col(CalendarSource.source).startswith("file:"))
        async with self._session() as s:
            return list((await s.execute(stmt.order_by(col(CalendarSource.id)))).scalars())

    async def record_fetch(self, calendar_id: int, record: FetchRecord, *, now: datetime) -> None:
        """Store a refresh's outcome. ``checked_at`` is the last try; a success (new
        content or 304) sets ``fetched_at`` and clears the error; a failure keeps the
        last good body, counts ``failures`` in a row and keeps ``error_at`` at the first
        of them (failing since)."""
        values: dict[str, Any] = {"checked_at": now, "updated_at": now}
        if record.error is not None:
            values.update(
                last_error=record.error,
                error_at=sa.func.coalesce(
                    CALENDAR.c.error_at, sa.literal(now, CALENDAR.c.error_at.type)
                ),
                failures=CALENDAR.c.failures + 1,
            )
        else:
            values.update(last_error=None, error_at=None, failures=0, fetched_at=now)
            if record.body is not None:
                values.update(
                    body=record.body, etag=record.etag, last_modified=record.last_modified
                )
                if record.name:
                    values["name"] = record.name
        async with self._conn() as conn:
            await conn.execute(
                sa.update(CALENDAR).where(CALENDAR.c.id == calendar_id).values(**values)
            )

    # --- health (metrics and console) -----------------------------------------------

    async def calendar_health(self, *, limit: int = 1000) -> CalendarHealth:
        """How many URL calendars fail now, and the refresh state of each (the first
        ``limit`` by id: one metric series each)."""
        url = ~CALENDAR.c.source.startswith("file:")
        failing = sa.select(sa.func.count()).where(url, CALENDAR.c.last_error.is_not(None))
        rows = (
            sa.select(CALENDAR.c.id, CALENDAR.c.fetched_at, CALENDAR.c.error_at)
            .where(url)
            .order_by(CALENDAR.c.id)
            .limit(limit)
        )
        async with self._read() as conn:
            count = int(await conn.scalar(failing) or 0)
            found = [CalendarStatus(int(r[0]), r[1], r[2]) for r in await conn.execute(rows)]
        return CalendarHealth(count, found)

    async def calendars_page(
        self,
        *,
        owner: str | None = None,
        tenant: str | None = None,
        failing_only: bool = False,
        after_id: int | None = None,
        limit: int = 100,
    ) -> CalendarPage:
        """One page of calendars (of ``owner`` and ``tenant``, when given) in id order
        (keyset: ``after_id``), each with its active feeds, their waiting reminders and
        how many schedules skip its dates; and the counts of the whole scope."""
        scope: list[Any] = [] if owner is None else [CALENDAR.c.owner == owner]
        if tenant is not None:
            scope.append(CALENDAR.c.tenant == tenant)
        failing = CALENDAR.c.last_error.is_not(None)
        where = [*scope, failing] if failing_only else list(scope)
        if after_id is not None:
            where.append(CALENDAR.c.id > after_id)
        page_q = (
            sa.select(
                CALENDAR.c.id,
                CALENDAR.c.owner,
                CALENDAR.c.source,
                CALENDAR.c.name,
                CALENDAR.c.fetched_at,
                CALENDAR.c.checked_at,
                CALENDAR.c.error_at,
                CALENDAR.c.failures,
                sa.func.substr(CALENDAR.c.last_error, 1, ERROR_CHARS),
            )
            .where(*where)
            .order_by(CALENDAR.c.id)
            .limit(limit)
        )
        counted = (sa.func.count(), sa.func.sum(sa.case((failing, 1), else_=0)))
        counts_q = sa.select(*counted).where(*scope)
        async with self._read() as conn:
            rows = (await conn.execute(page_q)).all()
            counts = (await conn.execute(counts_q)).one()
            ids = [int(r[0]) for r in rows]
            feeds = await self._feed_uses(conn, ids)
            skipping = await self._skipping(conn, ids, owner, tenant)
        found = [
            CalendarRow(
                id=int(r[0]),
                owner=r[1],
                source=r[2],
                name=r[3],
                fetched_at=r[4],
                checked_at=r[5],
                error_at=r[6],
                failures=int(r[7] or 0),
                last_error=r[8],
                feeds=tuple(feeds.get(int(r[0]), ())),
                skipping=skipping.get(int(r[0]), 0),
            )
            for r in rows
        ]
        return CalendarPage(found, int(counts[0] or 0), int(counts[1] or 0))

    @staticmethod
    async def _feed_uses(conn: Any, calendar_ids: list[int]) -> dict[int, list[FeedUse]]:
        """The active feeds of these calendars, each with its waiting reminders (its
        active one-offs, :func:`_of_feed`)."""
        if not calendar_ids:
            return {}
        pending = (
            sa.select(sa.func.count())
            .where(*_of_feed(FEED.c.id), SCHEDULE.c.state == "active")
            .scalar_subquery()
        )
        q = (
            sa.select(
                FEED.c.calendar_id,
                FEED.c.id.label("feed_id"),
                FEED.c.owner,
                FEED.c.destination,
                FEED.c.before_s,
                pending.label("pending"),
            )
            .where(
                FEED.c.calendar_id.in_(calendar_ids),
                FEED.c.state == FeedState.ACTIVE.value,
            )
            .order_by(FEED.c.id)
            .limit(len(calendar_ids) * 50)
        )
        found: dict[int, list[FeedUse]] = {}
        for row in await conn.execute(q):
            use = FeedUse(
                int(row.feed_id),
                row.owner,
                row.destination,
                int(row.before_s),
                int(row.pending or 0),
            )
            found.setdefault(int(row.calendar_id), []).append(use)
        return found

    @staticmethod
    async def _skipping(
        conn: Any, calendar_ids: list[int], owner: str | None, tenant: str | None = None
    ) -> dict[int, int]:
        """How many active or paused schedules (of ``owner``, when given) skip each of
        these calendars: one scan, grouped by the list of calendars a schedule names."""
        if not calendar_ids:
            return {}
        lists = sa.cast(SCHEDULE.c.skip_calendars, sa.Text)
        q = sa.select(lists, sa.func.count()).where(
            SCHEDULE.c.state.in_(["active", "paused"]),
            sa.func.coalesce(lists, "[]") != "[]",
        )
        if owner is not None:
            q = q.where(SCHEDULE.c.owner == owner)
        if tenant is not None:
            q = q.where(SCHEDULE.c.tenant == tenant)
        wanted, found = set(calendar_ids), dict.fromkeys(calendar_ids, 0)
        for text, count in await conn.execute(q.group_by(lists).limit(10_000)):
            try:
                named = {int(i) for i in json.loads(text or "[]")}
            except (ValueError, TypeError):
                continue
            for calendar_id in named & wanted:
                found[calendar_id] += int(count)
        return found

    # --- schedules that skip --------------------------------------------------------

    async def schedules_skipping(self) -> list[Schedule]:
        """Active and paused schedules that name skip calendars."""
        stmt = select(Schedule).where(
            col(Schedule.state).in_(["active", "paused"]),
            sa.func.coalesce(sa.cast(SCHEDULE.c.skip_calendars, sa.Text), "[]") != "[]",
        )
        async with self._session() as s:
            return list((await s.execute(stmt)).scalars())

    async def apply_skips(
        self,
        schedule: Schedule,
        *,
        calendar_ids: list[int],
        skip: dict[str, Any],
        skipped: Sequence[tuple[datetime, str]],
        after: datetime,
        now: datetime,
        next_run: datetime | None,
        audit: AuditEntry | None = None,
    ) -> Schedule:
        """Record a schedule's skip calendars and blackout data, and make its jobs say
        so: each occurrence in ``skipped`` (all after ``after``) becomes a ``skipped``
        job naming its event (a waiting job there is turned into one), earlier-recorded
        skips after ``after`` that no longer apply are removed, and when the waiting
        job was skipped the schedule is armed at ``next_run``. Raises Conflict when the
        schedule changed meanwhile."""
        assert schedule.id is not None
        sid = schedule.id
        options = {k: v for k, v in schedule.options.items() if k != "skip"}
        if skip.get("days") or skip.get("spans"):
            options["skip"] = skip
        async with self._session() as s:
            result = await s.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.id == sid, SCHEDULE.c.version == schedule.version)
                .values(
                    options=options,
                    skip_calendars=calendar_ids,
                    version=SCHEDULE.c.version + 1,
                    updated_at=now,
                )
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(f"Schedule {sid} changed meanwhile; try again.")
            await s.execute(
                sa.delete(JOB).where(
                    JOB.c.schedule_id == sid,
                    JOB.c.state == JobState.SKIPPED.value,
                    JOB.c.occurrence_at > after,
                )
            )
            waiting = await s.execute(
                sa.select(JOB.c.id, JOB.c.occurrence_at).where(
                    JOB.c.schedule_id == sid,
                    JOB.c.state.in_(OPEN_STATE_VALUES),
                )
            )
            open_at: dict[datetime, list[int]] = {}
            for row in waiting:  # one job per recipient of an occurrence
                open_at.setdefault(row.occurrence_at, []).append(row.id)
            moved = False
            for occurrence, name in skipped:
                note = f"Skipped: {name}"[:2000]
                if occurrence in open_at:
                    moved = True
                    await s.execute(
                        sa.update(JOB)
                        .where(JOB.c.id.in_(open_at[occurrence]))
                        .values(state=JobState.SKIPPED.value, last_error=note, finished_at=now)
                    )
                await self._skipped_jobs(s, schedule, occurrence, note, now)
            if moved and schedule.state == "active":
                if next_run is not None:
                    await self._arm(s, sid, next_run, now)  # type: ignore[attr-defined]
                else:
                    await s.execute(
                        sa.update(SCHEDULE)
                        .where(SCHEDULE.c.id == sid)
                        .values(state="completed", next_run_at=None, last_outcome="skipped")
                    )
            if audit is not None:
                await self._audit(s, audit, now)
            updated = await s.get(Schedule, sid, populate_existing=True)
            assert updated is not None
            return updated

    async def _skipped_jobs(
        self, s: AsyncSession, schedule: Schedule, occurrence: datetime, note: str, now: datetime
    ) -> None:
        """A ``skipped`` job for each recipient of ``schedule`` that has no job for
        ``occurrence`` yet (one that has keeps it: turned skipped if it was waiting)."""
        assert schedule.id is not None
        values = {"destination": schedule.destination, "timezone": schedule.timezone}
        rows = [
            {
                **first_job(schedule.id, values, recipient, occurrence, now),
                "state": JobState.SKIPPED.value,
                "last_error": note,
                "finished_at": now,
            }
            for recipient in routing.from_json(schedule.recipients, schedule.destination)
        ]
        await s.execute(
            self._insert()(JOB)
            .values(rows)
            .on_conflict_do_nothing(
                index_elements=["schedule_id", "recipient", "occurrence_at", "ladder"]
            )
        )

    # --- feeds --------------------------------------------------------------------------

    async def add_feed(self, feed: Feed, *, audit: AuditEntry, now: datetime) -> Feed:
        async with self._session() as s:
            s.add(feed)
            await s.flush()
            entry = replace(audit, object_type="feed", object_id=str(feed.id))
            await self._audit(s, entry, now)
            return feed

    async def list_feeds(
        self, owner: str | None = None, *, tenant: str | None = None
    ) -> list[Feed]:
        stmt = select(Feed).where(col(Feed.state) == FeedState.ACTIVE.value)
        if owner is not None:
            stmt = stmt.where(col(Feed.owner) == owner)
        if tenant is not None:
            stmt = stmt.where(col(Feed.tenant) == tenant)
        async with self._session() as s:
            return list((await s.execute(stmt.order_by(col(Feed.id)))).scalars())

    async def get_feed(self, feed_id: int) -> Feed | None:
        async with self._session() as s:
            return await s.get(Feed, feed_id)

    async def remove_feed(self, feed_id: int, *, audit: AuditEntry, now: datetime) -> int:
        """Mark the feed removed and cancel its waiting reminders (its own,
        :func:`_of_feed`: nobody else's schedules, whatever their keys); returns how many."""
        async with self._session() as s:
            await s.execute(
                sa.update(FEED)
                .where(FEED.c.id == feed_id)
                .values(state=FeedState.REMOVED.value, updated_at=now)
            )
            ids = sa.select(SCHEDULE.c.id).where(
                *_of_feed(sa.literal(feed_id)), SCHEDULE.c.state == "active"
            )
            await s.execute(
                sa.update(JOB)
                .where(
                    JOB.c.schedule_id.in_(ids),
                    JOB.c.state.in_(OPEN_STATE_VALUES),
                )
                .values(state=JobState.CANCELLED.value, updated_at=now, finished_at=now)
            )
            result = await s.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.id.in_(ids.scalar_subquery()))
                .values(state="cancelled", next_run_at=None, updated_at=now)
            )
            await self._audit(s, audit, now)
            return int(result.rowcount)  # type: ignore[attr-defined]

    async def feed_reminders(self, feed_id: int) -> list[Schedule]:
        """A feed's reminder schedules (:func:`_of_feed`), soonest first."""
        stmt = select(Schedule).where(*_of_feed(sa.literal(feed_id)))
        async with self._session() as s:
            return list((await s.execute(stmt.order_by(col(Schedule.starts_at)))).scalars())

    async def cancelled_by_refresh(self, schedule_ids: Sequence[int]) -> set[int]:
        """Which of these schedules (feed reminders) a feed's refresh cancelled, audited
        ``feed.reminder_cancel`` in the same transaction, rather than a person."""
        found: set[int] = set()
        wanted = [str(i) for i in schedule_ids]
        async with self._read() as conn:
            for start in range(0, len(wanted), 500):
                rows = await conn.execute(
                    sa.select(AUDIT.c.object_id)
                    .where(
                        AUDIT.c.object_type == "schedule",
                        AUDIT.c.object_id.in_(wanted[start : start + 500]),
                        AUDIT.c.action == "feed.reminder_cancel",
                    )
                    .distinct()
                )
                found.update(int(row[0]) for row in rows)
        return found

    async def member_by_calendar_token(self, token: str) -> tuple[str, str] | None:
        """Whose calendar feed ``token`` opens, if anyone's: ``(tenant, member id)``."""
        async with self._read() as conn:
            found = await conn.execute(
                sa.select(MEMBER.c.tenant, MEMBER.c.id).where(MEMBER.c.calendar_token == token)
            )
            row = found.first()
            return None if row is None else (str(row[0]), str(row[1]))


def _of_feed(feed_id: Any) -> list[Any]:
    """The conditions on ``schedule`` of a feed's reminders: linked to the feed
    (``schedule.feed_id``, set only by Herald) and of the feed's own owner and tenant.
    Never the ``feed:<id>:`` key prefix, which a member could give their own schedule."""
    feed = FEED.alias("reminded_feed")  # its own FROM, whatever the outer query correlates
    return [
        SCHEDULE.c.feed_id == feed_id,
        sa.exists().where(
            feed.c.id == SCHEDULE.c.feed_id,
            feed.c.owner == SCHEDULE.c.owner,
            feed.c.tenant == SCHEDULE.c.tenant,
        ),
    ]
