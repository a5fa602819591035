"""Use cases of the operator console: overview, pages, bulk actions, timelines. Use cases
of :class:`core.cases.Herald`; every surface may call them.

Who may do what is decided here (and by the use cases these call), never by a screen:
:func:`unavailable` tells a surface in advance which actions a role lacks and why, and
an attempt anyway is refused with :class:`PermissionDenied` and written to the audit log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from core import timeexpr, until_done, verbs, views
from core.actors import Actor, ActorRef
from core.cases.approvals import ApprovalCases
from core.cases.channel_view import FORECAST_REFUSED, SPREAD_REFUSED
from core.cases.held import SEND_NOW_REFUSED, HeldCases, priority_ranks
from core.cases.providers import ProviderCases, ProviderState
from core.channels import parse_destination
from core.errors import Conflict, HeraldError, InvalidInput, NotFound
from core.lateness import WINDOWS, LatenessFigures
from core.models import Audit, Job, JobState, Schedule, ScheduleState
from core.routing import Recipient
from core.scrub import calendar_source, scrub, scrub_credentials
from core.store import (
    RESPONSE_CHARS,
    TEXT_CHARS,
    AttemptFilter,
    AttemptRow,
    AuditEntry,
    AuditFilter,
    CalendarPage,
    DeadFilter,
    DeadGroup,
    DeadLetter,
    Figures,
    QueueRow,
    ScheduleFilter,
)
from core.views import ScheduleDetail, describe

CHUNK = 500

#: Bulk actions on schedules: the state each leads to and the states it applies to.
SCHEDULE_BULK: dict[str, tuple[str, tuple[str, ...]]] = {
    "cancel": (ScheduleState.CANCELLED.value, ("active", "paused")),
    "pause": (ScheduleState.PAUSED.value, ("active",)),
    "resume": (ScheduleState.ACTIVE.value, ("paused",)),
    "shift": (ScheduleState.ACTIVE.value, ("active",)),
}
#: The console's actions on dead letters (core/verbs.py): retry, approve, reject, discard.
DEAD_ACTIONS = tuple(v.name for v in verbs.offered(verbs.CONSOLE, verbs.DEAD_VERBS))

#: Who may, as the table of verbs says it (:attr:`core.verbs.Verb.who`).
_ROLES: dict[str, Callable[[Actor], bool]] = {
    "owner": lambda a: True,
    "operator": lambda a: a.sees_everything,
    "admin": lambda a: a.is_admin,
}


def verb_rule(v: verbs.Verb) -> str:
    """The rule of :func:`unavailable` for a verb: ``dead.discard``, ``schedule.pause``."""
    return f"{'dead' if v.takes == 'job_ids' else 'schedule'}.{v.name}"


_RULES: dict[str, tuple[Callable[[Actor], bool], str]] = {
    # each verb that needs more than being the owner, by its row of core/verbs.py
    **{verb_rule(v): (_ROLES[v.who], v.refused) for v in verbs.VERBS if v.who != "owner"},
    "schedule.others": (
        lambda a: a.is_admin,
        "Only an admin can change other members' schedules.",
    ),
    "view.everyone": (
        lambda a: a.sees_everything,
        "Members see their own schedules only.",
    ),
    "job.send_now": (lambda a: a.sees_everything, SEND_NOW_REFUSED),
    "forecast.view": (lambda a: a.sees_everything, FORECAST_REFUSED),
    "schedule.spread": (lambda a: a.sees_everything, SPREAD_REFUSED),
}

#: The console filters that carry an owner and a tenant.
_F = TypeVar("_F", ScheduleFilter, AttemptFilter, DeadFilter)


def unavailable(actor: Actor, action: str) -> str | None:
    """Why ``actor`` may not do ``action`` (a sentence), or None when allowed. The same
    rules the use cases enforce."""
    rule = _RULES.get(action)
    if rule is None or rule[0](actor):
        return None
    return rule[1]


def parse_shift(text: str, now: datetime | None = None) -> timedelta:
    """A signed duration up to a year, written as Herald reads any duration
    (:func:`core.timeexpr.parse_duration`): ``2 hours``, ``90m``, ``1h30m``, ``1 day``,
    ``half an hour``, ``1 week 2 days``, ``-15 minutes``. Days and weeks are 24 h and
    7 × 24 h; months and years count from ``now`` (default: 1970-01-01), in UTC.
    Raises InvalidInput for anything else."""
    try:
        shift = timeexpr.parse_duration(text, now=now)
    except InvalidInput:
        raise InvalidInput(
            f"{text!r} is not a duration: write e.g. 2 hours, 90m, 1h30m, 1 day or -15 minutes."
        ) from None
    if not timedelta(seconds=1) <= abs(shift) <= timedelta(days=366):
        raise InvalidInput("A shift must be between 1 second and a year.")
    return shift


#: The most tries the overview reads for its lateness plot (an hour at about 14 a
#: second): past it, the hour's older tries are left out, as ``LateHour.capped_at`` says.
LATE_TRIES = 50_000
#: The lateness plot's percentiles are of five minutes each: per minute, a quiet hour
#: has too few tries for a p95 or p99 to mean anything.
SLOT_MINUTES = 5


@dataclass(frozen=True)
class LateSlot:
    """How late the tries that started in five minutes of the last hour were, in
    seconds: each percentile is the nearest rank (the value below which that share of
    the tries fell, as :func:`core.lateness.quantile` ranks them), exact, not a bucket."""

    #: The slot's last minute (its start, UTC); the slot is the five minutes up to it.
    minute: datetime
    tries: int
    p50: float
    p95: float
    p99: float


@dataclass(frozen=True)
class LateHour:
    """The last hour's lateness, five minutes at a time (slots without a try left out),
    every try counted (a retry from when its backoff ended, which is when it fell due)."""

    slots: list[LateSlot] = field(default_factory=list)
    #: How many minutes a slot is.
    slot_minutes: int = SLOT_MINUTES
    #: :data:`LATE_TRIES` when only the newest that many tries were read (slots before
    #: the oldest one read are left out, and its slot may be short of some), else None.
    capped_at: int | None = None

    @property
    def tries(self) -> int:
        return sum(s.tries for s in self.slots)


def _nearest_rank(ordered: Sequence[int], q: float) -> float:
    """The ``q`` quantile of ``ordered`` (ascending milliseconds) by nearest rank, in
    seconds."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] / 1000


