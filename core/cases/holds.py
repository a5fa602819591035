"""Whether a message waits for an approver when it is saved (core.approvals): the
request a schedule's values wait on, and whom it asks. The schedule use cases save a
held message with it (core/cases/schedules.py); core/cases/approvals.py decides it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core import approvals, until_done, views
from core.actors import Actor
from core.cases.base import CaseBase
from core.cases.recipients import destinations_of
from core.channels import parse_destination
from core.events import ALERT_OWNER, NoticeKind
from core.models import Schedule
from core.store import Held, Tell
from core.tenancy import neutralize_mentions

#: A person's mention (Slack's ``<@U0123>``, Discord's ``<@123…>``, ``<@!123…>``).
_USER_MENTION = re.compile(r"<@!?([A-Z0-9]+)(?:\|[^>]*)?>")
#: Chat platforms whose alert channel is asked too (bot/notices.py posts there).
_ALERTED = ("slack", "discord")
#: Destinations a request names at most (the rest counted).
PLACES_SHOWN = 3
#: Approvers asked by direct message at most (the alert channel reaches the rest).
MOST_ASKED = 20


def _request_text(actor_id: str, values: Mapping[str, Any], why: str) -> str:
    """What approvers read: who asks to send what, where and when, and why it waits."""
    schedule = Schedule(**values)
    text = views.filled_text(schedule) or schedule.body
    every = destinations_of(values)
    # the first few places, so the quote and the reason always fit one Slack section
    where = ", ".join(until_done.where(d) for d in every[:PLACES_SHOWN])
    if len(every) > PLACES_SHOWN:
        where += f" and {len(every) - PLACES_SHOWN} more"
    # quoted, never sent: its mentions shown as text (an alert channel is not pinged,
    # nor a person the message names: Slack has no allowed_mentions)
    quoted = _USER_MENTION.sub(r"@\1", until_done.excerpt(text))
    return (
        f"{until_done.mention(actor_id)} asks to send to {where} ({schedule.expression}):\n"
        f"> {quoted}\n"
        f"It waits for an approver because {neutralize_mentions(why)}. Approve or reject it."
    )


class HoldCases(CaseBase):
    """Whether a message waits for an approver when it is saved."""

    async def _held(self, actor: Actor, values: Mapping[str, Any]) -> Held | None:
        """The request a schedule's ``values`` wait on, or None when it is sent as it
        is (core.approvals.why_held); the approvers asked are the tenant's admins and
        listed approvers (never the author), and its platform's alert channel."""
        places = [parse_destination(d) for d in destinations_of(values)]
        why = approvals.why_held(actor, places, values["body"], values["options"], self.settings)
        if why is None:
            return None
        text = _request_text(actor.id, values, why)
        asked = [a for a in await self._approvers(actor.tenant) if a != actor.id]
        tell = [Tell(a, NoticeKind.APPROVAL.value, text) for a in asked[:MOST_ASKED]]
        platform = actor.tenant.partition(":")[0]
        if platform in _ALERTED:
            tell.append(Tell(f"{platform}:{ALERT_OWNER}", NoticeKind.APPROVAL.value, text))
        return Held(why, values.get("next_run_at"), tell)

    async def _approvers(self, tenant: str) -> list[str]:
        """Who is asked to decide ``tenant``'s held messages: its admins, and the
        members of ``HERALD_APPROVERS`` and ``HERALD_ADMINS`` Herald knows in it."""
        admins = await self.store.admins_of(tenant, limit=MOST_ASKED)
        named = sorted(self.settings.approvers | self.settings.admins)
        listed = [m for m in named if await self.store.get_member(tenant, m)]
        return list(dict.fromkeys([*admins, *listed]))
