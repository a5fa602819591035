"""The recipients' say at delivery time (issue 37): a claimed job to a person follows
that person's preferences as they are when it is sent, not as they were when it was
saved.

For each claimed batch the room reads, in one query (:meth:`DispatchStore.people_now`),
what it does not hold yet of the batch's people (each person recipient, each author,
and each tenant's defaults, ``*``), and keeps it :data:`FRESH_SECONDS` at most: a
batch of channels and webhooks only asks nothing more once its tenants' defaults are
known. Then, for each job (:func:`judged`, pure):

- refused now (the member blocked the author, or accepts only admins or themselves):
  skipped with the reason (:func:`.verdicts.refused`), never sent;
- due inside the person's quiet hours (their own, else the tenant's, read on their
  wall clock), unless urgent: handed back untried, due when the window opens
  (:func:`.verdicts.held`); a channel's only when the tenant holds channels too;
- a preferred place set: sent there instead; the attempt records where it went, and
  the job keeps its own destination (:meth:`Recipients.restored`), so the next
  occurrence reads the preference afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import core.dispatcher.verdicts as verdicts
from core.channels import parse_destination
from core.clock import Clock
from core.destinations import PERSON_KINDS, person_of
from core.dispatcher.config import DispatcherConfig
from core.errors import HeraldError
from core.preferences import (
    RANK,
    TENANT_DEFAULT,
    URGENT,
    Preferences,
    QuietHours,
    effective,
    held_reason,
    refusal,
)
from core.store import ClaimedJob, DispatchStore, PersonNow, Settled

log = logging.getLogger("core.dispatcher")

#: How long what was read of a person (or a tenant's defaults) is trusted: a change of
#: preferences holds for deliveries at most this many seconds later.
FRESH_SECONDS = 5.0
#: At most this many people are remembered (then all are forgotten and read again).
MAX_REMEMBERED = 50_000
_URGENT = RANK[URGENT]
_NOBODY = PersonNow(None)


class Recipients:
    """Reads a claimed batch's people and judges each job by their preferences."""

    def __init__(
        self,
        store: DispatchStore,
        clock: Clock,
        config: DispatcherConfig,
        record: Callable[[Iterable[Settled]], None],
    ) -> None:
        self._store, self._clock, self._config, self._record = store, clock, config, record
        #: Each destination's person (a member id), or None for a room.
        self._person: dict[str, str | None] = {}
        #: What was read, by (tenant, member id), and until when it is trusted.
        self._known: dict[tuple[str, str], tuple[datetime, PersonNow]] = {}
        #: Jobs sent to their recipient's preferred place: the job as claimed, by id.
        self._placed: dict[int, ClaimedJob] = {}

    async def screen(self, jobs: list[ClaimedJob]) -> list[ClaimedJob]:
        """The jobs to send (a job to a preferred place as a copy going there); the
        skipped and held ones are recorded. A failed read sends them as they are (the
        next batch reads again): preferences never lose a message."""
        now = self._clock.now()
        members = [self._member(job.destination) for job in jobs]
        try:
            people = await self._people(jobs, members, now)
        except HeraldError:
            log.exception("could not read the recipients' preferences; sending as saved")
            return jobs
        holding = {
            tenant
            for tenant in {job.tenant for job in jobs}
            if (said := people(tenant, TENANT_DEFAULT).prefs) and said.hold_channels
        }
        if not holding and not any(members):
            return jobs  # rooms only, in tenants that let them be: the hot path
        kept: list[ClaimedJob] = []
        settled: list[Settled] = []
        for job, member in zip(jobs, members, strict=True):
            if member is None and job.tenant not in holding:
                kept.append(job)  # a room, as the tenant lets it be
                continue
            defaults = people(job.tenant, TENANT_DEFAULT)
            if verdicts.before_sending(job, now, self._config) is not None:
                kept.append(job)  # too late or out of tries: the send path says so
                continue
            person = people(job.tenant, member) if member is not None else None
            author = people(job.tenant, job.owner)
            if job.owner in self._config.admins:
                author = replace(author, admin=True)
            judged_job = judged(job, member, person, author, defaults, now, self._config.default_tz)
            if isinstance(judged_job, ClaimedJob):
                if judged_job is not job:
                    self._placed[job.id] = job
                kept.append(judged_job)
            else:
                settled.append(judged_job)
        if settled:
            self._record(settled)
        return kept

    def restored(self, items: Iterable[Settled]) -> Iterable[Settled]:
        """Outcomes to record, each of a job sent to a preferred place given back the
        job as claimed (its own destination; the attempt keeps where it went)."""
        if not self._placed:
            return items
        out = list(items)
        for item in out:
            original = self._placed.pop(item.job.id, None)
            if original is not None:
                item.job = original
        return out

    def _member(self, destination: str) -> str | None:
        """The member a destination names (None: a room), remembered. A room is told by
        its kind and target alone (a person's is a direct message, ``kind:@…``, or of a
        person's kind): no parse on the hot path of webhooks and channels."""
        kind, _, target = destination.partition(":")
        if not target.startswith("@") and kind not in PERSON_KINDS:
            return None
        try:
            return self._person[destination]
        except KeyError:
            pass
        try:
            member = person_of(parse_destination(destination))
        except HeraldError:
            member = None  # the send path says what is wrong with it
        if len(self._person) >= MAX_REMEMBERED:
            self._person.clear()
        self._person[destination] = member
        return member

    async def _people(
        self, jobs: list[ClaimedJob], members: list[str | None], now: datetime
    ) -> Callable[[str, str], PersonNow]:
        """Who is who in this batch: each tenant's defaults, and each person recipient
        and their job's author, read (in one query) only when not known or stale."""
        known = self._known
        wanted: dict[str, set[str]] = {}
        keys = [(tenant, TENANT_DEFAULT) for tenant in {job.tenant for job in jobs}]
        for job, member in zip(jobs, members, strict=True):
            if member is not None:
                keys += ((job.tenant, member), (job.tenant, job.owner))
        for key in keys:
            seen = known.get(key)
            if seen is None or seen[0] <= now:
                wanted.setdefault(key[0], set()).add(key[1])
        if wanted:
            found = await self._store.people_now(wanted)
            if len(known) >= MAX_REMEMBERED:
                known.clear()
            until = now + timedelta(seconds=FRESH_SECONDS)
            for tenant, ids in wanted.items():
                for member_id in (*ids, TENANT_DEFAULT):
                    known[(tenant, member_id)] = (until, found.get((tenant, member_id), _NOBODY))

        def person(tenant: str, member_id: str) -> PersonNow:
            seen = known.get((tenant, member_id))
            return _NOBODY if seen is None else seen[1]

        return person


