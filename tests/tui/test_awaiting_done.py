"""Messages sent until done in the console (issue 40), driven by the Pilot on SQLite and
PostgreSQL: screen 9 lists what nobody marked done yet (where it went, how long it has
waited, nags sent, steps waiting) under the week's time to acknowledge, and ``d``
marks one done; the schedules list and a schedule's detail say its ladder in words,
and the timeline names each step ("nag 1", "escalation", "done edit") and who marked
the message done, when."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.store import AuditFilter
from core.until_done import step_label
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
from tests.tui.test_narrow import pane_text
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.screens.awaiting import AwaitingDoneScreen, figures_line, took
from tui.screens.detail import DetailScreen

LADDER = {"nag": "15m", "escalate": [{"to": ["slack:C0LEADS"], "after": "1h"}]}
IN_WORDS = "until done, nag every 15 minutes, escalate to slack:C0LEADS after 1 hour"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


async def until_done(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """Three messages sent until done, delivered at 12:01: bob's backups check (its
    first nag sent at 12:17) and the operator's key rotation wait; the operator's
    plants were marked done 20 minutes after delivery."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    ids: dict[str, Any] = {}
    for name, actor, to, text in [
        ("backups", MEMBER, "slack:C0OPS", "Check the backups"),
        ("keys", OPERATOR, "slack:C0SEC", "Rotate the keys"),
        ("plants", OPERATOR, "slack:C0OFFICE", "Water the plants"),
    ]:
        s, _ = await herald.create_schedule(
            actor, to=to, when="in 1 minute", text=text, tz="UTC", until_done=LADDER
        )
        ids[name] = s.id
    clock.advance(61)
    assert await deliver(herald, clock, fail=False) == 3
    messages = {a.schedule_id: a.job_id for a in await herald.awaiting_done(ADMIN)}
    ids["jobs"] = {name: messages[ids[name]] for name in ("backups", "keys", "plants")}
    clock.advance(timedelta(minutes=16))
    assert await deliver(herald, clock, fail=False) == 3  # each one's first nag
    clock.advance(timedelta(minutes=4))
    await herald.mark_done(OPERATOR, ids["jobs"]["plants"])
    return ids


