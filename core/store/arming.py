"""A schedule's jobs made: the first job of each recipient of an occurrence (a new
schedule's, an import's, a resumed or edited one's), and after an edit of its recipients
the waiting jobs of those it no longer has cancelled (core.routing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from core import routing
from core.models import OPEN_STATE_VALUES, JobState
from core.preferences import NORMAL, RANK
from core.store.base import JOB, SCHEDULE, Gateway, new_idempotency_key


def rank_of(priority: object) -> int:
    """A schedule's priority as its jobs' rank in the queue (core.preferences.RANK;
    anything else reads as normal, as :data:`core.store.queue._RANK_SQL` does)."""
    return RANK.get(str(priority or NORMAL), RANK[NORMAL])


def first_job(
    schedule_id: int,
    schedule: Mapping[str, Any],
    recipient: routing.Recipient,
    occurrence: datetime,
    now: datetime,
) -> dict[str, Any]:
    """A new pending job of ``recipient`` for ``occurrence`` of a schedule (its values:
    ``destination``, ``timezone``, and ``priority`` when not normal), at the first step
    of its chain, of the schedule's rank in the queue."""
    return {
        "schedule_id": schedule_id,
        "recipient": recipient.id,
        "occurrence_at": occurrence,
        "due_at": routing.due_for(occurrence, schedule["timezone"], recipient.zone),
        "destination": routing.first_step(schedule["destination"], recipient),
        "route": recipient.route(),
        "state": JobState.PENDING.value,
        "attempts": 0,
        "idempotency_key": new_idempotency_key(),
        "created_at": now,
        "updated_at": now,
        "priority": rank_of(schedule.get("priority")),
    }


class Arming(Gateway):
    """Jobs armed for a schedule's recipients (the schedule queries build on it)."""

    async def _insert_jobs(
        self, conn: AsyncConnection, made: Sequence[tuple[int, dict[str, Any]]], now: datetime
    ) -> None:
        """The first job of each new schedule's every recipient (``made``: the new id and
        the row's values, with ``starts_at`` and ``recipients``)."""
        jobs = [
            first_job(sid, row, recipient, row["starts_at"], now)
            for sid, row in made
            for recipient in routing.from_json(row.get("recipients"), row["destination"])
        ]
        if jobs:
            await conn.execute(sa.insert(JOB), jobs)

    async def _reroute(self, s: AsyncSession, schedule_id: int, now: datetime) -> None:
        """After an edit of its recipients alone: the waiting jobs of the recipients it
        no longer has cancelled (a claimed one finishes, and plans no next job), and
        every recipient armed at its next occurrence as stored now, not as the edit
        read it (the dispatcher may have moved it on meanwhile): the kept keep their
        jobs, the new get theirs."""
        row = (
            await s.execute(
                sa.select(
                    SCHEDULE.c.recipients,
                    SCHEDULE.c.destination,
                    SCHEDULE.c.state,
                    SCHEDULE.c.next_run_at,
                ).where(SCHEDULE.c.id == schedule_id)
            )
        ).one()
        kept = [r.id for r in routing.from_json(row[0], row[1])]
        await s.execute(
            sa.update(JOB)
            .where(
                JOB.c.schedule_id == schedule_id,
                JOB.c.state.in_(OPEN_STATE_VALUES),
                JOB.c.recipient.not_in(kept),
            )
            .values(state=JobState.CANCELLED.value, updated_at=now, finished_at=now)
        )
        if row[2] == "active" and row[3] is not None:
            await self._arm(s, schedule_id, row[3], now)

    async def _arm(
        self, s: AsyncSession, schedule_id: int, occurrence: datetime, now: datetime
    ) -> None:
        """Make sure each recipient has a pending job for this occurrence: revive a
        cancelled one (pause then resume, or an edit back to an earlier time) or insert
        a new one; a recipient that has a waiting job for it already keeps that one."""
        row = (
            await s.execute(
                sa.select(
                    SCHEDULE.c.destination,
                    SCHEDULE.c.recipients,
                    SCHEDULE.c.timezone,
                    SCHEDULE.c.priority,
                ).where(SCHEDULE.c.id == schedule_id)
            )
        ).one()
        values = {
            "destination": row[0],
            "recipients": row[1],
            "timezone": row[2],
            "priority": row[3],
        }
        # a recipient whose job for the occurrence is there and not cancelled keeps it,
        # untouched: an insert colliding with it would wait for a dispatcher recording
        # it, which waits for this transaction's lock on the schedule (a deadlock)
        there = {
            recipient
            for recipient, state in await s.execute(
                sa.select(JOB.c.recipient, JOB.c.state).where(
                    JOB.c.schedule_id == schedule_id,
                    JOB.c.occurrence_at == occurrence,
                    JOB.c.ladder == "",  # the occurrence's message, not its ladder's steps
                )
            )
            if state != JobState.CANCELLED.value
        }
        for recipient in routing.from_json(row[1], row[0]):
            if recipient.id in there:
                continue
            job = first_job(schedule_id, values, recipient, occurrence, now)
            revived = await s.execute(
                sa.update(JOB)
                .where(
                    JOB.c.schedule_id == schedule_id,
                    JOB.c.recipient == recipient.id,
                    JOB.c.occurrence_at == occurrence,
                    JOB.c.ladder == "",
                    JOB.c.state == JobState.CANCELLED.value,
                )
                .values(
                    state=JobState.PENDING.value,
                    due_at=job["due_at"],
                    destination=job["destination"],
                    step=0,
                    step_since=None,
                    priority=job["priority"],
                    attempts=0,
                    last_error=None,
                    finished_at=None,
                    done_by=None,  # a fresh send: a Done of the one cancelled is not its
                    done_at=None,
                    updated_at=now,
                )
            )
            if revived.rowcount == 0:  # type: ignore[attr-defined]
                await s.execute(
                    self._insert()(JOB)
                    .values(**job)
                    .on_conflict_do_nothing(
                        index_elements=["schedule_id", "recipient", "occurrence_at", "ladder"]
                    )
                )
        await s.execute(
            sa.update(SCHEDULE).where(SCHEDULE.c.id == schedule_id).values(next_run_at=occurrence)
        )
        await self._notify_due(s)