def judged(
    job: ClaimedJob,
    member: str | None,
    person: PersonNow | None,
    author: PersonNow,
    defaults: PersonNow,
    now: datetime,
    default_tz: str = "UTC",
) -> ClaimedJob | Settled:
    """What a job to ``member`` (None: a room) becomes by the preferences read now: the
    job to send (a copy to the member's preferred place), or its skip or hold. Quiet
    hours are read in the member's zone, else the tenant defaults', else ``default_tz``
    (HERALD_DEFAULT_TZ)."""
    tenant = defaults.prefs
    if member is None or person is None:  # a room in a tenant that holds channels
        quiet = tenant.quiet if tenant is not None else None
        return _quiet(job, quiet, _zone(defaults.zone, default_tz), "the team's", now) or job
    prefs = effective(person.prefs, tenant)
    name = person.name or member
    why = refusal(
        prefs, author=job.owner, recipient=member, author_is_admin=author.admin, name=name
    )
    if why is not None:  # logged at INFO with its reason when recorded (.reporting)
        return verdicts.refused(job, why, now)
    zone = _zone(person.zone or defaults.zone, default_tz)
    hold = _quiet(job, prefs.quiet, zone, f"{name}'s", now)
    if hold is not None:
        return hold
    place = _place(person.prefs, job.destination)
    return job if place is None else replace(job, destination=place)


def _quiet(
    job: ClaimedJob, quiet: QuietHours | None, zone: str, whose: str, now: datetime
) -> Settled | None:
    """Held until the window opens, when the job would go out inside ``quiet`` (read
    in ``zone``) and is not urgent."""
    if quiet is None or quiet.empty or job.priority == _URGENT:
        return None
    opens = quiet.opens(max(job.due_at, now), zone)
    if opens is None:
        return None
    return verdicts.held(job, opens, held_reason(opens, zone, whose, now))


def _place(own: Preferences | None, destination: str) -> str | None:
    """The member's preferred place when it is another person's destination than
    ``destination`` (a stored one that no longer reads as one is ignored)."""
    place = own.place if own is not None else None
    if not place or place == destination:
        return None
    try:
        parsed = parse_destination(place)
    except HeraldError:
        return None
    if person_of(parsed) is None or str(parsed) == destination:
        return None
    return str(parsed)


def _zone(name: str | None, default_tz: str = "UTC") -> str:
    """``name`` when it is a zone this machine knows, else ``default_tz``."""
    for candidate in (name, default_tz):
        if candidate:
            try:
                ZoneInfo(candidate)
            except (ValueError, KeyError):
                continue
            return candidate
    return "UTC"
