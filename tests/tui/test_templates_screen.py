"""8 · Templates, driven by the Pilot: the tenant's templates with how many schedules
use each (and which), a preview filled in with typed sample data (a variable without
a value shows as ``{{ name }}``), an edit refused because it would break a schedule
(nothing saved) then saved keeping that schedule on its version, a member's save
refused by core and said in the form, adding and removing; 8 reaches it from every
screen; snapshots at 80x24 and 120x40."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static, TextArea

from core.actors import Principal
from core.cases import Herald
from tests.tui.conftest import (
    ADMIN,
    MEMBER,
    OPERATOR,
    flat,
    notes,
    run,
    screen_text,
    settle,
    table,
)
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.screens.template_edit import TemplateEditScreen
from tui.screens.templates import TemplatesScreen

DEPLOY = "Deploy {{ service }} v{{ version }} (#{{ schedule.id }}) for {{ recipient.name }}"
OTHER_TENANT = Principal("slack:UBEA", "slack:TB", platform_admin=True)


async def seed_templates(herald: Herald) -> dict[str, Any]:
    """deploy (used by two of bob's schedules), standup (unused), and another
    tenant's template, which the console never shows."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    await herald.add_template(
        OPERATOR,
        "deploy",
        DEPLOY,
        variables={"service": "text", "version": "number"},
        description="A release note for the team channel",
    )
    await herald.add_template(OPERATOR, "standup", "Stand-up in 5 minutes, {{ recipient.name }}")
    await herald.add_template(OTHER_TENANT, "secret-plan", "Not for you")
    ids = []
    for service in ("api", "web"):
        s, _ = await herald.create_schedule(
            MEMBER,
            to="log:",
            when="every day at 9am",
            text="",
            template="deploy",
            data={"service": service, "version": "1.4"},
            tz="UTC",
        )
        ids.append(s.id)
    return {"deploy_users": ids}


def pane(app: Any) -> str:
    return flat(str(app.screen.query_one("#pane", Static).render()))


def preview(app: Any) -> str:
    return flat(str(app.screen.query_one("#preview", Static).render()))


async def type_data(pilot: Any, text: str) -> None:
    """Type ``text`` as the sample data (``s`` focuses the field), replacing what was."""
    field = pilot.app.screen.query_one("#data", Input)
    await pilot.press("s")
    field.value = ""
    await pilot.press(*text)
    await settle(pilot)


async def test_the_list_shows_each_template_and_what_uses_it(console: Any, herald: Herald) -> None:
    ids = await seed_templates(herald)
    app = console(OPERATOR, mode="templates")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert table(app).keys == ["deploy", "standup"]  # not the other tenant's
        text = flat(screen_text(app))
        assert "deploy v1 service:text version:number 2 schedules" in text
        assert "A release note for the team channel" in text
        assert "standup v1 none" in text
        assert "2 templates" in text
        a, b = ids["deploy_users"]
        assert f"Used by 2 schedules: #{a}, #{b}." in pane(app)
        assert "variables: service (text), version (number)" in pane(app)
        await pilot.press("down")
        await settle(pilot)
        assert "Used by no schedule." in pane(app)
        assert preview(app) == "Stand-up in 5 minutes, Ann"  # the sample recipient


async def test_a_member_sees_only_their_own_among_the_users(console: Any, herald: Herald) -> None:
    await seed_templates(herald)
    await herald.create_schedule(
        OPERATOR,
        to="log:",
        when="every day at 9am",
        text="",
        template="deploy",
        data={"service": "db", "version": 2},
        tz="UTC",
    )
    app = console(MEMBER, mode="templates")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert "3 schedules" in flat(screen_text(app))
        assert "Used by 3 schedules; yours: #" in pane(app)
        assert pane(app).count("#") == 2  # bob's two, not olive's


async def test_the_preview_fills_in_typed_data_and_shows_what_is_missing(
    console: Any, herald: Herald
) -> None:
    await seed_templates(herald)
    app = console(MEMBER, mode="templates")  # members preview too
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert preview(app) == "Deploy {{ service }} v{{ version }} (#123) for Ann"
        await type_data(pilot, "service=api")
        assert preview(app) == "Deploy api v{{ version }} (#123) for Ann"
        await type_data(pilot, 'service="billing api" version=1.4')
        assert preview(app) == "Deploy billing api v1.4 (#123) for Ann"
        await type_data(pilot, "service=api version=soon")
        shown = preview(app)
        assert "'version' must be a number" in shown
        assert shown.endswith("Deploy {{ service }} v{{ version }} (#123) for Ann")
        await type_data(pilot, "service")
        assert "'service' is not name=value." in preview(app)
        await pilot.press("escape")  # back to the list, the data kept
        await settle(pilot)
        assert app.screen.focused is table(app)
        assert app.screen.query_one("#data", Input).value == "service"


async def test_an_edit_that_would_break_a_schedule_is_refused_then_kept_on_its_version(
    console: Any, herald: Herald
) -> None:
    ids = await seed_templates(herald)
    a, b = ids["deploy_users"]
    app = console(OPERATOR, mode="templates")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, TemplateEditScreen)
        assert not form.query_one("#keep").display
        form.query_one("#variables", Input).value = "service:text version:number region:text"
        form.query_one("#body", TextArea).text = "Deploy {{ service }} to {{ region }}"
        await pilot.press("ctrl+o")  # nothing to keep yet: not a save
        await settle(pilot)
        assert (await herald.show_template(OPERATOR, "deploy")).template.version == 1
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form
        error = flat(str(form.query_one("#error", Static).render()))
        assert error.startswith(
            f"Not saved: Version 2 of template 'deploy' would break 2 schedules using it "
            f"(#{a}, #{b}): Template 'deploy' needs a value for 'region'"
        )
        assert error.endswith("force the new version (ctrl+o) to keep those on version 1.")
        assert form.query_one("#keep").display
        # nothing changed
        detail = await herald.show_template(OPERATOR, "deploy")
        assert (detail.template.version, len(detail.versions)) == (1, 1)
        assert {s.template_version for s in detail.used_by} == {1}
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert isinstance(app.screen, TemplatesScreen)
        said = f"Kept on version 1: #{a}, #{b} (Template 'deploy' needs a value for 'region'"
        assert any(said in n for n in notes(app)), notes(app)
        assert f"#{a} (kept on v1), #{b} (kept on v1)" in pane(app)
        assert "deploy v2 service:text" in flat(screen_text(app))
        status = str(app.screen.query_one("#status", Static).render())
        assert status == "2 templates · last save: deploy v2, 0 moved, 2 kept on v1"
    detail = await herald.show_template(OPERATOR, "deploy")
    assert detail.template.body == "Deploy {{ service }} to {{ region }}"
    assert {s.template_version for s in detail.used_by} == {1}


async def test_an_edit_that_fits_moves_the_schedules_using_it(console: Any, herald: Herald) -> None:
    ids = await seed_templates(herald)
    a, b = ids["deploy_users"]
    app = console(ADMIN, mode="templates")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        app.screen.query_one("#body", TextArea).text = "Shipped {{ service }} v{{ version }}"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, TemplatesScreen)
        assert f"Saved template 'deploy' as version 2. Moved to it: #{a}, #{b}." in " ".join(
            notes(app)
        )
        assert preview(app) == "Shipped {{ service }} v{{ version }}"
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("ctrl+s")  # nothing changed: no version 3
        await settle(pilot)
        assert "Nothing changed." in " ".join(notes(app))
    assert (await herald.show_template(ADMIN, "deploy")).template.version == 2


async def test_a_member_cannot_save_and_is_told_why(console: Any, herald: Herald) -> None:
    await seed_templates(herald)
    app = console(MEMBER, mode="templates")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, TemplateEditScreen)
        form.query_one("#body", TextArea).text = "Deploy {{ service }}"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form
        error = flat(str(form.query_one("#error", Static).render()))
        assert error == (
            "Not saved: Only operators and admins add, edit and remove templates; members use them."
        )
        assert not form.query_one("#keep").display
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("d", "y")  # removing: refused the same way
        await settle(pilot)
        assert any("Refused: Only operators and admins" in n for n in notes(app))
    detail = await herald.show_template(MEMBER, "deploy")
    assert (detail.template.version, detail.template.body) == (1, DEPLOY)


async def test_adding_and_removing_a_template(console: Any, herald: Herald) -> None:
    ids = await seed_templates(herald)
    app = console(OPERATOR, mode="templates")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        await pilot.press(*"oncall")
        form.query_one("#variables", Input).value = "who"
        form.query_one("#description", Input).value = "Hand-over"
        form.query_one("#body", TextArea).text = "{{ who }} is on call, {{ recipient.name }}"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, TemplatesScreen)
        assert "Done: Added template 'oncall' (version 1)." in notes(app)
        assert table(app).keys == ["deploy", "oncall", "standup"]
        # a name taken: refused in the form
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*"deploy")
        app.screen.query_one("#body", TextArea).text = "Again"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "Not saved:" in flat(str(app.screen.query_one("#error", Static).render()))
        await pilot.press("escape")
        await settle(pilot)
        # deploy is used: its removal is refused, naming the schedules
        table(app).move_cursor(row=0)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        question = app.screen.query_one("#question", Static)
        assert flat(str(question.render())) == (
            "Remove template 'deploy' and all its versions? 2 schedules use it: it cannot go "
            "while they do."
        )
        await pilot.press("y")
        await settle(pilot)
        a, b = ids["deploy_users"]
        assert any(f"used by 2 schedules (#{a}, #{b})" in n for n in notes(app)), notes(app)
        table(app).move_cursor(row=1)
        await settle(pilot)
        await pilot.press("d", "y")
        await settle(pilot)
        assert "Done: Removed template 'oncall' and its versions." in notes(app)
        assert table(app).keys == ["deploy", "standup"]


async def test_8_opens_templates_from_every_screen(console: Any, herald: Herald) -> None:
    await seed_templates(herald)
    app = console(OPERATOR, mode="overview")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert "1234567890 Screens" in screen_text(app).splitlines()[-1]
        for number in ("2", "3", "5", "1"):  # the full footers hide it, the key works
            await pilot.press(number)
            await settle(pilot)
            await pilot.press("8")
            await settle(pilot)
            assert isinstance(app.screen, TemplatesScreen), number
        footer = screen_text(app).splitlines()[-1]
        assert footer.startswith("n New e Edit d Remove s Sample data") and "q Quit" in footer


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_snapshot(
    console: Any, herald: Herald, tmp_path: Path, size: tuple[int, int]
) -> None:
    await seed_templates(herald)
    app = console(OPERATOR, mode="templates")
    async with run(app, size=size) as pilot:
        await settle(pilot)
        svg = app.save_screenshot("templates.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / f"templates-{size[0]}x{size[1]}.txt", size[0])
