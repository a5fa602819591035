"""What every console screen shares: live refresh in a worker, paging by keyset, role
gates with their reasons, and actions that report back as notifications.

A list screen's table (``#table``) is refreshed live: rows that arrive above the view
are marked ("45 new ↑" over the table) until they are scrolled into view or ``home`` is
pressed, and with the cursor on the first row the list follows the newest rows instead
(:class:`tui.widgets.table.PageTable`). A new filter, view or page is a new list: its
rows are not marked."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from core import views
from core.actors import Actor, Principal
from core.cases import Herald, unavailable, verb_rule
from core.errors import HeraldError
from core.models import Role
from core.verbs import Verb
from tui.screens.confirm import ConfirmScreen
from tui.widgets.table import PageTable

if TYPE_CHECKING:
    from tui.app import HeraldConsole

log = logging.getLogger(__name__)


def verb_gates(bindings: list[Binding], verb_of: Callable[[str], Verb | None]) -> dict[str, str]:
    """The GATED entries of a screen's bindings that act by a verb of core/verbs.py
    (``verb_of`` names it, or None) whose ``who`` is more than the owner: each binding's
    action and the rule of :func:`core.cases.console.unavailable` that greys it out."""
    gates: dict[str, str] = {}
    for binding in bindings:
        v = verb_of(binding.action)
        if v is not None and v.who != "owner":
            gates[binding.action] = verb_rule(v)
    return gates


#: Rows per page on every list screen.
PAGE = 100

#: The screens in the order of the number keys: mode name, key, title (the app binds
#: the keys and maps each mode to its screen).
SCREEN_KEYS = (
    ("overview", "1", "Overview"),
    ("schedules", "2", "Schedules"),
    ("queue", "3", "Queue"),
    ("deliveries", "4", "Delivery log"),
    ("dead", "5", "Dead letters"),
    ("audit", "6", "Audit log"),
    ("calendars", "7", "Calendars"),
    ("templates", "8", "Templates"),
    ("awaiting", "9", "Awaiting done"),
    ("approvals", "0", "Approvals"),
    ("forecast", "minus", "Forecast"),
)
#: Screens whose key the footer leaves out (its "1234567890 Screens" fills its room at
#: 80 columns): the keys panel (?) and the command palette list them.
UNLISTED = ("forecast",)
SCREENS = Binding.Group("Screens", compact=True)


def screen_keys(*, show: bool = True) -> list[Binding]:
    """The number keys that switch screens. A screen whose own keys fill an 80-column
    footer binds them again with ``show=False``: they work the same, listed in the keys
    panel, and the footer keeps its room for the screen's actions."""
    return [
        Binding(
            key,
            f"app.switch_mode('{name}')",
            title,
            id=f"screen-{name}",
            group=SCREENS,
            show=show and name not in UNLISTED,
        )
        for name, key, title in SCREEN_KEYS
    ]


def footer() -> Footer:
    """Every screen's footer: compact, its keys chosen to fit 80 columns (the command
    palette, Ctrl+P, is listed by ``?`` instead)."""
    return Footer(compact=True, show_command_palette=False)


#: The keys that page through a screen's rows (``]`` next, ``[`` previous).
PAGING = [
    Binding("right_square_bracket", "next_page", "Next page", show=False, id="next-page"),
    Binding("left_square_bracket", "previous_page", "Prev page", show=False, id="prev-page"),
]


class NewRows(Static):
    """Over a list: how many rows arrived above the view ("45 new ↑"); hidden when
    none. A click shows them, as ``home`` does."""

    count: reactive[int] = reactive(0)

    def render(self) -> str:
        n = self.count
        return f"{n:,} new ↑ · home shows {'it' if n == 1 else 'them'}"

    def watch_count(self, count: int) -> None:
        self.display = count > 0

    def on_mount(self) -> None:
        self.display = self.count > 0

    def on_click(self) -> None:
        for table in self.screen.query("#table").results(PageTable):
            table.action_newest()
            table.focus()


