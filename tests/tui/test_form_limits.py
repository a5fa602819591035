"""The console's schedule form refuses a message its destination would refuse, in the
form, and stores nothing."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, TextArea

from core.cases import Herald
from tests.tui.conftest import MEMBER, run, screen_text, settle
from tests.tui.test_schedules_screen import flat, schedules


async def test_the_form_says_the_limit_and_stores_nothing(console: Any, herald: Herald) -> None:
    app = await schedules(console, MEMBER)
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        app.screen.query_one("#to", Input).value = "discord:123456789012345678"
        app.screen.query_one("#when", Input).value = "tomorrow at 9am"
        app.screen.query_one("#text", TextArea).text = "x" * 3508
        await pilot.press("ctrl+s")
        await settle(pilot)
        shown = flat(screen_text(app).replace("█", ""))  # the sentence wraps in the dialog
        assert "Discord allows 2,000 characters in a message; this message has 3,508." in shown
        assert await herald.list_schedules(MEMBER) == []
