"""The channel's view: what is scheduled into a channel (its agenda, also as a
calendar), duplicates caught when a schedule is saved, sending a schedule's next
occurrence now, and the congestion forecast (a save's warning, the console's day).

Who may see a channel's agenda: operators and admins; anyone a chat surface says is in
that channel (``seen_in``: the channel the signed request came from); else a member
the platform says can see it (the channel's :class:`~core.destinations.ChannelViewers`
capability, asked at most once a minute per member and channel). Direct messages have
no agenda, another tenant's schedules are never in one, and a schedule marked private
is in nobody's but its author's (and the console's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import core.cases.consent as consent
from core import congestion, duplicates, routing, views
from core.actors import Actor, ActorRef
from core.calendars import export, schedule_upcoming
from core.cases.base import CaseBase
from core.channels import CHANNEL_TYPES, parse_destination
from core.destinations import ChannelViewers, Destination, channel_name
from core.errors import Conflict, InvalidInput
from core.limits import shared_channel
from core.models import Schedule, ScheduleState
from core.preferences import URGENT, priority_rank
from core.ratelimit import UNLIMITED, RateLimit, RateLimits
from core.store import AuditEntry
from core.until_done import where as where_words

#: How long a platform's answer on who can see a channel is kept.
SEEN_FOR = 60.0
#: Members and channels whose answers are kept at once (the oldest go first).
SEEN_KEPT = 10_000

#: Why a member is refused the forecast of every destination, and spreading a minute.
FORECAST_REFUSED = "Only operators and admins see the forecast of every destination."
SPREAD_REFUSED = "Only operators and admins spread a destination's crowded minute."

#: What a save says it found: a schedule already sending the same text there, or a
#: destination so crowded the message would wait.
WarningKind = Literal["duplicate", "congestion"]


@dataclass(frozen=True)
class SaveWarning:
    """Something worth saying about a schedule just saved (or about to be)."""

    kind: WarningKind
    #: In chat's words: the place as Slack and Discord link it (``<#C0123>``).
    text: str
    #: The same for a terminal or a program: the place as written (``slack:C0123``).
    plain: str
    #: The duplicate's id (kind ``duplicate``).
    schedule_id: int | None = None
    #: The send it is about.
    at: datetime | None = None
    #: Seconds it is expected to wait (kind ``congestion``).
    late: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.plain}
        if self.schedule_id is not None:
            out["schedule_id"] = self.schedule_id
        if self.at is not None:
            out["at"] = views.iso(self.at)
        if self.late is not None:
            out["late_seconds"] = round(self.late, 1)
        return out


class Duplicated(Conflict):
    """Nothing was saved: the same text is already scheduled there at about the same
    time (``create_schedule(duplicates="refuse")``). Its message names them all."""

    def __init__(self, found: Sequence[SaveWarning]) -> None:
        self.found = list(found)
        super().__init__("; ".join(w.plain for w in self.found) + ".")


@dataclass(frozen=True)
class AgendaEntry:
    """One schedule of a channel's agenda."""

    schedule: Schedule
    #: Its author as people read them (their name, else their id).
    author: str
    #: Its time in words ("every weekday at 09:00 (UTC)").
    when: str
    next_at: datetime | None


@dataclass(frozen=True)
class DestinationDay:
    """The next hours of one destination, minute by minute (core.congestion.by_minute)."""

    destination: str
    limit: RateLimit
    minutes: list[congestion.Minute]
    #: Messages due there in those hours.
    due: int

    @property
    def worst(self) -> congestion.Minute | None:
        return max(self.minutes, key=lambda m: m.late, default=None)


def default_limits() -> dict[str, RateLimit]:
    """Each kind's limit when none is configured: its channel's, as the dispatcher's."""
    return {c.kind: c.rate_limit for c in CHANNEL_TYPES}


_DEFAULTS = default_limits()


