"""Snapshots of the main screens at 80x24 and 120x40, each as it first opens (the
Queue on its pending jobs, nothing being due): the SVG screenshot is saved
(``app.save_screenshot``) and its text compared with ``snapshots/<screen>-<size>.txt``.

Run with ``HERALD_UPDATE_SNAPSHOTS=1`` to rewrite the expected text after a deliberate
change, then read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.tui.conftest import OPERATOR, run, settle, svg_lines

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("HERALD_UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("mode", ["overview", "schedules", "queue", "deliveries", "dead", "audit"])
async def test_snapshot(
    console: Any, seeded: dict[str, Any], tmp_path: Path, mode: str, size: tuple[int, int]
) -> None:
    app = console(OPERATOR, mode=mode)
    async with run(app, size=size) as pilot:
        await settle(pilot)
        svg = app.save_screenshot(f"{mode}.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / f"{mode}-{size[0]}x{size[1]}.txt", size[0])


def compare(svg: Path, expected: Path, width: int) -> None:
    text = "\n".join(svg_lines(svg.read_text(encoding="utf-8"), width)).rstrip() + "\n"
    if UPDATE or not expected.exists():
        expected.write_text(text, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"wrote the missing snapshot {expected.name}; check it and run again")
    assert text == expected.read_text(encoding="utf-8")
