"""Screens 1 and 2 driven by the Pilot: overview figures, schedule actions one at a
time, on a selection and on everything matching, the create/edit form, live refresh."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from core.cases import Herald
from core.clock import ManualClock
from core.store import AuditFilter, ScheduleFilter
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, flat, notes, run, screen_text, settle, table
from tui.screens.schedules import SchedulesScreen


async def test_overview_shows_the_figures(console: Any, seeded: dict[str, Any]) -> None:
    app = console(MEMBER)
    async with run(app) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "Jobs by state" in text and "Dispatchers" in text
        assert "40.0% of 5" in text  # first-try success: 2 of 5 finished
        assert "3 · 1 to decide" in text  # dead letters, one retry request
        assert "delivered" in text and "no dispatcher has reported" in text


async def test_number_keys_switch_screens_and_help_lists_keys(
    console: Any, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN)
    async with run(app) as pilot:
        await settle(pilot)
        for key, title in [
            ("2", "Schedules"),
            ("3", "Queue"),
            ("4", "Delivery log"),
            ("5", "Dead letters"),
            ("6", "Audit log"),
            ("7", "Calendars"),
            ("8", "Templates"),
            ("9", "Awaiting done"),
            ("0", "Approvals"),
            ("1", "Overview"),
        ]:
            await pilot.press(key)
            await settle(pilot)
            assert app.screen.title == title
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert app.screen.query("HelpPanel")
        await pilot.press("question_mark")
        await settle(pilot)
        assert not app.screen.query("HelpPanel")


async def schedules(console: Any, actor: str = ADMIN) -> Any:
    return console(actor, mode="schedules")


def help_text(app: Any) -> str:
    """What the keys panel (``?``) lists, whole (at 80 columns it scrolls)."""
    panel = app.screen.query_one("BindingsTable")
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(panel.render_bindings_table())
    return " ".join(console.export_text().split())


async def goto(pilot: Any, schedule_id: int) -> None:
    t = table(pilot.app)
    t.move_cursor(row=t.keys.index(str(schedule_id)))
    await pilot.pause()


async def test_filter_then_pause_resume_skip_cancel(
    console: Any, seeded: dict[str, Any], herald: Herald
) -> None:
    app = await schedules(console, MEMBER)
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"standup", "enter")
        await settle(pilot)
        assert table(app).keys == [str(seeded["standup"])]
        assert "filter: standup" in screen_text(app)
        await pilot.press("p")
        await settle(pilot)
        assert (await herald.store.get_schedule(seeded["standup"])).state == "paused"
        await pilot.press("u")
        await settle(pilot)
        assert (await herald.store.get_schedule(seeded["standup"])).state == "active"
        await pilot.press("k")  # skip next asks first
        await settle(pilot)
        assert "Skip the next occurrence" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert any("Skipped the next occurrence" in n for n in notes(app))
        await pilot.press("c")
        await settle(pilot)
        assert "Cancel schedule" in screen_text(app)
        await pilot.press("n")  # no: nothing happens
        await settle(pilot)
        assert (await herald.store.get_schedule(seeded["standup"])).state == "active"
        await pilot.press("c", "y")
        await settle(pilot)
        assert (await herald.store.get_schedule(seeded["standup"])).state == "cancelled"
        await pilot.press("u")  # resuming a cancelled schedule: refused, no crash
        await settle(pilot)
        assert any("cannot be resumed" in n for n in notes(app))
        await pilot.press("slash", *"state:bogus", "enter")
        await settle(pilot)
        assert any("Unknown state 'bogus'" in n for n in notes(app))


async def test_bulk_on_a_selection_and_on_everything_matching(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = [
        (await herald.create_schedule(MEMBER, to="log:", when=f"in {i + 1} hours", text=f"t{i}"))[
            0
        ].id
        for i in range(4)
    ]
    other, _ = await herald.create_schedule(OPERATOR, to="log:", when="in 3 hours", text="op")
    app = await schedules(console, ADMIN)
    async with run(app) as pilot:
        await settle(pilot)
        await goto(pilot, ids[3])
        await pilot.press("space", "space")  # marks ids[3], ids[2]
        await settle(pilot)
        assert "2 selected" in screen_text(app)
        await pilot.press("p")
        await settle(pilot)
        assert "Pause 2 schedules selected?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert [(await herald.store.get_schedule(i)).state for i in ids] == [
            "active",
            "active",
            "paused",
            "paused",
        ]
        await pilot.press("slash", *"owner:local:bob", "enter")
        await settle(pilot)
        await pilot.press("C")
        await settle(pilot)
        assert "Cancel 4 schedules matching owner:local:bob?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert [(await herald.store.get_schedule(i)).state for i in ids] == ["cancelled"] * 4
        assert (await herald.store.get_schedule(other.id)).state == "active"
        assert any("Cancelled 4 schedules" in n for n in notes(app))
        await pilot.press("slash", *(["backspace"] * 20), "enter")
        await settle(pilot)
        await goto(pilot, other.id)
        before = (await herald.store.get_schedule(other.id)).next_run_at
        await pilot.press("t")
        await settle(pilot)
        await pilot.press(*"2 hours", "enter")  # as "in 2 hours" is written anywhere
        await settle(pilot)
        assert "Shift 1 schedule by 2h?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        after = (await herald.store.get_schedule(other.id)).next_run_at
        assert (after - before).total_seconds() == 7200
        await pilot.press("t", *"-15 minutes", "enter")
        await settle(pilot)
        assert "Shift 1 schedule by -15m?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        back = (await herald.store.get_schedule(other.id)).next_run_at
        assert (back - after).total_seconds() == -900


async def test_select_all_invert_and_resume_a_selection(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    ids = []
    for i in range(4):
        s, _ = await herald.create_schedule(MEMBER, to="log:", when=f"in {i + 1} hours", text="x")
        assert s.id is not None
        ids.append(s.id)
    for schedule_id in ids[:3]:
        await herald.pause_schedule(MEMBER, schedule_id)
    app = await schedules(console, MEMBER)
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert table(app).selected == {str(i) for i in ids}
        assert "4 selected" in screen_text(app)
        await goto(pilot, ids[0])
        await pilot.press("space")  # unmark the first (the cursor moves down)
        await pilot.press("asterisk")  # invert: only the first is marked
        await settle(pilot)
        assert table(app).selected == {str(ids[0])}
        await pilot.press("asterisk")  # all but the first
        await goto(pilot, ids[1])
        await pilot.press("space")
        await settle(pilot)
        assert table(app).selected == {str(ids[2]), str(ids[3])}
        await pilot.press("u")
        await settle(pilot)
        assert "Resume 1 schedule selected?" in screen_text(app)  # ids[3] is not paused
        await pilot.press("y")
        await settle(pilot)
        assert any("Resumed 1 schedule." in n for n in notes(app))
        assert table(app).selected == set()
        await pilot.press("U")  # every paused one matching (no filter): the other two
        await settle(pilot)
        assert "Resume 2 schedules matching no filter (all)?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert any("Resumed 2 schedules." in n for n in notes(app))
        await pilot.press("question_mark")
        await settle(pilot)
        keys = help_text(app)
        assert "^a Select all" in keys and "* Invert selection" in keys
        assert "U Resume all matching" in keys
    assert [(await herald.store.get_schedule(i)).state for i in ids] == ["active"] * 4


async def test_an_operator_cannot_bulk_cancel_someone_elses(
    console: Any, seeded: dict[str, Any], herald: Herald
) -> None:
    app = await schedules(console, OPERATOR)
    async with run(app) as pilot:
        await settle(pilot)
        assert "Only an admin can change other members' schedules." in flat(screen_text(app))
        await pilot.press("slash", *"owner:local:bob state:active", "enter")
        await settle(pilot)
        await pilot.press("C")
        await settle(pilot)
        assert any("nothing to do" in n and "Only an admin" in n for n in notes(app))
    assert (await herald.store.get_schedule(seeded["standup"])).state == "active"


async def test_create_form_previews_and_validates(console: Any, herald: Herald) -> None:
    app = await schedules(console, MEMBER)
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*"slack:C0TEAM", "tab", *"every weekday at 9am")
        await settle(pilot)
        text = screen_text(app)
        assert "every weekday at 09:00" in text and "next:" in text
        await pilot.press("tab", *(["backspace"] * 5), *"Mars/Olympus")
        await settle(pilot)
        assert "Mars/Olympus" in screen_text(app)  # the preview says the zone is unknown
        await pilot.press(*(["backspace"] * 12), *"Europe/Berlin")
        await pilot.press("ctrl+s")  # no text yet: refused in the form
        await settle(pilot)
        assert "The message is empty" in screen_text(app)
        assert await herald.list_schedules(MEMBER) == []
        await pilot.press("tab", *"Standup!", "ctrl+s")
        await settle(pilot)
        [created] = await herald.list_schedules(MEMBER)
        assert created.timezone == "Europe/Berlin" and created.body == "Standup!"
        assert isinstance(app.screen, SchedulesScreen)
        assert str(created.id) in table(app).keys


async def test_edit_form_changes_only_what_changed(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = await schedules(console, MEMBER)
    async with run(app) as pilot:
        await settle(pilot)
        await goto(pilot, seeded["standup"])
        await pilot.press("e")
        await settle(pilot)
        assert f"Edit schedule {seeded['standup']}" in screen_text(app)
        await pilot.press(*(["backspace"] * 30), *"every weekday at 10am", "ctrl+s")
        await settle(pilot)
        s = await herald.store.get_schedule(seeded["standup"])
        assert s.expression == "every weekday at 10am" and s.version == 2
        [edit] = await herald.audit_log(ADMIN, AuditFilter(action="schedule.edit"))
        assert edit.actor == MEMBER


async def test_live_refresh_keeps_cursor_and_selection(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = await schedules(console, ADMIN)
    async with run(app) as pilot:
        await settle(pilot)
        await goto(pilot, seeded["dead1"])
        await pilot.press("space")  # select dead1, the cursor moves to the next row
        await settle(pilot)
        under_cursor = table(app).cursor_key()
        for i in range(3):  # someone else schedules more: rows appear above
            await herald.create_schedule(MEMBER, to="log:", when="in 1 day", text=f"new {i}")
        screen = app.screen
        loads = screen.loads
        screen.reload()
        await settle(pilot)
        assert screen.loads == loads + 1
        assert len(table(app).keys) == 10
        assert table(app).cursor_key() == under_cursor
        assert table(app).selected == {str(seeded["dead1"])}
        assert "1 selected" in screen_text(app)


async def test_live_refresh_runs_on_its_interval(
    settings: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    from tui.app import make_app

    app = make_app(settings, herald, ADMIN, refresh_interval=0.05, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        await herald.create_schedule(MEMBER, to="log:", when="in 1 day", text="fresh")
        for _ in range(40):
            await pilot.pause(0.05)
            if len(table(app).keys) == 8:
                break
        assert len(table(app).keys) == 8
        assert await herald.schedules_page(ADMIN, ScheduleFilter(text="fresh"))
