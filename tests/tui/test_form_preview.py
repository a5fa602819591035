"""The schedule form's live preview of the time a person types."""

from __future__ import annotations

from core.usecases import Herald
from tui.screens.form import preview


def test_the_preview_reads_the_time_and_names_the_calendars_to_skip(herald: Herald) -> None:
    shown = preview(
        herald, "every weekday at 9am except holidays from https://example.org/h.ics", "UTC"
    )
    assert "every weekday at 09:00 (UTC)" in shown and "next: 2026-03-03 09:00" in shown
    assert "skips the dates of 1 calendar(s) (read when you save)" in shown
    assert "[red]" in preview(herald, "every weekday except holidays", "UTC")
    assert "skips" not in preview(herald, "every weekday at 9am", "UTC")
