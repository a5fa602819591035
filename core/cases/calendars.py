"""Calendar use cases: skip calendars on schedules, event feeds, refresh, export.

Use cases of :class:`core.cases.Herald` (through :class:`CalendarCases`).

- A **skip calendar** is an iCalendar source whose events are times to skip (an all-day
  event its dates, a timed one the occurrences inside it; read in the schedule's zone,
  :mod:`core.calendars`). Attaching one stores its blackout data in the schedule's
  ``options["skip"]`` (read by the dispatcher when it plans the next occurrence) and
  records each skipped occurrence in the coming :data:`core.calendars.HORIZON` as a
  ``skipped`` job naming the event. Calendars are read in worker processes
  (:class:`core.calendars.CalendarReader`), never on the event loop.
- A **feed** posts a reminder ``before`` each event of a calendar to a destination:
  each event instance is a one-off schedule of the feed's owner in the feed's tenant,
  linked to the feed (``schedule.feed_id``, which only Herald sets) and keyed
  ``feed:<feed id>:<instance hash>`` (a key shape no request may give,
  :data:`RESERVED_KEY_PREFIX`); a moved instance moves it, a cancelled or deleted one
  (or one moved out of the window) cancels it, and one that comes back gets a new
  reminder (the cancelled one gives up the key; one a person cancelled keeps it and
  stays). A feed finds its reminders by that link, its owner and its tenant, never by
  the key.
- :meth:`CalendarCases.refresh_calendars` revalidates every URL source (ETag /
  Last-Modified); a failure is recorded on the calendar (failing since, failures in a
  row, the error with URLs redacted), logged and counted, and its last good state stays.
  The calendar gauges of :class:`core.metrics.Metrics` are set from the database.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from core import calendars, limits, templates, timeexpr
from core.actors import Actor, ActorRef, Principal, Surface
from core.calendars import HORIZON, Blackouts, CalendarError, CalendarReader, EventInstance, export
from core.cases.base import CaseBase
from core.channels import parse_destination
from core.errors import HeraldError, InvalidInput, NotFound
from core.models import CalendarSource, Feed, Schedule, ScheduleState
from core.scrub import scrub_credentials
from core.store import AuditEntry, CalendarQueries, FetchRecord, ScheduleQuery
from core.tenancy import neutralize_mentions

log = logging.getLogger(__name__)

#: How far ahead a feed plans reminders.
FEED_WINDOW = timedelta(days=60)
#: The idempotency keys of feed reminders begin so; a request's key may not.
RESERVED_KEY_PREFIX = "feed:"
SYSTEM = "system:calendars"
#: The surface of what calendar refreshes do on their own.
BY_HERALD = Surface.SYSTEM.value


def dropped_key(key: str, schedule_id: int) -> str:
    """The key a reminder a refresh cancelled takes when its event comes back:
    ``feed:<feed id>:<instance hash>:dropped:<schedule id>``. The event's own key is
    then free for its new reminder; the unique (tenant, owner, key) index still lets
    one reminder hold it."""
    return f"{key}:dropped:{schedule_id}"


def parse_before(text: str) -> int:
    """A lead time as whole seconds, written as Herald reads any duration
    (:func:`core.timeexpr.parse_duration`): ``10m``, ``1h``, ``90s``, ``2d``,
    ``1h30m``, ``15 minutes``; a bare number is minutes."""
    try:
        lead = timeexpr.parse_duration(text, bare="m")
    except InvalidInput:
        lead = None
    if lead is None or lead < timedelta(0) or lead % timedelta(seconds=1):
        raise InvalidInput(f"{text!r} is not a lead time: write e.g. 10m, 1h or 1d.") from None
    if lead > timedelta(days=30):
        raise InvalidInput("The lead time must be between 0 and 30 days.")
    return int(lead.total_seconds())


def describe_before(seconds: int) -> str:
    """A lead time in words (the reverse of :func:`parse_before`): ``10 minutes``,
    ``1 hour``, ``2 days``."""
    return timeexpr.describe_duration(seconds)


@dataclass
class RefreshReport:
    """What one refresh did: calendars changed, unchanged, failed (id → error)."""

    changed: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    reminders: dict[str, int] = field(default_factory=dict)


class CalendarCases(CaseBase):
    """Calendars and feeds (the ``store`` includes
    :class:`~core.store.CalendarQueries`; the reader and the metrics are
    :class:`~core.cases.base.CaseBase`'s constructor arguments)."""

    @property
    def _cal(self) -> CalendarQueries:
        return self.store

    @property
    def _reader(self) -> CalendarReader:
        if self.calendar_reader is None:
            self.calendar_reader = CalendarReader.from_settings(self.settings)
        return self.calendar_reader

    # --- sources ------------------------------------------------------------------------

    async def _fetch(
        self, url: str, etag: str | None = None, last_modified: str | None = None
    ) -> calendars.Fetched:
        """Fetch a calendar URL through the network guard, within the settings' limits."""
        return await calendars.fetch(
            url,
            etag=etag,
            last_modified=last_modified,
            guard=self.settings.network_guard(),
            limits=self.settings.calendar_limits(),
        )

    async def load_calendar(
        self, actor: Actor, source: str, body: str | None = None
    ) -> CalendarSource:
        """Fetch a URL (or take an uploaded file's ``body``), check it and store it."""
        now = self.clock.now()
        if body is None:
            if not calendars.is_url(source):
                raise InvalidInput(f"{source!r} is not a calendar URL (https://...) or file.")
            got = await self._fetch(source)
            assert got.body is not None
            body, etag, modified = got.body, got.etag, got.last_modified
        else:
            source = source if source.startswith("file:") else f"file:{source}"
            etag = modified = None
        name = await self._reader.check(source, body, now) or source[:200]
        return await self._cal.save_calendar(
            actor.id,
            source,
            tenant=actor.tenant,
            body=body,
            name=name,
            now=now,
            etag=etag,
            last_modified=modified,
        )

    # --- skip calendars -------------------------------------------------------------------

    async def _blackouts(self, sources: Sequence[CalendarSource], zone: str) -> Blackouts:
        """The blackout dates of stored calendars from now on, read in the schedule's
        ``zone`` (floating times and all-day dates are that zone's)."""
        texts = [(c.source, c.body) for c in sources if c.body]
        return await self._reader.blackouts(texts, self.clock.now(), zone)

    async def _skip_from_the_start(
        self, schedule: Schedule, sources: Sequence[CalendarSource]
    ) -> Blackouts:
        """Give a new schedule the blackout dates of ``sources`` before it is stored, and
        its first job at the first occurrence they allow: it never sends on a skipped
        date, even if the process stops before the skipped occurrences are recorded.
        Returns the blackouts (for :meth:`_apply_skips`)."""
        skips = await self._blackouts(sources, schedule.timezone)
        schedule.skip_calendars = [c.id for c in sources if c.id is not None]
        if not skips:
            return skips
        schedule.options = {**schedule.options, "skip": skips.to_json()}
        if schedule.rrule is not None:
            before_first = schedule.starts_at - timedelta(microseconds=1)
            schedule.next_run_at = calendars.next_allowed(schedule.rrule, before_first, skips)[0]
        return skips

    async def load_calendars(
        self,
        actor_id: ActorRef,
        sources: Sequence[str] = (),
        files: Mapping[str, str] | None = None,
    ) -> list[CalendarSource]:
        """Fetch and check calendars (URLs, or files by name → text) and store them, so
        a request can be refused before anything else is written."""
        actor = await self.actor(actor_id)
        loaded = [await self.load_calendar(actor, s) for s in sources]
        loaded += [await self.load_calendar(actor, n, t) for n, t in (files or {}).items()]
        return loaded

    async def _apply_skips(
        self,
        schedule: Schedule,
        sources: Sequence[CalendarSource],
        ids: list[int],
        who: Actor | None,
        *,
        after: datetime | None = None,
        skips: Blackouts | None = None,
    ) -> Schedule:
        """Record the skips of ``sources`` (their ``skips``, when already read) on
        ``schedule`` for occurrences after ``after`` (default: from its waiting job on),
        as done by ``who`` (None: a calendar refresh, Herald itself)."""
        now = self.clock.now()
        if skips is None:
            skips = await self._blackouts(sources, schedule.timezone)
        if after is None:
            after = max(now, (schedule.next_run_at or now) - timedelta(microseconds=1))
        hits = calendars.skipped_between(
            schedule.rrule,
            schedule.starts_at,
            after,
            now + HORIZON,
            skips,
            schedule.timezone,
        )
        upcoming = None
        if schedule.rrule is not None and schedule.next_run_at is not None:
            upcoming = calendars.next_allowed(schedule.rrule, after, skips)[0]
        action, sid = "schedule.skip_calendars", str(schedule.id)
        details = {"calendars": ids, "skipped": len(hits)}
        if who is None:
            audit = AuditEntry(SYSTEM, action, "schedule", sid, details, schedule.tenant, BY_HERALD)
        else:
            audit = AuditEntry.by(who, action, "schedule", sid, details, tenant=schedule.tenant)
        updated = await self._cal.apply_skips(
            schedule,
            calendar_ids=ids,
            skip=skips.to_json(),
            skipped=hits,
            after=after,
            now=now,
            next_run=upcoming,
            audit=audit,
        )
        self._due(updated.next_run_at)
        return updated

    # --- feeds ------------------------------------------------------------------------

    async def add_feed(
        self,
        actor_id: ActorRef,
        *,
        calendar: str,
        to: str,
        before: str = "10m",
        template: str | None = None,
        tz: str | None = None,
        body: str | None = None,
    ) -> Feed:
        """An admin subscribes ``to`` to a calendar (URL, or an uploaded ``body``)."""
        actor = await self.actor(actor_id)
        if not actor.is_admin:
            raise await self.denied(
                actor, "feed.add", "feed", "", "Only an admin can subscribe to event feeds."
            )
        destination = str(parse_destination(await self.named_channel(actor, to)))
        text = templates.check(template or templates.DEFAULT_REMINDER)
        lead = parse_before(before)
        zone = self._zone_for(actor, tz)
        source = await self.load_calendar(actor, calendar, body)
        now = self.clock.now()
        assert source.id is not None
        feed = await self._cal.add_feed(
            Feed(
                calendar_id=source.id,
                tenant=actor.tenant,
                owner=actor.id,
                destination=destination,
                before_s=lead,
                template=text,
                timezone=zone,
                created_at=now,
                updated_at=now,
            ),
            audit=AuditEntry.by(actor, "feed.add", "feed", details={"calendar": source.id}),
            now=now,
        )
        await self.sync_feed(feed, source)
        return feed

    async def list_feeds(self, actor_id: ActorRef, *, tenant: str | None = None) -> list[Feed]:
        _, owner, scope = await self._scope(actor_id, tenant)
        return await self._cal.list_feeds(owner, tenant=scope)

    async def remove_feed(self, actor_id: ActorRef, feed_id: int) -> int:
        """Unsubscribe; waiting reminders are cancelled. Returns how many."""
        actor = await self.actor(actor_id)
        feed = await self._cal.get_feed(feed_id)
        reason = f"There is no feed {feed_id} of yours."
        if feed is None:
            raise NotFound(reason)
        if not actor.owns_tenant_of(feed.tenant) or (
            feed.owner != actor.id and not actor.is_admin
        ):  # refused (audited) as if absent
            raise await self.denied(actor, "feed.remove", "feed", str(feed_id), reason, NotFound)
        audit = AuditEntry.by(actor, "feed.remove", "feed", str(feed_id), tenant=feed.tenant)
        return await self._cal.remove_feed(feed_id, audit=audit, now=self.clock.now())

    async def sync_feed(self, feed: Feed, source: CalendarSource) -> dict[str, int]:
        """Make the feed's reminders match its calendar's events in the coming
        :data:`FEED_WINDOW`: create, move (re-render) or cancel. Returns the counts."""
        now = self.clock.now()
        zone = ZoneInfo(feed.timezone)
        events = await self._reader.instances(
            (source.source, source.body), now, now + FEED_WINDOW, feed.timezone
        )
        wanted: dict[str, tuple[datetime, str]] = {}
        for event in events:
            at = event.start - timedelta(seconds=feed.before_s)
            if event.cancelled or at <= now:
                continue
            digest = hashlib.sha256(event.key.encode()).hexdigest()[:32]
            wanted[f"feed:{feed.id}:{digest}"] = (at, _reminder(feed, event, zone))
        counts = {"created": 0, "moved": 0, "cancelled": 0}
        existing = {
            s.idempotency_key or "": s for s in await self._cal.feed_reminders(feed.id or 0)
        }
        await self._free_keys_cancelled_by_refresh(feed, existing, wanted, now)
        for key, (at, text) in wanted.items():
            current = existing.get(key)
            if current is None:
                await self._create_reminder(feed, key, at, text, now)
                counts["created"] += 1
            elif current.state == ScheduleState.ACTIVE.value and (
                current.starts_at != at or current.body != text
            ):
                assert current.id is not None
                await self.store.change_schedule(
                    current.id,
                    expected_version=current.version,
                    values={"starts_at": at, "next_run_at": at, "body": text},
                    now=now,
                    cancel_open_jobs=True,
                    arm_at=at,
                    audit=AuditEntry(
                        SYSTEM,
                        "feed.reminder_move",
                        "schedule",
                        tenant=feed.tenant,
                        surface=BY_HERALD,
                    ),
                )
                self._due(at)
                counts["moved"] += 1
        for key, current in existing.items():
            if key in wanted or current.state != ScheduleState.ACTIVE.value:
                continue
            if current.starts_at > now and current.id is not None:
                await self.store.change_schedule(
                    current.id,
                    expected_version=current.version,
                    values={"state": ScheduleState.CANCELLED.value, "next_run_at": None},
                    now=now,
                    cancel_open_jobs=True,
                    audit=AuditEntry(
                        SYSTEM,
                        "feed.reminder_cancel",
                        "schedule",
                        tenant=feed.tenant,
                        surface=BY_HERALD,
                    ),
                )
                counts["cancelled"] += 1
        return counts

    async def _free_keys_cancelled_by_refresh(
        self,
        feed: Feed,
        existing: dict[str, Schedule],
        wanted: Mapping[str, object],
        now: datetime,
    ) -> None:
        """An event back in the calendar (or the window) whose reminder a refresh
        cancelled when it left: that reminder gives up the event's key
        (:func:`dropped_key`) and leaves ``existing``, so the event gets a new reminder.
        A reminder a person cancelled keeps the key, and its event stays unreminded."""
        held = {
            s.id: key
            for key, s in existing.items()
            if key in wanted and s.state == ScheduleState.CANCELLED.value and s.id is not None
        }
        if not held:
            return
        for schedule_id in await self._cal.cancelled_by_refresh(list(held)):
            key = held[schedule_id]
            await self.store.change_schedule(
                schedule_id,
                expected_version=existing[key].version,
                values={"idempotency_key": dropped_key(key, schedule_id)},
                now=now,
                audit=AuditEntry(
                    SYSTEM,
                    "feed.reminder_key_freed",
                    "schedule",
                    tenant=feed.tenant,
                    surface=BY_HERALD,
                ),
            )
            del existing[key]

    async def _create_reminder(
        self, feed: Feed, key: str, at: datetime, text: str, now: datetime
    ) -> None:
        schedule = Schedule(
            owner=feed.owner,
            tenant=feed.tenant,
            destination=feed.destination,
            # an event's text is the calendar's, not bounded by anyone here: the
            # reminder is cut (with an ellipsis) to what its destination takes
            body=limits.clip(text, limits.text_limit(feed.destination)),
            expression=f"feed {feed.id} reminder",
            timezone=feed.timezone,
            rrule=None,
            starts_at=at,
            next_run_at=at,
            idempotency_key=key,
            feed_id=feed.id,
            created_at=now,
            updated_at=now,
        )
        await self.store.create_schedule(
            schedule,
            first_run=at,
            now=now,
            audit=AuditEntry(
                SYSTEM,
                "feed.reminder",
                "schedule",
                details={"feed": feed.id},
                tenant=feed.tenant,
                surface=BY_HERALD,
            ),
        )
        self._due(at)

    # --- refresh ------------------------------------------------------------------------

    async def refresh_calendars(self) -> RefreshReport:
        """Revalidate every URL calendar, re-apply changed ones to the schedules that
        skip them, and re-plan every feed. A calendar that fails to fetch or parse is
        recorded as failing (its last good content stays in use), logged and counted;
        the calendar gauges are then set from the database (even when the refresh
        stops halfway)."""
        report = RefreshReport()
        try:
            await self._refresh(report)
        finally:
            await self.publish_calendar_metrics()
        return report

    async def _refresh(self, report: RefreshReport) -> None:
        now = self.clock.now()
        for source in await self._cal.url_calendars():
            assert source.id is not None
            try:
                got = await self._fetch(source.source, source.etag, source.last_modified)
                name = None
                if got.body is not None and got.body != source.body:
                    # its events can be read within the limits, too (in a worker)
                    name = await self._reader.check(source.source, got.body, now)
            except CalendarError as exc:
                await self._refresh_failed(report, source.id, str(exc), now)
                continue
            if got.body is None or got.body == source.body:
                report.unchanged.append(source.id)
            else:
                report.changed.append(source.id)
            record = FetchRecord(got.body, got.etag, got.last_modified, name)
            await self._cal.record_fetch(source.id, record, now=now)
        # many schedules skip the same holiday calendar: read and expand it once a zone
        read: dict[tuple[tuple[int, ...], str], tuple[list[CalendarSource], Blackouts]] = {}
        for schedule in await self._cal.schedules_skipping():
            if not set(schedule.skip_calendars) & set(report.changed):
                continue
            ids = tuple(schedule.skip_calendars)
            try:
                if (ids, schedule.timezone) not in read:
                    sources = await self._cal.get_calendars(list(ids))
                    skips = await self._blackouts(sources, schedule.timezone)
                    read[ids, schedule.timezone] = (sources, skips)
            except CalendarError as exc:  # it keeps the skips it had
                log.warning(
                    "skip calendars could not be read again",
                    extra={"schedule_id": schedule.id, "error": scrub_credentials(str(exc))[:500]},
                )
                continue
            sources, skips = read[ids, schedule.timezone]
            try:
                await self._apply_skips(schedule, sources, list(ids), None, skips=skips)
            except InvalidInput as exc:  # its rule is too costly now: the others go on
                log.warning(
                    "skip calendars could not be applied",
                    extra={"schedule_id": schedule.id, "error": str(exc)[:500]},
                )
        for feed in await self._cal.list_feeds():
            found = await self._cal.get_calendars([feed.calendar_id])
            if not found:
                continue
            try:
                counts = await self.sync_feed(feed, found[0])
            except CalendarError as exc:  # its reminders stay as they were
                log.warning(
                    "feed calendar could not be read again",
                    extra={"feed_id": feed.id, "error": scrub_credentials(str(exc))[:500]},
                )
                continue
            for name, n in counts.items():
                report.reminders[name] = report.reminders.get(name, 0) + n

    async def _refresh_failed(
        self, report: RefreshReport, calendar_id: int, error: str, now: datetime
    ) -> None:
        """Record a failed refresh: on the calendar, in the report, the log and the
        failure counter. The error names URLs by scheme and host only."""
        error = scrub_credentials(error)[:2000]
        report.failed[calendar_id] = error
        log.warning("calendar refresh failed", extra={"calendar_id": calendar_id, "error": error})
        if self.metrics is not None:
            self.metrics.calendar_failures.labels(str(calendar_id)).inc()
        await self._cal.record_fetch(calendar_id, FetchRecord(error=error), now=now)

    async def publish_calendar_metrics(self) -> None:
        """Set the calendar gauges (calendars failing, each one's last success and
        failing-since) from the database: after every refresh, and at start-up, so a
        restarted process reports the truth before its first refresh. A database error
        is logged, not raised: metrics never stop the work."""
        if self.metrics is None:
            return
        from core.metrics import CALENDAR_SERIES  # loaded already by whoever made metrics

        try:
            health = await self._cal.calendar_health(limit=CALENDAR_SERIES)
        except HeraldError:
            log.exception("could not read the calendars' health for the metrics")
            return
        self.metrics.set_calendar_health(health)

    # --- export -----------------------------------------------------------------------

    async def export_ics(self, actor_id: ActorRef, owner: str | None = None) -> bytes:
        """A member's schedules (default: the actor's) as an iCalendar file."""
        actor = await self.actor(actor_id)
        whose = owner or actor.id
        if whose != actor.id and not actor.sees_everything:
            raise await self.denied(
                actor,
                "schedule.export",
                "member",
                whose,
                "Only operators and admins can export someone else's schedules.",
            )
        found = await self.store.list_schedules(
            ScheduleQuery(
                owner=whose, tenant=actor.scope, states=("active", "paused"), limit=10_000
            )
        )
        return export(found, now=self.clock.now(), name=f"Herald: {whose}")

    async def calendar_feed_token(self, actor_id: ActorRef, *, rotate: bool = False) -> str:
        """The secret of the actor's calendar-feed URL (``/calendar/<token>.ics``,
        served by ``herald run``), issued on first use; ``rotate`` issues a new one and
        the old URL stops working."""
        actor = await self.actor(actor_id)
        member = await self.store.get_member(actor.tenant, actor.id)
        if member is not None and member.calendar_token and not rotate:
            return member.calendar_token
        token = secrets.token_urlsafe(24)
        await self.store.save_member(
            actor.tenant,
            actor.id,
            calendar_token=token,
            now=self.clock.now(),
            audit=AuditEntry.by(
                actor,
                "member.calendar_token",
                "member",
                actor.id,
                {"rotated": bool(member and member.calendar_token)},
            ),
        )
        return token

    async def calendar_for_token(self, token: str) -> bytes:
        """The iCalendar file behind a feed token; NotFound for any other string."""
        found = await self.store.member_by_calendar_token(token) if token else None
        if found is None:
            raise NotFound("There is no calendar at that address.")
        tenant, owner = found
        return await self.export_ics(Principal(owner, tenant))


def _reminder(feed: Feed, event: EventInstance, zone: ZoneInfo) -> str:
    start = event.start.astimezone(zone)
    return templates.render(
        feed.template,
        {  # a calendar's texts notify nobody: mentions in them are shown, not sent
            "event.summary": neutralize_mentions(event.summary),
            "event.start": start,
            "event.end": event.end.astimezone(zone),
            "event.location": neutralize_mentions(event.location),
            "event.description": neutralize_mentions(event.description),
            "date": event.day or start.date(),
            "schedule.id": None,
        },
    )
