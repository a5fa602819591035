"""Dead-letter use cases: look, ask for a retry, approve, reject (with a reason), discard.

Use cases of :class:`core.cases.Herald`; every surface calls these through it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core import verbs
from core.actors import Actor, ActorRef
from core.cases.base import CaseBase
from core.channels import parse_destination
from core.channels.base import Delivery, Outcome
from core.errors import Conflict, InvalidInput, NotFound
from core.models import REJECT_REASON_CHARS
from core.reminders import NOTICE
from core.store import AuditEntry, DeadLetter
from core.tenancy import neutralize_mentions

log = logging.getLogger(__name__)


class DeadLetterCases(CaseBase):
    """Dead-letter decisions."""

    async def dead_letters(
        self, actor_id: ActorRef, *, limit: int = 200, tenant: str | None = None
    ) -> list[DeadLetter]:
        """Dead letters of the actor's tenant, newest first: everyone's for operators and
        admins, else own (Herald-wide ones: every tenant's, or the ``tenant`` named)."""
        _, owner, tenant = await self._scope(actor_id, tenant)
        return await self.store.dead_letters(owner=owner, tenant=tenant, limit=limit)

    async def dead_of_tenant(self, job_ids: Sequence[int], tenant: str) -> set[int]:
        """Which of these dead letters belong to ``tenant`` (for its alert channel,
        which hears of its own tenant's only)."""
        return await self.store.jobs_of_tenant(job_ids, tenant)

    async def dead_letter(self, actor_id: ActorRef, job_id: int) -> list[DeadLetter]:
        """One dead letter the actor may see (as a one-item list)."""
        actor = await self.actor(actor_id)
        return await self._dead_visible(actor, [job_id])

    async def _admin(
        self, actor_id: ActorRef, action: str, job_ids: Sequence[int], why: str
    ) -> Actor:
        """The acting admin; anyone else is refused with ``why`` (the refusal audited as
        ``action`` on those jobs)."""
        actor = await self.actor(actor_id)
        if not actor.is_admin:
            raise await self.denied(actor, action, "job", _ids(job_ids), why)
        return actor

    async def _dead_visible(self, actor: Actor, job_ids: Sequence[int]) -> list[DeadLetter]:
        if not job_ids:
            raise InvalidInput("Name at least one dead letter (its job id).")
        found = await self.store.dead_letters(ids=job_ids, limit=len(job_ids))
        visible = {
            d.job_id: d
            for d in found
            if actor.owns_tenant_of(d.tenant) and (actor.sees_everything or d.owner == actor.id)
        }
        missing = [job_id for job_id in job_ids if job_id not in visible]
        if missing:
            ours = {d.job_id for d in found if actor.owns_tenant_of(d.tenant)}
            hidden = [m for m in missing if m not in ours]  # gone, or another tenant's
            if hidden:
                ids = ", ".join(str(m) for m in hidden)
                reason = f"No dead letter {ids} that you can see (it may have been retried)."
                if any(d.job_id in hidden for d in found):  # exists, in another tenant
                    raise await self.denied(actor, "dead.show", "job", ids, reason, NotFound)
                raise NotFound(reason)
            # in the actor's tenant but another member's: refused for the role, said so
            ids = ", ".join(str(m) for m in missing)
            raise await self.denied(
                actor,
                "dead.show",
                "job",
                ids,
                f"Dead letter {ids} is another member's: only operators and admins can "
                "see or act on other members' dead letters.",
            )
        return [visible[job_id] for job_id in job_ids]

    async def retry_dead_letters(
        self, actor_id: ActorRef, job_ids: Sequence[int]
    ) -> tuple[str, int]:
        """An admin's retry puts the jobs back in the queue now (fresh attempt budget,
        same idempotency key); anyone else's becomes a request an admin decides on.
        Returns ``("retried" | "requested", count)``."""
        actor = await self.actor(actor_id)
        letters = await self._dead_visible(actor, job_ids)
        now = self.clock.now()
        if actor.is_admin:
            audit = AuditEntry.by(actor, "dead.retry", "job")
            count = await self.store.retry_dead(job_ids, now=now, audit=audit)
            if count:
                self._due(now)
                await self._tell_requesters(actor, letters, None)
            return "retried", count
        audit = AuditEntry.by(actor, "dead.retry_request", "job")
        return "requested", await self.store.request_dead_retry(
            job_ids, actor=actor.id, now=now, audit=audit
        )

    async def decide_dead_letters(
        self, actor_id: ActorRef, job_ids: Sequence[int], decision: str
    ) -> int:
        """An admin's decision on dead letters from an alert button: a verb of
        :data:`core.verbs.DECISIONS` (``"retry"``, ``"discard"``), called through the
        table. Anyone else is refused (and the refusal audited); nothing changes."""
        chosen = next((v for v in verbs.DECISIONS if v.name == decision), None)
        if chosen is None:
            names = " or ".join(v.name for v in verbs.DECISIONS)
            raise InvalidInput(f"Unknown decision {decision!r}: use {names}.")
        await self._admin(
            actor_id,
            f"dead.{decision}",
            job_ids,
            "Only Herald admins can retry or discard dead letters; ask one to decide.",
        )
        done = await verbs.perform(self, chosen, actor_id, job_ids)
        return int(done[1] if isinstance(done, tuple) else done)

    async def approve_dead_retry(self, actor_id: ActorRef, job_ids: Sequence[int]) -> int:
        """An admin approves retry requests: the jobs go back in the queue now, as an
        admin's retry. A letter nobody asked to retry is refused (Conflict: retry it
        instead); anyone but an admin is refused (and the refusal audited)."""
        await self._admin(actor_id, "dead.approve", job_ids, verbs.verb("approve").refused)
        if not job_ids:
            raise InvalidInput("Name at least one dead letter (its job id).")
        letters = await self.store.dead_letters(ids=job_ids, limit=len(job_ids))
        unrequested = [d.job_id for d in letters if d.retry_requested_by is None]
        if unrequested:
            raise Conflict(
                f"Dead letter {', '.join(map(str, unrequested))} has no retry "
                "request to approve; retry it instead."
            )
        return (await self.retry_dead_letters(actor_id, job_ids))[1]

    async def reject_dead_retry(
        self, actor_id: ActorRef, job_ids: Sequence[int], reason: str | None = None
    ) -> int:
        """An admin turns down retry requests; the jobs stay dead. ``reason`` (one line,
        up to :data:`~core.models.REJECT_REASON_CHARS`) is audited and kept on each
        letter with who turned it down, so whoever asked reads "rejected by X: reason"
        where they list their dead letters; a requester in Slack or Discord is also told
        in their direct messages."""
        actor = await self._admin(
            actor_id, "dead.retry_reject", job_ids, verbs.verb("reject").refused
        )
        why = check_reason(reason)
        letters = await self._dead_visible(actor, job_ids)
        unrequested = [d.job_id for d in letters if d.retry_requested_by is None]
        if unrequested:
            ids = ", ".join(str(j) for j in unrequested)
            raise Conflict(f"Dead letter {ids} has no retry request to reject.")
        details = {} if why is None else {"reason": why}
        audit = AuditEntry.by(actor, "dead.retry_reject", "job", details=details)
        count = await self.store.reject_dead_retry(
            job_ids, by=actor.id, reason=why, now=self.clock.now(), audit=audit
        )
        await self._tell_requesters(actor, letters, why or "")
        return count

    async def _tell_requesters(
        self, admin: Actor, letters: Sequence[DeadLetter], rejected: str | None
    ) -> None:
        """Tell each chat member who asked for a retry what the admin decided, in their
        direct messages (``rejected``: the reason, "" for none; None: approved): one
        message per member, however many of their letters the decision covers. The
        decision is already stored and shown wherever they look; this message is a
        courtesy sent now, once: a failure is logged, not retried."""
        asked: dict[str, list[DeadLetter]] = {}
        for letter in letters:
            if letter.retry_requested_by and letter.retry_requested_by != admin.id:
                asked.setdefault(letter.retry_requested_by, []).append(letter)
        now = self.clock.now()
        decision = "approved" if rejected is None else "rejected"
        for requester, theirs in asked.items():
            kind, _, user = requester.partition(":")
            channel = self.channels.get(kind)
            if kind not in ("slack", "discord") or channel is None or not user:
                continue  # a terminal member reads it in `herald dead list`
            platform, _, admin_user = admin.id.partition(":")
            who = f"<@{admin_user}>" if platform == kind else admin.id
            what = _letters_named(theirs)
            if rejected is None:
                text = f"{who} approved your request to retry {what}: it is being sent again."
            else:
                why = f": {neutralize_mentions(rejected)}" if rejected else "."
                text = f"{who} turned down your request to retry {what}{why}"
            first = theirs[0]
            delivery = Delivery(
                job_id=first.job_id,
                schedule_id=first.schedule_id,
                destination=parse_destination(f"{kind}:@{user}"),
                body=text,
                idempotency_key=f"notice:{first.job_id}:{decision}:{now.timestamp():.0f}",
                attempt=1,
                occurrence_at=now,
                due_at=now,
                options={NOTICE: True},
            )
            try:
                result = await channel.send(delivery)
            except Exception:  # noqa: BLE001 - a courtesy message never fails the decision
                log.exception("could not tell a retry requester", extra={"job_id": first.job_id})
                continue
            if result.outcome is not Outcome.OK:
                log.warning(
                    "could not tell a retry requester",
                    extra={"job_id": first.job_id, "error": result.error},
                )

    async def discard_dead_letters(self, actor_id: ActorRef, job_ids: Sequence[int]) -> int:
        """Give up on dead letters for good (operators and admins)."""
        actor = await self.actor(actor_id)
        if not actor.sees_everything:
            raise await self.denied(
                actor,
                "dead.discard",
                "job",
                _ids(job_ids),
                "Only operators and admins can discard dead letters.",
            )
        await self._dead_visible(actor, job_ids)
        audit = AuditEntry.by(actor, "dead.discard", "job")
        return await self.store.discard_dead(job_ids, now=self.clock.now(), audit=audit)


def check_reason(reason: str | None) -> str | None:
    """The reason for turning a retry request down, on one line; None when there is
    none. InvalidInput past :data:`~core.models.REJECT_REASON_CHARS` characters."""
    line = " ".join((reason or "").split())
    if len(line) > REJECT_REASON_CHARS:
        raise InvalidInput(
            f"The reason is {len(line):,} characters; keep it to {REJECT_REASON_CHARS}."
        )
    return line or None


def _ids(job_ids: Sequence[int]) -> str:
    return ",".join(str(j) for j in job_ids)[:64]


def _letters_named(letters: Sequence[DeadLetter], most: int = 10) -> str:
    """``dead letter 12 (schedule 5)``, or ``3 dead letters (12, 13, 14)``: at most
    ``most`` numbers, then how many more."""
    if len(letters) == 1:
        return f"dead letter {letters[0].job_id} (schedule {letters[0].schedule_id})"
    ids = ", ".join(str(d.job_id) for d in letters[:most])
    more = f" and {len(letters) - most} more" if len(letters) > most else ""
    return f"{len(letters)} dead letters ({ids}{more})"