@pytest.fixture
async def waiting(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    return await until_done(herald, clock)


def test_the_words_for_steps_and_figures() -> None:
    assert [step_label(s) for s in ("nag 2", "escalate 1.0", "escalate 2.3", "done", "")] == [
        "nag 2",
        "escalation",
        "escalation 2",
        "done edit",
        "",
    ]
    assert took(None) == "-" and took(41.4) == "41s" and took(959.6) == "16m"
    assert took(3725) == "1h 2m" and took(90000) == "1d 1h"


async def test_the_screen_lists_what_waits_and_marks_one_done(
    console: Any, herald: Herald, waiting: dict[str, Any]
) -> None:
    jobs = waiting["jobs"]
    app = console(ADMIN, mode="awaiting")
    async with run(app) as pilot:  # 80x24
        await settle(pilot)
        assert isinstance(app.screen, AwaitingDoneScreen)
        text = screen_text(app)
        assert "2 awaiting done · time to acknowledge (7 days, 1 done): p50 20m · p95 20m" in text
        # the oldest first; each with how long it waited, nags sent and steps waiting
        assert table(app).keys == [str(jobs["backups"]), str(jobs["keys"])]
        cells = [c.plain for c in table(app).rows_given[0][1]]
        assert cells[:6] == [
            str(jobs["backups"]),
            "20m",
            "1",
            "24",
            "slack:C0OPS",
            "Check the backups",
        ]
        assert "Check the backups" in text and "waiting" in text and "nags" in text
        pane = pane_text(app)
        assert (
            f"Message {jobs['backups']} of schedule {waiting['backups']} · delivered 2026-03-02 "
            "12:01 (20m ago) · 1 nag sent, 24 steps waiting" in pane
        )
        await pilot.press("d")
        await settle(pilot)
        assert "Mark message" in screen_text(app) and "Check the backups" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert (
            f"Done: Marked message {jobs['backups']} done at 2026-03-02 12:21; "
            "stopped 24 waiting steps." in notes(app)
        )
        assert table(app).keys == [str(jobs["keys"])]
        assert (
            "1 awaiting done · time to acknowledge (7 days, 2 done): p50 20m · p95 20m"
            in screen_text(app)
        )
        # enter: the message's timeline, where it says who marked what done
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert f"Job {jobs['keys']} of schedule {waiting['keys']}" in screen_text(app)
    done = await herald.audit_log(ADMIN, AuditFilter(action="job.done", actor=ADMIN))
    assert [a.object_id for a in done] == [str(jobs["backups"])]


async def test_done_by_someone_first_says_who(
    console: Any, herald: Herald, waiting: dict[str, Any]
) -> None:
    """The list was read before someone else pressed Done: the console says who did."""
    keys = waiting["jobs"]["keys"]
    app = console(ADMIN, mode="awaiting")
    async with run(app) as pilot:
        await settle(pilot)
        table(app).move_cursor(row=1)
        await herald.mark_done(OPERATOR, keys)  # from Slack, say, meanwhile
        await pilot.press("d", "y")
        await settle(pilot)
        assert f"Done: Message {keys}: already done by {OPERATOR} at 2026-03-02 12:21." in notes(
            app
        )


async def test_a_member_sees_their_own_and_may_mark_them_done(
    console: Any, waiting: dict[str, Any]
) -> None:
    backups = waiting["jobs"]["backups"]
    app = console(MEMBER, mode="awaiting")
    async with run(app) as pilot:
        await settle(pilot)
        assert table(app).keys == [str(backups)]
        assert "Members see their own schedules only." in flat(screen_text(app))
        await pilot.press("d", "y")
        await settle(pilot)
        assert any(n.startswith(f"Done: Marked message {backups} done") for n in notes(app))
        assert table(app).keys == []


async def test_the_ladder_and_its_steps_in_the_list_and_the_timeline(
    console: Any, herald: Herald, waiting: dict[str, Any]
) -> None:
    plants = waiting["plants"]
    app = console(ADMIN, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        table(app).move_cursor(row=table(app).keys.index(str(plants)))
        await settle(pilot)
        assert f"Sent {IN_WORDS}" in pane_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert f"Sent {IN_WORDS}" in flat(screen_text(app))
        events = list(app.screen.events.values())
        said = [(e.kind, e.text) for e in events]
        job = waiting["jobs"]["plants"]
        # the message: delivered at 12:01, then acknowledged at 12:21 by the operator
        delivered = said.index(("delivered", "delivered"))
        acknowledged = said.index(("acknowledged", f"acknowledged: done by {OPERATOR}"))
        assert events[delivered].job_id == events[acknowledged].job_id == job
        assert events[acknowledged].at - events[delivered].at == timedelta(minutes=20)
        texts = [text for _, text in said]
        assert "nag 1 · delivered" in texts
        assert sum(t.startswith("nag ") and t.endswith("cancelled") for t in texts) == 23
        assert "escalation · cancelled" in texts
        assert any("(done edit) planned" in t for t in texts)
        shown = screen_text(app)
        assert "(nag 1) planned" in shown or "nag 1 · delivered" in shown  # labelled on screen


async def test_the_job_of_a_step_says_its_step_and_the_message_who_marked_it(
    console: Any, herald: Herald, waiting: dict[str, Any]
) -> None:
    job = waiting["jobs"]["plants"]
    app = console(ADMIN, mode="awaiting")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        app.push_screen(DetailScreen(job_id=job))
        await settle(pilot)
        text = flat(screen_text(app))
        assert f"Job {job} of schedule {waiting['plants']}" in text
        assert f"Done by {OPERATOR} at 2026-03-02 12:21" in text
        detail = await herald.show_schedule(ADMIN, waiting["plants"])
        [nag] = [j for j in detail.jobs if j.ladder == "nag 1"]
        app.push_screen(DetailScreen(job_id=nag.id))
        await settle(pilot)
        assert f"Job {nag.id} (nag 1) of schedule {waiting['plants']}" in screen_text(app)


def test_figures_line_without_any_done() -> None:
    from core.cases import AckFigures

    line = figures_line(AckFigures(0, None, None), 3)
    assert line == "3 awaiting done · none marked done in 7 days"


async def test_snapshot(console: Any, waiting: dict[str, Any], tmp_path: Path) -> None:
    app = console(OPERATOR, mode="awaiting")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        svg = app.save_screenshot("awaiting.svg", path=str(tmp_path))
    compare(Path(svg), SNAPSHOTS / "awaiting-80x24.txt", 80)
