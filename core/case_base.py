"""What every use-case mixin of :class:`core.usecases.Herald` may rely on: the store,
the clock, the settings, the wake-up hook, and resolving and refusing an actor. Declared
once here; :class:`~core.usecases.Herald` provides them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core import timeexpr
from core.actors import Actor
from core.clock import Clock
from core.errors import HeraldError, PermissionDenied
from core.models import Schedule
from core.settings import Settings
from core.store import Store


class CaseBase:
    """The shared surface of the use-case mixins (implemented by ``Herald``)."""

    store: Store
    clock: Clock
    settings: Settings
    on_due: Callable[[datetime], None] | None

    async def actor(self, actor_id: str) -> Actor:
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

    def _zone_for(self, actor: Actor, tz: str | None) -> str:
        """The time zone a request is read in: given, else the member's, else the
        default (InvalidInput for an unknown one)."""
        return timeexpr.zone(tz or actor.timezone or self.settings.default_tz).key

    async def _scope(self, actor_id: str) -> tuple[Actor, str | None]:
        """The actor, and the owner their lists are limited to (None: everyone)."""
        actor = await self.actor(actor_id)
        return actor, None if actor.sees_everything else actor.id
