"""The overview's pieces: a figure with its caption, and a per-minute sparkline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static


class Figure(Static):
    """A caption over a big number (or short text)."""

    def __init__(self, caption: str, **kwargs: Any) -> None:
        super().__init__("-", **kwargs)
        self.border_title = caption

    def set(self, value: str) -> None:
        self.update(value)


class Rate(Vertical):
    """Per-minute counts over the last hour, with their total and peak."""

    def __init__(self, caption: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = caption

    def compose(self) -> ComposeResult:
        yield Sparkline([0] * 60, summary_function=max)
        yield Static("", classes="rate-summary")

    def set(self, values: Sequence[int]) -> None:
        self.query_one(Sparkline).data = list(values)
        total, peak = sum(values), max(values, default=0)
        self.query_one(".rate-summary", Static).update(
            f"{total:,} in 1h · peak {peak:,}/min · now {values[-1] if values else 0}"
        )
