"""What every use-case mixin of :class:`core.usecases.Herald` may rely on: the store,
the clock, the settings, the wake-up hook, and resolving and refusing an actor. Declared
once here; :class:`~core.usecases.Herald` provides them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core import timeexpr
from core.actors import Actor, ActorRef
from core.channels.base import Channel
from core.clock import Clock
from core.errors import HeraldError, NotFound, PermissionDenied
from core.models import Schedule
from core.settings import Settings
from core.store import Store
from core.zones import resolve_zone


class CaseBase:
    """The shared surface of the use-case mixins (implemented by ``Herald``)."""

    store: Store
    clock: Clock
    settings: Settings
    on_due: Callable[[datetime], None] | None
    #: The delivery channels by kind (a use case that sends at once: a notice)
    channels: dict[str, Channel]

    async def actor(self, actor_id: ActorRef) -> Actor:
        """The acting member with their role (InvalidInput for a malformed id)."""
        raise NotImplementedError

    async def denied(
        self,
        actor: Actor,
        action: str,
        object_type: str,
        object_id: str,
        reason: str,
        error: type[HeraldError] = PermissionDenied,
    ) -> HeraldError:
        """Audit a refused attempt and return the error to raise."""
        raise NotImplementedError

    async def _changeable(
        self, actor: Actor, schedule_id: int, expected_version: int | None
    ) -> Schedule:
        """The schedule if the actor may change it (refusals audited)."""
        raise NotImplementedError

    def _due(self, at: datetime | None) -> None:
        """A job was created or moved: wake the in-process dispatcher."""
        if at is not None and self.on_due is not None:
            self.on_due(at)

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
