"""Issue 41 in the console, on the Schedules screen: ``w`` sends a schedule's next
occurrence now (the verb table's "send-now", its key and label from core/verbs.py),
and the create and edit form says what a save found: the same text already due there
at about the same time, a destination so crowded the message would wait."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from core.cases import Herald
from core.clock import ManualClock
from tests.conftest import START
from tests.tui.conftest import ADMIN, MEMBER, flat, notes, run, screen_text, settle
from tests.tui.test_schedules_screen import goto, help_text
from tui.screens.form import ScheduleFormScreen

TEAM = "slack:C0TEAM"
GENERAL = "slack:C0GENERAL"
NINE = (START + timedelta(days=1)).replace(hour=9)


async def pending_due(herald: Herald, schedule_id: int | None) -> list[Any]:
    assert schedule_id is not None
    jobs = await herald.store.schedule_jobs(schedule_id)
    return [j.due_at.replace(tzinfo=START.tzinfo) for j in jobs if j.state == "pending"]


async def test_w_sends_the_next_occurrence_now(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    daily, _ = await herald.create_schedule(
        MEMBER, to=TEAM, when="every day at 9am", text="Stand-up", tz="UTC"
    )
    once, _ = await herald.create_schedule(
        MEMBER, to=TEAM, when="in 3 hours", text="Demo", tz="UTC"
    )
    assert await pending_due(herald, daily.id) == [NINE]
    clock.advance(timedelta(minutes=5))
    app = console(MEMBER, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        await goto(pilot, daily.id)
        await pilot.press("w")  # asks first
        await settle(pilot)
        text = flat(screen_text(app))
        assert f"Send schedule {daily.id} (Stand-up) now?" in text
        assert "the later ones stay as planned" in text
        await pilot.press("y")
        await settle(pilot)
        assert (
            f"Done: Schedule {daily.id}: sending its Tue 03 Mar 2026 09:00 occurrence now; "
            "the next ones stay as planned." in notes(app)
        )
        assert await pending_due(herald, daily.id) == [clock.now()]
        # a one-off: sent now, as it is
        await goto(pilot, once.id)
        await pilot.press("w", "y")
        await settle(pilot)
        assert f"Done: Schedule {once.id}: sending now." in notes(app)
        assert await pending_due(herald, once.id) == [clock.now()]
        # a paused schedule: refused in a sentence, nothing sent
        await herald.pause_schedule(MEMBER, daily.id)
        app.screen.reload()
        await settle(pilot)
        await goto(pilot, daily.id)
        await pilot.press("w", "y")
        await settle(pilot)
        assert f"Refused: Schedule {daily.id} is paused: resume it to send it now." in notes(app)
        # a selection: one schedule at a time
        await pilot.press("space")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        assert notes(app)[-1].startswith("Send now: Send now acts on one schedule")
        # the keys panel names it
        await pilot.press("escape", "question_mark")
        await settle(pilot)
        assert "w Send now" in help_text(app)


async def test_the_form_says_a_duplicate_and_a_crowded_channel(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    for i in range(40):  # ≈ 43 s of slots at Slack's pace: a message due with them waits
        await herald.create_schedule(
            ADMIN, to=GENERAL, when="tomorrow at 9am", text=f"Note {i}", tz="UTC"
        )
    mine, _ = await herald.create_schedule(
        MEMBER, to=GENERAL, when="tomorrow at 9am", text="Stand-up in 5 minutes", tz="UTC"
    )
    later, _ = await herald.create_schedule(
        MEMBER, to=TEAM, when="tomorrow at 10am", text="Retro", tz="UTC"
    )
    app = console(MEMBER, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*GENERAL, "tab", *"tomorrow at 9am", "tab", "tab")
        await pilot.press(*"Stand-up in 5 MINUTES", "ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ScheduleFormScreen)  # saved: warned, not refused
        said = notes(app)
        created = max(s.id for s in await herald.list_schedules(MEMBER) if s.id is not None)
        assert f"Done: Created schedule {created}." in said
        [duplicate] = [n for n in said if n.startswith("Already scheduled: ")]
        assert "'Stand-up in 5 minutes'" in duplicate and f"(id {mine.id})" in duplicate
        [crowded] = [n for n in said if n.startswith("Crowded: ")]
        assert crowded.startswith("Crowded: 42 messages are due into slack:C0GENERAL at 09:00;")
        assert "Slack sends about 1 a second there: this one ≈ 42 s late" in crowded
        # an edit that moves a message into the crowd is told too
        await goto(pilot, later.id)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("ctrl+u", *"tomorrow at 9am")  # the When field has the focus
        await pilot.press("shift+tab", "ctrl+u", *GENERAL, "ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ScheduleFormScreen)
        assert f"Done: Saved schedule {later.id} (version 2)." in notes(app)
        assert notes(app)[-1].startswith("Crowded: 43 messages are due into slack:C0GENERAL")
