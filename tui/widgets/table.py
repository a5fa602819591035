"""A table that shows one page of keyed rows and survives live refreshes: the cursor
stays on the same row (by key) and the selection is kept. Rows that arrive above the
view do not push what is on screen away: the view stays on the rows it showed and the
table counts the new ones above it (:class:`PageTable.NewAbove`, which the screen shows
as "45 new ↑") until they are scrolled into view or ``home`` is pressed. With the
cursor on the first row the table follows instead: the newest rows come into view and
the cursor stays on the first row.

Its columns give way in a narrow terminal by priority (:class:`Col`): the message text
keeps its room, lower-priority columns shrink to their least width and then hide. What a
column hides or cuts the screen's detail pane shows in full."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist

MARK = "●"


@dataclass(frozen=True)
class Col:
    """A column and how it gives way when the table is narrow."""

    label: str
    #: The most it takes (longer cells are cut with an ellipsis).
    width: int
    #: Which columns keep their room longest: the lowest stay shrunk and hide first,
    #: the highest get their full width first.
    keep: int = 0
    #: The least it shrinks to before it hides (None: it does not shrink).
    least: int | None = None
    #: It never hides (the message text): it keeps at least ``least``, and what room
    #: is left in the end is its.
    flex: bool = False
    #: A cut keeps a cell's last word when it starts with "+" (the "+2" of
    #: "slack:C1 +2": how many more there are is never cut away).
    tail: bool = False


def one_line(cell: Any) -> Text:
    """A cell as one line of plain text (never read as markup)."""
    if isinstance(cell, Text):
        text = cell.copy()
        text.plain = " ".join(text.plain.split())
        return text
    return Text(" ".join(str(cell).split()))


def fit(columns: Sequence[Col], natural: Sequence[int], room: int, pad: int) -> list[int | None]:
    """The width of each column within ``room`` cells (None: hidden); each column also
    takes ``pad`` cells of padding. Columns start at their least width and the
    lowest-priority ones hide until those fit; the room left goes back by priority, up
    to what each column's content needs (``natural``)."""
    floors = [
        min(n, c.least) if c.least is not None else n for c, n in zip(columns, natural, strict=True)
    ]
    shown = list(range(len(columns)))
    by_priority = sorted(shown, key=lambda i: (columns[i].keep, -i))  # rightmost first
    for i in by_priority:
        if sum(floors[j] + pad for j in shown) <= room:
            break
        if not columns[i].flex:
            shown.remove(i)
    widths: list[int | None] = [floors[i] if i in shown else None for i in range(len(columns))]
    left = room - sum(floors[i] + pad for i in shown)
    for i in reversed(by_priority):
        width = widths[i]
        if width is None or left <= 0:
            continue
        grow = min(left, natural[i] - width)
        widths[i] = width + grow
        left -= grow
    return widths


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
        Binding(
            "home",
            "newest",
            "First row",
            show=False,
            id="first-row",
            tooltip="Shows the rows that arrived above the view",
        ),
    ]

    class NewAbove(Message):
        """How many rows arrived above the view and are not seen yet changed."""

        def __init__(self, table: PageTable, count: int) -> None:
            super().__init__()
            self.table = table
            self.count = count

    class SelectionChanged(Message):
        """The set of marked rows changed."""

        def __init__(self, table: PageTable, count: int) -> None:
            super().__init__()
            self.table = table
            self.count = count

    def __init__(self, *columns: Col, selectable: bool = False, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.specs = columns
        self.selectable = selectable
        self.selected: set[str] = set()
        self.keys: list[str] = []
        #: The rows as given (cells uncut), drawn again when the width changes.
        self.rows_given: list[tuple[str, list[Text]]] = []
        #: The width of each column as drawn (None: hidden).
        self.widths: list[int | None] = []
        #: Rows that arrived above the view on a live refresh, not scrolled into view yet.
        self.unseen: set[str] = set()
        self._index: dict[str, int] = {}
        #: The next :meth:`show` is a live refresh of the same list (see :meth:`refreshing`).
        self._live = False
        #: A drawing's scroll position is still to settle (after the next refresh): the
        #: unseen rows are counted then (tests wait for it).
        self.settling = False
        #: The count of unseen rows last told (:class:`NewAbove`).
        self._told = 0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("toggle_select", "select_all", "invert_selection", "clear_selection"):
            return self.selectable
        return True

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None when the table is empty)."""
        if not self.keys or not 0 <= self.cursor_row < len(self.keys):
            return None
        return self.keys[self.cursor_row]

    @property
    def shown_columns(self) -> list[str]:
        """The labels of the columns drawn now (the others gave way to the room)."""
        return [c.label for c, w in zip(self.specs, self.widths, strict=True) if w is not None]

    # --- layout -------------------------------------------------------------------------

    def _room(self) -> int:
        """Cells across for the columns: the table's width less the mark column and a
        vertical scrollbar (kept free so the columns do not move when one appears)."""
        width = self.size.width or self.app.size.width
        mark = 1 + 2 * self.cell_padding if self.selectable else 0
        return max(0, width - mark - self.styles.scrollbar_size_vertical)

    def _layout(self) -> list[int | None]:
        natural = [
            min(
                c.width,
                max([cell_len(c.label), *(cells[i].cell_len for _, cells in self.rows_given)]),
            )
            for i, c in enumerate(self.specs)
        ]
        return fit(self.specs, natural, self._room(), 2 * self.cell_padding)

    def on_resize(self, _: events.Resize) -> None:
        if self.specs and self._layout() != self.widths:
            self._draw()

    @contextmanager
    def refreshing(self) -> Iterator[None]:
        """Within it, :meth:`show` draws a live refresh of the list already shown (new
        rows are counted or followed); outside it, a new list (a filter, a view, a
        page), whose rows are not "new"."""
        self._live = True
        try:
            yield
        finally:
            self._live = False

    def use_columns(self, columns: Sequence[Col]) -> None:
        """Other columns from the next :meth:`show` on (a view that shows other things:
        the decided requests' state where the pending ones' expiry was)."""
        if tuple(columns) != self.specs:
            self.specs = tuple(columns)
            self.widths = []  # the next drawing adds the columns anew

    def show(self, rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Replace the rows, keeping the cursor on the same key (or the same place)."""
        self.rows_given = [(key, [one_line(cell) for cell in cells]) for key, cells in rows]
        if not self._live:  # a new list: none of its rows is "new"
            self.unseen = set()
        self._draw(live=self._live)

    def _draw(self, *, live: bool = False) -> None:
        current, index, scroll = self.cursor_key(), self.cursor_row, self.scroll_y
        old = self._index
        top = int(scroll)
        top_key = self.keys[top] if 0 <= top < len(self.keys) else None
        # the cursor on the first row (and the view at the top): follow the newest rows
        follow = live and index == 0 and top == 0
        # the view moves while the rows are replaced: what is unseen is counted once
        # the scroll position has settled
        self.settling = True
        widths = self._layout()
        if widths != self.widths or not self.columns:
            self.clear(columns=True)
            self.widths = widths
            if self.selectable:
                self.add_column(" ", key="mark", width=1)
            for spec, width in zip(self.specs, widths, strict=True):
                if width is not None:
                    self.add_column(spec.label, key=spec.label, width=width)
        else:
            self.clear()
        rows = self.rows_given
        self.keys = [key for key, _ in rows]
        self._index = {key: i for i, key in enumerate(self.keys)}
        for key, cells in rows:
            mark = (Text(MARK if key in self.selected else ""),) if self.selectable else ()
            shown = [
                cell.copy() if cell.cell_len <= width else _cut(cell, width, spec.tail)
                for cell, width, spec in zip(cells, widths, self.specs, strict=True)
                if width is not None
            ]
            self.add_row(*mark, *shown, key=key)
        if live:
            self.unseen |= {key for key in self.keys if key not in old}
        if not rows:
            self.settling = False
            self._count_unseen(0)
            return
        if follow:
            target, scroll = 0, 0.0
        else:
            target = self._index.get(current or "", min(index, len(rows) - 1))
            if live and top_key in self._index:  # the rows on screen stay where they were
                scroll = self._index[top_key] + (scroll - top)
        self.move_cursor(row=max(0, target), animate=False, scroll=False)
        self.scroll_to(y=scroll, animate=False, immediate=True)
        self._count_unseen(int(scroll))
        # the table's height for its new rows is known after the next refresh: the
        # scroll position settles then (and the cursor is kept in view)
        self.call_after_refresh(self._settle, scroll)

    def _settle(self, scroll: float, tries: int = 20) -> None:
        if self._require_update_dimensions and tries:  # measured when the loop is idle
            self.call_after_refresh(self._settle, scroll, tries - 1)
            return
        self.settling = False
        self.scroll_to(y=scroll, animate=False, immediate=True)
        if self.cursor_row < self.scroll_y or self.cursor_row >= self.scroll_y + max(
            1, self.size.height - 1
        ):
            self.move_cursor(row=self.cursor_row, animate=False, scroll=True)
        self._count_unseen(int(self.scroll_y))

    # --- new rows above the view ----------------------------------------------------------

    def _count_unseen(self, first_shown: int) -> None:
        """Forget the new rows at or below ``first_shown`` (they are in view, or were)
        and say how many are left above it."""
        self.unseen = {k for k in self.unseen if self._index.get(k, first_shown) < first_shown}
        if len(self.unseen) != self._told:
            self._told = len(self.unseen)
            self.post_message(self.NewAbove(self, self._told))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.unseen and not self.settling:
            self._count_unseen(int(new_value))

    def action_newest(self) -> None:
        """The first row, scrolled into view with what arrived above."""
        if self.keys:
            self.move_cursor(row=0, animate=False, scroll=False)
        self.scroll_to(y=0, animate=False, immediate=True)
        self._count_unseen(0)

    # --- selection ----------------------------------------------------------------------

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
        # a row that went meanwhile (a screen read again while an action ran) has no mark
        try:
            self.update_cell(key, "mark", Text(MARK if key in self.selected else ""))
        except (RowDoesNotExist, CellDoesNotExist, KeyError):
            pass


def _cut(cell: Text, width: int, tail: bool = False) -> Text:
    """``cell`` in ``width`` cells, ending in an ellipsis; with ``tail``, a last word
    starting with "+" stays whole after the ellipsis (when it leaves room for more)."""
    head, _, last = cell.plain.rpartition(" ")
    keep = cell_len(last) + 1
    if tail and head and last.startswith("+") and width - keep >= 2:
        cut = cell[: len(head)]
        cut.truncate(width - keep, overflow="ellipsis")
        return Text.assemble(cut, " ", cell[len(head) + 1 :])
    cut = cell.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut
