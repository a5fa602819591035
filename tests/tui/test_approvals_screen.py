"""Approvals in the console (issue 40), driven by the Pilot on SQLite and PostgreSQL:
screen 0 lists pending requests of every kind (a member's message held for an
announcement channel, a dead letter's retry) with who asked, when, why, where, the
text and when it expires; ``a`` approves, ``x`` rejects with a reason; the keys are
greyed out for those who do not decide, refusals (one's own request, one decided
already) come back as the use case's sentence, and ``h`` shows the decided ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import verbs
from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings, load_settings
from core.store import DeadFilter
from tests.tui.conftest import (
    ADMIN,
    MEMBER,
    OPERATOR,
    flat,
    notes,
    run,
    screen_text,
    seed,
    settle,
    table,
)
from tests.tui.test_narrow import pane_text
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.screens.approvals import ApprovalsScreen
from tui.screens.detail import DetailScreen
from tui.screens.prompt import PromptScreen

ANNOUNCE = "slack:C0ANNOUNCE"
#: A member the tenant names an approver (HERALD_APPROVERS).
APPROVER = "local:ann"
REFUSED = verbs.verb("approve").refused


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS=ADMIN,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",
        HERALD_ANNOUNCEMENT_CHANNELS=ANNOUNCE,
        HERALD_APPROVERS=APPROVER,
        _env_file=None,
    )


@pytest.fixture
async def requests(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """The seeded console (with bob's dead-letter retry request), then bob's and ann's
    messages into the announcement channel, held."""
    ids = await seed(herald, clock)
    for name, actor, text in [
        ("bob", MEMBER, "All hands at 3pm in the big room"),
        ("ann", APPROVER, "Office closed on Friday"),
    ]:
        s, _ = await herald.create_schedule(actor, to=ANNOUNCE, when="in 2 hours", text=text)
        assert s.state == "awaiting"
        ids[name] = s.id
    rows = await herald.approvals(ADMIN)
    ids["requests"] = {r.schedule_id if r.kind == "send" else "retry": r.id for r in rows}
    return ids


async def test_pending_requests_of_every_kind_and_their_details(
    console: Any, requests: dict[str, Any]
) -> None:
    asked = requests["requests"]
    app = console(ADMIN, mode="approvals")
    async with run(app) as pilot:  # 80x24
        await settle(pilot)
        assert isinstance(app.screen, ApprovalsScreen)
        assert table(app).keys == [
            str(asked["retry"]),
            str(asked[requests["bob"]]),
            str(asked[requests["ann"]]),
        ]
        kinds = [row[1][1].plain for row in table(app).rows_given]
        assert kinds == ["retry", "message", "message"]
        table(app).move_cursor(row=1)
        await settle(pilot)
        pane = pane_text(app)
        assert "All hands at 3pm in the big room" in pane
        assert (
            f"Request {asked[requests['bob']]} · held message · pending · asked by {MEMBER}" in pane
        )
        assert f"why: it goes to {ANNOUNCE}, an announcement channel" in pane
        assert f"to {ANNOUNCE} · when in 2 hours · expires 2026-03-02 14:02" in pane
        assert "3 requests" in screen_text(app)
        # enter: the held schedule's detail says it waits
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "Awaiting approval: nothing is sent until an approver" in flat(screen_text(app))


async def test_an_admin_approves_and_rejects_with_a_reason(
    console: Any, herald: Herald, requests: dict[str, Any]
) -> None:
    asked = requests["requests"]
    app = console(ADMIN, mode="approvals")
    async with run(app) as pilot:
        await settle(pilot)
        table(app).move_cursor(row=1)  # bob's
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert "Done: Approved 1 request." in notes(app)
        assert (await herald.show_schedule(ADMIN, requests["bob"])).schedule.state == "active"
        # ann's: a rejection asks why, and a blank answer is not one
        table(app).move_cursor(row=table(app).keys.index(str(asked[requests["ann"]])))
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert "A reason is needed" in screen_text(app)
        await pilot.press(*"Post it in #office instead", "enter")
        await settle(pilot)
        assert "Done: Rejected 1 request." in notes(app)
        assert (await herald.show_schedule(ADMIN, requests["ann"])).schedule.state == "cancelled"
        # the retry request: approved here, the dead letter is retried (the dead-letter desk)
        assert table(app).keys == [str(asked["retry"])]
        before = await herald.count_dead(ADMIN, DeadFilter())
        await pilot.press("a")
        await settle(pilot)
        assert "Done: Approved 1 request." in notes(app)
        assert await herald.count_dead(ADMIN, DeadFilter()) == before - 1
        assert table(app).keys == []
        # h: the decided ones too, with who decided and why
        await pilot.press("h")
        await settle(pilot)
        state = [c.label for c in table(app).specs].index("state")
        states = {row[0]: row[1][state].plain for row in table(app).rows_given}
        assert states == {
            str(asked["retry"]): "approved",
            str(asked[requests["bob"]]): "approved",
            str(asked[requests["ann"]]): "rejected",
        }
        table(app).move_cursor(row=table(app).keys.index(str(asked[requests["ann"]])))
        app.clear_notifications()  # the toasts cover the pane
        await settle(pilot)
        assert f"Rejected by {ADMIN} 2026-03-02 12:02: Post it in #office instead" in pane_text(app)
        await pilot.press("p")
        await settle(pilot)
        assert table(app).keys == []


async def test_keys_are_greyed_out_for_those_who_do_not_decide(
    console: Any, requests: dict[str, Any]
) -> None:
    app = console(OPERATOR, mode="approvals")
    async with run(app) as pilot:
        await settle(pilot)
        screen = app.screen
        assert len(table(app).keys) == 3  # operators see the tenant's requests
        assert screen.check_action("decide", ("approve",)) is None
        assert screen.check_action("decide", ("reject",)) is None
        assert REFUSED in flat(screen_text(app))
        await pilot.press("a")  # greyed out: nothing happens
        await settle(pilot)
        assert not notes(app)
    # a member sees their own requests only, and may not decide them either
    app = console(MEMBER, mode="approvals")
    async with run(app) as pilot:
        await settle(pilot)
        assert table(app).keys == [
            str(requests["requests"]["retry"]),
            str(requests["requests"][requests["bob"]]),
        ]
        assert app.screen.check_action("decide", ("approve",)) is None


async def test_a_named_approver_decides_but_not_their_own_nor_a_retry(
    console: Any, herald: Herald, requests: dict[str, Any]
) -> None:
    asked = requests["requests"]
    app = console(APPROVER, mode="approvals")
    async with run(app) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.check_action("decide", ("approve",)) is True
        assert REFUSED not in flat(screen_text(app))
        # their own request: refused with core's sentence
        table(app).move_cursor(row=table(app).keys.index(str(asked[requests["ann"]])))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        own = asked[requests["ann"]]
        assert f"Refused: Request {own} is your own: another approver decides it." in notes(app)
        # a dead letter's retry is an admin's
        table(app).move_cursor(row=table(app).keys.index(str(asked["retry"])))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert "Refused: Only an admin can decide on retry requests." in notes(app)
        # bob's, decided by the admin meanwhile: the console says so
        await herald.approve(ADMIN, [asked[requests["bob"]]])
        table(app).move_cursor(row=table(app).keys.index(str(asked[requests["bob"]])))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        bob = asked[requests["bob"]]
        assert f"Refused: Request {bob} is approved already: nothing to decide." in notes(app)
        assert str(bob) not in table(app).keys  # read again after the refusal


async def test_a_selection_is_decided_once_confirmed(
    console: Any, herald: Herald, requests: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="approvals")
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("down", "space", "down", "space")
        await settle(pilot)
        assert "2 selected" in screen_text(app)
        await pilot.press("a")
        await settle(pilot)
        assert "Approve 2 requests?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert "Done: Approved 2 requests." in notes(app)
        assert table(app).keys == [str(requests["requests"]["retry"])]


async def test_the_dead_letters_screen_still_decides_retry_requests(
    console: Any, herald: Herald, requests: dict[str, Any]
) -> None:
    requested = str(requests["requested"][0])
    app = console(ADMIN, mode="dead")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"requested:yes", "enter")
        await settle(pilot)
        assert table(app).keys == [requested]
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"the hook is gone for good", "enter")
        await settle(pilot)
        assert "Done: Rejected 1 dead letter." in notes(app)
    [row] = await herald.approvals(ADMIN, state=None, kind="retry")
    assert (row.state, row.reason) == ("rejected", "the hook is gone for good")


async def test_the_schedules_list_says_awaiting_approval(
    console: Any, requests: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="schedules")
    async with run(app) as pilot:  # 80x24
        await settle(pilot)
        rows = [line for line in screen_text(app).splitlines() if "All hands" in line]
        assert rows and "awaiting approval" in rows[0]
        table(app).move_cursor(row=table(app).keys.index(str(requests["bob"])))
        await settle(pilot)
        assert "Nothing is sent until an approver approves it" in pane_text(app)


async def test_snapshot(console: Any, requests: dict[str, Any], tmp_path: Path) -> None:
    app = console(ADMIN, mode="approvals")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        svg = app.save_screenshot("approvals.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / "approvals-80x24.txt", 80)
