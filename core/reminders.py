"""Reminders: a message from the bot in a member's direct messages (``slack:@U…``,
``discord:@<user id>``), to themselves or to another member of their tenant, with
Snooze and Done buttons under it.

Whom a member may remind: themselves, or a member Herald knows in their own tenant (a
Slack user of the same workspace, a Discord user of the same server, as the members
table records them; the chat surfaces record the person they name after their platform
confirmed it). Herald-wide actors (the operator at the terminal) may remind any member
Herald knows. Anyone else is refused, audited, and nothing is stored.

A reminder for someone else carries who asked (``options["asked_by"]`` and
``["asked_by_name"]``); the channels render it as "@alice asked me to remind you: …".

The buttons (Slack ``action_id``\\ s ``herald_reminder_*``, value the schedule id;
Discord ``custom_id`` ``herald:reminder:<choice>:<schedule id>``) act only for the
person the reminder was sent to: Snooze makes a new one-off reminder with the same text
for them (their quota, audited, through :meth:`Herald.create_schedule`), Done records
that they saw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from core.actors import Actor, ActorRef, Principal
from core.case_base import CaseBase
from core.destinations import Destination, parse_destination
from core.errors import InvalidInput, NotFound
from core.models import LOCAL_TENANT, Schedule
from core.store import AuditEntry

#: Snooze choices: (label on the button, how long; None is tomorrow at 09:00).
SNOOZES: dict[str, tuple[str, timedelta | None]] = {
    "15m": ("Snooze 15 min", timedelta(minutes=15)),
    "1h": ("Snooze 1 h", timedelta(hours=1)),
    "tomorrow": ("Tomorrow 9:00", None),
}
DONE = "done"
DONE_LABEL = "Done"
#: Every choice a reminder's button may carry, in the order the buttons show.
CHOICES = (*SNOOZES, DONE)
#: Slack ``action_id`` prefix of the buttons (``herald_reminder_15m``...). User-given
#: blocks may not use ``herald…`` ids (core.usecases.check_options).
SLACK_ACTION_PREFIX = "herald_reminder_"
#: Discord ``custom_id`` prefix (``herald:reminder:15m:42``).
DISCORD_CUSTOM_PREFIX = "herald:reminder:"
#: What the options of a reminder for someone else record about who asked.
ASKED_BY = "asked_by"
ASKED_BY_NAME = "asked_by_name"


def slack_action_id(choice: str) -> str:
    return SLACK_ACTION_PREFIX + choice


def discord_custom_id(choice: str, schedule_id: int) -> str:
    return f"{DISCORD_CUSTOM_PREFIX}{choice}:{schedule_id}"


def label(choice: str) -> str:
    return DONE_LABEL if choice == DONE else SNOOZES[choice][0]


def asked_prefix(destination: Destination, options: dict[str, Any] | Any) -> str:
    """ "<@U…> asked me to remind you: " for a reminder someone else asked for (a
    mention when the asker is on the same platform, else their name), else ""."""
    asker = options.get(ASKED_BY) if options else None
    if not isinstance(asker, str) or not destination.is_dm:
        return ""
    platform, _, user = asker.partition(":")
    if platform == destination.kind:
        who = f"<@{user}>"
    else:
        who = str(options.get(ASKED_BY_NAME) or asker)
    return f"{who} asked me to remind you: "


@dataclass(frozen=True)
class Snoozed:
    """A snooze: the new reminder, and whether this click made it (False: the same
    message was snoozed before, and that reminder is returned)."""

    schedule: Schedule
    created: bool


class ReminderCases(CaseBase):
    """Whom a reminder may go to, and its Snooze and Done buttons."""

    async def check_recipient(self, actor: Actor, destination: Destination) -> dict[str, Any]:
        """Refuse (PermissionDenied, audited) a direct message to someone ``actor`` may
        not remind; returns the options to add (who asked, for someone else)."""
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
                "schedule.create",
                "schedule",
                "",
                f"Herald can remind {who} only if they are a member of this workspace or "
                "server that Herald knows: they have not used Herald here (or are in "
                "another one). Ask them to run /schedule once, or remind yourself.",
            )
        me = await self.store.get_member(actor.tenant, actor.id)
        name = (me.display_name if me is not None else "") or actor.id
        return {ASKED_BY: actor.id, ASKED_BY_NAME: name}

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
