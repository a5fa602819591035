"""Approvals (issue 40): what a second person decides, for every kind (core.approvals).

:class:`HoldCases` decides, when a schedule is saved or edited, whether it waits for an
approver (:meth:`HoldCases._held`: why, until when, whom to ask); the schedule use
cases save it so. :class:`ApprovalCases` lists requests of every kind and decides them:
a held message's here (approved: active, its first job armed; rejected: cancelled; the
author told), a dead letter's retry through the dead-letter desk
(:meth:`~core.cases.dead_letters.DeadLetterCases.approve_dead_retry`), so the verbs
``approve`` and ``reject`` (core/verbs.py) are one for both. :meth:`ApprovalCases.
lapse_approvals` (the dispatcher's housekeeping) expires a one-off's request not decided
before it was due, and moves a recurring one's to its next occurrence, telling the
author each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core import approvals, timeexpr, until_done, verbs
from core.actors import Actor, ActorRef
from core.cases.dead_letters import DeadLetterCases, check_reason
from core.cases.schedules import ScheduleCases
from core.channels import parse_destination
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.events import NoticeKind
from core.models import LOCAL_TENANT, ApprovalKind, ApprovalState, ScheduleState
from core.store import ApprovalRow, AuditEntry, Tell


@dataclass(frozen=True)
class Decided:
    """What a decision did: the requests decided, by kind."""

    sends: int
    retries: int

    @property
    def count(self) -> int:
        return self.sends + self.retries


#: The largest id an approval can have (its column is a 32-bit integer).
MAX_ID = 2**31 - 1


class ApprovalCases(ScheduleCases, DeadLetterCases):
    """Requests of every kind, listed and decided."""

    async def approvals(
        self,
        actor_id: ActorRef,
        *,
        state: str | None = ApprovalState.PENDING.value,
        kind: str | None = None,
        schedule_id: int | None = None,
        limit: int = 200,
    ) -> list[ApprovalRow]:
        """The requests the actor may see, oldest first: an approver (or an operator)
        sees their tenant's (Herald-wide actors every tenant's), a member their own."""
        actor = await self.actor(actor_id)
        if state is not None and state not in {s.value for s in ApprovalState}:
            raise InvalidInput(
                f"Unknown state {state!r}: use one of {', '.join(s.value for s in ApprovalState)}."
            )
        if kind is not None and kind not in {k.value for k in ApprovalKind}:
            raise InvalidInput(f"Unknown kind {kind!r}: use send or retry.")
        mine = (
            None
            if approvals.is_approver(actor, self.settings) or actor.sees_everything
            else actor.id
        )
        return await self.store.approvals(
            tenant=actor.scope,
            state=state,
            kind=kind,
            requested_by=mine,
            schedule_id=schedule_id,
            limit=limit,
        )

    async def on_dead_letters(
        self, chosen: verbs.Verb, actor_id: ActorRef, job_ids: Sequence[int], **options: Any
    ) -> Any:
        """A verb on dead letters (the console's and the CLI's): a decision (approve,
        reject) on their retry requests, through the dead-letter desk; the others their
        own use case."""
        if chosen in verbs.APPROVAL_VERBS:
            if chosen.name == "approve":
                return await self.approve_dead_retry(actor_id, job_ids)
            return await self.reject_dead_retry(actor_id, job_ids, **options)
        return await verbs.perform(self, chosen, actor_id, job_ids, **options)

    async def approve(self, actor_id: ActorRef, approval_ids: Sequence[int]) -> Decided:
        """Approve requests: a held message is sent from its next due time on (its
        author told), a dead letter is retried now."""
        return await self._decide(actor_id, approval_ids, approve=True, reason=None)

    async def reject(
        self, actor_id: ActorRef, approval_ids: Sequence[int], *, reason: str | None = None
    ) -> Decided:
        """Reject requests, with a reason the author reads: a held message's schedule is
        cancelled, nothing sent; a dead letter stays dead."""
        return await self._decide(actor_id, approval_ids, approve=False, reason=reason)

    async def _decide(
        self, actor_id: ActorRef, approval_ids: Sequence[int], *, approve: bool, reason: str | None
    ) -> Decided:
        actor = await self.actor(actor_id)
        verb = "approve" if approve else "reject"
        if not approval_ids:
            raise InvalidInput("Name at least one request (its id, as `approvals list` shows).")
        why = check_reason(reason)
        asked = list(approval_ids)
        approval_ids = [i for i in asked if 0 < i <= MAX_ID]  # past the column: not found
        rows = await self.store.approvals(
            tenant=actor.scope, state=None, ids=list(approval_ids), limit=len(approval_ids)
        )
        found = {r.id: r for r in rows}
        missing = [i for i in asked if i not in found]
        if missing:
            raise await self.denied(
                actor,
                f"approval.{verb}",
                "approval",
                ",".join(map(str, missing)),
                f"There is no request {missing[0]} in your workspace.",
                NotFound,
            )
        for row in found.values():
            await self._may_decide(actor, row, verb)
        sends = [r for r in found.values() if r.kind == ApprovalKind.SEND.value]
        retries = [r.job_id for r in found.values() if r.kind == ApprovalKind.RETRY.value]
        for row in sends:
            await self._decide_send(actor, row, approve, why)
        if retries:
            ids = [j for j in retries if j is not None]
            if approve:
                await self.approve_dead_retry(actor.principal, ids)
            else:
                await self.reject_dead_retry(actor.principal, ids, reason=why)
        return Decided(len(sends), len(retries))

    async def _may_decide(self, actor: Actor, row: ApprovalRow, verb: str) -> None:
        """Refuse (audited) a request that is not pending, not the actor's to decide
        (approvers of its tenant; admins for a retry), or their own."""
        if row.state != ApprovalState.PENDING.value:
            raise InvalidInput(f"Request {row.id} is {row.state} already: nothing to decide.")
        if row.kind == ApprovalKind.RETRY.value:
            allowed = actor.is_admin
            who = "Only an admin can decide on retry requests."
        else:
            # a listed approver decides where Herald knows them (a Discord user id is
            # the same in every server), or at the terminal's own tenant
            allowed = actor.is_admin or (
                actor.id in self.settings.approvers
                and (
                    row.tenant == LOCAL_TENANT
                    or await self.store.get_member(row.tenant, actor.id) is not None
                )
            )
            who = (
                "Only the workspace's approvers (its admins and HERALD_APPROVERS) decide "
                "held messages."
            )
        if not allowed:
            raise await self.denied(actor, f"approval.{verb}", "approval", str(row.id), who)
        if row.requested_by == actor.id:
            raise await self.denied(
                actor,
                f"approval.{verb}",
                "approval",
                str(row.id),
                f"Request {row.id} is your own: another approver decides it.",
                PermissionDenied,
            )

    async def _decide_send(
        self, actor: Actor, row: ApprovalRow, approve: bool, reason: str | None
    ) -> None:
        now = self.clock.now()
        values: dict[str, Any]
        arm_at = None
        if approve:
            arm_at = self._first_due(row, now)
            if arm_at is None:
                raise InvalidInput(
                    f"Request {row.id} came too late (its message was due before now), so "
                    "it expires; its author can schedule it again."
                )
            values = {"state": ScheduleState.ACTIVE.value, "next_run_at": arm_at}
            granted = approvals.approved_mentions(parse_destination(row.destination or ""))
            if granted is not None:
                values["options"] = {**(row.options or {}), "allowed_mentions": granted}
            said = (
                f"{until_done.mention(actor.id)} approved your message (schedule "
                f"{row.schedule_id}): it will be sent."
            )
        else:
            values = {"state": ScheduleState.CANCELLED.value, "next_run_at": None}
            because = f": {reason}" if reason else "."
            said = (
                f"{until_done.mention(actor.id)} rejected your message (schedule "
                f"{row.schedule_id}){because} Nothing was sent."
            )
        tell = [Tell(row.requested_by, NoticeKind.DECIDED.value, said)]
        details = {"schedule_id": row.schedule_id, "kind": row.kind}
        if reason:
            details["reason"] = reason
        await self.store.decide_send(
            row,
            approve=approve,
            by=actor.id,
            reason=reason,
            now=now,
            schedule_values=values,
            arm_at=arm_at,
            audit=AuditEntry.by(
                actor,
                f"approval.{'approve' if approve else 'reject'}",
                "approval",
                details=details,
                tenant=row.tenant,
            ),
            tell=tell,
        )
        if arm_at is not None:
            self._due(arm_at)

    @staticmethod
    def _first_due(row: ApprovalRow, now: datetime) -> datetime | None:
        """When an approved message is first sent: its next occurrence from now (a
        one-off's own time, None once that passed)."""
        if row.rrule is None:
            due = row.expires_at
            return due if due is not None and due >= now else None
        return timeexpr.next_occurrence(row.rrule, now)

    async def lapse_approvals(self, *, limit: int = 200) -> int:
        """Requests not decided by the time their message was due: a one-off's expires
        (its schedule cancelled, nothing sent), a recurring one's waits for the next
        occurrence (that one is not sent); the author is told either way. Returns how
        many lapsed. Run by the dispatcher's housekeeping."""
        now = self.clock.now()
        lapsed = 0
        for row in await self.store.due_approvals(now=now, limit=limit):
            until = None if row.rrule is None else timeexpr.next_occurrence(row.rrule, now)
            at = row.expires_at.strftime("%Y-%m-%d %H:%M UTC") if row.expires_at else "its time"
            if until is None:
                said = (
                    f"Your message (schedule {row.schedule_id}) was not approved before "
                    f"{at}: it expired and was not sent. Schedule it again if it still matters."
                )
            else:
                said = (
                    f"Your message (schedule {row.schedule_id}) was not approved before "
                    f"{at}: that occurrence was not sent. It still waits for an approver."
                )
            audit = AuditEntry(
                "system:approvals",
                "approval.expire" if until is None else "approval.wait",
                "approval",
                tenant=row.tenant,
                details={"schedule_id": row.schedule_id},
            )
            if await self.store.lapse_approval(
                row,
                now=now,
                until=until,
                reason="Not approved before it was due.",
                audit=audit,
                tell=[Tell(row.requested_by, NoticeKind.DECIDED.value, said)],
            ):
                lapsed += 1
        return lapsed
