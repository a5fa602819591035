"""Providers' shared health and delivery receipts: what a
provider reports of a message after it accepted it, moving that attempt (and, for a
failure, its job) on."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from core import routing
from core.channels.base import ProviderDown
from core.events import (
    CHAT_PLATFORMS,
    REASON_CHARS,
    EventRow,
    EventType,
    NoticeKind,
    NoticeRow,
    recipient_shown,
)
from core.models import (
    OUTCOME_OF_JOB,
    Attempt,
    Job,
    JobState,
    Member,
    ProviderHealth,
    Receipt,
    ReceiptSeen,
    Schedule,
    ScheduleState,
)
from core.receipts import ReceiptReport, provider_label
from core.store.base import Gateway, aware
from core.store.outcomes import record_events, record_notices
from core.store.queue import CLAIM_COLUMNS, ClaimedJob, Verdict

#: Receipts that make the job a failure (a dead letter, or its chain's next step).
FAILED_RECEIPTS = (Receipt.UNDELIVERED.value, Receipt.BOUNCED.value)


@dataclass(frozen=True, slots=True)
class ReceiptTaken:
    """What a receipt changed: ``applied`` (the attempt took it), ``duplicate`` (the
    attempt had a receipt: never moved backwards or sideways) or ``unknown`` (no
    attempt of that provider has that id). ``job_state`` is the job's state after it
    when the receipt failed the job (dead, or retrying at its next step)."""

    outcome: str
    attempt_id: int | None = None
    job_id: int | None = None
    job_state: str | None = None
    #: The channel kind of the attempt's destination when the receipt failed the job
    #: (a fallback is counted by the failed step's kind).
    channel: str | None = None


class ProviderQueries(Gateway):
    """Provider health rows and receipts."""

    # -- provider health (core.channels.failover) --

    async def providers_down(self, now: datetime) -> list[ProviderDown]:
        stmt = select(ProviderHealth).where(col(ProviderHealth.down_until) > now)
        async with self._read_session() as s:
            rows = (await s.execute(stmt)).scalars()
            return [ProviderDown(r.provider, r.down_until, r.reason) for r in rows]

    async def provider_health(self) -> list[ProviderHealth]:
        """Every provider ever marked down, with its last reason (the console; one row
        per provider, bounded all the same, as every console read is)."""
        stmt = select(ProviderHealth).order_by(col(ProviderHealth.provider)).limit(100)
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def mark_provider_down(self, provider: str, until: datetime, reason: str) -> None:
        """Mark ``provider`` down until ``until`` for every dispatcher (a later mark
        never shortens an earlier one's cool-down)."""
        table = ProviderHealth.__table__  # type: ignore[attr-defined]
        now = datetime.now(until.tzinfo)
        insert = self._insert()(table).values(
            provider=provider, down_until=until, reason=reason[:2000], changed_at=now
        )
        stmt = insert.on_conflict_do_update(
            index_elements=["provider"],
            set_={
                "down_until": sa.case(
                    (table.c.down_until > insert.excluded.down_until, table.c.down_until),
                    else_=insert.excluded.down_until,
                ),
                "reason": insert.excluded.reason,
                "changed_at": insert.excluded.changed_at,
            },
        )
        async with self._session() as s:
            await s.execute(stmt)

    async def mark_provider_up(self, provider: str, now: datetime | None = None) -> None:
        """``provider`` answered: its cool-down ends ``now`` (the dispatcher's clock;
        default the wall clock), for every dispatcher. The row stays, for the console;
        a mark that has ended already is left as it was."""
        table = ProviderHealth.__table__  # type: ignore[attr-defined]
        now = now or datetime.now(UTC)
        async with self._session() as s:
            await s.execute(
                table.update()
                .where(table.c.provider == provider, table.c.down_until > now)
                .values(down_until=now, changed_at=now)
            )

    # -- receipts (core.receipts) --

    async def receipt_seen(self, provider: str, digest: str, now: datetime) -> bool:
        """Record a callback's digest: True the first time, False for a replay."""
        async with self._session() as s:
            return await self._seen(s, provider, digest, now)

    async def _seen(self, s: AsyncSession, provider: str, digest: str, now: datetime) -> bool:
        table = ReceiptSeen.__table__  # type: ignore[attr-defined]
        stmt = (
            self._insert()(table)
            .values(provider=provider, digest=digest, seen_at=now)
            .on_conflict_do_nothing()
            .returning(table.c.digest)
        )
        # RETURNING, not rowcount: psycopg's rowcount of this statement is -1 (true)
        return (await s.execute(stmt)).first() is not None

    async def take_callback(
        self, provider: str, digest: str, reports: Sequence[ReceiptReport], *, now: datetime
    ) -> list[ReceiptTaken] | None:
        """Take one verified callback: its digest recorded as seen and each of its
        reports applied (:meth:`take_receipt`), in one transaction, so a failure leaves
        nothing behind and the provider's retry is taken afresh. None: the digest was
        seen before (a replay), and nothing changed. The answers are in the order of
        ``reports``; they are taken in message-id order, so two batches naming the
        same messages lock their rows in the same order."""
        async with self._session() as s:
            if not await self._seen(s, provider, digest, now):
                return None
            # one query for the batch's attempts (a SendGrid post carries up to 1,000
            # events), not one per report; locked in message-id order
            latest: dict[str, Attempt] = {}
            ids = sorted({r.message_id for r in reports})
            if ids:
                rows = await s.execute(
                    select(Attempt)
                    .where(
                        col(Attempt.provider) == provider,
                        col(Attempt.provider_message_id).in_(ids),
                    )
                    .order_by(col(Attempt.provider_message_id), col(Attempt.id).desc())
                    .with_for_update()
                )
                for attempt in rows.scalars():
                    latest.setdefault(attempt.provider_message_id or "", attempt)
            taken: dict[int, ReceiptTaken] = {}
            for i in sorted(range(len(reports)), key=lambda i: reports[i].message_id):
                report = reports[i]
                taken[i] = await self._apply(s, report, latest.get(report.message_id), now)
            await _receipt_events(s, reports, latest, taken, now)
            return [taken[i] for i in range(len(reports))]

    async def take_receipt(self, report: ReceiptReport, *, now: datetime) -> ReceiptTaken:
        """Move the attempt the provider reports on to ``report.status``, once: an
        attempt that has a receipt keeps it (a duplicate or a late, out-of-order report
        changes nothing). A failure (undelivered, bounced) of the job's last attempt
        while the job stands delivered fails the job: its chain's next step (due now),
        else a dead letter with the provider's words."""
        async with self._session() as s:
            attempt = (
                await s.execute(
                    select(Attempt)
                    .where(
                        col(Attempt.provider) == report.provider,
                        col(Attempt.provider_message_id) == report.message_id,
                    )
                    .order_by(col(Attempt.id).desc())
                    .limit(1)
                    .with_for_update()
                )
            ).scalar_one_or_none()
            taken = await self._apply(s, report, attempt, now)
            if attempt is not None:
                await _receipt_events(s, [report], {report.message_id: attempt}, {0: taken}, now)
            return taken

    async def settled_dead(self, job_ids: Sequence[int]) -> list[Verdict]:
        """The dead letters among ``job_ids`` as the dispatcher's outcome observer sees
        its own (a dead :class:`Verdict`, without a try: the try was the delivered one
        the receipt failed), so a receipt's dead letter is announced as the dispatcher's
        are (the chat adapters' alert channels). The error is the job's, the provider's
        words; a job no longer dead (retried since) is left out. In ``job_ids`` order."""
        if not job_ids:
            return []
        stmt = _DEAD_SELECT.where(_JOB.c.id.in_(list(job_ids)), _JOB.c.state == JobState.DEAD.value)
        async with self._read() as conn:
            rows = {row.id: row for row in await conn.execute(stmt)}
        return [
            Verdict(_claimed_job(rows[i]), JobState.DEAD.value, None, error=rows[i].last_error)
            for i in dict.fromkeys(job_ids)
            if i in rows
        ]

    async def prune_receipts_seen(self, *, before: datetime) -> int:
        """Forget callbacks taken before ``before`` (the delivery log's retention): a
        copy older than that finds its attempt's receipt set, or no attempt, and changes
        nothing anyway."""
        table = ReceiptSeen.__table__  # type: ignore[attr-defined]
        async with self._session() as s:
            result = await s.execute(table.delete().where(table.c.seen_at < before))
            return int(result.rowcount)  # type: ignore[attr-defined]

    async def _apply(
        self, s: AsyncSession, report: ReceiptReport, attempt: Attempt | None, now: datetime
    ) -> ReceiptTaken:
        """Apply ``report`` to ``attempt`` (the latest of its message, locked; None: unknown)."""
        if attempt is None:
            return ReceiptTaken("unknown")
        if attempt.receipt is not None:
            return ReceiptTaken("duplicate", attempt.id, attempt.job_id)
        attempt.receipt = report.status
        attempt.receipt_at = report.at
        attempt.receipt_detail = report.detail[:2000] or None
        if report.status not in FAILED_RECEIPTS:
            return ReceiptTaken("applied", attempt.id, attempt.job_id)
        job = await s.get(Job, attempt.job_id, with_for_update=True)
        if job is None or job.state != JobState.DELIVERED.value:
            return ReceiptTaken("applied", attempt.id, attempt.job_id)
        latest = (
            await s.execute(select(sa.func.max(Attempt.id)).where(col(Attempt.job_id) == job.id))
        ).scalar_one()
        if latest != attempt.id:
            return ReceiptTaken("applied", attempt.id, job.id)
        schedule = await s.get(Schedule, job.schedule_id, with_for_update=True)
        said = _failure(report)
        following = (
            routing.next_step(routing.parse_route(job.route), job.step)
            if job.route is not None and schedule is not None and schedule.state in _STEPPING
            else None
        )
        if following is not None:
            # as the dispatcher falls back (core.store.queue's _NEXT_STEP): tries
            # counted afresh, the step beginning when it falls due (now)
            job.destination = following
            job.step += 1
            job.attempts = 0
            job.step_since = now
            job.due_at = now
            job.state = JobState.RETRYING.value
            job.last_error = f"{said} Falling back to the next step (step {job.step + 1})."
            job.finished_at = None
            await self._notify_due(s)
        else:
            job.state = JobState.DEAD.value
            job.last_error = said
            job.finished_at = now
        job.updated_at = now
        if schedule is not None and not await _later_tried(s, job):
            _schedule_fails(schedule, job, now)
        return ReceiptTaken("applied", attempt.id, job.id, job.state, kind_of(attempt.destination))


async def _receipt_events(
    s: AsyncSession,
    reports: Sequence[ReceiptReport],
    attempts: dict[str, Attempt],
    taken: dict[int, ReceiptTaken],
    now: datetime,
) -> None:
    """The ``job.receipt`` events of the receipts applied (duplicates and unknown
    messages tell nothing), written when a hook of their tenant hears them: the job as
    a job event shows it (core.events.job_data), with the receipt and the provider's
    words."""
    applied = [
        (reports[i], attempts[reports[i].message_id])
        for i, t in taken.items()
        if t.outcome == "applied" and reports[i].message_id in attempts
    ]
    if not applied:
        return
    ids = sorted({a.job_id for _, a in applied})
    await s.flush()  # the jobs as the receipts left them
    rows = await s.execute(
        sa.select(
            _JOB.c.id,
            _JOB.c.schedule_id,
            _JOB.c.idempotency_key,
            _JOB.c.recipient,
            _JOB.c.state,
            _JOB.c.attempts,
            _JOB.c.occurrence_at,
            _JOB.c.due_at,
            _SCHEDULE.c.tenant,
            _SCHEDULE.c.owner,
        )
        .select_from(_JOB.join(_SCHEDULE, _SCHEDULE.c.id == _JOB.c.schedule_id))
        .where(_JOB.c.id.in_(ids))
    )
    jobs = {row.id: row for row in rows}
    events = []
    notices = []
    for report, attempt in applied:
        job = jobs.get(attempt.job_id)
        if job is None:
            continue
        data = {
            "schedule_id": job.schedule_id,
            "job_id": job.id,
            "idempotency_key": job.idempotency_key,
            "recipient": recipient_shown(attempt.destination or ""),
            "recipient_index": job.recipient,
            "state": job.state,
            "attempt": job.attempts,
            "occurrence_at": _iso(job.occurrence_at),
            "due_at": _iso(job.due_at),
            "at": _iso(report.at),
            "provider": report.provider,
            "receipt": report.status,
            "detail": report.detail[:REASON_CHARS],
        }
        events.append(
            EventRow(
                tenant=job.tenant,
                type=EventType.JOB_RECEIPT.value,
                at=now,
                schedule_id=job.schedule_id,
                job_id=job.id,
                owner=job.owner,
                key=job.idempotency_key,
                data=json.dumps(data, separators=(",", ":")),
            )
        )
        if job.state == JobState.DEAD.value:
            # a dead letter made by a receipt is told as the dispatcher's own are: a
            # job.dead event, and its chat author's notice
            said = _failure(report)[:REASON_CHARS]
            dead = {**data, "error": said}
            events.append(
                dataclasses.replace(
                    events[-1],
                    type=EventType.JOB_DEAD.value,
                    data=json.dumps(dead, separators=(",", ":")),
                )
            )
            if job.owner.startswith(CHAT_PLATFORMS):
                notices.append(
                    NoticeRow(
                        job.tenant,
                        job.owner,
                        NoticeKind.DEAD.value,
                        job.schedule_id,
                        job.id,
                        said,
                        now,
                    )
                )
    conn = await s.connection()
    await record_events(conn, events)
    await record_notices(conn, notices)


def _iso(value: Any) -> str:
    moment = aware(value)
    return "" if moment is None else moment.isoformat()


def _failure(report: ReceiptReport) -> str:
    """'Twilio reported it undelivered: 30003 Unreachable destination handset.'"""
    words = f": {report.detail}" if report.detail else ""
    return f"{provider_label(report.provider)} reported it {report.status}{words}."


#: Schedule states whose failed job may take its chain's next step (a paused or
#: cancelled schedule's send nothing more: the job is a dead letter).
_STEPPING = (ScheduleState.ACTIVE.value, ScheduleState.COMPLETED.value)


def _schedule_fails(schedule: Schedule, job: Job, now: datetime) -> None:
    """The schedule says what its occurrence did now (as the dispatcher's recording
    does); a schedule that had ended is live again while its job waits at a next step
    (it ends again when that step is done)."""
    schedule.last_outcome = OUTCOME_OF_JOB[job.state]
    if job.state == JobState.RETRYING.value and schedule.state == ScheduleState.COMPLETED.value:
        schedule.state = ScheduleState.ACTIVE.value
    schedule.updated_at = now


async def _later_tried(s: AsyncSession, job: Job) -> bool:
    """Whether a later occurrence of the job's schedule was tried already (its outcome
    is the schedule's last one, not this older occurrence's)."""
    later = select(Job.id).where(
        col(Job.schedule_id) == job.schedule_id,
        col(Job.occurrence_at) > job.occurrence_at,
        col(Job.state).in_(tuple(OUTCOME_OF_JOB)),  # tried: not pending, cancelled
    )
    return (await s.execute(later.limit(1))).first() is not None


def kind_of(destination: str | None) -> str | None:
    """``sms:+1555…`` → ``sms`` (the failed step's channel kind, for metrics)."""
    return None if not destination else destination.partition(":")[0] or None


_JOB = Job.__table__  # type: ignore[attr-defined]
_SCHEDULE = Schedule.__table__  # type: ignore[attr-defined]
_MEMBER = Member.__table__  # type: ignore[attr-defined]


def _dead_select() -> sa.Select[Any]:
    """A job read as a claim reads it (:data:`CLAIM_COLUMNS`: the job's columns, its
    schedule's, its owner's name), with its last error."""
    tables = {"job": _JOB, "schedule": _SCHEDULE, "member": _MEMBER}
    columns: list[Any] = []
    for label, column in CLAIM_COLUMNS:
        table, name = column.split(".")
        expr: sa.ColumnElement[object] = tables[table].c[name]
        if column == "job.destination":  # a job's own, else its schedule's
            expr = sa.func.coalesce(_JOB.c.destination, _SCHEDULE.c.destination)
        columns.append(expr.label(label))
    owner = sa.and_(_MEMBER.c.tenant == _SCHEDULE.c.tenant, _MEMBER.c.id == _SCHEDULE.c.owner)
    joined = _JOB.join(_SCHEDULE, _SCHEDULE.c.id == _JOB.c.schedule_id).outerjoin(_MEMBER, owner)
    columns.append(_JOB.c.last_error.label("last_error"))
    return sa.select(*columns).select_from(joined)


_DEAD_SELECT = _dead_select()
_TIMES = ("occurrence_at", "due_at", "step_since")


def _claimed_job(row: sa.Row[Any]) -> ClaimedJob:
    """A :class:`ClaimedJob` from a :func:`_dead_select` row (as the claim builds it:
    aware timestamps, options a dict, a missing tenant or owner name "")."""
    values = row._mapping
    fields: dict[str, object] = {f.name: values[f.name] for f in dataclasses.fields(ClaimedJob)}
    for name in _TIMES:
        fields[name] = aware(fields[name])
    options = fields["options"]
    fields["options"] = dict(options) if isinstance(options, dict) else {}
    for name in ("tenant", "owner_name", "owner"):
        fields[name] = fields[name] or ""
    return ClaimedJob(**fields)  # type: ignore[arg-type]