def late_hour(minutes: Sequence[datetime], tries: Sequence[tuple[str, int]]) -> LateHour:
    """The lateness of ``tries`` (the minute each started in, ``YYYY-MM-DD HH:MM`` UTC,
    and how many milliseconds late; newest first, as :meth:`core.store.Store.late_tries`
    reads them) in slots of :data:`SLOT_MINUTES` of ``minutes`` (the hour's minutes,
    oldest first, as the per-minute counts have them)."""
    slot_of = {m.strftime("%Y-%m-%d %H:%M"): i // SLOT_MINUTES for i, m in enumerate(minutes)}
    late: dict[int, list[int]] = {}
    for minute, ms in tries:
        slot = slot_of.get(minute)
        if slot is not None:
            late.setdefault(slot, []).append(ms)
    slots = []
    for slot, values in sorted(late.items()):
        values.sort()
        last = minutes[min(len(minutes), (slot + 1) * SLOT_MINUTES) - 1]
        slots.append(
            LateSlot(
                last,
                len(values),
                _nearest_rank(values, 0.5),
                _nearest_rank(values, 0.95),
                _nearest_rank(values, 0.99),
            )
        )
    return LateHour(slots, capped_at=LATE_TRIES if len(tries) >= LATE_TRIES else None)


@dataclass(frozen=True)
class Overview:
    """Counts by job state, with the overview figures."""

    now: datetime
    counts: dict[str, int]
    figures: Figures
    #: The email and SMS providers' health (:meth:`ProviderCases.provider_health`).
    providers: list[ProviderState] = field(default_factory=list)
    #: How late first tries started over the last hour and day, of every tenant (the
    #: dispatchers' lateness, as their health is shown), with those delayed: for
    #: Herald-wide actors only (empty for a tenant's member or admin).
    lateness: list[LatenessFigures] = field(default_factory=list)
    #: How late the tries of the last hour started (the actor's tenant's, as the
    #: figures), five minutes at a time: read when asked (``with_late_hour``).
    late_hour: LateHour = field(default_factory=LateHour)

    @property
    def first_try_rate(self) -> float | None:
        """Share of jobs finished in the last hour that were delivered on the first try."""
        total = self.figures.finished_last_hour
        return None if total == 0 else self.figures.first_try_ok / total


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk action would do: ``count`` the actor may change, of ``matching``."""

    action: str
    count: int
    matching: int
    note: str | None = None


@dataclass(frozen=True)
class TimelineEvent:
    at: datetime
    kind: str
    text: str
    job_id: int | None = None
    detail: str = ""
    #: Of a job moved to the archive (read only when the timeline asks for it).
    archived: bool = False


@dataclass(frozen=True)
class RecipientState:
    """One recipient of a schedule and its latest job (None before its first)."""

    recipient: Recipient
    job: Job | None


@dataclass(frozen=True)
class Timeline:
    """A schedule's detail: rule in words, next occurrences, jobs and what happened."""

    schedule: Schedule
    description: str
    upcoming: list[datetime]
    jobs: list[Job]
    events: list[TimelineEvent]
    focus_job: int | None = None
    #: Each recipient with its latest job, in the schedule's order.
    recipients: list[RecipientState] = field(default_factory=list)
    #: How the recipients fared at the latest occurrence tried (:func:`core.views.fared`;
    #: None for one recipient).
    fared: str | None = None


class ConsoleCases(ApprovalCases, ProviderCases, HeldCases):
    """The console's use cases, built on the schedule, dead-letter (through the
    approvals), provider and held-job ones."""

    # --- overview -------------------------------------------------------------------

    async def overview(self, actor_id: ActorRef, *, with_late_hour: bool = False) -> Overview:
        """The state of the queue (counts only: no message content): of the actor's
        tenant, or the whole queue for Herald-wide actors. ``with_late_hour``: with the
        last hour's lateness five minutes at a time (the console's plot: up to
        :data:`LATE_TRIES` rows read), else :attr:`Overview.late_hour` is empty."""
        actor = await self.actor(actor_id)
        now = self.clock.now()
        counts = await self.store.job_counts(tenant=actor.scope)
        figures = await self.store.overview_figures(now=now, tenant=actor.scope)
        # the dispatchers' lateness counts are kept per minute for every tenant together:
        # Herald-wide actors only (a tenant's own lateness is the plot's, late_hour)
        lateness = [
            LatenessFigures.of(window, await self.store.lateness_since(now - span))
            for window, span in WINDOWS
            if actor.scope is None
        ]
        hour = LateHour()
        if with_late_hour:
            minutes = [at for at, _, _ in figures.per_minute]
            tries = await self.store.late_tries(
                since=minutes[0], until=now, tenant=actor.scope, limit=LATE_TRIES
            )
            hour = late_hour(minutes, tries)
        providers = await self.provider_health(actor_id)
        return Overview(now, counts, figures, providers, lateness, hour)

    # --- pages ------------------------------------------------------------------------

    async def schedules_page(
        self,
        actor_id: ActorRef,
        f: ScheduleFilter,
        *,
        before_id: int | None = None,
        limit: int = 100,
    ) -> list[Schedule]:
        """Schedules matching ``f`` that the actor may see, newest first."""
        f = await self._scoped(actor_id, f)
        return await self.store.schedules_page(f, before_id=before_id, limit=limit)

    async def queue_page(
        self,
        actor_id: ActorRef,
        view: str,
        *,
        after: tuple[datetime, int] | None = None,
        limit: int = 100,
        tenant: str | None = None,
        priorities: Sequence[str] | None = None,
    ) -> list[QueueRow]:
        """Jobs in one queue view (due, pending, in_flight, retrying), of the given
        priorities only (urgent, normal, bulk; InvalidInput for another) when given."""
        ranks = priority_ranks(priorities)
        _, owner, scope = await self._scope(actor_id, tenant)
        return await self.store.queue_page(
            view,
            now=self.clock.now(),
            owner=owner,
            tenant=scope,
            after=after,
            limit=limit,
            priorities=ranks,
        )

    async def delivery_log(
        self,
        actor_id: ActorRef,
        f: AttemptFilter,
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[AttemptRow]:
        """Attempts matching ``f``, newest first."""
        f = await self._scoped(actor_id, f)
        return await self.store.attempts_page(f, before=before, limit=limit)

    async def dead_groups(self, actor_id: ActorRef, f: DeadFilter) -> list[DeadGroup]:
        return await self.store.dead_groups(await self._scoped(actor_id, f))

    async def dead_page(
        self,
        actor_id: ActorRef,
        f: DeadFilter,
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[DeadLetter]:
        f = await self._scoped(actor_id, f)
        return await self.store.dead_page(f, before=before, limit=limit)

    async def audit_log(
        self, actor_id: ActorRef, f: AuditFilter, *, before_id: int | None = None, limit: int = 100
    ) -> list[Audit]:
        """The audit log, newest first: everything for operators and admins, a member's
        own actions otherwise; of the actor's tenant (Herald-wide: any)."""
        _, owner, tenant = await self._scope(actor_id, f.tenant)
        f = replace(f, tenant=tenant)
        if owner is not None:
            f = replace(f, actor=owner)
        return await self.store.audit_page(f, before_id=before_id, limit=limit)

    async def calendars_page(
        self,
        actor_id: ActorRef,
        *,
        failing_only: bool = False,
        after_id: int | None = None,
        limit: int = 100,
        tenant: str | None = None,
    ) -> CalendarPage:
        """Calendars the actor may see (operators and admins: all; members: their
        own) in id order, with their refresh state, feeds and waiting reminders.
        Sources, errors and destinations are redacted: a URL shows its host only."""
        _, owner, scope = await self._scope(actor_id, tenant)
        page = await self.store.calendars_page(
            owner=owner, tenant=scope, failing_only=failing_only, after_id=after_id, limit=limit
        )
        rows = [
            replace(
                row,
                source=calendar_source(row.source),
                last_error=None if row.last_error is None else scrub_credentials(row.last_error),
                feeds=tuple(replace(f, destination=_redacted(f.destination)) for f in row.feeds),
            )
            for row in page.rows
        ]
        return replace(page, rows=rows)

    async def _scoped(self, actor_id: ActorRef, f: _F) -> _F:
        """``f`` limited to what the actor may see: their tenant (Herald-wide: the
        tenant ``f`` names, else all) and, for members, their own rows."""
        _, owner, tenant = await self._scope(actor_id, f.tenant)
        f = replace(f, tenant=tenant)
        return f if owner is None else replace(f, owner=owner)

    # --- bulk actions on schedules ----------------------------------------------------

    async def plan_schedules_bulk(
        self, actor_id: ActorRef, action: str, f: ScheduleFilter
    ) -> BulkPlan:
        """How many schedules ``action`` would change (for the confirmation)."""
        actor, visible = await self._bulk_scope(actor_id, action, f)
        matching = await self.store.count_schedules(visible)
        target = self._actionable(actor, action, visible)
        count = matching if target is visible else await self.store.count_schedules(target)
        note = None
        if count < matching:
            note = f"{matching - count} of the {matching} matching cannot be changed"
            if not actor.is_admin and visible.owner != actor.id:
                note += " (yours only: " + (unavailable(actor, "schedule.others") or "") + ")"
        return BulkPlan(action, count, matching, note)

    async def bulk_schedules(
        self,
        actor_id: ActorRef,
        action: str,
        f: ScheduleFilter,
        *,
        shift: timedelta | None = None,
    ) -> int:
        """Cancel, pause, resume or shift (by ``shift``) every schedule matching ``f``
        that the actor may change; each change is audited. Returns how many changed.

        Resuming is :meth:`resume_schedule` for each (its next run is worked out from
        its rule, one schedule at a time); one that cannot resume (a one-off whose time
        passed, a rule that ended, a change made meanwhile) is left paused and not
        counted."""
        actor, visible = await self._bulk_scope(actor_id, action, f)
        if visible.owner is not None and visible.owner != actor.id and not actor.is_admin:
            reason = unavailable(actor, "schedule.others") or ""
            raise await self.denied(actor, f"schedule.{action}", "member", visible.owner, reason)
        if action == "shift" and shift is None:
            raise InvalidInput("Say how far to shift, e.g. 2h or -30m.")
        target = self._actionable(actor, action, visible)
        owner = None if actor.is_admin else actor.id
        tenant = visible.tenant
        now = self.clock.now()
        total, after = 0, 0
        while ids := await self.store.schedule_ids(target, after_id=after, limit=CHUNK):
            after = ids[-1]
            if action == "resume":
                total += await self._resume_each(actor, ids)
                continue
            if action == "shift":
                assert shift is not None
                entry = AuditEntry.by(actor, "schedule.shift", "schedule", "", {"by": str(shift)})
                changed = await self.store.shift_schedules(
                    ids, by=shift, owner=owner, tenant=tenant, now=now, audit=entry
                )
                if changed:
                    self._due(now)
            else:
                to_state, from_states = SCHEDULE_BULK[action]
                entry = AuditEntry.by(actor, f"schedule.{action}", "schedule")
                changed = await self.store.stop_schedules(
                    ids,
                    to_state=to_state,
                    from_states=from_states,
                    owner=owner,
                    tenant=tenant,
                    now=now,
                    audit=entry,
                )
            total += len(changed)
        return total

    async def _resume_each(self, actor: Actor, ids: Sequence[int]) -> int:
        """Resume each schedule as a single resume does; count those that resumed."""
        resumed = 0
        for schedule_id in ids:
            try:
                await self.resume_schedule(actor, schedule_id)
            except (InvalidInput, Conflict):  # its time passed, or it changed meanwhile
                continue
            resumed += 1
        return resumed

    async def _bulk_scope(
        self, actor_id: ActorRef, action: str, f: ScheduleFilter
    ) -> tuple[Actor, ScheduleFilter]:
        if action not in SCHEDULE_BULK:
            raise InvalidInput(
                f"Unknown bulk action {action!r}: use cancel, pause, resume or shift."
            )
        actor, owner, tenant = await self._scope(actor_id, f.tenant)
        f = replace(f, tenant=tenant)
        return actor, f if owner is None else replace(f, owner=owner)

    @staticmethod
    def _actionable(actor: Actor, action: str, f: ScheduleFilter) -> ScheduleFilter:
        allowed = SCHEDULE_BULK[action][1]
        states = allowed if f.states is None else tuple(s for s in f.states if s in allowed)
        owner = f.owner if actor.is_admin else actor.id
        if f.owner not in (None, owner):
            states = ()  # someone else's, and the actor is not an admin: nothing
        if states == f.states and owner == f.owner:
            return f
        return replace(f, states=states or ("none",), owner=owner)

    # --- dead letters -----------------------------------------------------------------

    async def count_dead(self, actor_id: ActorRef, f: DeadFilter) -> int:
        return await self.store.count_dead(await self._scoped(actor_id, f))

    async def dead_letter_action(
        self,
        actor_id: ActorRef,
        action: str,
        *,
        ids: Sequence[int] | None = None,
        f: DeadFilter | None = None,
        reason: str | None = None,
    ) -> tuple[str, int]:
        """Retry (an admin) or request a retry (anyone else), approve or reject
        requests (admins; a rejection says ``reason``), discard (operators and admins):
        the given dead letters, or every one matching ``f``. Returns ``(what happened,
        count)``; a refused attempt is audited."""
        if action not in DEAD_ACTIONS:
            raise InvalidInput(f"Unknown action {action!r}: use {', '.join(DEAD_ACTIONS)}.")
        actor, owner, tenant = await self._scope(actor_id, f.tenant if f else None)
        refusal = unavailable(actor, f"dead.{action}")
        if refusal is not None:
            objects = ", ".join(map(str, ids)) if ids is not None else "all matching"
            raise await self.denied(actor, f"dead.{action}", "job", objects, refusal)
        if ids is not None:
            chunks: list[list[int]] = [list(ids[i : i + CHUNK]) for i in range(0, len(ids), CHUNK)]
        else:
            scope = replace(f or DeadFilter(), owner=owner, tenant=tenant)
            if action in ("approve", "reject"):
                scope = replace(scope, requested=True)
            chunks, after = [], 0
            while chunk := await self.store.dead_ids(scope, after_id=after, limit=CHUNK):
                chunks.append(chunk)
                after = chunk[-1]
        chosen = verbs.verb(action)
        options: dict[str, Any] = {"reason": reason} if "reason" in chosen.options else {}
        verb, total = chosen.past, 0
        for chunk in chunks:
            done = await self.on_dead_letters(chosen, actor_id, chunk, **options)
            if isinstance(done, tuple):  # a retry: ("retried" | "requested", count)
                verb, n = done
            else:
                n = done
            total += n
        return verb, total

    # --- detail and timeline ----------------------------------------------------------

    async def timeline(
        self,
        actor_id: ActorRef,
        *,
        schedule_id: int | None = None,
        job_id: int | None = None,
        attempt_id: int | None = None,
        archived: bool = False,
    ) -> Timeline:
        """A schedule (or a job's, or an attempt's schedule) with its rule in words, next
        occurrences and everything that happened to it, oldest first. With a job or an
        attempt, the timeline is that job's. With ``archived``, the history moved to the
        archive after HERALD_RETENTION_DAYS is on it too (its events marked archived),
        and ``job_id`` may name an archived job."""
        if attempt_id is not None:
            job_id = await self.store.attempt_job(attempt_id)
            if job_id is None:
                raise InvalidInput(f"There is no attempt {attempt_id}.")
        focus: Job | None = None
        focus_archived = False
        if job_id is not None:
            focus = await self.store.get_job(job_id)
            if focus is None and archived:
                tenant = (await self.actor(actor_id)).tenant
                focus = await self.store.archived_job(job_id, tenant=tenant)
                focus_archived = focus is not None
            if focus is None:
                raise InvalidInput(f"There is no job {job_id}.")
            schedule_id = focus.schedule_id
        if schedule_id is None:
            raise InvalidInput("Say which schedule, job or attempt to show.")
        try:
            detail = await self.show_schedule(actor_id, schedule_id, archived=archived)
        except NotFound:
            if focus is None:
                raise
            # another tenant's or member's job: as if it did not exist
            raise NotFound(f"There is no job {job_id} of yours.") from None
        if focus_archived and focus is not None:
            detail = await self._with_archived(detail, focus)
        schedule = detail.schedule
        jobs = list(detail.jobs)
        full = views.sees_destination(await self.actor(actor_id), schedule.owner)
        shown = [focus] if focus is not None else jobs
        to = _where(schedule, [*jobs, *detail.archived_jobs], full)
        events = await self._events(detail, focus, to, schedule.timezone)
        archived_ids = {j.id for j in detail.archived_jobs}
        for job in shown:
            if job.id not in archived_ids:  # those are told below, marked
                events.extend(_job_events(job))
        events.extend(_archived_events(detail, focus, to, schedule.timezone))
        job_ids = [j.id for j in shown if j.id is not None]
        for row in await self.store.object_audit(schedule_id, job_ids):
            if focus is None or row.object_type == "schedule" or row.object_id == str(focus.id):
                events.append(_audit_event(row))
        events.sort(key=lambda e: (e.at, _RANK.get(e.kind, 5)))
        if focus is not None and all(j.id != focus.id for j in jobs):
            jobs.append(focus)
        return Timeline(
            schedule,
            describe(schedule),
            _upcoming(schedule, self.clock.now()),
            jobs,
            events,
            None if focus is None else focus.id,
            _latest_jobs(schedule, jobs),
            views.fared(schedule, jobs),
        )

    async def _with_archived(self, detail: ScheduleDetail, focus: Job) -> ScheduleDetail:
        """``detail`` holding the archived ``focus`` job and its attempts, which it reads
        only among the schedule's latest archived jobs."""
        if focus.id is None or any(j.id == focus.id for j in detail.archived_jobs):
            return detail
        tenant = detail.schedule.tenant
        tried = await self.store.archived_attempts([focus.id], tenant=tenant)
        return replace(
            detail,
            archived_jobs=[*detail.archived_jobs, focus],
            archived_attempts=[*detail.archived_attempts, *tried],
        )

    async def _events(
        self, detail: ScheduleDetail, focus: Job | None, to: Callable[[Any], str], zone: str
    ) -> list[TimelineEvent]:
        """The attempts on a timeline (their provider's times in ``zone``, the zone the
        timeline is read in): the schedule's, or the ``focus`` job's (read on its own
        when it is older than the jobs the detail holds)."""
        if focus is None:
            tried: Sequence[Any] = detail.attempts
        elif any(j.id == focus.id for j in detail.jobs):
            tried = [a for a in detail.attempts if a.job_id == focus.id]
        elif any(j.id == focus.id for j in detail.archived_jobs):
            return []  # an archived job's: _archived_events tells them
        else:
            tried = await self.store.attempts_page(AttemptFilter(job_id=focus.id), limit=50)
        events = [_attempt_event(a, to(a), zone) for a in tried]
        # a receipt is a moment of its own: the provider's later word, in the same words
        return events + [
            TimelineEvent(a.receipt_at, "receipt", views.handoff(a, zone) or "", a.job_id)
            for a in tried
            if a.receipt is not None and a.receipt_at is not None
        ]


def _archived_events(
    detail: ScheduleDetail, focus: Job | None, to: Callable[[Any], str], zone: str
) -> list[TimelineEvent]:
    """The archived history a detail holds (of the ``focus`` job only, when there is
    one) as timeline events marked archived: each job's planning and end, each attempt
    and its receipt."""
    jobs = [j for j in detail.archived_jobs if focus is None or j.id == focus.id]
    kept = {j.id for j in jobs}
    tried = [a for a in detail.archived_attempts if a.job_id in kept]
    events = [e for job in jobs for e in _job_events(job)]
    events += [_attempt_event(a, to(a), zone) for a in tried]
    events += [
        TimelineEvent(a.receipt_at, "receipt", views.handoff(a, zone) or "", a.job_id)
        for a in tried
        if a.receipt is not None and a.receipt_at is not None
    ]
    return [replace(e, archived=True) for e in events]


def _where(schedule: Schedule, jobs: list[Job], full: bool) -> Callable[[Any], str]:
    """Where an attempt of ``schedule`` went, as a viewer who sees destinations in
    ``full`` (or not) may see it: for an older Herald's (none kept) its job's step,
    else the schedule's destination."""
    steps = {j.id: j.destination for j in jobs}

    def to(attempt: Any) -> str:
        uri = attempt.destination or steps.get(attempt.job_id) or schedule.destination
        return views.destination(uri, full=full)

    return to


def _latest_jobs(schedule: Schedule, jobs: list[Job]) -> list[RecipientState]:
    """Each recipient of ``schedule`` with its latest job of ``jobs`` (by occurrence)."""
    latest: dict[int, Job] = {}
    for job in jobs:
        if job.ladder:  # a nag or an escalation is no occurrence of its recipient's
            continue
        held = latest.get(job.recipient)
        if held is None or (job.occurrence_at, job.id or 0) > (held.occurrence_at, held.id or 0):
            latest[job.recipient] = job
    return [RecipientState(r, latest.get(r.id)) for r in views.recipients_of(schedule)]


def _redacted(destination: str) -> str:
    try:
        return parse_destination(destination).redacted()
    except HeraldError:
        return scrub(destination)


#: Order of events at the same instant: creation, planning, the try, its end, a
#: receipt, decisions.
_RANK = {
    k: i for i, k in enumerate("created planned claimed attempt retrying receipt audit".split())
}


def _upcoming(schedule: Schedule, now: datetime) -> list[datetime]:
    if schedule.state not in (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value):
        return []
    if schedule.rrule is None:
        return [schedule.starts_at] if schedule.starts_at > now else []
    return timeexpr.occurrences(schedule.rrule, count=5, after=now)


def _attempt_event(a: Any, to: str, zone: str) -> TimelineEvent:
    """An attempt (an Attempt or an AttemptRow) on a timeline: where it ran, how it
    went, where it went (``to``), what its provider did with it (:func:`core.views.
    handoff`, in ``zone``), how late it started when it was delayed (``delayed 4 min``)
    and the text it sent (variables filled in), when it kept it."""
    code = f" {a.status_code}" if a.status_code is not None else ""
    text = f"attempt to {to} on {a.worker or '?'}: {a.outcome}{code}"
    handed = views.handoff(a, zone)
    if handed:
        text += f" · {handed}"
    late = views.delay(a)
    if late:
        text += f" · {late}"
    if a.provider_message_id:
        text += f" (message {a.provider_message_id})"
    if a.body:
        sent = " ".join(a.body.split())
        sent = sent if len(sent) <= TEXT_CHARS else sent[: TEXT_CHARS - 1] + "…"
        text += f' · sent "{sent}"'
    return TimelineEvent(a.started_at, "attempt", text, a.job_id, (a.error or "")[:RESPONSE_CHARS])


def _job_events(job: Job) -> list[TimelineEvent]:
    label = until_done.step_label(job.ladder)
    what = f"job {job.id} ({label})" if label else f"job {job.id}"
    planned = job.due_at if label else job.occurrence_at  # a step is due at its own time
    events = [
        TimelineEvent(
            job.created_at, "planned", f"{what} planned for {planned:%Y-%m-%d %H:%M} UTC", job.id
        )
    ]
    if job.state == "claimed":
        until = f" until {job.lease_expires_at:%H:%M:%S}" if job.lease_expires_at else ""
        events.append(
            TimelineEvent(job.updated_at, "claimed", f"claimed by {job.lease_owner}{until}", job.id)
        )
    elif job.state == "retrying":
        events.append(
            TimelineEvent(
                job.updated_at,
                "retrying",
                f"next try at {job.due_at:%H:%M:%S}",
                job.id,
                job.last_error or "",
            )
        )
    if job.state == JobState.ACKNOWLEDGED.value and job.finished_at is not None:
        # delivered when it was sent, then marked done (core.until_done)
        events.append(TimelineEvent(job.finished_at, "delivered", "delivered", job.id))
        done = f"done by {job.done_by}" if job.done_by else "done"
        at = job.done_at or job.finished_at
        events.append(TimelineEvent(at, job.state, f"acknowledged: {done}", job.id))
    elif job.finished_at is not None:
        said = f"{label} · {job.state}" if label else job.state
        events.append(TimelineEvent(job.finished_at, job.state, said, job.id, job.last_error or ""))
    return events


def _audit_event(row: Audit) -> TimelineEvent:
    # rows written before the audit log had a surface said ``via`` in their details
    details = ", ".join(f"{k}={v}" for k, v in (row.details or {}).items() if k != "via")
    job_id = int(row.object_id) if row.object_type == "job" and row.object_id.isdigit() else None
    kind = "created" if row.action == "schedule.create" else "audit"
    via = f" via {row.surface}" if row.surface else ""
    return TimelineEvent(row.at, kind, f"{row.action} by {row.actor}{via}", job_id, details)
