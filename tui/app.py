"""The operator console: eleven screens over the use cases, live, keyboard first.

Build it with :func:`make_app` (tests and the CLI alike); :func:`run_console` runs it
in this terminal, :func:`run_console_served` in a browser through textual-serve.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Coroutine, Iterable, Mapping
from functools import partial
from typing import Any, TextIO, TypeVar

from textual import work
from textual.actions import parse
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from core.actors import Actor, Principal, Surface
from core.cases import Herald
from core.channels.base import Channel
from core.clock import SystemClock
from core.errors import HeraldError
from core.settings import Settings
from core.store import Store
from tui.screens.approvals import ApprovalsScreen
from tui.screens.audit import AuditScreen
from tui.screens.awaiting import AwaitingDoneScreen
from tui.screens.base import screen_keys
from tui.screens.calendars import CalendarsScreen
from tui.screens.dead_letters import DeadLettersScreen
from tui.screens.deliveries import DeliveriesScreen
from tui.screens.forecast import ForecastScreen
from tui.screens.overview import OverviewScreen
from tui.screens.queue import QueueScreen
from tui.screens.schedules import SchedulesScreen
from tui.screens.templates import TemplatesScreen
from tui.widgets.keys import KeysHelp

T = TypeVar("T")

log = logging.getLogger(__name__)

#: The screen of each mode (the number keys and titles are tui.screens.base.SCREEN_KEYS).
SCREEN_CLASSES: dict[str, type[Screen[Any]]] = {
    "overview": OverviewScreen,
    "schedules": SchedulesScreen,
    "queue": QueueScreen,
    "deliveries": DeliveriesScreen,
    "dead": DeadLettersScreen,
    "audit": AuditScreen,
    "calendars": CalendarsScreen,
    "templates": TemplatesScreen,
    "awaiting": AwaitingDoneScreen,
    "approvals": ApprovalsScreen,
    "forecast": ForecastScreen,
}


class HeraldConsole(App[int]):
    """The console, acting as one member (``actor_id``) through ``herald``."""

    CSS_PATH = "herald.tcss"
    TITLE = "Herald"
    MODES = SCREEN_CLASSES
    BINDINGS = [
        *screen_keys(),
        Binding("question_mark", "toggle_keys", "Keys", id="keys"),
        Binding("q", "quit", "Quit", id="quit"),
        # Textual's own, named and described so that the keys panel (?) lists it: the
        # footer leaves it out to keep its room at 80 columns
        Binding(
            "ctrl+p",
            "command_palette",
            "Commands",
            show=False,
            priority=True,
            id="commands",
            tooltip="Every action of this screen by name, with why one is unavailable",
        ),
    ]

    def __init__(
        self,
        settings: Settings,
        herald: Herald,
        actor_id: str,
        *,
        refresh_interval: float = 2.0,
        mode: str = "overview",
        greeting: str | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.herald = herald
        self.actor_id = actor_id
        #: Who acts through every use case: ``actor_id`` via the console (the audit log
        #: names the surface).
        self.principal = Principal(actor_id, surface=Surface.CONSOLE)
        self.actor: Actor | None = None
        self.refresh_interval = refresh_interval
        self.initial_mode = mode
        #: Shown once the first screen is up (the demo says where deliveries go).
        self.greeting = greeting
        #: Live refresh on (every ``refresh_interval`` seconds on the visible screen).
        self.live = True
        #: Reads that run to their end even when the worker that asked is cancelled.
        self._reads: set[asyncio.Task[Any]] = set()

    def finish_later(self, read: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """``read`` as a task that runs to its end even when its screen's worker is
        cancelled (a newer read, or the console closing): a database connection is
        never abandoned halfway through a statement. :meth:`finish_reads` waits."""
        task = asyncio.ensure_future(read)
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        return task

    async def finish_reads(self) -> None:
        """Wait for the reads still running (call after the console exits, before the
        store is closed)."""
        while self._reads:
            await asyncio.gather(*self._reads, return_exceptions=True)

    def on_mount(self) -> None:
        self.sub_title = self.actor_id
        self._start()

    @work(exit_on_error=False)
    async def _start(self) -> None:
        try:
            self.actor = await self.herald.actor(self.principal)
        except HeraldError as exc:
            self.exit(return_code=1, message=f"herald console: {exc}")
            return
        self.sub_title = self._who(self.actor)
        await self.switch_mode(self.initial_mode)
        if self.greeting:
            self.notify(self.greeting, title="Herald demo", timeout=30)

    @staticmethod
    def _who(actor: Actor) -> str:
        return f"{actor.id} · {actor.role.value}"

    def take_actor(self, actor: Actor) -> bool:
        """``actor`` as the console's member read again (a screen's live refresh reads
        it: a role given since, in any process, holds at once); True when it changed,
        the subtitle then saying the new role (the screen greys its keys anew)."""
        if actor == self.actor:
            return False
        self.actor = actor
        self.sub_title = self._who(actor)
        return True

    def action_toggle_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_show_help_panel(self) -> None:
        """The keys panel: the screen's own keys first, then those that work
        everywhere, then the cursor keys."""
        if not self.screen.query("HelpPanel"):
            self.screen.mount(KeysHelp())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every key binding of the screen is also a command; one the role lacks says
        why, and choosing it asks core anyway (which refuses and audits)."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            # the console's own bindings (named) and visible ones; not the widgets'
            # cursor keys
            named = binding.id is not None or binding.show
            if not named or not binding.description or binding.system or binding.action in seen:
                continue
            if binding.action == "command_palette":
                continue
            seen.add(binding.action)
            help_text = f"key {binding.key_display or key}"
            if not active.enabled:
                why = getattr(active.node, "why_not", lambda _: None)(binding.action)
                help_text += f" · unavailable: {why}" if why else " · unavailable"
            callback = partial(self._force, active.node, binding.action)
            yield SystemCommand(binding.description, help_text, callback)

    async def _force(self, node: Any, action: str) -> None:
        """Run an action even when its binding is greyed out (core still decides)."""
        _, name, params = parse(action)
        if name == "switch_mode":
            await self.run_action(action)
            return
        method = getattr(node, f"action_{name}", None)
        if method is not None:
            result = method(*params)
            if hasattr(result, "__await__"):
                await result


def make_app(
    settings: Settings,
    herald: Herald,
    actor_id: str,
    *,
    refresh_interval: float = 2.0,
    mode: str = "overview",
    greeting: str | None = None,
) -> HeraldConsole:
    """The console for ``actor_id`` over ``herald``: the one way to build it."""
    return HeraldConsole(
        settings,
        herald,
        actor_id,
        refresh_interval=refresh_interval,
        mode=mode,
        greeting=greeting,
    )


async def run_console(settings: Settings, *, channels: Mapping[str, Channel] | None = None) -> int:
    """Open the store, run the console in this terminal as ``HERALD_CONSOLE_ACTOR`` (by
    default ``settings.local_actor``),
    close the store. Returns the exit status. ``channels`` (the CLI's, when it has
    them) let the create and edit forms check that a destination is reachable."""
    store = await Store.open(settings.database_url)
    try:
        herald = Herald(store, settings, SystemClock(), channels=channels)
        app = make_app(settings, herald, settings.console_actor or settings.local_actor)
        try:
            await app.run_async()
        finally:
            await app.finish_reads()
        return app.return_code or 0
    finally:
        await store.close()


def run_console_served(
    settings: Settings,
    port: int = 8000,
    host: str = "127.0.0.1",
    *,
    public_url: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Serve the console in a browser on ``host:port`` through textual-serve, behind a
    login (:mod:`tui.serve`): each browser tab runs ``python -m tui`` as the actor its
    login names. Blocks until interrupted."""
    try:
        from tui import serve
    except ImportError as exc:  # optional dependency
        raise HeraldError(
            "Serving the console needs textual-serve: pip install 'textual-serve>=1.1,<2'."
        ) from exc
    serve.serve(settings, host=host, port=port, public_url=public_url, out=out or sys.stdout)
    return 0
