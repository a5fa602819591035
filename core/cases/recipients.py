"""Whom a schedule goes to: a request's recipients read (one destination, several, or
chains tried in order), named channels looked up, each destination checked as a single
one is (limits, mentions, rights, reachability), and each recipient's own zone found
when the time is read in the recipient's zone (core.routing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeAlias

from core import limits, routing
from core.actors import Actor
from core.cases.calendars import CalendarCases
from core.cases.devices import check_push_member
from core.channels import parse_destination
from core.destinations import PERSON_KINDS, Destination, person_of
from core.errors import InvalidInput
from core.models import Schedule
from core.reminders import ASKED_BY, ASKED_BY_NAME, asked_prefix
from core.routing import Wanted

#: What a request may give as its recipients: one destination, or a list of
#: destinations and chains (``{"first_of": [...]}``, or :class:`~core.routing.Wanted`).
To: TypeAlias = str | Sequence[str | Mapping[str, Any] | Wanted]


def wanted_of(
    to: To, *, their_time: bool = False, step_timeout: float | None = None
) -> list[Wanted]:
    """A request's recipients, in order, refused (InvalidInput) when there are none, a
    chain is empty or too long, a destination is named twice, or a step's time limit is
    out of range."""
    items: Sequence[Any] = [to] if isinstance(to, str) else to
    timeout = _step_timeout(step_timeout)
    wanted: list[Wanted] = []
    for item in items:
        if isinstance(item, Wanted):
            wanted.append(item)
            continue
        if isinstance(item, str):
            steps: Any = [item]
        elif isinstance(item, Mapping) and set(item) <= {"first_of", "to"}:
            steps = item.get("first_of", item.get("to"))
        else:
            raise InvalidInput(
                'A recipient is a destination ("slack:C0123") or a chain '
                '({"first_of": ["slack:@U123", "email:alice@example.com"]}).'
            )
        if not isinstance(steps, list | tuple) or not all(isinstance(s, str) for s in steps):
            raise InvalidInput("A chain (first_of) is a list of destinations.")
        # a step's time limit means something only where there is a next step
        chain = len(steps) > 1
        wanted.append(Wanted(tuple(s.strip() for s in steps), timeout=timeout if chain else None))
    if their_time:
        wanted = [replace(w, their_time=True) for w in wanted]
    _check_shape(wanted)
    return wanted


def _step_timeout(value: float | None) -> int | None:
    if value is None:
        return None
    if not routing.MIN_STEP_TIMEOUT <= value <= routing.MAX_STEP_TIMEOUT:
        raise InvalidInput(
            f"A step's time limit must be between {routing.MIN_STEP_TIMEOUT // 60} minute "
            f"and {routing.MAX_STEP_TIMEOUT // 86400} days."
        )
    return round(value)


def _check_shape(wanted: list[Wanted]) -> None:
    if not wanted:
        raise InvalidInput("Say where to send it: at least one destination.")
    seen: set[str] = set()
    for w in wanted:
        if not w.to or not all(w.to):
            raise InvalidInput("A chain (first_of) needs at least one destination.")
        if len(w.to) > routing.MAX_STEPS:
            raise InvalidInput(
                f"A chain may have at most {routing.MAX_STEPS} destinations; "
                f"this one has {len(w.to)}."
            )
        for step in w.to:
            if step in seen:
                raise InvalidInput(f"{step} is named twice: name each destination once.")
            seen.add(step)


def recipient_cap(actor: Actor) -> int:
    """How many recipients one of ``actor``'s schedules may have."""
    return routing.ADMIN_CAP if actor.sees_everything else routing.MEMBER_CAP


def check_count(actor: Actor, wanted: Sequence[Wanted]) -> None:
    cap = recipient_cap(actor)
    if len(wanted) > cap:
        raise InvalidInput(
            f"A schedule may go to at most {cap} recipients; this one names {len(wanted)}. "
            "Split it, or ask an admin."
        )


