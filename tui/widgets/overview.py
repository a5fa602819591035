"""The overview's pieces: a figure with its caption (its plots: tui.widgets.plots)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static


class Figure(Static):
    """A caption over a big number (or short text)."""

    def __init__(self, caption: str, **kwargs: Any) -> None:
        super().__init__("-", **kwargs)
        self.border_title = caption

    def set(self, value: str) -> None:
        self.update(value)
