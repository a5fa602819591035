"""Schedules: create, read, list, edit, pause, resume, skip, cancel; whom a schedule
may go to (a reminder for someone else); the quotas a request counts against.

Each method takes the acting member's id (``local:alice``, ``slack:U123``...), checks
permission, validates input, changes the store in one transaction and writes one audit
row. Bad input raises a :class:`~core.errors.HeraldError` subclass whose message a
person can read, and changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import core.cases.consent as consent
import core.cases.recipient_cap as recipient_cap
import core.cases.recipients as recipients
from core import calendars, limits, render, routing, templates, tenancy, timeexpr, tracing, views
from core import until_done as ladders
from core.actors import Actor, ActorRef
from core.cases.base import principal_of
from core.cases.calendars import RESERVED_KEY_PREFIX
from core.cases.channel_view import ChannelViewCases, Duplicated, SaveWarning
from core.cases.holds import HoldCases
from core.cases.messages import check_options, check_text
from core.cases.recipients import RecipientCases, To
from core.cases.templates import LIQUID, PART_OPTIONS, TemplateCases
from core.cases.until_done import LadderCases
from core.channels import parse_destination
from core.errors import Conflict, InvalidInput
from core.events import EventRow, EventType, schedule_data
from core.models import (
    LOCAL_TENANT,
    STATE_FILTERS,
    CalendarSource,
    Schedule,
    ScheduleState,
)
from core.preferences import priority_name, priority_rank
from core.preview import Preview, ZoneSource, build_preview
from core.reminders import ASKER_KEYS
from core.scrub import Scrubber
from core.store import AuditEntry, Held, ScheduleQuery
from core.views import ScheduleDetail

#: Destinations the hourly cap per recipient leaves alone: a webhook is a program's
#: endpoint, not a person or a room, and is bounded by its rate limit
#: (``HERALD_RATE_LIMITS``) and the minimum interval instead.
UNCAPPED_KINDS = frozenset({"webhook"})

MAX_KEY = 200


def _refuse_skip_phrase(when: str) -> None:
    """Calendars to skip (``… except holidays from URL``) are named when a schedule is
    created one at a time; anywhere else the phrase is refused, said plainly (rather
    than as a time Herald cannot read)."""
    if calendars.split_skip_phrase(when)[1]:
        raise InvalidInput(
            "Calendars to skip can be named only when you create a schedule (herald "
            "schedule, Slack or Discord), not when you edit or import one."
        )


def _with_template_flag(options: dict[str, Any], body: str) -> dict[str, Any]:
    """``options`` marked ``template`` when ``body`` uses variables (``{date}``,
    ``{schedule.id}``: the dispatcher fills them in for each occurrence); InvalidInput
    for an unknown one."""
    options.pop("template", None)
    if templates.is_schedule_template(body):
        options["template"] = True
    return options


def check_key(key: str | None) -> str | None:
    """A request's idempotency key (create, the API's ``Idempotency-Key``, an import
    line's ``key``), refused when empty, too long, or of the shape Herald keeps for the
    reminders of event feeds (``feed:…``)."""
    if key is None:
        return None
    if not key.strip() or len(key) > MAX_KEY:
        raise InvalidInput(f"The idempotency key must be 1 to {MAX_KEY} characters.")
    if key.casefold().startswith(RESERVED_KEY_PREFIX):
        raise InvalidInput(
            f"Idempotency keys beginning with {RESERVED_KEY_PREFIX!r} are Herald's own "
            "(the reminders of event feeds): choose another key."
        )
    return key


class ScheduleCases(RecipientCases, TemplateCases, HoldCases, LadderCases, ChannelViewCases):
    """Schedules (and the calendars they skip, :class:`CalendarCases`)."""

    def read_when(self, when: str, tz: str, *, actor: ActorRef | None = None) -> timeexpr.When:
        """Read a time expression now, in ``tz`` (InvalidInput if it cannot be read); a
        rule without a time of day takes the default of the ``actor``'s tenant
        (``HERALD_TENANT_DEFAULT_TIMES``, else ``HERALD_DEFAULT_TIME``)."""
        tenant = LOCAL_TENANT if actor is None else principal_of(actor).tenant
        default = self.settings.default_time_for(tenant)
        return timeexpr.parse_when(when, tz=tz, now=self.clock.now(), default_time=default)

    def build_schedule(
        self,
        actor: Actor,
        *,
        to: To,
        when: str,
        text: str,
        tz: str | None,
        key: str | None,
        max_lateness: float | None = None,
        options: Mapping[str, Any] | None = None,
        step_timeout: float | None = None,
        priority: str | None = None,
        templated: bool = False,
    ) -> dict[str, Any]:
        """Validate one request and return its schedule row's values, unstored (create
        and import share it). ``templated``: ``text`` is a named template's body, whose
        fit is checked by :meth:`template_values` with its data. ``to`` is one
        destination or several recipients (:func:`~core.cases.recipients.wanted_of`);
        each destination is checked as a schedule to it alone would be. Recipients
        reading the time in their own zone get it from :meth:`with_zones` afterwards.
        ``priority``: urgent, normal (None) or bulk."""
        chosen = priority_name(priority_rank(priority))
        wanted = recipients.canonical(recipients.wanted_of(to, step_timeout=step_timeout))
        recipients.check_count(actor, wanted)
        body = check_text(text)
        if max_lateness is not None and not 0 < max_lateness <= 366 * 86400:
            raise InvalidInput("The maximum lateness must be between 1 second and a year.")
        _refuse_skip_phrase(when)  # create() takes it off first; an import line cannot
        zone_name = self._zone_for(actor, tz)
        reading = self.read_when(when, zone_name, actor=actor)
        checked = check_options(options)
        for step in (d for w in wanted for d in w.to):
            destination = parse_destination(step)
            tenancy.check_mentions(actor, destination, body, checked, self.settings)
            tenancy.check_interval(actor, destination, reading.rule, self.settings)
        now = self.clock.now()
        options_checked = checked if templated else _with_template_flag(checked, body)
        for step in (d for w in wanted for d in w.to if not templated):
            limits.check_message(parse_destination(step), body, options_checked)
        numbered = routing.numbered(list(wanted))
        return {
            "owner": actor.id,
            "tenant": actor.tenant,
            "destination": numbered[0].first,
            "recipients": routing.to_json(numbered),
            "body": body,
            "expression": reading.expression,
            "timezone": reading.timezone,  # a zone written in the phrase wins
            "rrule": reading.rule,
            "starts_at": reading.first,
            "next_run_at": reading.first,
            "state": ScheduleState.ACTIVE.value,
            "priority": chosen,
            "idempotency_key": check_key(key),
            "max_lateness_s": None if max_lateness is None else round(max_lateness),
            "options": options_checked,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }

    @tracing.traced("herald.schedule.create")
    async def create_schedule(
        self,
        actor_id: ActorRef,
        *,
        to: To,
        when: str,
        text: str,
        tz: str | None = None,
        key: str | None = None,
        max_lateness: float | None = None,
        options: Mapping[str, Any] | None = None,
        skip: Sequence[str] = (),
        skip_files: Mapping[str, str] | None = None,
        skip_loaded: Sequence[CalendarSource] = (),
        their_time: bool = False,
        step_timeout: float | None = None,
        priority: str | None = None,
        auto_pause: bool = True,
        template: str | None = None,
        data: Mapping[str, Any] | None = None,
        data_by_recipient: Mapping[str, Mapping[str, Any]] | None = None,
        until_done: Mapping[str, Any] | None = None,
        private: bool = False,
        duplicates: Literal["warn", "refuse", "ignore"] = "warn",
        seen_in: str | None = None,
    ) -> tuple[Schedule, bool]:
        """Schedule ``text`` to ``to`` (one destination, or several recipients and
        chains: :func:`~core.cases.recipients.wanted_of`) at ``when``; with
        ``their_time``, each person's occurrence at that wall time in their own zone.
        Returns ``(schedule, created)``; with a ``key`` the owner already used, the
        existing schedule and ``False``.

        Occurrences the events of skip calendars hold are skipped: URLs in ``when``
        (``… except holidays from URL``, :func:`core.calendars.split_skip_phrase`) or in
        ``skip``, uploaded ``skip_files`` (name → text) and calendars already loaded by
        :meth:`load_calendars`. They are read before anything is stored, so a calendar
        that cannot be read (CalendarError) creates nothing.

        ``priority`` (urgent, normal: None, bulk) orders its jobs in the queue. A person
        who does not accept reminders from the actor refuses it (PermissionDenied,
        audited), as an urgent one to a person with quiet hours is refused unless the
        actor is an operator or an admin (:mod:`core.cases.consent`); the read-back
        (:func:`core.views.read_back`) says when a person's quiet hours hold its next
        send. With ``auto_pause`` False, a recurring schedule is never paused by the
        system for failing (``--no-auto-pause``).

        ``template`` names a template of the actor's tenant to send instead of ``text``,
        filled in with ``data`` and ``data_by_recipient`` (:meth:`template_values`).

        ``until_done`` (``{"nag": "15m", "escalate": [{"to": [...], "after": "1h"}]}``)
        sends each occurrence with a Done button, nagging and escalating until someone
        presses it (core.until_done). A member's message into an announcement channel,
        or with broadcast mentions their tenant holds, is saved awaiting approval
        (state ``awaiting``): nothing is sent until an approver approves it
        (core/cases/approvals.py).

        ``private`` keeps it out of its channel's agenda (core/cases/channel_view.py).
        The same text already scheduled there within ten minutes of one of its sends
        is a duplicate: with ``duplicates="refuse"`` nothing is saved (Duplicated,
        naming them), ``"warn"`` saves it and says so, ``"ignore"`` (create anyway)
        says nothing of them. A crowded destination is said too: the warnings ride on
        the returned schedule (:func:`core.views.warnings_of`). ``seen_in`` is the
        channel a signed chat request came from (its members see its agenda)."""
        actor = await self.actor(actor_id)
        if template is not None:
            if text.strip():
                raise InvalidInput("Give a message or a template, not both.")
            text = (await self._template(actor, template)).body
        elif data or data_by_recipient:
            raise InvalidInput("Data fill in a template's variables: name the template too.")
        when, urls = calendars.split_skip_phrase(when)
        wanted = recipients.wanted_of(to, their_time=their_time, step_timeout=step_timeout)
        recipients.check_count(actor, wanted)
        # slack:#deploys is kept as slack:C…
        named = await self.named_recipients(actor, wanted)
        values = await self._audited_refusals(
            actor,
            lambda: self.build_schedule(
                actor,
                to=named,
                when=when,
                text=text,
                tz=tz,
                key=key,
                max_lateness=max_lateness,
                options=options,
                priority=priority,
                templated=template is not None,
            ),
        )
        values["auto_pause"] = auto_pause
        values["private"] = bool(private)
        escalations: list[str] = []
        if until_done is not None:
            ladder = self._ladder_option(actor, until_done)
            values["options"] = {**values["options"], ladders.OPTION: ladder}
            escalations = ladders.UntilDone.from_json(ladder).escalates_to
            for step in escalations:  # a person is escalated to by DM: as one reminded
                await self.check_recipient(actor, parse_destination(step), "schedule.create")
            for step in recipients.destinations_of(values) if template is None else ():
                # with its Done button, the message must still fit (a template's fit
                # is checked with its data below, the option included)
                limits.check_message(parse_destination(step), values["body"], values["options"])
        if template is not None:
            values |= await self.template_values(
                actor,
                template,
                data=data,
                data_by_recipient=data_by_recipient,
                recipients=routing.from_json(values["recipients"], values["destination"]),
                options=values["options"],
            )
        if their_time:
            values = await self.zoned(actor, values, named)
        values = await self.with_asker(actor, values)
        people = await consent.check_people(
            self,
            actor,
            [*recipients.destinations_of(values), *escalations],
            priority=values["priority"],
            action="schedule.create",
        )
        await self.check_quota(actor, adding=len(values["recipients"]))
        await self.check_recipient_cap(actor, [values])
        for destination in [*recipients.destinations_of(values), *escalations]:
            await self.check_reachable(destination)
        held = await self._held(actor, values)
        if held is not None:
            values["state"] = ScheduleState.AWAITING.value
        sources = [*urls, *skip]
        if sources or skip_files:
            skip_loaded = [*skip_loaded, *await self.load_calendars(actor, sources, skip_files)]
        schedule = Schedule(**values)
        found: list[SaveWarning] = []
        if held is None:
            found = await self.save_warnings(
                actor,
                schedule,
                recipients.destinations_of(values),
                duplicates_too=duplicates != "ignore",
                seen_in=seen_in,
                key=key,
            )
            dups = [w for w in found if w.kind == "duplicate"]
            if dups and duplicates == "refuse":
                raise Duplicated(dups)
        skips = await self._skip_from_the_start(schedule, skip_loaded) if skip_loaded else None
        stored, created = await self.store.create_schedule(
            schedule,
            first_run=None if held is not None else schedule.next_run_at,
            held=held,
            now=self.clock.now(),
            audit=AuditEntry.by(
                actor,
                "schedule.create",
                "schedule",
                details=audit_summary(values),
            ),
        )
        surface = str(actor.surface or "unknown")
        tracing.note({"herald.schedule.id": stored.id or 0, "herald.surface": surface})
        if created and held is None:
            self._due(schedule.next_run_at)
            if skip_loaded and stored.id is not None:
                # the skipped occurrences, by event name, for the timeline
                since = max(self.clock.now(), schedule.starts_at - timedelta(microseconds=1))
                stored = await self._apply_skips(
                    stored, skip_loaded, stored.skip_calendars, actor, after=since, skips=skips
                )
            views.add_save_notes(stored, await consent.quiet_notes(self, actor, stored, people))
            views.add_warnings(stored, found)
        return stored, created

    async def _audited_refusals(
        self, actor: Actor, build: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """``build()``, with quota and mention refusals audited (``schedule.create.denied``)."""
        try:
            return build()
        except (tenancy.QuotaExceeded, tenancy.MentionRefused) as exc:
            raise await self.denied(
                actor, "schedule.create", "schedule", "", str(exc), type(exc)
            ) from None

    async def check_quota(self, actor: Actor, *, adding: int) -> None:
        """Refuse (and audit) ``adding`` live schedules past the member's or tenant's quota."""
        if tenancy.exempt(actor, self.settings):
            return
        mine, total = await self.store.count_live(actor.tenant, actor.id)
        try:
            tenancy.check_live_count(
                actor, mine=mine, tenant_total=total, adding=adding, settings=self.settings
            )
        except tenancy.QuotaExceeded as exc:
            raise await self.denied(
                actor, "schedule.create", "schedule", "", str(exc), tenancy.QuotaExceeded
            ) from None

    async def check_recipient_cap(
        self,
        actor: Actor,
        rows: Sequence[Mapping[str, Any]],
        *,
        action: str = "schedule.create",
        exclude: int | None = None,
        tick: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Refuse (QuotaExceeded, audited as ``<action>.denied``) schedules that would
        give one destination more than ``HERALD_RECIPIENT_HOURLY_CAP`` messages of
        ``actor``'s due within an hour (:mod:`core.cases.recipient_cap`). ``rows`` are
        schedule values as :meth:`build_schedule` makes them (``destination``,
        ``starts_at``, ``rrule``): one for a create, every line of an import at once;
        ``exclude`` is a schedule being changed (its own sends are the rows'). Exempt:
        admins, whoever no quota applies to (:func:`core.tenancy.exempt`), a message to
        oneself, and a program's endpoint (:data:`UNCAPPED_KINDS`). ``tick`` is awaited
        between rows (an import gives the event loop its turns through it)."""
        cap = self.settings.recipient_hourly_cap
        if cap <= 0 or actor.is_admin or tenancy.exempt(actor, self.settings):
            return
        by_destination: dict[str, list[datetime]] = {}
        for row in rows:
            if tick is not None:
                await tick()
            sends: list[datetime] | None = None
            for step in recipients.destinations_of(row):
                destination = parse_destination(step)
                if destination.recipient == actor.id or destination.kind in UNCAPPED_KINDS:
                    continue
                if sends is None:
                    sends = recipient_cap.sends_of(
                        row["starts_at"], row["rrule"], after=row.get("resumes_at")
                    )
                by_destination.setdefault(str(destination), []).extend(sends)
        for where, adding in sorted(by_destination.items()):
            within = recipient_cap.stretches(adding)
            found = await self.store.sends_to(
                actor.tenant,
                actor.id,
                where,
                start=within[0][0],
                end=within[-1][1],
                exclude=exclude,
            )
            # many rules over many stretches (a large import) is CPU work: off the loop
            ruled = await asyncio.to_thread(recipient_cap.rule_sends, found.rules, within)
            existing = found.due + ruled
            crowded = recipient_cap.crowded_hour(existing, adding, cap)
            if crowded is None:
                continue
            shown = parse_destination(where).redacted()
            reason = recipient_cap.refusal(crowded, shown, cap, self._zone_for(actor, None))
            raise await self.denied(
                actor, action, "schedule", str(exclude or ""), reason, tenancy.QuotaExceeded
            )

    async def count_command(self, actor_id: ActorRef) -> Actor:
        """Count one chat command of the actor against ``HERALD_QUOTA_COMMANDS_PER_MINUTE``;
        QuotaExceeded (audited once a minute per member) past it. Returns the actor
        (one already resolved, e.g. by :meth:`sync_member`, is not read again)."""
        actor = actor_id if isinstance(actor_id, Actor) else await self.actor(actor_id)
        if tenancy.exempt(actor, self.settings):
            return actor
        now = self.clock.now()
        if self._commands.admit(actor, now):
            return actor
        reason = (
            f"You sent more than {self.settings.quota_commands_per_minute} commands in a "
            "minute; wait a moment and try again."
        )
        if self._commands.first_refusal(actor, now):
            raise await self.denied(
                actor, "command", "member", actor.id, reason, tenancy.QuotaExceeded
            )
        raise tenancy.QuotaExceeded(reason)

    async def check_reachable(self, destination: str) -> None:
        """Ask the destination's channel whether it can deliver there (InvalidInput if
        not); a syntax check only when no channel is wired in."""
        parsed = parse_destination(destination)
        channel = self.channels.get(parsed.kind)
        if channel is not None:
            try:
                await channel.validate(parsed)
            except InvalidInput as exc:  # the provider's words may echo a token
                scrubbed = Scrubber.from_settings(self.settings)(str(exc))
                raise InvalidInput(scrubbed) from None

    async def list_schedules(
        self,
        actor_id: ActorRef,
        *,
        everyone: bool = False,
        state: str | None = None,
        destination: str | None = None,
        text: str | None = None,
        tenant: str | None = None,
        limit: int = 200,
        newest_first: bool = False,
        before_id: int | None = None,
    ) -> list[Schedule]:
        """The actor's schedules in their tenant (or, for operators and admins,
        everyone's there; Herald-wide ones may name any ``tenant``, default all):
        soonest next run first, or ``newest_first`` (by id, pages after ``before_id``)."""
        query = await self._schedule_query(
            actor_id,
            everyone=everyone,
            state=state,
            destination=destination,
            text=text,
            tenant=tenant,
            limit=limit,
            newest_first=newest_first,
            before_id=before_id,
        )
        return await self.store.list_schedules(query)

    async def count_schedules(
        self,
        actor_id: ActorRef,
        *,
        everyone: bool = False,
        state: str | None = None,
        destination: str | None = None,
        text: str | None = None,
        tenant: str | None = None,
    ) -> int:
        """How many schedules :meth:`list_schedules` with the same filters finds, all
        of them (what a list cut at its limit says: "200 of 1,013 shown")."""
        query = await self._schedule_query(
            actor_id,
            everyone=everyone,
            state=state,
            destination=destination,
            text=text,
            tenant=tenant,
            limit=1,
            newest_first=False,
            before_id=None,
        )
        return await self.store.count_listed(query)

    async def _schedule_query(
        self,
        actor_id: ActorRef,
        *,
        everyone: bool,
        state: str | None,
        destination: str | None,
        text: str | None,
        tenant: str | None,
        limit: int,
        newest_first: bool,
        before_id: int | None,
    ) -> ScheduleQuery:
        """The store's query of a list's filters, checked for the actor (refusals of
        listing everyone's, an unknown state or destination, a limit under 1)."""
        actor = await self.actor(actor_id)
        if everyone and not actor.sees_everything:
            raise await self.denied(
                actor,
                "schedule.list_all",
                "schedule",
                "",
                "Only operators and admins can list everyone's schedules.",
            )
        states: tuple[str, ...] | None = None
        if state is not None:
            if state not in STATE_FILTERS:
                choices = ", ".join(STATE_FILTERS)
                raise InvalidInput(f"Unknown state {state!r}: use one of {choices}.")
            states = (state,)
        if destination is not None:
            destination = str(parse_destination(await self.named_channel(actor, destination)))
        if limit < 1:
            raise InvalidInput("The limit must be at least 1.")
        return ScheduleQuery(
            owner=None if everyone else actor.id,
            tenant=self.tenant_scope(actor, tenant),
            states=states,
            destination=destination,
            text=text,
            limit=limit,
            newest_first=newest_first,
            before_id=before_id,
        )

    async def preview_when(
        self,
        actor_id: ActorRef,
        when: str,
        *,
        tz: str | None = None,
        count: int = 5,
        read_calendars: bool = True,
    ) -> Preview:
        """How ``when`` reads for the actor exactly as :meth:`create_schedule` would
        store it (the same zone: ``tz``, else the member's, else Herald's default; the
        tenant's default time; the calendars of ``… except holidays from URL``), with
        its next ``count`` sends; stored nowhere. The calendars are fetched and read
        (nothing is kept) unless ``read_calendars`` is False (a preview at each
        keystroke: their URLs come back unread). InvalidInput for a time that cannot be
        read, CalendarError for a calendar that cannot."""
        actor = await self.actor(actor_id)
        if count < 1:
            raise InvalidInput("Ask for at least 1 occurrence.")
        phrase, urls = calendars.split_skip_phrase(when)
        zone = self._zone_for(actor, tz)
        reading = self.read_when(phrase, zone, actor=actor)
        skips = None
        if urls and read_calendars:
            texts = []
            for url in urls:
                got = await self._fetch(url)
                assert got.body is not None
                texts.append((url, got.body))
            skips = await self._reader.blackouts(texts, self.clock.now(), zone)
        source = (
            ZoneSource.GIVEN if tz else ZoneSource.MEMBER if actor.timezone else ZoneSource.DEFAULT
        )
        return build_preview(reading, source, count=count, calendars=urls, skips=skips)

    async def show_schedule(
        self, actor_id: ActorRef, schedule_id: int, *, archived: bool = False
    ) -> ScheduleDetail:
        """One schedule with its jobs and their attempts; with ``archived``, also its
        latest archived jobs (finished more than HERALD_RETENTION_DAYS ago) and theirs."""
        actor = await self.actor(actor_id)
        schedule = await self._visible(actor, schedule_id)
        assert schedule.id is not None
        # the latest occurrences of every recipient (views.fared reads the last tried)
        per_occurrence = len(recipients.destinations_of(_values_of(schedule)))
        rule = ladders.of_options(schedule.options)
        if rule is not None:  # each occurrence's ladder too: nags, escalations, the edit
            per_occurrence *= 2 + ladders.MAX_NAGS + len(rule.escalates_to)
        limit = max(50, 3 * per_occurrence)
        jobs = await self.store.schedule_jobs(schedule.id, limit=limit)
        attempts = await self.store.job_attempts([job.id for job in jobs if job.id is not None])
        if not archived:
            return ScheduleDetail(schedule, jobs, attempts)
        old = await self.store.archived_jobs(schedule.id, tenant=schedule.tenant, limit=limit)
        old_attempts = await self.store.archived_attempts(
            [job.id for job in old if job.id is not None], tenant=schedule.tenant
        )
        return ScheduleDetail(schedule, jobs, attempts, old, old_attempts)

    async def edit_schedule(
        self,
        actor_id: ActorRef,
        schedule_id: int,
        *,
        when: str | None = None,
        text: str | None = None,
        to: To | None = None,
        tz: str | None = None,
        expected_version: int | None = None,
        add: To = (),
        remove: Sequence[str] = (),
        priority: str | None = None,
        auto_pause: bool | None = None,
        template: str | None = None,
        data: Mapping[str, Any] | None = None,
        data_by_recipient: Mapping[str, Mapping[str, Any]] | None = None,
        until_done: Mapping[str, Any] | bool | None = None,
        private: bool | None = None,
    ) -> Schedule:
        """Change a schedule's time, text or recipients: ``to`` replaces them all,
        ``add`` and ``remove`` (destinations, a chain by its first) change some; the
        recipients it keeps keep their jobs; ``priority`` (urgent, normal, bulk) its
        place in the queue; ``auto_pause`` whether the system may pause it for failing.
        A stale ``expected_version`` (or a concurrent edit) is refused with Conflict;
        its people's refusals as :meth:`create_schedule`'s.

        ``template`` moves it to a template (its current version) and ``data`` or
        ``data_by_recipient`` replace its data; ``template="none"`` with a ``text``
        gives it its own text again. A schedule using a template takes no ``text``.

        ``until_done`` sets its ladder (as :meth:`create_schedule` takes it), False
        sends it plainly again; either way the nags and escalations a delivered
        message still waits for (the old rule's) are cancelled, and its Done still
        edits it. A held message's edit asks for approval again, as does
        an edit of an approved one's text or destinations that would be held."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        if add or remove:
            to = await self._edited_recipients(actor, schedule, to, add, remove)
        asked = (
            when,
            text,
            to,
            priority,
            auto_pause,
            template,
            data,
            data_by_recipient,
            until_done,
            private,
        )
        if asked == (None,) * 10:
            raise InvalidInput("Nothing to change: give a new time, text, destination or priority.")
        using = (schedule.options or {}).get(LIQUID)
        detach = template is not None and template.strip().lower() in ("", "none")
        if detach and text is None:
            raise InvalidInput("To stop using a template, give the schedule its own text too.")
        if template is not None and not detach and text is not None:
            raise InvalidInput("Give a message or a template, not both.")
        if using and text is not None and not detach:
            raise InvalidInput(
                f"Schedule {schedule_id} sends template {using.get('template')!r}: edit the "
                "template, or stop using it (template none) and give the new text."
            )
        if (
            (data is not None or data_by_recipient is not None)
            and not using
            and (template is None or detach)
        ):
            raise InvalidInput("Data fill in a template's variables: name the template too.")
        templated = (template is not None and not detach) or (
            bool(using)
            and not detach
            and (to is not None or data is not None or data_by_recipient is not None)
        )
        if tz is not None and when is None:
            raise InvalidInput("A new time zone needs a new time too (--when).")
        _require_state(
            schedule,
            ScheduleState.ACTIVE,
            ScheduleState.PAUSED,
            ScheduleState.AWAITING,
            verb="edited",
        )
        values: dict[str, Any] = {}
        changed: dict[str, Any] = {}
        if priority is not None:
            values["priority"] = changed["priority"] = priority_name(priority_rank(priority))
        if auto_pause is not None:
            values["auto_pause"] = changed["auto_pause"] = auto_pause
        if private is not None:
            values["private"] = changed["private"] = bool(private)
        if text is not None:
            values["body"] = check_text(text)
            changed["text_chars"] = len(text)
        asker: dict[str, Any] = {}
        if to is not None:
            new = await self._new_recipients(actor, schedule, to)
            before = len(routing.from_json(schedule.recipients, schedule.destination))
            if len(new) > before:  # each recipient counts against the quota
                await self.check_quota(actor, adding=len(new) - before)
            for step in (d for r in new for d in r.to):
                asker |= await self.check_recipient(actor, parse_destination(step), "schedule.edit")
                await self.check_reachable(step)
            values["recipients"] = routing.to_json(new)
            if new[0].first != schedule.destination:
                values["destination"] = new[0].first
            changed["recipients"] = [
                routing.describe(r, lambda d: parse_destination(d).redacted()) for r in new
            ]
        if detach:
            values["template_id"] = values["template_version"] = None
            changed["template"] = None
        if templated:
            options = dict(schedule.options or {})
            if to is not None:  # who asked is said again for the new recipients
                options = {k: v for k, v in options.items() if k not in ASKER_KEYS} | asker
            kept = render.Use.of(using)
            current = routing.from_json(
                values.get("recipients", schedule.recipients),
                values.get("destination", schedule.destination),
            )
            ids = {str(r.id) for r in current}
            name = template if template is not None else str((using or {}).get("template"))
            values |= await self.template_values(
                actor,
                name,
                data=kept.data if data is None else data,
                data_by_recipient=(
                    {k: v for k, v in kept.by_recipient.items() if k in ids}
                    if data_by_recipient is None
                    else data_by_recipient
                ),
                recipients=current,
                # the parts in its options are its template's (its own are refused)
                options={k: v for k, v in options.items() if k not in PART_OPTIONS},
            )
            changed["template"] = name
        elif text is not None or to is not None:
            # whom the message may notify is the editor's to say, as of this edit
            body = values.get("body", schedule.body)
            options = dict(schedule.options or {})
            if detach:
                options = {k: v for k, v in options.items() if k not in (LIQUID, *PART_OPTIONS)}
            options = _with_template_flag(options, body)
            if to is not None:  # who asked is said again for the new recipients
                options = {k: v for k, v in options.items() if k not in ASKER_KEYS} | asker
            every = recipients.destinations_of({**_values_of(schedule), **values})
            try:
                for step in every:
                    options = tenancy.check_mentions(
                        actor, parse_destination(step), body, options, self.settings
                    )
            except tenancy.MentionRefused as exc:
                raise await self.denied(
                    actor, "schedule.edit", "schedule", str(schedule_id), str(exc), type(exc)
                ) from None
            values["options"] = options
            for step in every:  # the message must fit where it goes
                limits.check_message(parse_destination(step), body, options)
        people: dict[str, consent.Person] = {}
        if to is not None or priority is not None or when is not None:
            people = await consent.check_people(
                self,
                actor,
                recipients.destinations_of({**_values_of(schedule), **values}),
                priority=values.get("priority", schedule.priority),
                action="schedule.edit",
                object_id=str(schedule_id),
                # a new time alone is not checked again (only its read-back needs them)
                refuse=to is not None or priority is not None,
            )
        if to is not None and when is None:  # the rule it keeps, into each new recipient
            await self._check_intervals(actor, schedule, values, schedule.rrule)
        arm_at: datetime | None = None
        if when is not None:
            _refuse_skip_phrase(when)
            zone_name = self._zone_for(actor, tz, kept=schedule.timezone)
            reading = self.read_when(when, zone_name, actor=actor)
            await self._check_intervals(actor, schedule, values, reading.rule)
            values.update(
                expression=reading.expression,
                timezone=reading.timezone,  # a zone written in the phrase wins
                rrule=reading.rule,
                starts_at=reading.first,
                next_run_at=reading.first,
            )
            changed.update(when=reading.expression, timezone=reading.timezone)
            if schedule.state == ScheduleState.ACTIVE.value:
                arm_at = reading.first
        if schedule.state == ScheduleState.ACTIVE.value and (when is not None or to is not None):
            sends: dict[str, Any] = {  # a paused one is counted when it resumes
                "destination": values.get("destination", schedule.destination),
                "recipients": values.get("recipients", schedule.recipients),
                "starts_at": values.get("starts_at", schedule.starts_at),
                "rrule": values.get("rrule", schedule.rrule),
                "resumes_at": None if when is not None else schedule.next_run_at,
            }
            if sends["resumes_at"] is not None or when is not None:
                await self.check_recipient_cap(
                    actor, [sends], action="schedule.edit", exclude=schedule.id
                )
        stop_ladders = False
        if until_done is True:
            raise InvalidInput(
                "Say how to send it until done (a nag interval or an escalation), or false "
                "to send it plainly again."
            )
        if until_done is not None:
            options = dict(values.get("options", schedule.options or {}))
            options.pop(ladders.OPTION, None)
            if until_done is not False:
                options[ladders.OPTION] = self._ladder_option(actor, until_done)
                rule = ladders.UntilDone.from_json(options[ladders.OPTION])
                for destination in rule.escalates_to:  # a person by DM: as one reminded
                    await self.check_recipient(
                        actor, parse_destination(destination), "schedule.edit"
                    )
                    await self.check_reachable(destination)
            values["options"] = options
            changed["until_done"] = ladders.OPTION in options
            # the ladder in flight was written by the old rule: it stops (Done still works)
            stop_ladders = options.get(ladders.OPTION) != (schedule.options or {}).get(
                ladders.OPTION
            )
            if not (options.get(LIQUID) or templated):
                body = values.get("body", schedule.body)
                for step in recipients.destinations_of({**_values_of(schedule), **values}):
                    limits.check_message(parse_destination(step), body, options)
        message = (text, to, template, data, data_by_recipient) != (None,) * 5
        held, withdraw = await self._held_again(actor, schedule, values, message)
        cancel = when is not None
        if held is not None:
            values["state"] = ScheduleState.AWAITING.value
            cancel, arm_at = True, None
        elif withdraw:  # no longer held: sent from its next occurrence on
            values["state"] = ScheduleState.ACTIVE.value
            arm_at = values.get("next_run_at", schedule.next_run_at)
        # without a new time, the recipients kept keep their jobs, the removed lose
        # theirs and the added get the next occurrence (the store's reroute)
        updated = await self._change(
            actor,
            schedule,
            "edit",
            values,
            changed,
            cancel=cancel,
            arm_at=arm_at,
            held=held,
            withdraw=withdraw,
            stop_ladders=stop_ladders,
        )
        if to is not None and arm_at is None:
            self._due(updated.next_run_at)
        if updated.state == ScheduleState.ACTIVE.value and (when is not None or to is not None):
            # a new time or place: is it crowded there now? (its own jobs left out)
            views.add_warnings(
                updated,
                await self.congestion_of(updated, recipients.destinations_of(_values_of(updated))),
            )
        return views.add_save_notes(
            updated, await consent.quiet_notes(self, actor, updated, people)
        )

    async def _held_again(
        self, actor: Actor, schedule: Schedule, values: Mapping[str, Any], message: bool
    ) -> tuple[Held | None, bool]:
        """An edit's request for approval: a held message's every edit asks again (the
        request is of its version), an approved one's when its text or destinations
        change and would be held. ``(request, withdraw)``: withdraw is True when a held
        message's edit no longer needs one (its pending request withdrawn)."""
        awaiting = schedule.state == ScheduleState.AWAITING.value
        if not awaiting and not message:
            return None, False
        merged = {
            "destination": schedule.destination,
            "recipients": schedule.recipients,
            "body": schedule.body,
            "options": schedule.options or {},
            "expression": schedule.expression,
            "template_version": schedule.template_version,
            "timezone": schedule.timezone,
            "next_run_at": schedule.next_run_at,
            "starts_at": schedule.starts_at,
            "rrule": schedule.rrule,
            "owner": schedule.owner,
            "tenant": schedule.tenant,
            "id": schedule.id,
            **values,
        }
        held = await self._held(actor, merged)  # an approver's edit is not held
        return held, held is None and awaiting

    async def _check_intervals(
        self, actor: Actor, schedule: Schedule, values: Mapping[str, Any], rule: str | None
    ) -> None:
        """Refuse (audited) an edit whose rule repeats faster than a member may into any
        of the schedule's recipients after it (:func:`tenancy.check_interval`)."""
        try:
            for step in recipients.destinations_of({**_values_of(schedule), **values}):
                tenancy.check_interval(actor, parse_destination(step), rule, self.settings)
        except tenancy.QuotaExceeded as exc:
            raise await self.denied(
                actor, "schedule.edit", "schedule", str(schedule.id), str(exc), type(exc)
            ) from None

    async def pause_schedule(
        self, actor_id: ActorRef, schedule_id: int, *, expected_version: int | None = None
    ) -> Schedule:
        """Stop sending until resumed; waiting jobs are cancelled."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        _require_state(schedule, ScheduleState.ACTIVE, verb="paused")
        assert schedule.id is not None
        now = self.clock.now()
        paused = EventRow(
            tenant=schedule.tenant,
            type=EventType.SCHEDULE_PAUSED.value,
            at=now,
            schedule_id=schedule.id,
            job_id=None,
            owner=schedule.owner,
            key=None,
            data=schedule_data(schedule.id, "paused by a person", now, by=actor.id),
        )
        return await self._set_state(
            actor, schedule, ScheduleState.PAUSED, cancel=True, events=[paused]
        )

    async def resume_schedule(
        self, actor_id: ActorRef, schedule_id: int, *, expected_version: int | None = None
    ) -> Schedule:
        """Start sending again from the next occurrence after now."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        _require_state(schedule, ScheduleState.PAUSED, verb="resumed")
        now = self.clock.now()
        if schedule.rrule is None:
            if schedule.starts_at <= now:
                raise InvalidInput(
                    f"Schedule {schedule_id} was due {schedule.starts_at:%Y-%m-%d %H:%M} UTC, "
                    "which passed while it was paused: give it a new time with edit."
                )
            upcoming: datetime | None = schedule.starts_at
        else:
            upcoming = timeexpr.next_occurrence(schedule.rrule, now)
            if upcoming is None:
                raise InvalidInput(
                    f"Schedule {schedule_id} has no occurrence left after now: "
                    "its rule ended while it was paused."
                )
        sends = {
            "destination": schedule.destination,
            "recipients": schedule.recipients,
            "starts_at": schedule.starts_at,
            "rrule": schedule.rrule,
            "resumes_at": upcoming,
        }
        await self.check_recipient_cap(
            actor, [sends], action="schedule.resume", exclude=schedule.id
        )
        return await self._set_state(actor, schedule, ScheduleState.ACTIVE, arm_at=upcoming)

    async def skip_next(
        self, actor_id: ActorRef, schedule_id: int, *, expected_version: int | None = None
    ) -> Schedule:
        """Skip a recurring schedule's next occurrence only; it resumes after it."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        _require_state(schedule, ScheduleState.ACTIVE, verb="skipped")
        if schedule.rrule is None:
            raise InvalidInput(
                f"Schedule {schedule_id} happens only once; cancel it instead of skipping."
            )
        skipped = schedule.next_run_at
        if skipped is None:
            raise Conflict(f"Schedule {schedule_id} has no next occurrence to skip.")
        upcoming = timeexpr.next_occurrence(schedule.rrule, skipped)
        values: dict[str, Any] = {"next_run_at": upcoming}
        if upcoming is None:
            values["state"] = ScheduleState.COMPLETED.value
        details = {"skipped": skipped.isoformat(), "next": upcoming and upcoming.isoformat()}
        return await self._change(
            actor, schedule, "skip", values, details, cancel=True, arm_at=upcoming
        )

    async def cancel_schedule(
        self, actor_id: ActorRef, schedule_id: int, *, expected_version: int | None = None
    ) -> Schedule:
        """Stop for good; waiting jobs are cancelled."""
        actor = await self.actor(actor_id)
        schedule = await self._changeable(actor, schedule_id, expected_version)
        _require_state(
            schedule,
            ScheduleState.ACTIVE,
            ScheduleState.PAUSED,
            ScheduleState.AWAITING,
            verb="cancelled",
        )
        return await self._set_state(
            actor,
            schedule,
            ScheduleState.CANCELLED,
            cancel=True,
            withdraw=schedule.state == ScheduleState.AWAITING.value,
        )

    async def _set_state(
        self,
        actor: Actor,
        schedule: Schedule,
        state: ScheduleState,
        *,
        cancel: bool = False,
        arm_at: datetime | None = None,
        events: Sequence[EventRow] = (),
        withdraw: bool = False,
    ) -> Schedule:
        values: dict[str, Any] = {"state": state.value}
        if cancel:
            values["next_run_at"] = None
        if state == ScheduleState.ACTIVE:
            # resumed: its failures so far no longer count toward a pause by the system
            values.update(failed_streak=0, failed_through=None)
        details = {"from": schedule.state, "to": state.value}
        return await self._change(
            actor,
            schedule,
            _VERBS[state],
            values,
            details,
            cancel=cancel,
            arm_at=arm_at,
            events=events,
            withdraw=withdraw,
        )

    async def _change(
        self,
        actor: Actor,
        schedule: Schedule,
        verb: str,
        values: dict[str, Any],
        details: dict[str, Any],
        *,
        cancel: bool,
        arm_at: datetime | None,
        events: Sequence[EventRow] = (),
        held: Held | None = None,
        withdraw: bool = False,
        stop_ladders: bool = False,
    ) -> Schedule:
        """Store a change read at ``schedule.version`` with its audit row
        (``schedule.<verb>``) and its ``events`` (written when someone listens), then
        wake the dispatcher for a newly armed job."""
        assert schedule.id is not None
        updated = await self.store.change_schedule(
            schedule.id,
            expected_version=schedule.version,
            values=values,
            now=self.clock.now(),
            cancel_open_jobs=cancel,
            arm_at=arm_at,
            events=events,
            held=held,
            withdraw=withdraw,
            stop_ladders=stop_ladders,
            audit=AuditEntry.by(
                actor,
                f"schedule.{verb}",
                "schedule",
                str(schedule.id),
                details,
                tenant=schedule.tenant,
            ),
        )
        self._due(arm_at)
        return updated


_VERBS = {
    ScheduleState.PAUSED: "pause",
    ScheduleState.ACTIVE: "resume",
    ScheduleState.CANCELLED: "cancel",
}


def _require_state(schedule: Schedule, *allowed: ScheduleState, verb: str) -> None:
    if schedule.state == verb:
        raise Conflict(f"Schedule {schedule.id} is already {verb}.")
    if schedule.state not in {state.value for state in allowed}:
        raise Conflict(f"Schedule {schedule.id} is {schedule.state}, so it cannot be {verb}.")


def _values_of(schedule: Schedule) -> dict[str, Any]:
    """What :func:`recipients.destinations_of` reads of a stored schedule."""
    return {"destination": schedule.destination, "recipients": schedule.recipients}


def audit_summary(values: dict[str, Any]) -> dict[str, Any]:
    """Audit details for a new schedule's values: no message text, no secret."""
    every = recipients.destinations_of(values)
    return {
        "destination": parse_destination(values["destination"]).redacted(),
        **(
            {"recipients": [parse_destination(d).redacted() for d in every]}
            if len(every) > 1
            else {}
        ),
        "when": values["expression"],
        "timezone": values["timezone"],
        "recurring": values["rrule"] is not None,
        "key": values["idempotency_key"],
    }
