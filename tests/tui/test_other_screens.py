"""Screens 3 to 6 and the detail view, driven by the Pilot: queue views, the delivery
log's filters and follow mode, dead letters with role gating, the audit log, timelines
and the command palette."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from core.actors import Principal, Surface
from core.cases import Herald
from core.clock import ManualClock
from core.store import AuditFilter, DeadFilter
from tests.tui.conftest import (
    ADMIN,
    MEMBER,
    OPERATOR,
    deliver,
    flat,
    notes,
    run,
    screen_text,
    settle,
    table,
)
from tui.screens.detail import DetailScreen
from tui.screens.prompt import PromptScreen


async def test_queue_views(
    console: Any, herald: Herald, clock: ManualClock, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="queue")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        # nothing is due right now: it opens on what is pending (standup and release)
        assert set(table(app).keys) == {"6", "7"}
        await pilot.press("d")
        await settle(pilot)
        assert table(app).keys == []
        await pilot.press("p")
        await settle(pilot)
        assert set(table(app).keys) == {"6", "7"}
        assert "in 2h" in screen_text(app)
        clock.advance(timedelta(hours=2, minutes=1))
        now = clock.now()
        await herald.store.claim_due(
            now=now, worker="w9", lease_until=now + timedelta(seconds=60), limit=10
        )
        await pilot.press("i")
        await settle(pilot)
        assert table(app).keys == ["7"] and "w9 in 1m" in screen_text(app)
        await pilot.press("r")
        await settle(pilot)
        assert table(app).keys == []
        await pilot.press("i")
        await settle(pilot)  # the view read before Enter opens its row
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        text = screen_text(app)
        assert "Job 7 of schedule 7" in text and "claimed by w9" in text


async def test_delivery_log_filters_follow_and_detail(
    console: Any, herald: Herald, clock: ManualClock, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="deliveries")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(table(app).keys) == 5
        await pilot.press("slash", *"outcome:permanent", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 3 and " ok " not in screen_text(app)
        await pilot.press("slash", *(["backspace"] * 20), *"schedule:1", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 1
        await pilot.press("slash", *(["backspace"] * 20), *"since:banana", "enter")
        await settle(pilot)
        assert any("is not a time" in n for n in notes(app))
        await pilot.press("slash", *(["backspace"] * 20), "enter")
        await settle(pilot)
        await pilot.press("down", "down", "f")  # follow: the cursor goes to the newest
        await settle(pilot)
        assert "following" in screen_text(app) and table(app).cursor_row == 0
        clock.advance(timedelta(hours=2, minutes=1))
        await deliver(herald, clock, fail=False)  # the release is delivered
        app.screen.reload()
        await settle(pilot)
        newest = table(app).cursor_key()
        assert len(table(app).keys) == 6 and newest == table(app).keys[0]
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert (
            "Job 7 of schedule 7" in text
            and "attempt to discord:123456789012345678 on w1: ok 200" in text
        )
        await pilot.press("a")  # the whole schedule's timeline
        await settle(pilot)
        assert "Schedule 7" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.title == "Delivery log"


async def test_dead_letters_admin_approves_and_discards(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="dead")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "All reasons · 3 (1 asked)" in text and "HTTP 410 Gone" in text
        await pilot.press("g", "down")  # the 410 group
        await settle(pilot)
        assert len(table(app).keys) == 2 and "reason: HTTP 410 Gone" in screen_text(app)
        requested = str(seeded["requested"][0])
        await pilot.press("slash", *"requested:yes", "enter")
        await settle(pilot)
        assert table(app).keys == [requested]
        await pilot.press("a")
        await settle(pilot)
        assert any("Approved 1 dead letter" in n for n in notes(app))
        assert await herald.count_dead(ADMIN, DeadFilter()) == 2
        await pilot.press("slash", *(["backspace"] * 20), "enter", "g", "up")
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        assert "Discard all 2 dead letters matching no filter (all)?" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert await herald.count_dead(ADMIN, DeadFilter()) == 0
        assert "All reasons · 0" in screen_text(app)


async def test_rejecting_a_retry_request_asks_why_and_keeps_it_for_whoever_asked(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    requested = seeded["requested"][0]
    app = console(ADMIN, mode="dead")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"requested:yes", "enter")
        await settle(pilot)
        assert table(app).keys == [str(requested)]
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert "Reject the retry request of 1 dead letter?" in screen_text(app)
        await pilot.press("enter")  # no reason: asked again, nothing rejected
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert "A reason is needed" in screen_text(app)
        await pilot.press(*"archived channel", "enter")
        await settle(pilot)
        assert any("Rejected 1 dead letter" in n for n in notes(app))
        await pilot.press("slash", "ctrl+u", "enter")
        await settle(pilot)
        table(app).move_cursor(row=table(app).keys.index(str(requested)))
        await settle(pilot)
        assert f"Retry rejected by {ADMIN}: archived channel" in flat(screen_text(app))
    [letter] = await herald.dead_letter(MEMBER, requested)
    assert letter.retry_note == f"rejected by {ADMIN}: archived channel"
    [row] = await herald.audit_log(ADMIN, AuditFilter(action="dead.retry_reject"))
    assert (row.details, row.surface) == ({"reason": "archived channel"}, "console")


async def test_dead_letters_operator_requests_and_cannot_approve(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = console(OPERATOR, mode="dead")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.check_action("act", ("approve",)) is None  # greyed out
        assert screen.check_action("act", ("discard",)) is True
        assert "Only an approver decides requests (an admin, for a retry)." in flat(
            screen_text(app)
        )
        await pilot.press("a")  # a greyed-out key does nothing
        await settle(pilot)
        assert await herald.audit_log(ADMIN, AuditFilter(action="dead.approve")) == []
        # the command palette still offers it, says why, and core refuses and audits
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"Approve")
        await settle(pilot)
        assert "unavailable: Only an approver" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert any("Refused: Only an approver decides requests" in n for n in notes(app))
        [denied] = await herald.audit_log(ADMIN, AuditFilter(action="dead.approve.denied"))
        assert denied.actor == OPERATOR
        # a retry from an operator is a request an admin decides on
        unasked = next(k for k in table(app).keys if int(k) not in seeded["requested"])
        table(app).move_cursor(row=table(app).keys.index(unasked))
        await pilot.press("r")
        await settle(pilot)
        assert any("Requested a retry of 1 dead letter" in n for n in notes(app))
        assert await herald.count_dead(ADMIN, DeadFilter(requested=True)) == 2


async def test_dead_letters_member_sees_own_and_cannot_discard(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = console(MEMBER, mode="dead")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(table(app).keys) == 2  # bob's two, not olive's
        text = flat(screen_text(app))
        assert "Only operators and admins can discard dead letters." in text
        assert app.screen.check_action("act_all", ("discard",)) is None
        await pilot.press("space", "space", "R")  # retry all matching = request them
        await settle(pilot)
        assert "Retry all 2 dead letters matching" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert await herald.count_dead(ADMIN, DeadFilter(requested=True)) == 2


async def test_audit_log_shows_who_did_what_from_where(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    await herald.pause_schedule(Principal(ADMIN, surface=Surface.CLI), seeded["standup"])
    app = console(ADMIN, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert table(app).cursor_key() == str(seeded["release"])
        await pilot.press("p")  # paused here, in the console
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        # the list's rows (the pane under it says the highlighted one again, once drawn)
        rows = [line for line in screen_text(app).splitlines() if not line.startswith("│")]
        paused = [line for line in rows if "schedule.pause" in line]
        [console_row] = [line for line in paused if f"schedule {seeded['release']}" in line]
        [cli_row] = [line for line in paused if f"schedule {seeded['standup']}" in line]
        assert " console " in console_row and " cli " in cli_row
        assert "via=" not in screen_text(app)
        await pilot.press("slash", *"via:console", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 1
        await pilot.press("slash", "ctrl+u", *"action:dead", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 1
        await pilot.press("enter")  # the audited job's timeline
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "dead.retry_request by local:bob" in screen_text(app)


async def test_member_audit_log_is_their_own(console: Any, seeded: dict[str, Any]) -> None:
    app = console(MEMBER, mode="audit")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "local:bob" in text and "local:olive" not in text


async def test_schedule_detail_shows_rule_next_runs_and_timeline(
    console: Any, seeded: dict[str, Any]
) -> None:
    app = console(MEMBER, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        t = table(app)
        t.move_cursor(row=t.keys.index(str(seeded["dead1"])))
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert f"Schedule {seeded['dead1']} · failed" in text
        assert "Broken hook one" in text and "webhook:https://hooks.example.com/…" in flat(text)
        assert "permanent 410" in text and "HTTP 410 Gone" in text
        assert "schedule.create by local:bob" in text
        await pilot.press("escape")
        t = table(app)
        t.move_cursor(row=t.keys.index(str(seeded["standup"])))
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert "every weekday at 09:00" in text and "Next 2026-03-03 09:00" in text


async def test_unknown_member_id_exits_with_the_reason(console: Any) -> None:
    app = console("not an id")
    async with run(app) as pilot:
        await settle(pilot)
    assert app.return_code == 1
