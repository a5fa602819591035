"""Chat adapters that run inside `herald run`, beside the dispatcher, in one event loop.

An adapter only translates: platform payloads in, calls to :class:`core.cases.Herald`
out. Each lives in its own package (``bot.slack``, ``bot.discord_bot``) and exposes
``create_adapter(settings, herald) -> Adapter``; it is started when its token is set
and ``HERALD_ADAPTERS`` allows it (one process should connect them; more dispatchers
set ``HERALD_ADAPTERS=none`` and keep the tokens to deliver).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from core.cases import Herald
from core.errors import ConfigError
from core.settings import Settings
from core.store import Settled

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger(__name__)


@runtime_checkable
class Adapter(Protocol):
    """A running chat surface: everything ``herald run`` (bot/service.py) and ``/readyz``
    ask of one. tests/unit/test_adapter_protocol.py checks that each adapter has it."""

    name: str

    @property
    def problem(self) -> str | None:
        """Why the adapter is down (a sentence for ``/readyz``, no secret), or None."""

    def connected(self) -> bool:
        """Whether the platform can reach Herald through the adapter (``/readyz``)."""

    def attach_http(self, app: web.Application) -> None:
        """Add the adapter's routes, if it has any, to the service's HTTP server; called
        before the server and the adapter start."""

    async def start(self) -> None:
        """Connect (Socket Mode, gateway) or start serving (HTTP); returns once running."""

    async def stop(self) -> None:
        """Disconnect and release everything; called once at shutdown."""

    def on_finished(self, item: Settled) -> None:
        """Called for every recorded delivery outcome (e.g. to post dead-letter alerts).
        Must not block: schedule work on the loop instead."""


def build_adapters(settings: Settings, herald: Herald) -> list[Adapter]:
    """The adapters whose tokens are configured and that ``HERALD_ADAPTERS`` allows."""
    choice = settings.adapters.strip().lower()
    wanted = (
        {"slack", "discord"}
        if choice == "auto"
        else {part.strip() for part in choice.split(",") if part.strip() and part.strip() != "none"}
    )
    unknown = wanted - {"slack", "discord"}
    if unknown:
        raise ConfigError(
            f"HERALD_ADAPTERS names {', '.join(sorted(unknown))}: use auto, none, slack, discord."
        )
    adapters: list[Adapter] = []
    if "slack" in wanted and settings.slack_bot_token is not None:
        from bot.slack import create_adapter as create_slack

        adapters.append(create_slack(settings, herald))
    if "discord" in wanted and settings.discord_bot_token is not None:
        from bot.discord_bot import create_adapter as create_discord

        adapters.append(create_discord(settings, herald))
    return adapters