class ConsoleScreen(Screen[None]):
    """A screen whose data comes from :meth:`fetch` (run in a worker, never on the
    event loop's own time) and is drawn by :meth:`show`."""

    #: Screen actions a role may lack: action name -> rule name of core.cases.console.
    GATED: ClassVar[dict[str, str]] = {}
    #: Rules that limit (without disabling) what this screen's actions reach.
    NOTES: ClassVar[tuple[str, ...]] = ()

    class Loaded(Message):
        """A worker finished reading; the screen draws ``data``, read for the list
        numbered ``listing`` (see :attr:`ConsoleScreen.listing`)."""

        def __init__(self, data: Any, listing: int = 0, actor: Actor | None = None) -> None:
            super().__init__()
            self.data = data
            self.listing = listing
            #: The console's member as read with the data (their role may have changed).
            self.actor = actor

    def __init__(self) -> None:
        super().__init__()
        #: Keyset of each page visited: pages[-1] is the current page's start.
        self.pages: list[Any] = [None]
        self.last_keyset: Any = None
        #: How many times data arrived and was drawn (tests and benchmarks wait on it).
        self.loads = 0
        #: How long the last read and the last drawing took (milliseconds).
        self.fetch_ms = self.show_ms = 0.0
        #: Which list the screen shows: a new filter, view or page counts one up, so a
        #: read of the same list is a live refresh (its new rows are marked) and a read
        #: of another is not.
        self.listing = 0
        self._drawn_listing: int | None = None

    # --- context ------------------------------------------------------------------------

    @property
    def console(self) -> HeraldConsole:
        return self.app  # type: ignore[return-value]

    @property
    def herald(self) -> Herald:
        return self.console.herald

    @property
    def actor_id(self) -> str:
        return self.console.actor_id

    @property
    def principal(self) -> Principal:
        """Who acts, as the use cases take it: the console's member, via the console."""
        return self.console.principal

    @property
    def actor(self) -> Actor:
        return self.console.actor or Actor(self.actor_id, Role.MEMBER, None)

    @property
    def zone(self) -> str:
        return self.actor.timezone or self.console.settings.default_tz

    def destination(self, uri: str, owner: str | None) -> str:
        """``uri`` as the console's member may see it: for ``owner`` (the schedule's)
        and the admins a webhook's host, port and path with its secrets hidden, for
        anyone else its scheme and host (:func:`core.views.destination`). An owner not
        known (None) is shown as to anyone but an admin."""
        full = views.sees_destination(self.actor, owner or "")
        return views.destination(uri, full=full)

    # --- views and focus ----------------------------------------------------------------

    #: Views a key switches between (view -> (key, label)), drawn in ``#views``; the
    #: screen keeps the current one in ``self.view``.
    VIEWS: ClassVar[dict[str, tuple[str, str]]] = {}
    #: The widget focused when the screen opens (None: Textual's choice).
    FOCUS: ClassVar[str | None] = None

    view: str

    @property
    def table(self) -> PageTable:
        return self.query_one("#table", PageTable)

    def _draw_views(self) -> None:
        parts = [
            f"[reverse] {label} [/]" if view == self.view else f" {key} {label} "
            for view, (key, label) in self.VIEWS.items()
        ]
        self.query_one("#views", Static).update("  ".join(parts))

    def action_view(self, view: str) -> None:
        self.view = view
        self.first_page()
        self._draw_views()
        self.reload()

    # --- live data ----------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.VIEWS:
            self._draw_views()
        for table in self.query("#table").results(PageTable):
            if not self.query("#new-rows"):  # (a subclass's on_mount may call this again)
                self.mount(NewRows(id="new-rows"), before=table)
        self.set_interval(self.console.refresh_interval, self._tick, name="live-refresh")
        self.reload()
        if self.FOCUS is not None:
            self.query_one(self.FOCUS).focus()

    def on_screen_resume(self) -> None:
        self.refresh_bindings()
        self.reload()

    def on_screen_suspend(self) -> None:
        self.workers.cancel_group(self, "load")

    def _tick(self) -> None:
        if self.is_current and self.console.live and not self._loading():
            self.reload()

    def _loading(self) -> bool:
        """A read of this screen is still running (the next tick will read again)."""
        return any(
            worker.group == "load" and worker.node is self and worker.is_running
            for worker in self.app.workers
        )

    def reload(self) -> None:
        """Read this screen's data again (the newest request wins)."""
        self._load()

    @work(exclusive=True, group="load", exit_on_error=False)
    async def _load(self) -> None:
        started = time.perf_counter()
        listing = self.listing
        try:
            # a newer request cancels this worker; the read itself runs to its end, so a
            # database connection is never abandoned halfway through a statement
            actor, data = await asyncio.shield(self.console.finish_later(self._read()))
        except HeraldError as exc:
            self.notify(str(exc), title="Cannot read", severity="error")
            return
        except Exception as exc:  # a handler boundary: never crash the console
            log.exception("console read failed", extra={"screen": type(self).__name__})
            self.notify(f"{type(exc).__name__}: {exc}", title="Read failed", severity="error")
            return
        self.fetch_ms = (time.perf_counter() - started) * 1000
        self.post_message(self.Loaded(data, listing, actor))

    async def _read(self) -> tuple[Actor, Any]:
        """The console's member read again (a role given since holds at once), then
        this screen's data as they may see it."""
        actor = await self.herald.actor(self.principal)
        return actor, await self.fetch()

    def on_console_screen_loaded(self, message: ConsoleScreen.Loaded) -> None:
        started = time.perf_counter()
        if message.actor is not None and self.console.take_actor(message.actor):
            self.refresh_bindings()  # the keys the new role may use, greyed out anew
            self.update_role_note()
        if message.listing == self._drawn_listing:
            with ExitStack() as live:
                for table in self.query("#table").results(PageTable):
                    live.enter_context(table.refreshing())
                self.show(message.data)
        else:
            self.show(message.data)
        self._drawn_listing = message.listing
        self.show_ms = (time.perf_counter() - started) * 1000
        self.loads += 1

    def on_page_table_new_above(self, message: PageTable.NewAbove) -> None:
        for marker in self.query("#new-rows").results(NewRows):
            marker.count = message.count

    async def fetch(self) -> Any:
        """Read this screen's data (override)."""
        return None

    def show(self, data: Any) -> None:
        """Draw what :meth:`fetch` read (override)."""

    # --- paging -------------------------------------------------------------------------

    def action_next_page(self) -> None:
        if self.last_keyset is None:
            self.notify("This is the last page.")
            return
        self.pages.append(self.last_keyset)
        self.listing += 1
        self.reload()

    def action_previous_page(self) -> None:
        if len(self.pages) > 1:
            self.pages.pop()
            self.listing += 1
            self.reload()

    def first_page(self) -> None:
        """Back to the first page of a new list (a filter or a view changed)."""
        self.pages = [None]
        self.listing += 1

    def page_note(self, shown: int, size: int) -> str:
        return f"page {len(self.pages)} · {shown} row{'s' if shown != 1 else ''}" + (
            " · ] next" if shown >= size else ""
        )

    # --- roles --------------------------------------------------------------------------

    def why_not(self, action: str) -> str | None:
        rule = self.GATED.get(action)
        return None if rule is None else unavailable(self.actor, rule)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A gated action is shown greyed out (None), its reason in the role note; the
        # command palette can still attempt it, and core refuses and audits it. GATED
        # names an action with its parameters as its binding does: "act('discard')".
        full = f"{action}({', '.join(repr(p) for p in parameters)})" if parameters else action
        return None if self.why_not(full) else True

    def role_note(self) -> str:
        reasons = sorted({r for a in self.GATED if (r := self.why_not(a))})
        reasons += [r for rule in self.NOTES if (r := unavailable(self.actor, rule))]
        role = f"You are {self.actor_id} ({self.actor.role.value})."
        return " ".join([role, *reasons])

    def update_role_note(self) -> None:
        for note in self.query(".role-note").results(Static):
            note.update(self.role_note())

    # --- the detail pane ----------------------------------------------------------------

    def describe(self, key: str) -> str:
        """The row ``key`` in full, for the detail pane (``#pane``): what its columns
        cut or, in a narrow terminal, hide (override)."""
        return ""

    def update_pane(self) -> None:
        """Show the highlighted row in the detail pane, if the screen has one."""
        for pane in self.query("#pane").results(Static):
            key = self.table.cursor_key()
            pane.update("Nothing here." if key is None else self.describe(key))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "table":
            self.update_pane()

    # --- actions ------------------------------------------------------------------------

    def act(self, call: Callable[[], Awaitable[str]]) -> None:
        """Run a use case in a worker; its sentence (or its error) becomes a notification."""
        self._act(call)

    @work(group="action", exit_on_error=False)
    async def _act(self, call: Callable[[], Awaitable[str]]) -> None:
        try:
            self.notify(await call(), title="Done")
        except HeraldError as exc:
            self.notify(str(exc), title="Refused", severity="error")
        except Exception as exc:  # a handler boundary: never crash the console
            log.exception("console action failed", extra={"screen": type(self).__name__})
            self.notify(f"{type(exc).__name__}: {exc}", title="Failed", severity="error")
        self.reload()

    def confirm(self, question: str, call: Callable[[], Awaitable[str]]) -> None:
        """Ask first; run ``call`` as an action only on yes."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.act(call)

        self.app.push_screen(ConfirmScreen(question), answered)
