"""Providers' shared health and delivery receipts: what a
provider reports of a message after it accepted it, moving that attempt (and, for a
failure, its job) on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlmodel import col, select

from core import routing
from core.channels.base import ProviderDown
from core.models import Attempt, Job, JobState, ProviderHealth, Receipt, ReceiptSeen
from core.receipts import ReceiptReport, provider_label
from core.store.base import Gateway

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


class ProviderQueries(Gateway):
    """Provider health rows and receipts."""

    # -- provider health (core.channels.failover) --

    async def providers_down(self, now: datetime) -> list[ProviderDown]:
        stmt = select(ProviderHealth).where(col(ProviderHealth.down_until) > now)
        async with self._read_session() as s:
            rows = (await s.execute(stmt)).scalars()
            return [ProviderDown(r.provider, r.down_until, r.reason) for r in rows]

    async def provider_health(self) -> list[ProviderHealth]:
        """Every provider ever marked down, with its last reason (the console)."""
        stmt = select(ProviderHealth).order_by(col(ProviderHealth.provider))
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

    async def mark_provider_up(self, provider: str) -> None:
        """``provider`` answered: its cool-down ends now (the row stays, for the console)."""
        table = ProviderHealth.__table__  # type: ignore[attr-defined]
        now = datetime.now(UTC)
        async with self._session() as s:
            await s.execute(
                table.update()
                .where(table.c.provider == provider)
                .values(down_until=now, changed_at=now)
            )

    # -- receipts (core.receipts) --

    async def receipt_seen(self, provider: str, digest: str, now: datetime) -> bool:
        """Record a callback's digest: True the first time, False for a replay."""
        table = ReceiptSeen.__table__  # type: ignore[attr-defined]
        stmt = (
            self._insert()(table)
            .values(provider=provider, digest=digest, seen_at=now)
            .on_conflict_do_nothing()
        )
        async with self._session() as s:
            result = await s.execute(stmt)
            return bool(result.rowcount)  # type: ignore[attr-defined]

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
                await s.execute(
                    select(sa.func.max(Attempt.id)).where(col(Attempt.job_id) == job.id)
                )
            ).scalar_one()
            if latest != attempt.id:
                return ReceiptTaken("applied", attempt.id, job.id)
            said = _failure(report)
            following = (
                routing.next_step(routing.parse_route(job.route), job.step)
                if job.route is not None
                else None
            )
            if following is not None:
                job.destination = following
                job.step += 1
                job.attempts = 0
                job.step_since = now
                job.due_at = now
                job.state = JobState.RETRYING.value
                job.last_error = f"{said} Falling back to the next step (step {job.step + 1})."
            else:
                job.state = JobState.DEAD.value
                job.last_error = said
            job.finished_at = now
            job.updated_at = now
            return ReceiptTaken("applied", attempt.id, job.id, job.state)


def _failure(report: ReceiptReport) -> str:
    """'Twilio reported it undelivered: 30003 Unreachable destination handset.'"""
    words = f": {report.detail}" if report.detail else ""
    return f"{provider_label(report.provider)} reported it {report.status}{words}."
