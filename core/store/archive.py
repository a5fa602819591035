"""Finished history moved to the archive tables past the retention (HERALD_RETENTION_DAYS),
read back when asked, pruned after HERALD_ARCHIVE_DAYS."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from core.models import ATTEMPT_ARCHIVE, JOB_ARCHIVE, Attempt, Event, Job, JobState, Notice
from core.store.base import ATTEMPT, JOB, SCHEDULE, Gateway

EVENT = Event.__table__  # type: ignore[attr-defined]
NOTICE = Notice.__table__  # type: ignore[attr-defined]

#: The states a job is archived in. Dead letters are not among them: they wait for an
#: admin's decision, capped by their own age and count (cap_dead_letters), and keep
#: their attempts until the cap discards them; a discarded job is archived with its
#: attempts at the next housekeeping after the retention.
ARCHIVED_STATES = (
    JobState.DELIVERED.value,
    JobState.ACKNOWLEDGED.value,  # a message sent until done, someone marked it done
    JobState.EXPIRED.value,
    JobState.CANCELLED.value,
    JobState.DISCARDED.value,
    JobState.SKIPPED.value,
)

_JOB_COLUMNS = [c.name for c in JOB.columns]
_ATTEMPT_COLUMNS = [c.name for c in ATTEMPT.columns]


#: Rows moved out of the active tables in one housekeeping after which PostgreSQL's
#: job and attempt tables are vacuumed at once (:meth:`ArchiveQueries.vacuum_after_archive`).
VACUUM_AFTER = 50_000


class ArchiveQueries(Gateway):
    """Finished history moved to the archive tables past the retention, read back when
    asked, pruned after HERALD_ARCHIVE_DAYS."""

    # --- moving and pruning (the housekeeping) --------------------------------------

    async def vacuum_after_archive(self, moved: int) -> bool:
        """On PostgreSQL, after ``moved`` rows left the job and attempt tables, vacuum
        and analyze them at once when that is many (:data:`VACUUM_AFTER`) rather than
        leave the claim to walk the dead rows until autovacuum comes: measured right
        after a million were archived, a claim took 1.15x and a schedule's jobs 1.71x
        their time on a vacuumed table (bench/RESULTS.md, Archive). VACUUM takes no lock
        that stops reads or writes. Whether it ran."""
        if self.backend != "postgresql" or moved < VACUUM_AFTER:
            return False
        async with self._engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM (ANALYZE) job, attempt")
        return True

    async def archive_finished(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Move jobs that finished before ``before`` (delivered, acknowledged, expired,
        cancelled, discarded, skipped: never a dead letter) with their attempts into the
        archive tables, up to ``batch`` jobs per transaction so no lock is held long.
        Each batch copies the rows and deletes them in one transaction: a crash leaves
        a batch moved or not at all, and the next run moves only what is still there.
        Attempts of jobs that stay (dead letters, jobs still retrying) stay with them.
        Returns how many jobs and attempts moved."""
        counts = {"jobs": 0, "attempts": 0}
        while True:
            async with self._tx() as conn:
                jobs, attempts = await self._archive_batch(conn, before, batch)
            counts["jobs"] += jobs
            counts["attempts"] += attempts
            if jobs < batch:
                return counts

    async def _archive_batch(
        self, conn: AsyncConnection, before: datetime, batch: int
    ) -> tuple[int, int]:
        """One batch of :meth:`archive_finished`, in the caller's transaction: the jobs
        chosen are locked (another dispatcher's housekeeping skips them on
        PostgreSQL), copied with their attempts, then deleted."""
        chosen = (
            sa.select(JOB.c.id)
            .where(JOB.c.state.in_(ARCHIVED_STATES), JOB.c.finished_at < before)
            .limit(batch)
            .with_for_update(skip_locked=True)
        )
        if conn.dialect.name == "sqlite":
            # SQLite gives a new row the greatest id in its table + 1: the newest job
            # and the newest attempt's job stay, so an archived id is never given again
            newest_job = sa.select(sa.func.max(JOB.c.id)).scalar_subquery()
            newest_try = (
                sa.select(ATTEMPT.c.job_id).order_by(ATTEMPT.c.id.desc()).limit(1).scalar_subquery()
            )
            chosen = chosen.where(
                JOB.c.id < newest_job, JOB.c.id != sa.func.coalesce(newest_try, 0)
            )
        ids = list((await conn.execute(chosen)).scalars())
        if not ids:
            return 0, 0
        await conn.execute(
            sa.insert(JOB_ARCHIVE).from_select(
                _JOB_COLUMNS,
                sa.select(*(JOB.c[name] for name in _JOB_COLUMNS)).where(JOB.c.id.in_(ids)),
            )
        )
        await conn.execute(
            sa.insert(ATTEMPT_ARCHIVE).from_select(
                _ATTEMPT_COLUMNS,
                sa.select(*(ATTEMPT.c[name] for name in _ATTEMPT_COLUMNS)).where(
                    ATTEMPT.c.job_id.in_(ids)
                ),
            )
        )
        attempts = await conn.execute(sa.delete(ATTEMPT).where(ATTEMPT.c.job_id.in_(ids)))
        await conn.execute(sa.delete(JOB).where(JOB.c.id.in_(ids)))
        return len(ids), int(attempts.rowcount)

    async def prune_archive(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Delete archived jobs that finished before ``before`` with their archived
        attempts, ``batch`` jobs per transaction. Returns how many of each went."""
        counts = {"jobs": 0, "attempts": 0}
        old = sa.select(JOB_ARCHIVE.c.id).where(JOB_ARCHIVE.c.finished_at < before).limit(batch)
        while True:
            async with self._tx() as conn:
                ids = list((await conn.execute(old)).scalars())
                if ids:
                    gone = await conn.execute(
                        sa.delete(ATTEMPT_ARCHIVE).where(ATTEMPT_ARCHIVE.c.job_id.in_(ids))
                    )
                    await conn.execute(sa.delete(JOB_ARCHIVE).where(JOB_ARCHIVE.c.id.in_(ids)))
                    counts["attempts"] += int(gone.rowcount)
            counts["jobs"] += len(ids)
            if len(ids) < batch:
                return counts

    async def prune_events(self, *, before: datetime, batch: int = 5000) -> int:
        """Delete events that happened before ``before``, ``batch`` per transaction
        (``GET /v1/events`` serves them as long as the history they tell of)."""
        return await self._prune_rows(EVENT, EVENT.c.at < before, batch)

    async def prune_notices(self, *, before: datetime, batch: int = 5000) -> int:
        """Delete notices written before ``before`` that no adapter told (their author
        was unreachable for the whole retention), ``batch`` per transaction."""
        return await self._prune_rows(NOTICE, NOTICE.c.at < before, batch)

    async def _prune_rows(
        self, table: sa.Table, condition: sa.ColumnElement[bool], batch: int
    ) -> int:
        """Delete ``table``'s rows matching ``condition``, ``batch`` per transaction."""
        old = sa.select(table.c.id).where(condition).limit(batch).scalar_subquery()
        total = 0
        while True:
            async with self._tx() as conn:
                deleted = int(
                    (await conn.execute(sa.delete(table).where(table.c.id.in_(old)))).rowcount
                )
            total += deleted
            if deleted < batch:
                return total

    # --- reading it back ------------------------------------------------------------

    async def archived_jobs(self, schedule_id: int, *, tenant: str, limit: int = 50) -> list[Job]:
        """A schedule of ``tenant``'s archived jobs, latest occurrence first."""
        stmt = (
            sa.select(JOB_ARCHIVE)
            .join(SCHEDULE, SCHEDULE.c.id == JOB_ARCHIVE.c.schedule_id)
            .where(JOB_ARCHIVE.c.schedule_id == schedule_id, SCHEDULE.c.tenant == tenant)
            .order_by(JOB_ARCHIVE.c.occurrence_at.desc(), JOB_ARCHIVE.c.id.desc())
            .limit(limit)
        )
        async with self._read() as conn:
            return [Job(**row._mapping) for row in await conn.execute(stmt)]

    async def archived_job(self, job_id: int, *, tenant: str) -> Job | None:
        """An archived job of ``tenant``'s, if there is one of that id."""
        stmt = (
            sa.select(JOB_ARCHIVE)
            .join(SCHEDULE, SCHEDULE.c.id == JOB_ARCHIVE.c.schedule_id)
            .where(JOB_ARCHIVE.c.id == job_id, SCHEDULE.c.tenant == tenant)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else Job(**row._mapping)

    async def archived_attempts(self, job_ids: Sequence[int], *, tenant: str) -> list[Attempt]:
        """The archived attempts of the given archived jobs of ``tenant``'s, newest
        first (the timeline of archived history)."""
        if not job_ids:
            return []
        stmt = (
            sa.select(ATTEMPT_ARCHIVE)
            .join(JOB_ARCHIVE, JOB_ARCHIVE.c.id == ATTEMPT_ARCHIVE.c.job_id)
            .join(SCHEDULE, SCHEDULE.c.id == JOB_ARCHIVE.c.schedule_id)
            .where(ATTEMPT_ARCHIVE.c.job_id.in_(list(job_ids)), SCHEDULE.c.tenant == tenant)
            .order_by(ATTEMPT_ARCHIVE.c.started_at.desc(), ATTEMPT_ARCHIVE.c.id.desc())
        )
        async with self._read() as conn:
            return [Attempt(**row._mapping) for row in await conn.execute(stmt)]
