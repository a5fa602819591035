"""The overview's plots of the last hour (textual-plotext): a few series against the
minutes ago, each in a colour of the app's theme and named in that colour in the
caption (its legend), or a sentence when there is nothing to plot."""

from __future__ import annotations

import math
from typing import Any

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

#: A point: minutes ago (-59 … 0), value.
Point = tuple[int, float]
#: Where the x axis is marked, and how.
X_TICKS = (-60, -45, -30, -15, 0)
X_LABELS = ("-60m", "-45m", "-30m", "-15m", "now")


class HourPlot(Vertical):
    """Series over the last hour, or ``empty`` (a sentence) when there is nothing to
    plot. ``palette`` names each series' colour, a variable of the app's theme
    (``success``, ``error``); the caption says the same colours in its markup."""

    def __init__(self, caption: str, palette: dict[str, str], *, empty: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = caption
        self.palette = palette
        self.nothing = empty
        #: What the plot shows now: each series' points, by name (tests read it).
        self.series: dict[str, list[Point]] = {}

    def compose(self) -> ComposeResult:
        yield PlotextPlot()
        yield Static("", classes="plot-empty")  # its sentence once the hour is read

    def on_mount(self) -> None:
        self.query_one(PlotextPlot).display = False

    def show(
        self, series: dict[str, list[Point]], *, step: int, blank: bool, whole: bool, note: str
    ) -> None:
        """Draw ``series``, their points ``step`` minutes apart (a gap where one is left
        out: no line is drawn across it); ``blank``: there is nothing to plot, the
        sentence instead. The y axis is marked in whole numbers when ``whole``; ``note``
        goes under the plot (not under the sentence: it would only repeat it)."""
        self.series = series
        self.border_subtitle = "" if blank else note
        plot = self.query_one(PlotextPlot)
        plot.display = not blank
        sentence = self.query_one(".plot-empty", Static)
        sentence.update(self.nothing)
        sentence.display = blank
        plt = plot.plt
        plt.clear_data()
        plt.frame(False)
        plt.xlim(X_TICKS[0], X_TICKS[-1])
        plt.xticks(list(X_TICKS), list(X_LABELS))
        top = max((v for points in series.values() for _, v in points), default=0.0)
        ticks = _y_ticks(top, whole=whole)
        plt.ylim(0, ticks[-1])
        plt.yticks(ticks, [f"{t:.3g}" for t in ticks])
        for name, points in series.items():
            color = self._rgb(name)
            for run in _runs(points, step):
                xs, ys = [x for x, _ in run], [y for _, y in run]
                # a point alone is a dot: a braille line of one point is one pixel
                marker = "braille" if len(run) > 1 else "•"
                plt.plot(xs, ys, marker=marker, color=color)
        plot.refresh()

    def _rgb(self, name: str) -> tuple[int, int, int]:
        return Color.parse(self.app.theme_variables[self.palette[name]]).rgb


def _y_ticks(top: float, *, whole: bool) -> list[float]:
    """Marks of a y axis from 0 to ``top`` (1 when nothing is above 0): 0, the middle
    and the top, in whole numbers when ``whole`` (a count's axis)."""
    if top <= 0:
        top = 1.0
    if whole:
        top = float(math.ceil(top))
        return sorted({0.0, float(round(top / 2)), top})
    return [0.0, top / 2, top]


def _runs(points: list[Point], step: int) -> list[list[Point]]:
    """``points`` cut where the next is more than ``step`` minutes on."""
    runs: list[list[Point]] = []
    for point in points:
        if runs and point[0] - runs[-1][-1][0] <= step:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs
