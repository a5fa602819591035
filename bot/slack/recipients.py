"""``/schedule #ops #dev @alice …``: one schedule to several recipients, a chain
(``@alice or alice@example.com``), and "their time" (issue 35).

Each target is checked as a single one is before anything is saved: a channel the
person is a member of (``conversations.members``; a name looked up first), a member of
this workspace (``users.info``, recorded as a member of the tenant). Core then checks
each destination again (reachable, limits, the cap on recipients) and reads each
person's zone for "their time" (:meth:`core.channels.slack.SlackChannel.member_zone`).
A refusal anywhere saves nothing.
"""

from __future__ import annotations

from typing import Any

from bot.slack import grammar, ladder_words, templated
from bot.slack.base import Duplicates, Person
from bot.slack.blocks import Reply, recipients_line, schedule_reply
from bot.slack.reminders import Reminders, urgency
from core.channels import parse_destination
from core.errors import InvalidInput
from core.models import Schedule


class Recipients(Reminders):
    """Creates naming several targets or a chain."""

    async def several(
        self,
        person: Person,
        command: grammar.Create,
        body: dict[str, Any],
        duplicates: Duplicates = "warn",
        seen_in: str | None = None,
    ) -> Reply:
        """Schedule ``command`` (its WHEN already chosen) to each of its targets
        (``duplicates`` and ``seen_in``: as :meth:`core.cases.Herald.create_schedule`
        takes them)."""
        to: list[str | dict[str, list[str]]] = []
        others: list[str] = []
        for chain in command.targets:
            steps = [await self._destination(person, target, body) for target in chain]
            to.append(steps[0] if len(steps) == 1 else {"first_of": steps})
            others += [s.removeprefix("slack:@") for s in steps if _other(s, person)]
        await self.check_ladder(person, command.until_done, body)
        schedule, created = await self.herald.create_schedule(
            person.principal,
            to=to,
            when=command.when,
            text=command.text,
            tz=person.zone,
            key=f"slack-trigger:{body['trigger_id']}" if body.get("trigger_id") else None,
            their_time=command.their_time,
            priority=urgency(person, command),
            **templated.create_args(command.template, command.data),
            **ladder_words.create_args(command.until_done, person.user_id),
            private=command.private,
            duplicates=duplicates,
            seen_in=seen_in,
        )
        headline = routed_headline(schedule, created)
        if created:
            for user in dict.fromkeys(others):
                headline += await self._tell(user, person.user_id)
        reply = schedule_reply(schedule, headline, read_back=created)
        return await self.held(person, schedule, reply)

    async def _destination(self, person: Person, target: str, body: dict[str, Any]) -> str:
        """One target as a destination, checked as a single one is: Refusal (or
        PermissionDenied) saying why it cannot be used."""
        if target == grammar.ME:
            return f"slack:@{person.user_id}"
        if target.startswith("slack:@"):
            user = target.removeprefix("slack:@")
            if user != person.user_id:
                await self._record_colleague(user, body)
            return target
        if target.startswith("#"):
            channel = await self.channel_names.find(person.principal.tenant, target[1:])
            target = f"slack:{channel}"
        if target.startswith("slack:"):
            await self.directory.check_member(person.user_id, target.removeprefix("slack:"))
            return target
        try:  # an email address: written as core stores it
            return str(parse_destination(target))
        except InvalidInput:
            raise grammar.Refusal(
                f"`{grammar.escape(target)}` is not an address Herald can send to."
            ) from None


def _other(step: str, person: Person) -> bool:
    return step.startswith("slack:@") and step != f"slack:@{person.user_id}"


def routed_headline(schedule: Schedule, created: bool) -> str:
    """The first line of the reply: every recipient, in order."""
    start = ":white_check_mark: Scheduled" if created else "Already scheduled"
    return f"{start}{templated.named(schedule)} for {recipients_line(schedule)}."
