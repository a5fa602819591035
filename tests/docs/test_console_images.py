"""The console's screenshots in docs/images/ are the ones the generator takes: one SVG
per shot (``python -m docs.gen screenshots`` remakes them, in ~20 s, too slow to
compare here), each of the console screen it names."""

from __future__ import annotations

from docs.gen import ROOT
from docs.gen.screenshots import IMAGES, SHOTS, SIZE
from tests.tui.conftest import svg_lines

#: The title bar each screenshot shows.
TITLES = {
    "overview": "Overview — local:ada",
    "schedules": "Schedules — local:ada",
    "queue": "Queue — local:ada",
    "dead": "Dead letters — local:ada",
    "forecast": "Forecast — local:ada",
}


def test_each_screenshot_is_committed_and_shows_its_screen() -> None:
    committed = {p.name for p in (ROOT / IMAGES).glob("console-*.svg")}
    assert committed == set(SHOTS)
    for name, (mode, _) in SHOTS.items():
        svg = (ROOT / IMAGES / name).read_text(encoding="utf-8")
        assert svg.startswith("<svg") and "Generated with Rich" in svg
        title = svg_lines(svg, SIZE[0])[0]
        assert TITLES[mode] in title, f"{name} shows {title.strip()!r}, not the {mode} screen"