def canonical(wanted: Sequence[Wanted]) -> list[Wanted]:
    """Every step's destination written as Herald stores it (``parse_destination``;
    InvalidInput for one it cannot read)."""
    return [replace(w, to=tuple(str(parse_destination(d)) for d in w.to)) for w in wanted]


def destinations_of(values: Mapping[str, Any]) -> list[str]:
    """Every destination of a schedule's values (``recipients``, else ``destination``)."""
    recipients = routing.from_json(values.get("recipients"), values.get("destination"))
    return [d for r in recipients for d in r.to]


def is_person(destination: str) -> bool:
    parsed = parse_destination(destination)
    return parsed.recipient is not None or parsed.kind in PERSON_KINDS


def member_of(destination: str) -> str | None:
    """The member id a person's destination names (``slack:@U1`` → ``slack:U1``,
    ``email:a@example.com`` as itself): where an admin or the member set their zone
    (:func:`core.destinations.person_of`, which the dispatcher reads too)."""
    return person_of(parse_destination(destination))


class RecipientCases(CalendarCases):
    """A request's recipients, looked up and checked (schedules use it)."""

    async def named_recipients(self, actor: Actor, wanted: Sequence[Wanted]) -> list[Wanted]:
        """``wanted`` with channels written by name looked up (:meth:`named_channel`)."""
        out = []
        for w in wanted:
            steps = tuple([await self.named_channel(actor, d) for d in w.to])
            out.append(replace(w, to=steps))
        return out

    async def zone_of(self, actor: Actor, destination: str) -> str | None:
        """A person's own zone: the one their channel's profile says (a Slack member's),
        else the one they or an admin set in Herald; None when Herald knows none (or
        ``destination`` is a room, not a person)."""
        if not is_person(destination):
            return None
        parsed = parse_destination(destination)
        channel = self.channels.get(parsed.kind)
        profile = getattr(channel, "member_zone", None)
        if profile is not None:
            found = await profile(parsed)
            if found:
                return str(found)
        member_id = member_of(destination)
        if member_id is None:
            return None
        member = await self.store.get_member(actor.tenant, member_id)
        return member.timezone if member is not None and member.timezone else None

    async def with_zones(
        self, actor: Actor, wanted: Sequence[Wanted], schedule_zone: str
    ) -> list[Wanted]:
        """Recipients whose time is read in their own zone given that zone: a person's
        (:meth:`zone_of`, else the author's, ``schedule_zone``); a room keeps the
        schedule's (None)."""
        out = []
        for w in wanted:
            if not w.their_time or w.zone is not None:
                out.append(w)
                continue
            zone = None
            if is_person(w.to[0]):
                zone = await self.zone_of(actor, w.to[0]) or schedule_zone
            out.append(replace(w, zone=zone))
        return out

    async def check_recipient(
        self, actor: Actor, destination: Destination, action: str = "schedule.create"
    ) -> dict[str, Any]:
        """Refuse (PermissionDenied, audited as ``<action>.denied``) a direct message to
        someone ``actor`` may not remind, or a push to a member without a device;
        returns the options to add (who asked, for someone else)."""
        if destination.kind == "push":
            await self._push_recipient(actor, destination, action)
            return {}
        recipient = destination.recipient
        if recipient is None or recipient == actor.id:
            return {}
        await self._known_recipient(actor, destination, action)
        return await self._asker(actor)

    async def _known_recipient(self, actor: Actor, destination: Destination, action: str) -> None:
        """Refuse (audited) a direct message to someone Herald does not know here."""
        recipient = destination.recipient
        assert recipient is not None
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

    async def _push_recipient(self, actor: Actor, destination: Destination, action: str) -> None:
        """Refuse (audited) a ``push:`` to a member with no device in the actor's
        tenant, the schedule's. A device there was added by that member or an admin of
        the tenant, so it also makes them a member Herald knows here: the right a
        direct message to them needs. No "asked me to remind you" is recorded: a
        notification carries none."""
        try:
            await check_push_member(self.store, actor.tenant, destination)
        except InvalidInput as exc:
            raise await self.denied(actor, action, "schedule", "", str(exc), InvalidInput) from None

    async def _asker(self, actor: Actor) -> dict[str, Any]:
        """What a reminder for someone else records: who asked, by id and name."""
        me = await self.store.get_member(actor.tenant, actor.id)
        name = (me.display_name if me is not None else "") or actor.id
        return {ASKED_BY: actor.id, ASKED_BY_NAME: name}

    async def with_asker(self, actor: Actor, values: dict[str, Any]) -> dict[str, Any]:
        """A new schedule's values (:meth:`Herald.build_schedule`) once its recipients
        are checked: a reminder for someone else records who asked, and must still fit
        with the "… asked me to remind you:" its channel puts before the text."""
        options = values["options"]
        asked: dict[str, Any] = {}
        for step in destinations_of(values):
            destination = parse_destination(step)
            if destination.kind == "push":  # a member's devices: they must have one
                await self._push_recipient(actor, destination, "schedule.create")
                continue
            if destination.recipient is None or destination.recipient == actor.id:
                continue
            # the rights are each person's; who asked is read once (the same for all)
            await self._known_recipient(actor, destination, "schedule.create")
            asked = asked or await self._asker(actor)
            options = {**options, **asked}
            prefixed = asked_prefix(destination, asked) + values["body"]
            limits.check_message(destination, prefixed, options)
        return {**values, "options": options}

    async def zoned(
        self, actor: Actor, values: dict[str, Any], wanted: Sequence[Wanted]
    ) -> dict[str, Any]:
        """A new schedule's values with each person's own zone (the time read in each
        recipient's zone, :meth:`with_zones`)."""
        found = await self.with_zones(actor, canonical(wanted), values["timezone"])
        return {**values, "recipients": routing.to_json(routing.numbered(found))}

    async def _new_recipients(
        self, actor: Actor, schedule: Schedule, to: To
    ) -> list[routing.Recipient]:
        """An edit's recipients, numbered so those kept keep their numbers (and jobs);
        new people read the time in their own zone when the schedule's recipients do."""
        current = routing.from_json(schedule.recipients, schedule.destination)
        wanted = wanted_of(to, their_time=any(r.zone for r in current))
        check_count(actor, wanted)
        named = canonical(await self.named_recipients(actor, wanted))
        kept = {r.to: r for r in current}
        named = [  # a recipient named again is kept as it was (its zone, its step limit)
            replace(w, zone=old.zone, timeout=old.timeout, their_time=False)
            if (old := kept.get(w.to)) is not None and w.timeout in (None, old.timeout)
            else w
            for w in named
        ]
        zoned = await self.with_zones(actor, named, schedule.timezone)
        return routing.numbered(list(zoned), kept=current)

    async def _edited_recipients(
        self, actor: Actor, schedule: Schedule, to: To | None, add: To, remove: Sequence[str]
    ) -> list[Wanted]:
        """The recipients after adding ``add`` and removing ``remove`` (by a
        destination of theirs) from ``to`` (None: the schedule's own)."""
        current = routing.from_json(schedule.recipients, schedule.destination)
        base = (
            wanted_of(to) if to is not None else [Wanted(r.to, r.zone, r.timeout) for r in current]
        )
        there = {d for w in base for d in w.to}
        if len(remove) > len(there):  # before any name is looked up on the platform
            raise InvalidInput(
                f"Schedule {schedule.id} has {len(there)} destinations; "
                f"{len(remove)} cannot all be removed."
            )
        gone = {str(parse_destination(await self.named_channel(actor, d))) for d in remove}
        missing = sorted(gone - there)
        if missing:
            raise InvalidInput(f"{missing[0]} is not a recipient of schedule {schedule.id}.")
        kept = [w for w in base if not gone & set(w.to)]
        added = wanted_of(add) if add else []
        if not kept and not added:
            raise InvalidInput(
                "That would leave no recipient: cancel the schedule instead, or add one."
            )
        return [*kept, *added]
