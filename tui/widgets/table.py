"""A table that shows one page of keyed rows and survives live refreshes: the cursor
stays on the same row (by key), the scroll position and the selection are kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

MARK = "●"


class PageTable(DataTable[Any]):
    """Rows are ``(key, cells)``. With ``selectable``, space marks rows for bulk actions."""

    BINDINGS = [
        Binding("space", "toggle_select", "Select", id="toggle-select"),
        Binding(
            "ctrl+a",
            "select_all",
            "Select all",
            show=False,
            id="select-all",
            tooltip="Mark every row of this page for a bulk action",
        ),
        Binding(
            "asterisk",
            "invert_selection",
            "Invert selection",
            show=False,
            id="invert-selection",
            tooltip="Marked rows of this page are unmarked, the others marked",
        ),
        Binding("escape", "clear_selection", "Unselect", show=False, id="clear-selection"),
    ]

    class SelectionChanged(Message):
        """The set of marked rows changed."""

        def __init__(self, table: PageTable, count: int) -> None:
            super().__init__()
            self.table = table
            self.count = count

    def __init__(self, *columns: str, selectable: bool = False, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.column_names = columns
        self.selectable = selectable
        self.selected: set[str] = set()
        self.keys: list[str] = []

    def on_mount(self) -> None:
        if self.selectable:
            self.add_column(" ", key="mark", width=1)
        for name in self.column_names:
            self.add_column(name, key=name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("toggle_select", "select_all", "invert_selection", "clear_selection"):
            return self.selectable
        return True

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None when the table is empty)."""
        if not self.keys or not 0 <= self.cursor_row < len(self.keys):
            return None
        return self.keys[self.cursor_row]

    def show(self, rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Replace the rows, keeping the cursor on the same key (or the same place)."""
        current, index, scroll = self.cursor_key(), self.cursor_row, self.scroll_y
        self.clear()
        self.keys = [key for key, _ in rows]
        for key, cells in rows:
            mark = (MARK if key in self.selected else "",) if self.selectable else ()
            self.add_row(*mark, *cells, key=key)
        if not rows:
            return
        target = self.keys.index(current) if current in self.keys else min(index, len(rows) - 1)
        self.move_cursor(row=max(0, target), animate=False, scroll=False)
        self.scroll_to(y=scroll, animate=False, immediate=True)
        if self.cursor_row < self.scroll_y or self.cursor_row >= self.scroll_y + max(
            1, self.size.height - 1
        ):
            self.move_cursor(row=self.cursor_row, animate=False, scroll=True)

    def action_toggle_select(self) -> None:
        key = self.cursor_key()
        if key is None:
            return
        if key in self.selected:
            self.selected.discard(key)
        else:
            self.selected.add(key)
        self._mark(key)
        self.post_message(self.SelectionChanged(self, len(self.selected)))
        self.move_cursor(row=self.cursor_row + 1)

    def action_select_all(self) -> None:
        """Mark every row of this page (marks on other pages stay)."""
        self._select(self.selected | set(self.keys))

    def action_invert_selection(self) -> None:
        """Unmark the marked rows of this page and mark the others (marks on other
        pages stay)."""
        self._select(self.selected ^ set(self.keys))

    def action_clear_selection(self) -> None:
        self._select(set())

    def _select(self, selected: set[str]) -> None:
        changed, self.selected = self.selected ^ selected, selected
        for key in changed:
            self._mark(key)
        self.post_message(self.SelectionChanged(self, len(self.selected)))

    def _mark(self, key: str) -> None:
        try:
            self.update_cell(key, "mark", Text(MARK if key in self.selected else ""))
        except (RowDoesNotExist, KeyError):
            pass
