"""The use cases of reminders (:mod:`core.reminders`): whom a member may remind, and
what a reminder's Snooze and Done buttons do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from core import limits
from core.actors import Actor, ActorRef, Principal
from core.case_base import CaseBase
from core.destinations import Destination, parse_destination
from core.errors import InvalidInput, NotFound
from core.models import LOCAL_TENANT, Schedule
from core.reminders import ASKED_BY, ASKED_BY_NAME, SNOOZES, asked_prefix
from core.store import AuditEntry


@dataclass(frozen=True)
class Snoozed:
    """A snooze: the new reminder, and whether this click made it (False: the same
    message was snoozed before, and that reminder is returned)."""

    schedule: Schedule
    created: bool


class ReminderCases(CaseBase):
    """Whom a reminder may go to, and its Snooze and Done buttons."""

    async def check_recipient(
        self, actor: Actor, destination: Destination, action: str = "schedule.create"
    ) -> dict[str, Any]:
        """Refuse (PermissionDenied, audited as ``<action>.denied``) a direct message to
        someone ``actor`` may not remind; returns the options to add (who asked, for
        someone else)."""
        recipient = destination.recipient
        if recipient is None or recipient == actor.id:
            return {}
        known = await self.store.get_member(actor.tenant, recipient)
        if known is None and actor.herald_wide:
            known = await self.store.find_member(recipient)
        if known is None:
            who = f"<@{destination.target[1:]}>"
            raise await self.denied(
                actor,
                action,
                "schedule",
                "",
                f"Herald can remind {who} only if they are a member of this workspace or "
                "server that Herald knows: they have not used Herald here (or are in "
                "another one). Ask them to run /schedule once, or remind yourself.",
            )
        me = await self.store.get_member(actor.tenant, actor.id)
        name = (me.display_name if me is not None else "") or actor.id
        return {ASKED_BY: actor.id, ASKED_BY_NAME: name}

    async def with_asker(self, actor: Actor, values: dict[str, Any]) -> dict[str, Any]:
        """A new schedule's values (:meth:`Herald.build_schedule`) once its recipient is
        checked: a reminder for someone else records who asked, and must still fit with
        the "… asked me to remind you:" its channel puts before the text."""
        destination = parse_destination(values["destination"])
        asked = await self.check_recipient(actor, destination)
        if not asked:
            return values
        options = {**values["options"], **asked}
        prefixed = asked_prefix(destination, asked) + values["body"]
        limits.check_message(destination, prefixed, options)
        return {**values, "options": options}

    async def _reminder_for(
        self, ref: ActorRef, schedule_id: int, action: str
    ) -> tuple[Schedule, Principal]:
        """The reminder a button acts on, if the clicker is the person it was sent to,
        and who to act as: the clicker in the reminder's tenant. A click from another
        tenant (another Slack workspace) is refused; a Discord direct message carries no
        server, so there the clicker's identity is what counts (their personal tenant),
        as for a reminder made at the terminal (``local``). Refusals are audited and do
        not say whether the reminder exists."""
        clicker = await self.actor(ref)
        schedule = await self.store.get_schedule(schedule_id)
        reason = f"There is no reminder {schedule_id} for you."
        if schedule is None:
            raise NotFound(reason)
        destination = parse_destination(schedule.destination)
        platform, _, user = clicker.id.partition(":")
        personal = clicker.tenant == f"{platform}:@{user}"  # a Discord direct message
        same_place = clicker.tenant == schedule.tenant or personal
        if destination.recipient != clicker.id or not (
            same_place or schedule.tenant == LOCAL_TENANT
        ):
            raise await self.denied(
                clicker, f"reminder.{action}", "schedule", str(schedule_id), reason, NotFound
            )
        tenant = clicker.tenant if schedule.tenant == LOCAL_TENANT else schedule.tenant
        return schedule, Principal(clicker.id, tenant, mentions=clicker.mentions)

    async def snooze_reminder(
        self, ref: ActorRef, schedule_id: int, choice: str, *, message: str
    ) -> Snoozed:
        """The Snooze button: a one-off reminder with the same text for the same person,
        15 minutes or an hour from now, or tomorrow at 09:00 in their zone. ``message``
        names the delivered message clicked (its platform id): clicking it again
        returns the reminder already made. InvalidInput for an unknown choice."""
        if choice not in SNOOZES:
            raise InvalidInput(f"Unknown snooze {choice!r}: use {', '.join(SNOOZES)}.")
        schedule, principal = await self._reminder_for(ref, schedule_id, "snooze")
        delay = SNOOZES[choice][1]
        when = "tomorrow at 09:00" if delay is None else f"in {_words(delay)}"
        created_schedule, created = await self.create_schedule(
            principal,
            to=schedule.destination,
            when=when,
            text=schedule.body,
            key=f"snooze:{schedule_id}:{message}"[:200],
        )
        return Snoozed(created_schedule, created)

    async def finish_reminder(self, ref: ActorRef, schedule_id: int) -> Schedule:
        """The Done button: the person it was sent to saw it (audited ``reminder.done``;
        a recurring reminder goes on)."""
        schedule, principal = await self._reminder_for(ref, schedule_id, "done")
        actor = await self.actor(principal)
        await self.store.record_audit(
            AuditEntry.by(actor, "reminder.done", "schedule", str(schedule_id), {}),
            now=self.clock.now(),
        )
        return schedule

    # provided by core.usecases.Herald
    async def create_schedule(
        self, actor_id: ActorRef, *, to: str, when: str, text: str, key: str | None = None
    ) -> tuple[Schedule, bool]:
        raise NotImplementedError


def _words(delay: timedelta) -> str:
    minutes = int(delay.total_seconds() // 60)
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour" + ("s" if hours != 1 else "")
    return f"{minutes} minutes"
