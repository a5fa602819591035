"""What every use case relies on: the store, the clock, the settings, the wake-up hook,
the channels, and resolving, refusing and scoping an actor.

:class:`CaseBase` is the root of the use-case classes of :mod:`core.cases`; every helper
two of them share is implemented here, once, so no class declares a method for a
sibling to fill in. Its constructor takes every dependency (nothing is set on a use
case after it is built).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from core import tenancy, timeexpr
from core.actors import Actor, ActorRef, Principal
from core.calendars import CalendarReader
from core.channels.base import Channel
from core.clock import Clock
from core.destinations import ChannelDirectory, channel_name, names_need_connection, one_channel
from core.errors import Conflict, HeraldError, InvalidInput, NotFound, PermissionDenied
from core.models import LOCAL_TENANT, Member, Role, Schedule
from core.scrub import Scrubber
from core.settings import Settings
from core.store import AuditEntry, Store
from core.zones import resolve_zone

if TYPE_CHECKING:  # prometheus_client loads where metrics are served
    from core.metrics import Metrics

_ACTOR = re.compile(r"^[a-z][a-z0-9_-]*:[^\s:][^\s]*$")
_TENANT = re.compile(r"^(local|[a-z][a-z0-9_-]*:[^\s:][^\s]{0,190})$")


def _check_actor_id(actor_id: str) -> None:
    if not _ACTOR.match(actor_id):
        raise InvalidInput(
            f"{actor_id!r} is not a member id: use platform:id, e.g. local:alice or slack:U123."
        )


def check_tenant(tenant: str) -> None:
    if not _TENANT.match(tenant):
        raise InvalidInput(
            f"{tenant!r} is not a tenant: use local, slack:T… or discord:<server id>."
        )


def principal_of(ref: ActorRef) -> Principal:
    """Who is acting, checked: a bare id acts in the ``local`` tenant."""
    if isinstance(ref, Actor):
        ref = ref.principal
    principal = ref if isinstance(ref, Principal) else Principal(ref)
    _check_actor_id(principal.id)
    check_tenant(principal.tenant)
    return principal


#: Roles from least to most powerful (a cap compares them).
_RANK = {Role.MEMBER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


class CaseBase:
    """The store, clock, settings and channels of the use cases, and the helpers they
    share: who is acting, refusing (audited), which schedule they may see or change,
    waking the dispatcher, the zone of a request, the scope of a list."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock,
        *,
        on_due: Callable[[], None] | None = None,
        channels: Mapping[str, Channel] | None = None,
        calendar_reader: CalendarReader | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        #: Channels that check a destination at schedule time (a Slack channel the bot
        #: cannot post in is refused now, not at 9 am tomorrow). Empty: syntax only.
        self.channels = dict(channels or {})
        #: Called with the due time whenever a job is created or moved, so an
        #: in-process dispatcher wakes at once (set by the composition root).
        self.on_due = on_due
        #: Where calendar texts are parsed and expanded (worker processes with a
        #: deadline; None: one built from the settings on first use).
        self.calendar_reader = calendar_reader
        #: Where calendar refreshes are counted and calendar health is shown (the
        #: dispatcher's, given by the composition root; None: nowhere).
        self.metrics = metrics
        self._commands = tenancy.CommandMeter(settings.quota_commands_per_minute)
        #: Lines imported per API token per minute (core.cases.importer counts them).
        self.import_meter = tenancy.ImportMeter(settings.import_lines_per_minute)

    # --- who is acting ------------------------------------------------------------

    async def actor(self, ref: ActorRef) -> Actor:
        """Resolve who is acting to their role in their tenant: ``HERALD_ADMINS`` first
        (admins of every tenant), then the tenant's member table, read now: a role given
        since (``herald member role``, ``herald admin init``) holds at once in every
        process. A bare id acts in the ``local`` tenant (InvalidInput for a malformed id
        or tenant)."""
        principal = principal_of(ref)
        return self._actor_of(
            principal, await self.store.get_member(principal.tenant, principal.id)
        )

    def _actor_of(self, principal: Principal, member: Member | None) -> Actor:
        """The actor a principal and its member row in that tenant (if any) make."""
        role = Role(member.role) if member is not None else Role.MEMBER
        herald_admin = principal.id in self.settings.admins
        platform_admin = principal.platform_admin or (
            principal.platform_admin is None and member is not None and member.platform_admin
        )
        if herald_admin or platform_admin:
            role = Role.ADMIN
        if principal.max_role is not None and _RANK[role] > _RANK[principal.max_role]:
            role = principal.max_role  # an API token's scope caps the member's role
            herald_admin = platform_admin = False
        herald_wide = herald_admin or (
            principal.tenant == LOCAL_TENANT and role in (Role.OPERATOR, Role.ADMIN)
        )
        return Actor(
            principal.id,
            role,
            member.timezone if member is not None else None,
            tenant=principal.tenant,
            herald_wide=herald_wide,
            mentions=principal.mentions,
            surface=principal.surface,
            via=principal.via,
            max_role=principal.max_role,
        )

    async def denied(
        self,
        actor: Actor,
        action: str,
        object_type: str,
        object_id: str,
        reason: str,
        error: type[HeraldError] = PermissionDenied,
    ) -> HeraldError:
        """Audit a refused attempt (``<action>.denied``) and return the error to raise."""
        await self.store.record_audit(
            AuditEntry.by(actor, f"{action}.denied", object_type, object_id, {"reason": reason}),
            now=self.clock.now(),
        )
        return error(reason)

    async def _visible(self, actor: Actor, schedule_id: int, action: str = "show") -> Schedule:
        schedule = await self.store.get_schedule(schedule_id)
        reason = f"There is no schedule {schedule_id} of yours."
        if schedule is None:
            raise NotFound(reason)
        if not actor.owns_tenant_of(schedule.tenant):
            # another tenant's: refused (and audited) without saying that it exists
            raise await self.denied(
                actor, f"schedule.{action}", "schedule", str(schedule_id), reason, NotFound
            )
        if schedule.owner != actor.id and not actor.sees_everything:
            # another member's of the same tenant: refused for the role, and said so
            who = (
                "only its owner, operators and admins can see it"
                if action == "show"
                else "only its owner or an admin can change it"
            )
            raise await self.denied(
                actor,
                f"schedule.{action}",
                "schedule",
                str(schedule_id),
                f"Schedule {schedule_id} is another member's: {who}.",
            )
        return schedule

    async def _changeable(
        self, actor: Actor, schedule_id: int, expected_version: int | None
    ) -> Schedule:
        schedule = await self._visible(actor, schedule_id, "change")
        if schedule.owner != actor.id and not actor.is_admin:
            raise await self.denied(
                actor,
                "schedule.change",
                "schedule",
                str(schedule_id),
                f"Schedule {schedule_id} belongs to {schedule.owner}; "
                "only its owner or an admin can change it.",
            )
        if expected_version is not None and expected_version != schedule.version:
            raise Conflict(
                f"Schedule {schedule_id} is at version {schedule.version}, not "
                f"{expected_version}: it changed since you read it; look at it again and retry."
            )
        return schedule

    async def named_channel(self, actor_id: ActorRef, to: str) -> str:
        """``to`` with a channel written by name (``slack:#deploys``,
        ``discord:#general@<server id>``, or ``discord:#general`` for a member of a
        Discord server's tenant) looked up once in the platform's directory (its
        channel, a :class:`~core.destinations.ChannelDirectory`) and written as its id
        (``slack:C0123``); any other destination is returned as given.

        Raises InvalidInput when no channel or several have that name, when the
        platform is not connected, or when it cannot be asked just now."""
        found = channel_name(to)
        if found is None:
            return to
        if found.kind == "discord":
            kind, _, server = principal_of(actor_id).tenant.partition(":")
            own = server if kind == "discord" and server else None
            if found.server is None:
                if own is None:
                    raise InvalidInput(
                        f"Say which Discord server `#{found.name}` is on: "
                        f"discord:#{found.name}@<server id> (Developer Mode, right-click "
                        "the server, Copy Server ID)."
                    )
                found = dataclasses.replace(found, server=own)
            elif own is not None and found.server != own:
                # another server is another tenant: its channel names are not looked up
                raise InvalidInput(
                    f"Only the channels of your own Discord server can be named: "
                    f"discord:#{found.name}."
                )
        directory = self.channels.get(found.kind)
        if not isinstance(directory, ChannelDirectory):
            raise InvalidInput(names_need_connection(found.kind))
        try:
            ids = await directory.channels_named(found)
        except InvalidInput as exc:  # the provider's words may echo a token
            raise InvalidInput(Scrubber.from_settings(self.settings)(str(exc))) from None
        return one_channel(found, ids)

    def _due(self, at: datetime | None) -> None:
        """A job was created or moved: wake the in-process dispatcher."""
        if at is not None and self.on_due is not None:
            self.on_due()

    def _zone_for(self, actor: Actor, tz: str | None, kept: str | None = None) -> str:
        """The time zone a request is read in: given, else ``kept`` (the zone of the
        schedule being changed), else the member's, else the default. A given zone is
        read as a person names one (:func:`core.zones.resolve_zone`: a city, or
        InvalidInput for an unknown or ambiguous name) unless it is one already chosen
        (the member's, the schedule's or the default), which stays valid as stored."""
        chosen = (kept, actor.timezone, self.settings.default_tz)
        if tz and tz not in chosen:
            return resolve_zone(tz).key
        return timeexpr.zone(tz or kept or actor.timezone or self.settings.default_tz).key

    async def _scope(
        self, actor_id: ActorRef, tenant: str | None = None
    ) -> tuple[Actor, str | None, str | None]:
        """The actor, the owner their lists are limited to (None: everyone) and the
        tenant (None: every tenant; see :meth:`tenant_scope`)."""
        actor = await self.actor(actor_id)
        owner = None if actor.sees_everything else actor.id
        return actor, owner, self.tenant_scope(actor, tenant)

    @staticmethod
    def tenant_scope(actor: Actor, tenant: str | None = None) -> str | None:
        """The tenant a query of ``actor`` is limited to: their own; for Herald-wide
        actors the one they name, or every tenant (None). Naming another tenant without
        being Herald-wide is refused like a missing one."""
        if actor.herald_wide:
            return tenant or None
        if tenant and tenant != actor.tenant:
            raise NotFound(f"There is no tenant {tenant} of yours.")
        return actor.tenant
