"""Jobs held by quiet hours, as the console shows them, and "send now": an operator
sends a held job at once, despite the hold (the recipient's quiet hours yield to an
operator's decision, as they yield to an urgent message)."""

from __future__ import annotations

from collections.abc import Sequence

from core.actors import ActorRef
from core.cases.base import CaseBase
from core.cases.recipients import member_of
from core.errors import Conflict, HeraldError, NotFound
from core.preferences import HELD, priority_rank
from core.store import AuditEntry

#: Who may send a held job now, and the sentence that refuses everyone else.
SEND_NOW_REFUSED = "Only operators and admins can send a held job now."


def is_held(state: str, last_error: str | None) -> bool:
    """Whether a job is held by quiet hours: waiting, its last error the hold's reason."""
    return state in ("pending", "retrying") and (last_error or "").startswith(HELD)


def priority_ranks(names: Sequence[str] | None) -> list[int] | None:
    """``("urgent", "bulk")`` → ``[0, 2]`` (None: any); InvalidInput names the choices."""
    return None if not names else sorted({priority_rank(n) for n in names})


class HeldCases(CaseBase):
    """Held jobs, seen and sent now."""

    async def send_now(self, actor_id: ActorRef, job_id: int) -> str:
        """Send the held job ``job_id`` at once: due now and urgent (``job.priority``
        0, which quiet hours do not hold), audited as ``job.send_now``. Operators and
        admins only (a member's attempt is refused and audited); NotFound for a job
        the actor cannot see, Conflict for one that is not held. Returns a sentence."""
        actor = await self.actor(actor_id)
        job = await self.store.get_job(job_id)
        schedule = None if job is None else await self.store.get_schedule(job.schedule_id)
        missing = f"There is no job {job_id}."
        if job is None or schedule is None:
            raise NotFound(missing)
        if not actor.owns_tenant_of(schedule.tenant):
            raise await self.denied(actor, "job.send_now", "job", str(job_id), missing, NotFound)
        if not actor.sees_everything:
            raise await self.denied(actor, "job.send_now", "job", str(job_id), SEND_NOW_REFUSED)
        if not is_held(job.state, job.last_error):
            raise Conflict(
                f"Job {job_id} is not held ({job.state}): only a job held by quiet hours "
                "can be sent now."
            )
        now = self.clock.now()
        audit = AuditEntry.by(
            actor,
            "job.send_now",
            "job",
            str(job_id),
            {"schedule": schedule.id},
            tenant=schedule.tenant,
        )
        if not await self.store.send_held_now(job_id, now=now, audit=audit):
            raise Conflict(f"Job {job_id} is no longer held: look at the queue again.")
        self._due(now)
        return f"Job {job_id} is due now, as urgent: it is sent despite the quiet hours."

    @staticmethod
    def person_of(destination: str) -> str | None:
        """The member a person's destination names (``slack:@U1`` → ``slack:U1``), or
        None for a channel (or a destination that cannot be read): whose preferences a
        job to it follows."""
        try:
            return member_of(destination)
        except HeraldError:
            return None
