"""The schedule form's live preview of the time a person types: the use case every
surface's preview is, in the zone the save uses, said."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Static, TextArea

from core.cases import Herald
from tests.tui.conftest import MEMBER, run, settle
from tests.tui.test_schedules_screen import flat, schedules
from tui.screens.form import preview


async def test_the_preview_reads_the_time_and_names_the_calendars_to_skip(herald: Herald) -> None:
    phrase = "every weekday at 9am except holidays from https://example.org/h.ics"
    shown = await preview(herald, phrase, "UTC", actor=MEMBER)
    assert "every weekday at 09:00 (UTC)" in shown and "next: 2026-03-03 09:00" in shown
    assert "skips the dates of 1 calendar(s) (read when you save)" in shown
    assert "[red]" in await preview(herald, "every weekday except holidays", "UTC", actor=MEMBER)
    assert "skips" not in await preview(herald, "every weekday at 9am", "UTC", actor=MEMBER)


async def test_the_form_previews_in_the_members_zone_what_it_then_saves(
    console: Any, herald: Herald
) -> None:
    """Issue 33: after ``herald timezone Europe/Berlin``, the form's preview of a rule
    without a time of day says Berlin and 09:00 there, and the saved schedule's first
    send is the preview's first."""
    await herald.set_timezone(MEMBER, "Europe/Berlin")
    app = await schedules(console, MEMBER)
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        assert form.query_one("#tz", Input).value == "Europe/Berlin"
        form.query_one("#to", Input).value = "log:"
        form.query_one("#when", Input).value = "every weekday"
        await settle(pilot)
        shown = flat(str(form.query_one("#preview", Static).render()))
        assert "every weekday at 09:00 (Europe/Berlin)" in shown, shown
        # the clock is Monday 2 March 2026 12:00 UTC: Tuesday at 09:00 in Berlin (CET)
        assert "next: 2026-03-03 09:00, 2026-03-04 09:00, 2026-03-05 09:00 (Europe/Berlin)" in (
            shown
        )
        form.query_one("#text", TextArea).text = "Stand-up notes"
        await pilot.press("ctrl+s")
        await settle(pilot)
    [saved] = await herald.list_schedules(MEMBER)
    assert saved.timezone == "Europe/Berlin"
    assert saved.next_run_at is not None and f"{saved.next_run_at:%Y-%m-%d %H:%M}" == (
        "2026-03-03 08:00"  # 09:00 CET in UTC
    )
