"""Use cases of the operator console: overview, bulk actions. A mixin of
:class:`core.usecases.Herald`; every surface may call them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.actors import Actor
from core.clock import Clock
from core.settings import Settings
from core.store import Store


class ConsoleCases:
    """Needs ``store``, ``clock``, ``settings``, ``on_due`` and ``actor()`` from the
    class it mixes into."""

    store: Store
    clock: Clock
    settings: Settings
    on_due: Callable[[datetime], None] | None

    async def actor(self, actor_id: str) -> Actor:
        raise NotImplementedError
