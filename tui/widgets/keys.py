"""The keys panel (``?``): the screen's own keys first, then the keys that work
everywhere, then the cursor keys of the list (Textual's own)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import HelpPanel, KeyPanel, Markdown
from textual.widgets._key_panel import BindingsTable

#: The sections' titles after the screen's own (which is titled by the screen).
EVERYWHERE = "Everywhere"
MOVING = "Moving around"


@dataclass
class KeyRow:
    """One action with its keys."""

    binding: Binding
    keys: list[str] = field(default_factory=list)
    enabled: bool = True


def key_sections(screen: Screen[object]) -> Iterator[tuple[str, list[KeyRow]]]:
    """The screen's active keys as (title, rows): its own (its named bindings, then
    its widgets' named ones: the list's selection keys), everywhere (the app's, and the
    number keys a screen binds again), moving around (Textual's unnamed ones: the
    cursor, focus, copy)."""
    app = screen.app
    app_ids = {b.id for b in app.BINDINGS if isinstance(b, Binding) and b.id}
    own: dict[str, KeyRow] = {}
    widgets: dict[str, KeyRow] = {}
    everywhere: dict[str, KeyRow] = {}
    moving: dict[str, KeyRow] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.system:
            continue
        node = active.node
        if binding.id is None:  # Textual's own: the cursor, focus, copy
            section = moving
        elif node is app or binding.id in app_ids or binding.id.startswith("screen-"):
            section = everywhere
        elif node is screen:
            section = own
        else:
            section = widgets
        row = section.setdefault(binding.action, KeyRow(binding))
        shown = app.get_key_display(binding)
        if shown not in row.keys:
            row.keys.append(shown)
        row.enabled = row.enabled and active.enabled
    title = str(screen.title or type(screen).__name__)
    for name, rows in (
        (title, [*own.values(), *widgets.values()]),
        (EVERYWHERE, list(everywhere.values())),
        (MOVING, list(moving.values())),
    ):
        if rows:
            yield name, rows


class KeysTable(BindingsTable):
    """The screen's keys in three sections (see :func:`key_sections`)."""

    def render_bindings_table(self) -> Table:
        key_style = self.get_component_rich_style("bindings-table--key")
        description_style = self.get_component_rich_style("bindings-table--description")
        header_style = self.get_component_rich_style("bindings-table--header")
        table = Table(padding=(0, 0), show_header=False, box=box.SIMPLE)
        table.add_column("", justify="right")
        for title, rows in key_sections(self.screen):
            table.add_row("", Text(title, style=header_style, end=""))
            for row in rows:
                text = Text.from_markup(row.binding.description, end="", style=description_style)
                if row.binding.tooltip:
                    text.append(" ")
                    text.append(row.binding.tooltip, "dim")
                if not row.enabled:
                    text.stylize("dim")
                keys = Text(" ".join(row.keys), style=key_style, justify="right")
                table.add_row(keys, text)
            table.add_section()
        return table


class KeysPanel(KeyPanel):
    def compose(self) -> ComposeResult:
        yield KeysTable(shrink=True, expand=False)


class KeysHelp(HelpPanel):
    """Textual's help panel with the console's order of keys."""

    def compose(self) -> ComposeResult:
        yield Markdown(id="widget-help")
        yield KeysPanel(id="keys-help")
