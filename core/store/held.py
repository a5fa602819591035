"""A job held by its recipient's quiet hours, sent at once by an operator (the console's
"send now"): one conditional update, so a job the dispatcher took meanwhile (or one
that is no longer held) is left alone."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from core.models import WAITING_SQL
from core.preferences import HELD, RANK, URGENT
from core.store.base import JOB, AuditEntry, Gateway
from core.store.paging import has_prefix


class HeldQueries(Gateway):
    """Held jobs: waiting, their ``last_error`` the hold's reason (``Held until …``)."""

    async def send_held_now(self, job_id: int, *, now: datetime, audit: AuditEntry) -> bool:
        """Make the held job ``job_id`` due ``now`` and urgent (an urgent job is not held
        by quiet hours), its hold's reason cleared, audited in the same transaction.
        False when it is not (or no longer) a held job."""
        held = [
            JOB.c.id == job_id,
            sa.text("job." + WAITING_SQL),
            has_prefix(JOB.c.last_error, HELD),
        ]
        async with self._conn() as conn:
            row = (
                await conn.execute(sa.select(JOB.c.due_at, JOB.c.last_error).where(*held))
            ).first()
            if row is None:
                return False
            changed = await conn.execute(
                sa.update(JOB)
                .where(*held)
                .values(due_at=now, priority=RANK[URGENT], last_error=None, updated_at=now)
            )
            if changed.rowcount != 1:
                return False
            await self._notify_due(conn)
            details = {"held": row.last_error, "was_due": row.due_at.isoformat()}
            await self._audit(
                conn,
                AuditEntry(
                    audit.actor,
                    audit.action,
                    audit.object_type,
                    audit.object_id,
                    {**audit.details, **details},
                    audit.tenant,
                    audit.surface,
                ),
                now,
            )
        return True
