"""What the people a schedule goes to say about it, read when it is saved: whether they
accept reminders from its author (core.preferences.refusal), whether its author may
send them an urgent one over their quiet hours, and when their quiet hours hold its
next send (the read-back says so).

Every save reads the preferences of all its people at once (one
:meth:`~core.store.Store.preferences_of`; an import one for all its lines). A person
is a destination that names a member (:func:`~core.cases.recipients.member_of`: a DM,
push devices, an email or SMS address); a channel or a webhook is not, and none of
this applies to it. Refusals are audited (``<action>.denied``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from core import routing
from core.actors import Actor
from core.cases.base import CaseBase
from core.cases.recipients import destinations_of, member_of
from core.errors import HeraldError, PermissionDenied
from core.models import Member, Schedule
from core.preferences import TENANT_DEFAULT, URGENT, Preferences, effective, refusal
from core.store import Store


@dataclass(frozen=True)
class Person:
    """A member a schedule goes to: their preferences as they apply (their own over
    the tenant's) and the zone their own preferences row knows (None: read it later)."""

    member_id: str
    prefs: Preferences
    zone: str | None

    @property
    def quiet(self) -> bool:
        return self.prefs.quiet is not None and not self.prefs.quiet.empty


def people_in(destinations: Iterable[str]) -> dict[str, str]:
    """Each person among ``destinations`` (member id → the first destination naming
    them); rooms and what cannot be read are left out."""
    found: dict[str, str] = {}
    for destination in destinations:
        try:
            member = member_of(destination)
        except HeraldError:
            continue
        if member is not None:
            found.setdefault(member, destination)
    return found


async def people_of(store: Store, tenant: str, members: Iterable[str]) -> dict[str, Person]:
    """These members' preferences as they apply, in one read."""
    ids = sorted(set(members))
    if not ids:
        return {}
    stored = await store.preferences_of(tenant, ids)
    base = stored.get(TENANT_DEFAULT)
    out = {}
    for member in ids:
        own = stored.get(member)
        out[member] = Person(member, effective(own, base), own.zone if own else None)
    return out


async def name_of(store: Store, tenant: str, member: str, destination: str) -> str:
    """How a sentence names a person: their name in Herald, else their mention
    (``<@U1>``) or address."""
    return _named(await store.get_member(tenant, member), member, destination)


def _named(row: Member | None, member: str, destination: str) -> str:
    """:func:`name_of` from the member's row as read (None: none)."""
    if row is not None and row.display_name:
        return row.display_name
    if destination.partition(":")[2].startswith("@"):
        return f"<@{member.partition(':')[2]}>"
    return member


async def refusals(
    cases: CaseBase,
    actor: Actor,
    people: dict[str, Person],
    where: dict[str, str],
    priority: str | None,
) -> list[tuple[str, str]]:
    """Why ``actor`` may not send to each of ``people`` (member id, sentence): they
    refuse the author (:func:`core.preferences.refusal`), or an urgent message over
    their quiet hours from someone who is neither an operator nor an admin."""
    found: list[tuple[str, str]] = []
    urgent_quiet: list[str] = []
    store, tenant = cases.store, actor.tenant
    for member, person in people.items():
        if member == actor.id:
            continue
        if refusal(
            person.prefs,
            author=actor.id,
            recipient=member,
            author_is_admin=actor.is_admin,
            name="",
        ):
            name = await name_of(store, tenant, member, where[member])
            why = refusal(
                person.prefs,
                author=actor.id,
                recipient=member,
                author_is_admin=actor.is_admin,
                name=name,
            )
            assert why is not None
            found.append((member, why))
            continue
        if priority == URGENT and person.quiet and not actor.sees_everything:
            urgent_quiet.append(await name_of(store, tenant, member, where[member]))
    if urgent_quiet:
        found.append(
            (
                "",
                "Only operators and admins may send urgent messages to people with quiet "
                f"hours ({', '.join(urgent_quiet)}).",
            )
        )
    return found


async def check_people(
    cases: CaseBase,
    actor: Actor,
    destinations: Iterable[str],
    *,
    priority: str | None,
    action: str,
    object_id: str = "",
    refuse: bool = True,
) -> dict[str, Person]:
    """Refuse (PermissionDenied, audited as ``<action>.denied``) a save to people who
    do not accept it from ``actor`` (see :func:`refusals`); returns the people, for the
    read-back (:func:`quiet_notes`); with ``refuse`` False, only the people (an edit
    of the time alone: they were checked when they were named)."""
    where = people_in(destinations)
    people = await people_of(cases.store, actor.tenant, where)
    refused = await refusals(cases, actor, people, where, priority) if refuse else []
    if refused:
        raise await cases.denied(
            actor, action, "schedule", object_id, refused[0][1], PermissionDenied
        )
    return people


async def quiet_notes(
    cases: CaseBase, actor: Actor, schedule: Schedule, people: dict[str, Person]
) -> list[str]:
    """What the read-back of a new or changed ``schedule`` says of the people whose
    quiet hours hold its next send: "Bob's quiet hours: sent at 08:00 their time"
    (urgent messages are not held; nor is anything without a next send)."""
    at = schedule.next_run_at
    if at is None or schedule.priority == URGENT or not any(p.quiet for p in people.values()):
        return []
    notes = []
    for recipient in routing.from_json(schedule.recipients, schedule.destination):
        for member, destination in people_in(recipient.to[:1]).items():
            person = people.get(member)
            if person is None or not person.quiet or person.prefs.quiet is None:
                continue
            # the dispatcher's reading (core.dispatcher.recipients): the member's zone;
            # their row, read once when their preferences lack it, names them too
            read = person.zone is None
            row = await cases.store.get_member(actor.tenant, member) if read else None
            zone = person.zone or (row.timezone if row is not None else None)
            zone = zone or cases.settings.default_tz
            due = routing.due_for(at, schedule.timezone, recipient.zone)
            opens = person.prefs.quiet.opens(due, zone)
            if opens is None:
                continue
            if read:
                name = _named(row, member, destination)
            else:
                name = await name_of(cases.store, actor.tenant, member, destination)
            notes.append(f"{name}'s quiet hours: sent at {_wall(opens, due, zone)} their time")
    return notes


def _wall(opens: datetime, due: datetime, zone: str) -> str:
    """``08:00`` on the day it was due (in ``zone``), else ``Mon 08:00``."""
    tz = ZoneInfo(zone)
    local = opens.astimezone(tz)
    same_day = due.astimezone(tz).date() == local.date()
    return f"{local:%H:%M}" if same_day else f"{local:%a %H:%M}"


async def import_refusals(
    cases: CaseBase, actor: Actor, rows: Sequence[dict[str, Any]]
) -> dict[int, str]:
    """The rows of an import (by index) whose people refuse them, and why (each row's
    first refusal): one read of preferences for the whole import, each person's name
    read only when a sentence needs it."""
    every = [destinations_of(row) for row in rows]
    where = people_in(d for steps in every for d in steps)
    people = await people_of(cases.store, actor.tenant, where)
    found: dict[int, str] = {}
    said: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    for i, (row, steps) in enumerate(zip(rows, every, strict=True)):
        priority = row.get("priority")
        for member in people_in(steps):
            key = (member, priority if priority == URGENT else None)
            if key not in said:
                one = {member: people[member]}
                said[key] = await refusals(cases, actor, one, where, priority)
            if said[key]:
                found[i] = said[key][0][1]
                break
    return found
