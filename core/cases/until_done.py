"""Messages sent until done (issue 40, core.until_done): a schedule's ladder read and
checked when it is saved, Done, and what waits for it.

Done (:meth:`LadderCases.mark_done`) is for anyone who can see the message: a chat
surface passes ``seen_in``, the destination of the message the click came from (the
platform only shows the button to who can see it there); it must be the message's own
destination, or, for a direct message, the person it was sent to. Without ``seen_in``
(the CLI, the console, the API) only the schedule's owner, operators and admins may.
Another tenant's message is refused as if it did not exist. Every Done is audited
(``job.done``) and counted (``herald_ack_seconds``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from core import until_done
from core.actors import Actor, ActorRef, Principal
from core.cases.base import CaseBase
from core.channels import parse_destination
from core.errors import InvalidInput, NotFound
from core.models import Role
from core.store import AuditEntry, Awaiting, Done

#: How far back the console's time-to-acknowledge figures look, and how long a message
#: nobody marked done is listed as awaiting it (a ladder runs a day at most).
ACK_WINDOW = AWAITING_WINDOW = timedelta(days=7)


@dataclass(frozen=True)
class AckFigures:
    """Time from a message's delivery to its Done, over :data:`ACK_WINDOW`."""

    count: int
    p50: float | None
    p95: float | None


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


class LadderCases(CaseBase):
    """A schedule's ladder when saved; Done; the messages awaiting it."""

    def _ladder_option(
        self, actor: Actor, spec: Mapping[str, Any] | until_done.UntilDone
    ) -> dict[str, Any]:
        """A ladder as a person gave it (``{"nag": "15m", "escalate": [{"to":
        ["slack:@U1"], "after": "1h"}]}``) checked and stored as the schedule's option
        (core.until_done.parse: the nag floor, levels, destinations read)."""
        if isinstance(spec, until_done.UntilDone):
            rule = spec
            staff = actor.role in (Role.OPERATOR, Role.ADMIN)
            until_done.parse(rule.nag, [(lv.to, lv.after) for lv in rule.levels], staff=staff)
        else:
            unknown = set(spec) - {"nag", "escalate"}
            if unknown:
                raise InvalidInput(
                    f"Unknown until-done setting {sorted(unknown)[0]!r}: use nag and escalate."
                )
            levels = []
            for level in spec.get("escalate") or ():
                if not isinstance(level, Mapping) or "to" not in level or "after" not in level:
                    raise InvalidInput('Each escalation names "to" and "after" (1h, 90m).')
                to = level["to"]
                levels.append(([to] if isinstance(to, str) else list(to), level["after"]))
            staff = actor.role in (Role.OPERATOR, Role.ADMIN)
            rule = until_done.parse(spec.get("nag"), levels, staff=staff)
        for destination in rule.escalates_to:
            parse_destination(destination)  # InvalidInput with the URI's own words
        return rule.to_json()

    async def mark_done(
        self, actor_id: ActorRef, job_id: int, *, seen_in: str | None = None
    ) -> Done:
        """Done on a delivered message of a schedule sent until done: its ladder stops
        (core/store/ladders.py) and its message reads "Done by …". ``seen_in``: the
        destination the click came from (a chat surface's). Done again says who did it
        first."""
        actor = await self.actor(actor_id)
        found = await self.store.done_job(job_id)
        refusal = f"There is no message {job_id} to mark done."
        if found is None:
            raise NotFound(refusal)
        if not actor.owns_tenant_of(found.tenant):
            if not _its_recipient_in_a_dm(actor, found.destination, seen_in):
                raise await self.denied(actor, "job.done", "job", str(job_id), refusal, NotFound)
            # a Discord direct message carries no server: the person it was sent to
            # acts in the message's tenant (as a reminder's buttons do)
            actor = await self.actor(Principal(actor.id, found.tenant, mentions=actor.mentions))
        if found.ladder or (until_done.OPTION not in found.options and not found.laddered):
            raise InvalidInput(f"Message {job_id} was not sent until done: it has no Done.")
        if not self._may_mark(actor, found.owner, found.destination, seen_in):
            raise await self.denied(
                actor,
                "job.done",
                "job",
                str(job_id),
                "Only someone who can see the message (in its channel), its author, "
                "operators and admins can mark it done.",
            )
        now = self.clock.now()
        done = await self.store.mark_done(
            job_id,
            by=actor.id,
            now=now,
            audit=AuditEntry.by(
                actor,
                "job.done",
                "job",
                str(job_id),
                {"schedule_id": found.schedule_id, "seen_in": seen_in},
                tenant=found.tenant,
            ),
        )
        if not done.already:
            self._due(now)
            if self.metrics is not None and done.waited is not None:
                self.metrics.observe_ack(done.waited)
        return done

    @staticmethod
    def _may_mark(actor: Actor, owner: str, destination: str, seen_in: str | None) -> bool:
        """Whether ``actor`` may press Done on a message to ``destination``."""
        if actor.id == owner or actor.sees_everything:
            return True
        if seen_in is None:
            return False
        target = parse_destination(destination)
        if target.is_dm:  # a direct message: only the person it was sent to
            return target.recipient == actor.id
        return _channel(seen_in) == _channel(destination)

    async def awaiting_done(self, actor_id: ActorRef, *, limit: int = 200) -> list[Awaiting]:
        """Messages delivered in the last week that nobody marked done yet, oldest
        first: the tenant's for operators and admins (every tenant's, Herald-wide), a
        member's own."""
        actor = await self.actor(actor_id)
        owner = None if actor.sees_everything else actor.id
        since = self.clock.now() - AWAITING_WINDOW
        return await self.store.awaiting_done(
            tenant=actor.scope, since=since, owner=owner, limit=limit
        )

    async def ack_figures(self, actor_id: ActorRef) -> AckFigures:
        """How long messages waited for their Done over the last week (p50, p95)."""
        actor = await self.actor(actor_id)
        since = self.clock.now() - ACK_WINDOW
        seconds = sorted(await self.store.ack_seconds(tenant=actor.scope, since=since))
        return AckFigures(len(seconds), _percentile(seconds, 0.5), _percentile(seconds, 0.95))


def _its_recipient_in_a_dm(actor: Actor, destination: str, seen_in: str | None) -> bool:
    """A click in a direct message (its personal tenant, ``discord:@<user>``) by the
    person the message was sent to, from that direct message."""
    platform, _, user = actor.id.partition(":")
    personal = actor.tenant == f"{platform}:@{user}"
    target = parse_destination(destination)
    return personal and target.is_dm and target.recipient == actor.id and seen_in is not None


def _channel(destination: str) -> str:
    """A destination without its thread (``slack:C0123/1700.1`` → ``slack:C0123``)."""
    return (
        destination.split("/", 1)[0]
        if destination.startswith(("slack:", "discord:"))
        else destination
    )
