"""The use cases of reminders (:mod:`core.reminders`): what a reminder's Snooze and Done
buttons do. Whom a member may remind is checked with every schedule
(:meth:`core.cases.schedules.ScheduleCases.check_recipient`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from core.actors import ActorRef, Principal
from core.cases.schedules import ScheduleCases
from core.channels import parse_destination
from core.errors import InvalidInput, NotFound
from core.models import LOCAL_TENANT, Schedule
from core.reminders import SNOOZES
from core.store import AuditEntry


@dataclass(frozen=True)
class Snoozed:
    """A snooze: the new reminder, and whether this click made it (False: the same
    message was snoozed before, and that reminder is returned)."""

    schedule: Schedule
    created: bool


class ReminderCases(ScheduleCases):
    """A reminder's Snooze and Done buttons (a snooze is a new schedule)."""

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


def _words(delay: timedelta) -> str:
    minutes = int(delay.total_seconds() // 60)
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour" + ("s" if hours != 1 else "")
    return f"{minutes} minutes"