class ChannelViewCases(CaseBase):
    # --- who can see a channel ---------------------------------------------------------

    _seen: dict[tuple[str, str, str], tuple[float, bool]]

    async def can_see(
        self, actor: Actor, destination: Destination, *, seen_in: str | None = None
    ) -> bool:
        """Whether ``actor`` may see what is scheduled into the channel ``destination``
        (see the module's words). A direct message or anything but a chat channel:
        False. InvalidInput when the platform cannot be asked."""
        if actor.sees_everything:
            return True
        if not shared_channel(destination):
            return False
        if seen_in is not None and _same_channel(seen_in, destination):
            return True
        kind, _, user = actor.id.partition(":")
        if kind != destination.kind or not user:
            raise InvalidInput(
                f"Herald cannot ask {destination.kind.capitalize()} whether {actor.id} "
                f"sees {destination.redacted()}: ask in the channel, or ask an operator."
            )
        if not hasattr(self, "_seen"):
            self._seen = {}
        # the tenant too: one Slack user id is a member of several workspaces of an
        # Enterprise Grid org, and the platform answers for the workspace asked about
        key = (actor.tenant, actor.id, str(destination))
        kept = self._seen.get(key)
        now = time.monotonic()
        if kept is not None and now - kept[0] < SEEN_FOR:
            return kept[1]
        viewers = self.channels.get(destination.kind)
        if not isinstance(viewers, ChannelViewers):
            raise InvalidInput(
                f"Herald cannot ask {destination.kind.capitalize()} who is in that channel "
                "from here: ask in the channel (`/schedule list here`)."
            )
        seen = await viewers.member_sees(destination, user, tenant=actor.tenant)
        if len(self._seen) >= SEEN_KEPT:
            self._seen.pop(next(iter(self._seen)))
        self._seen[key] = (now, seen)
        return seen

    async def sees_others(
        self, actor: Actor, destination: Destination, *, seen_in: str | None = None
    ) -> bool:
        """Whether others' schedules into ``destination`` count for ``actor`` (their
        duplicates): a chat channel they can see; where the platform cannot say, their
        own only."""
        try:
            return shared_channel(destination) and await self.can_see(
                actor, destination, seen_in=seen_in
            )
        except InvalidInput:
            return False

    # --- the agenda ---------------------------------------------------------------------

    async def lists_agenda(self, actor_id: ActorRef, to: str) -> bool:
        """Whether a list filtered by ``to`` (and nothing else) is its channel's agenda
        for ``actor_id``: ``to`` is a Slack or Discord channel (by id or by name, not a
        direct message) and the actor an operator or admin or a member of that
        platform. A member of another (``local:…`` at the terminal, or their API
        token) keeps their own schedules into it: Herald cannot ask the platform
        whether they see it."""
        found = channel_name(to)
        if found is not None:
            kind = found.kind
        else:
            try:
                target = parse_destination(to)
            except InvalidInput:
                return False
            if target.kind not in ("slack", "discord") or not shared_channel(target):
                return False
            kind = target.kind
        actor = await self.actor(actor_id)
        return actor.sees_everything or actor.id.partition(":")[0].lower() == kind

    async def agenda(
        self,
        actor_id: ActorRef,
        destination: str,
        *,
        seen_in: str | None = None,
        limit: int = 200,
    ) -> list[AgendaEntry]:
        """The active schedules into ``destination`` that ``actor`` may see: a chat
        channel's, everyone's there not marked private, when they can see the channel
        (PermissionDenied, audited, when not); a direct message (refused: it has no
        agenda) or another destination's, their own (operators and admins: all).
        Reading others' schedules is audited (``view.channel``)."""
        actor = await self.actor(actor_id)
        if limit < 1:
            raise InvalidInput("The limit must be at least 1.")
        target = parse_destination(await self.named_channel(actor, destination))
        canonical = str(target)
        if target.kind in ("slack", "discord") and not shared_channel(target):
            raise InvalidInput("A direct message has no agenda: `list` shows your own schedules.")
        others = actor.sees_everything
        if shared_channel(target) and not others:
            if not await self.can_see(actor, target, seen_in=seen_in):
                raise await self.denied(
                    actor,
                    "view.channel",
                    "destination",
                    canonical,
                    "You can see what is scheduled into a channel you can see: "
                    f"{target.redacted()} is not one of them.",
                )
            others = True
        # a Herald-wide operator's: the channel's tenant is whoever's schedules go there
        tenant = None if actor.herald_wide else actor.tenant
        rows = await self.store.into(tenant, canonical, viewer=actor.id, others=others, limit=limit)
        names = await self.author_names(rows)
        entries = [
            AgendaEntry(s, names[(s.tenant, s.owner)], views.describe(s), s.next_run_at)
            for s in rows
        ]
        theirs = sorted({s.owner for s in rows if s.owner != actor.id})
        if theirs:
            await self.store.record_audit(
                AuditEntry.by(
                    actor,
                    "view.channel",
                    "destination",
                    canonical,
                    {"schedules": len(rows), "authors": len(theirs)},
                ),
                now=self.clock.now(),
            )
        return entries

    async def author_names(self, rows: Sequence[Schedule]) -> dict[tuple[str, str], str]:
        """Each schedule's author as people read them, by (tenant, owner): their name
        in Herald, else their id (one query)."""
        pairs = sorted({(s.tenant, s.owner) for s in rows})
        named = await self.store.display_names(pairs)
        return {pair: named.get(pair, pair[1]) for pair in pairs}

    async def agenda_ics(
        self, actor_id: ActorRef, destination: str, *, seen_in: str | None = None
    ) -> bytes:
        """:meth:`agenda` as an iCalendar file (one event, or a recurring one, per
        schedule), named after the channel."""
        # a channel by its name (slack:#general) is looked up once, here
        found = await self.named_channel(actor_id, destination)
        entries = await self.agenda(actor_id, found, seen_in=seen_in, limit=5_000)
        shown = parse_destination(found).redacted()  # a webhook path may hold a token
        return export([e.schedule for e in entries], now=self.clock.now(), name=f"Herald: {shown}")

    # --- duplicates -----------------------------------------------------------------------

    async def duplicates_of(
        self,
        actor: Actor,
        schedule: Schedule,
        destinations: Sequence[str],
        *,
        seen_in: str | None = None,
        key: str | None = None,
    ) -> list[SaveWarning]:
        """The schedules already sending ``schedule``'s text (normalised) to one of
        ``destinations`` within ten minutes of one of its next sends: the actor's own,
        and in a channel they can see, everyone's not marked private. Each as a warning
        that names the author, the text, the place, the time and the id. The actor's
        own schedule of the idempotency ``key`` is not one (the same request again)."""
        mine = schedule_upcoming(schedule, duplicates.OCCURRENCES)[0]
        if not mine:
            return []
        text = duplicates.normalise(schedule.body)
        found: list[SaveWarning] = []
        seen_ids: set[int] = set()
        for destination in dict.fromkeys(destinations):
            target = parse_destination(destination)
            others = await self.sees_others(actor, target, seen_in=seen_in)
            texts = await self.store.texts_into(
                schedule.tenant,
                str(target),
                viewer=actor.id,
                others=others,
                states=(ScheduleState.ACTIVE.value,),
            )
            matching = [
                sid
                for sid, body in texts
                if sid not in seen_ids and sid != schedule.id and duplicates.normalise(body) == text
            ]
            same = [
                r
                for r in await self.store.schedules_by_id(matching)
                if not (key is not None and r.owner == actor.id and r.idempotency_key == key)
            ]
            names = await self.author_names(same)
            for r in same:
                hit = duplicates.near(mine, schedule_upcoming(r, duplicates.OCCURRENCES)[0])
                if hit is None or r.id is None:
                    continue
                seen_ids.add(r.id)
                dup = duplicates.Duplicate(
                    r.id,
                    r.owner,
                    names[(r.tenant, r.owner)],
                    r.body,
                    str(target),
                    views.describe(r),
                    hit[0],
                    hit[1],
                    r.owner == actor.id,
                )
                found.append(
                    SaveWarning(
                        "duplicate",
                        duplicates.words(dup, where_words(str(target))),
                        duplicates.words(dup, target.redacted()),
                        schedule_id=r.id,
                        at=hit[1],
                    )
                )
        return found

    # --- the congestion forecast -----------------------------------------------------

    def limit_of(self, destination: Destination) -> RateLimit:
        """``destination``'s rate limit, as the dispatcher reads it (HERALD_RATE_LIMITS,
        else its channel's)."""
        limits = getattr(self, "_rate_limits", None)
        if limits is None:
            limits = self._rate_limits = RateLimits.parse(self.settings.rate_limits)
        default = _DEFAULTS.get(destination.kind, UNLIMITED)
        return limits.for_destination(str(destination), default)

    async def congestion_of(
        self, schedule: Schedule, destinations: Sequence[str]
    ) -> list[SaveWarning]:
        """How late ``schedule``'s next sends (up to three, within a week) would be at
        each of ``destinations``, among the jobs already planned there (its own left
        out); each send expected to wait half a minute or more as a warning."""
        now = self.clock.now()
        upcoming = schedule_upcoming(schedule, congestion.OCCURRENCES)[0]
        upcoming = [t for t in upcoming if t <= now + congestion.HORIZON]
        if not upcoming:
            return []
        rank = priority_rank(schedule.priority)
        out: list[SaveWarning] = []
        for destination in dict.fromkeys(destinations):
            target = parse_destination(destination)
            limit = self.limit_of(target)
            if limit.unlimited:
                continue
            canonical = str(target)
            planned = await self.store.planned_into(
                canonical,
                start=upcoming[0] - congestion.LOOKBACK,
                # higher-ranked jobs falling due while it waits go first
                end=upcoming[-1] + (congestion.LOOKBACK if rank > 0 else timedelta(0)),
                exclude=schedule.id,
            )
            # each forecast simulates the sending of up to PLANNED_READ jobs: off the loop
            f = await asyncio.to_thread(
                self._first_crowded, canonical, planned, upcoming, rank, limit, now
            )
            if f is not None:
                when = _short_time(f.at, schedule.timezone, now)
                out.append(
                    SaveWarning(
                        "congestion",
                        congestion.words(f, where_words(canonical), when),
                        congestion.words(f, target.redacted(), when),
                        at=f.at,
                        late=f.late,
                    )
                )
        return out

    def _first_crowded(
        self,
        destination: str,
        planned: list[congestion.Planned],
        upcoming: Sequence[datetime],
        rank: int,
        limit: RateLimit,
        now: datetime,
    ) -> congestion.Forecast | None:
        """The forecast of the first of ``upcoming`` sends into ``destination`` expected
        to wait long enough to say so (the next ones are alike), or None."""
        for at in upcoming:
            f = congestion.forecast(
                destination, planned, at, rank, limit, now, self.settings.claim_horizon
            )
            if f.worth_saying:
                return f
        return None

    async def save_warnings(
        self,
        actor: Actor,
        schedule: Schedule,
        destinations: Sequence[str],
        *,
        duplicates_too: bool = True,
        seen_in: str | None = None,
        key: str | None = None,
    ) -> list[SaveWarning]:
        """Duplicates (unless ``duplicates_too`` is False) and congestion of a
        schedule about to be saved (or just saved: its own jobs are left out)."""
        found: list[SaveWarning] = []
        if duplicates_too:
            found += await self.duplicates_of(
                actor, schedule, destinations, seen_in=seen_in, key=key
            )
        found += await self.congestion_of(schedule, destinations)
        return found

    async def forecast_day(
        self, actor_id: ActorRef, *, hours: int = 24, limit: int = 50
    ) -> list[DestinationDay]:
        """The next ``hours`` of every rate-limited destination with something planned,
        minute by minute (operators and admins; their tenant's destinations unless
        Herald-wide): the most crowded first, at most ``limit`` destinations."""
        actor = await self.actor(actor_id)
        if not actor.sees_everything:
            raise await self.denied(
                actor,
                "forecast.view",
                "destination",
                "",
                FORECAST_REFUSED,
            )
        if not 1 <= hours <= 168:
            raise InvalidInput("The forecast covers 1 to 168 hours.")
        now = self.clock.now()
        planned = await self.store.planned_between(
            start=now - congestion.LOOKBACK,
            end=now + timedelta(hours=hours),
            tenant=self.tenant_scope(actor),
        )
        # a day of a busy database is a simulation of every job in it: off the loop
        days = await asyncio.to_thread(self._days, planned, now, hours)
        days.sort(key=lambda d: (-(d.worst.late if d.worst else 0.0), -d.due, d.destination))
        return days[:limit]

    def _days(
        self, planned: dict[str, list[congestion.Planned]], now: datetime, hours: int
    ) -> list[DestinationDay]:
        """Each rate-limited destination's next ``hours``, minute by minute."""
        days = []
        for destination, rows in planned.items():
            try:
                target = parse_destination(destination)
            except InvalidInput:
                continue
            rate = self.limit_of(target)
            if rate.unlimited:
                continue
            minutes = congestion.by_minute(
                rows, rate, now, hours * 60, now=now, horizon=self.settings.claim_horizon
            )
            due = sum(1 for due_at, _ in rows if due_at >= now)
            days.append(DestinationDay(str(target), rate, minutes, due))
        return days

    async def spread(
        self,
        actor_id: ActorRef,
        destination: str,
        minute: datetime,
        *,
        step: float | None = None,
    ) -> list[int]:
        """Spread the schedules due into ``destination`` in the minute from ``minute``
        (operators and admins): each moved a slot (``step`` seconds, default the
        destination's pace) after the one before, the first staying, so each is sent
        when due instead of queueing. Audited per schedule; returns the ids moved."""
        actor = await self.actor(actor_id)
        if not actor.sees_everything:
            raise await self.denied(
                actor,
                "schedule.spread",
                "destination",
                destination,
                SPREAD_REFUSED,
            )
        target = parse_destination(destination)
        if step is not None and not 0 < step <= 3600:
            raise InvalidInput("Spread schedules 0 to 3600 seconds apart.")
        start = minute.replace(second=0, microsecond=0)
        found = await self.store.due_into(
            str(target),
            start=start,
            end=start + timedelta(seconds=59.999999),
            tenant=self.tenant_scope(actor),
        )
        if not found:
            return []
        if step is None:
            offsets = congestion.spread_offsets(len(found), self.limit_of(target))
        else:
            offsets = [round(i * step, 3) for i in range(len(found))]
        moves = {sid: timedelta(seconds=o) for (sid, _), o in zip(found, offsets, strict=True)}
        moves = {sid: by for sid, by in moves.items() if by}
        if not moves:
            return []
        moved = await self.store.shift_schedules(
            list(moves),
            by=moves,
            owner=None,
            now=self.clock.now(),
            audit=AuditEntry.by(actor, "schedule.spread", "schedule"),
            tenant=self.tenant_scope(actor),
        )
        self._due(self.clock.now())
        return moved

    # --- send now ---------------------------------------------------------------------

    async def send_schedule_now(
        self, actor_id: ActorRef, schedule_id: int, *, expected_version: int | None = None
    ) -> Schedule:
        """Send ``schedule_id``'s next occurrence at once, with a fresh idempotency key;
        a recurring rule's following occurrences stay (a one-off is simply sent now).
        Refused, in a sentence, for a paused schedule, one awaiting approval and one
        with nothing left to send; a Conflict when its next send is already under way
        or it changed since it was read. Audited (``schedule.send_now``)."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        refusal = _send_now_refusal(schedule)
        if refusal is not None:
            raise InvalidInput(refusal)
        now = self.clock.now()
        sent = await self.store.send_next_now(
            schedule,
            now=now,
            audit=AuditEntry.by(actor, "schedule.send_now", "schedule", tenant=schedule.tenant),
        )
        if sent is None:
            raise Conflict(
                f"Schedule {schedule_id}'s next send is already under way (or it changed "
                "since you read it): look at it again."
            )
        self._due(now)
        fresh = await self.store.get_schedule(schedule_id)
        assert fresh is not None
        occurrence = views.local(sent.occurrence_at, schedule.timezone)
        note = (
            "sending now"
            if schedule.rrule is None
            else f"sending its {occurrence} occurrence now; the next ones stay as planned"
        )
        return views.add_save_notes(fresh, [note, *await self._held_now(fresh, now)])

    async def _held_now(self, schedule: Schedule, now: datetime) -> list[str]:
        """Whose quiet hours still hold a send made due ``now`` (only urgent messages
        pass them, core.dispatcher.recipients): "but Bob's quiet hours hold it: sent at
        14:00 their time", as the dispatcher reads each person's zone."""
        if schedule.priority == URGENT:
            return []
        firsts = [r.to[0] for r in routing.from_json(schedule.recipients, schedule.destination)]
        found = consent.people_in(firsts)
        people = await consent.people_of(self.store, schedule.tenant, found)
        notes = []
        for member, destination in found.items():
            person = people.get(member)
            if person is None or not person.quiet or person.prefs.quiet is None:
                continue
            row = await self.store.get_member(schedule.tenant, member)
            zone = person.zone or (row.timezone if row is not None else None)
            zone = zone or self.settings.default_tz
            opens = person.prefs.quiet.opens(now, zone)
            if opens is None:
                continue
            name = await consent.name_of(self.store, schedule.tenant, member, destination)
            local = opens.astimezone(ZoneInfo(zone))
            shown = (
                f"{local:%H:%M}"
                if local.date() == now.astimezone(local.tzinfo).date()
                else f"{local:%a %H:%M}"
            )
            notes.append(f"but {name}'s quiet hours hold it: sent at {shown} their time")
        return notes


def _send_now_refusal(schedule: Schedule) -> str | None:
    sid = schedule.id
    if schedule.state == ScheduleState.PAUSED.value:
        return f"Schedule {sid} is paused: resume it to send it now."
    if schedule.state == ScheduleState.AWAITING.value:
        return (
            f"Schedule {sid} is awaiting approval: nothing is sent until an approver approves it."
        )
    if schedule.state != ScheduleState.ACTIVE.value or schedule.next_run_at is None:
        return f"Schedule {sid} has nothing left to send."
    return None


def _short_time(at: datetime, zone: str, now: datetime) -> str:
    """``09:00`` within a day, else ``Tue 03 Mar 09:00`` (in ``zone``)."""
    local = at.astimezone(ZoneInfo(zone))
    return local.strftime("%H:%M" if at - now < timedelta(days=1) else "%a %d %b %H:%M")


def _same_channel(seen_in: str, destination: Destination) -> bool:
    """Whether the channel a signed chat request came from is ``destination`` (a
    thread of it too)."""
    try:
        seen = parse_destination(seen_in)
    except InvalidInput:
        return False
    return seen.kind == destination.kind and (
        seen.target.split("/", 1)[0] == destination.target.split("/", 1)[0]
    )
