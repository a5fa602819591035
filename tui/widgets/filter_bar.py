"""The one-line filter of a list screen. Enter applies it (Input.Submitted bubbles up to
the screen); Escape hands the keyboard back to the list."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import Input


class FilterBar(Input):
    BINDINGS = [Binding("escape", "leave", "Back to the list", show=False)]

    def __init__(self, placeholder: str, **kwargs: Any) -> None:
        super().__init__(placeholder=placeholder, compact=True, **kwargs)

    def action_leave(self) -> None:
        self.screen.focus_next("DataTable")
