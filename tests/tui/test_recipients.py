"""The console speaks of recipients (issue 35): the schedules list shows the first
recipient and how many more at 80×24, the to: filter matches any recipient (a fallback
step too), a schedule's detail has a line per recipient with its latest job, and the
timeline and the delivery log say where each attempt went. The store's filters run on
SQLite and PostgreSQL (they read the recipients' JSON in each database's terms)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Input, TextArea

from core.cases import Herald
from core.clock import ManualClock
from core.metrics import Metrics
from core.routing import Wanted
from core.store import AttemptFilter, AttemptRecord, ScheduleFilter, Verdict
from tests.tui.conftest import ADMIN, OPERATOR, flat, run, screen_text, settle, table
from tests.tui.test_snapshots import SNAPSHOTS, compare
from tui.screens.detail import DetailScreen
from tui.screens.form import parse_recipients
from tui.widgets.table import _cut

GONE = "slack:C0OLD"
CHAIN = {"first_of": ["slack:C0ALERTS", "email:alice@example.com"]}


async def fan_out(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    """The operator's stand-up to #ops, #old (archived: its try dies) and #alerts, then
    Alice's email: delivered to 2 of 3. Beside it a plain schedule to the log. The
    attempts to #old and to the log keep no destination (as an older Herald's)."""
    s, _ = await herald.create_schedule(
        OPERATOR, to=["slack:C0OPS", GONE, CHAIN], when="in 1 minute", text="Stand-up", tz="UTC"
    )
    plain, _ = await herald.create_schedule(
        OPERATOR, to="log:", when="in 1 minute", text="Coffee", tz="UTC"
    )
    clock.advance(61)
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=100
    )
    assert len(jobs) == 4
    results = []
    for job in jobs:
        dead = job.destination == GONE
        attempt = AttemptRecord(
            started_at=now,
            finished_at=now,
            outcome="permanent" if dead else "ok",
            status_code=404 if dead else 200,
            error="channel_not_found" if dead else None,
            destination=None if dead or job.destination == "log:" else job.destination,
        )
        results.append(Verdict(job, "dead" if dead else "delivered", attempt=attempt))
    await herald.store.finish(results, worker="w1", now=now)
    return {"fan": s.id, "plain": plain.id}


@pytest.fixture
async def fanned(herald: Herald, clock: ManualClock) -> dict[str, Any]:
    return await fan_out(herald, clock)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


# --- the store's filters and rows (SQLite and PostgreSQL) ------------------------------


async def test_the_to_filter_matches_any_recipient_and_any_step(
    herald: Herald, fanned: dict[str, Any]
) -> None:
    zoned, _ = await herald.create_schedule(
        ADMIN,
        to=[Wanted(("email:bob@example.com",), zone="Europe/Berlin")],
        when="in 2 hours",
        text="Bob's hour",
        tz="UTC",
    )
    fan, plain = fanned["fan"], fanned["plain"]
    expected = {
        "slack:": [fan],
        "slack:C0OLD": [fan],  # the second recipient
        "email:": [zoned.id, fan],  # a fallback step; a recipient in its own zone
        "email:alice@example.com": [fan],
        "log:": [plain],
        "discord:": [],
        # the recipients' JSON keys and zones are no destinations
        "t": [],
        "zone": [],
        "Europe": [],
        "alice": [],  # a prefix, not words anywhere
    }
    for prefix, ids in expected.items():
        f = ScheduleFilter(destination=prefix)
        found = await herald.schedules_page(ADMIN, f)
        assert [s.id for s in found] == ids, prefix
        assert await herald.store.count_schedules(f) == len(ids), prefix
    planned = await herald.plan_schedules_bulk(ADMIN, "pause", ScheduleFilter(destination="email:"))
    assert planned.count == 1  # the zoned one; the fan-out is done


async def test_the_delivery_log_says_where_each_attempt_went(
    herald: Herald, fanned: dict[str, Any]
) -> None:
    log = await herald.delivery_log(ADMIN, AttemptFilter(schedule_id=fanned["fan"]))
    went = {r.destination: r.outcome for r in log}
    # #old's attempt kept no destination: its job's step says it
    assert went == {"slack:C0OPS": "ok", GONE: "permanent", "slack:C0ALERTS": "ok"}
    [plain] = await herald.delivery_log(ADMIN, AttemptFilter(schedule_id=fanned["plain"]))
    assert plain.destination == "log:"  # nor the job: the schedule's
    [old] = await herald.delivery_log(ADMIN, AttemptFilter(destination=GONE))
    assert (old.schedule_id, old.status_code) == (fanned["fan"], 404)
    alerts = await herald.delivery_log(ADMIN, AttemptFilter(destination="slack:C0AL"))
    assert [r.destination for r in alerts] == ["slack:C0ALERTS"]


async def test_the_queue_shows_each_recipients_job_and_where_it_goes(
    herald: Herald, fanned: dict[str, Any]
) -> None:
    s, _ = await herald.create_schedule(
        OPERATOR, to=["slack:C0A", "slack:C0B"], when="in 2 hours", text="Later", tz="UTC"
    )
    pending = [r for r in await herald.queue_page(ADMIN, "pending") if r.schedule_id == s.id]
    assert sorted(r.destination for r in pending) == ["slack:C0A", "slack:C0B"]


async def test_the_timeline_has_each_recipients_latest_job_and_each_attempts_destination(
    herald: Herald, fanned: dict[str, Any]
) -> None:
    t = await herald.timeline(ADMIN, schedule_id=fanned["fan"])
    assert [(r.recipient.to, r.job.state if r.job else None) for r in t.recipients] == [
        (("slack:C0OPS",), "delivered"),
        ((GONE,), "dead"),
        (("slack:C0ALERTS", "email:alice@example.com"), "delivered"),
    ]
    assert t.fared == f"delivered to 2 of 3; {GONE} failed"
    attempts = {e.text.split()[2] for e in t.events if e.kind == "attempt"}
    assert attempts == {"slack:C0OPS", GONE, "slack:C0ALERTS"}  # #old's: its job's step
    one = await herald.timeline(ADMIN, schedule_id=fanned["plain"])
    assert one.fared is None and [r.job is not None for r in one.recipients] == [True]
    [event] = [e for e in one.events if e.kind == "attempt"]
    assert event.text.startswith("attempt to log: on w1: ok")  # the schedule's


def test_metrics_are_by_channel_kind_never_by_recipient() -> None:
    metrics = Metrics()
    metrics.channel("slack").fallbacks.inc()
    metrics.channel("slack").fallbacks.inc()
    metrics.channel("email").ok.inc()
    labels = {
        name
        for family in metrics.registry.collect()
        for sample in family.samples
        for name in sample.labels
    }
    # bounded labels only: a priority is one of three, never a recipient's name
    assert labels <= {"channel", "outcome", "state", "calendar_id", "le", "priority"}
    value = metrics.registry.get_sample_value("herald_fallbacks_total", {"channel": "slack"})
    assert value == 2


# --- the screens at 80×24 (SQLite) ---------------------------------------------------

SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
EVERY = "slack:C0OPS, slack:C0OLD, slack:C0ALERTS or email:alice@example.com"


def rows_with(app: Any, text: str) -> list[str]:
    """The list's lines (as the terminal shows them) that contain ``text``."""
    box = table(app).region
    lines = screen_text(app).splitlines()[box.y + 1 : box.bottom]
    return [line for line in lines if text in line]


def line_of(app: Any, text: str) -> str:
    [line] = rows_with(app, text)
    return line


def pane(app: Any) -> str:
    """The detail pane's words, its borders off."""
    box = app.screen.query_one("#pane")
    lines = screen_text(app).splitlines()[box.region.y + 1 : box.region.bottom - 1]
    return flat(" ".join(line.strip("│ ") for line in lines))


@SQLITE
async def test_the_list_shows_the_first_recipient_and_how_many_more(
    console: Any, fanned: dict[str, Any]
) -> None:
    app = console(OPERATOR, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        assert "recipients" in table(app).shown_columns
        row = line_of(app, "Stand-up")
        # cut to the column, the count of the others stays
        assert " +2 " in row and "slack:C0" in row
        assert "+" not in line_of(app, "Coffee")  # one recipient: just it
        await pilot.press("down")  # newest first: the stand-up is second
        await settle(pilot)
        assert EVERY in pane(app)
        await pilot.press("slash", *"to:email:", "enter")  # a fallback step matches
        await settle(pilot)
        assert table(app).keys == [str(fanned["fan"])]
        await pilot.press("slash", "ctrl+u", *"to:slack:C0OLD", "enter")
        await settle(pilot)
        assert table(app).keys == [str(fanned["fan"])]


@SQLITE
async def test_the_detail_has_a_line_per_recipient_and_the_timeline_where_each_try_went(
    console: Any, fanned: dict[str, Any]
) -> None:
    app = console(OPERATOR, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        text = flat(screen_text(app))
        assert "To 3 recipients · zone UTC · delivered to 2 of 3; slack:C0OLD failed" in text
        assert "slack:C0OPS · delivered (job 1)" in text
        assert "slack:C0OLD · dead (job 2)" in text
        assert "slack:C0ALERTS or email:alice@example.com · delivered (job 3)" in text
        tries = [line for line in screen_text(app).splitlines() if " attempt " in line]
        assert len(tries) == 3
        # the timeline's text says where each went, within 80 columns
        assert any("to slack:C0OLD on w1" in line for line in tries)
        assert any("to slack:C0ALERTS on w1" in line for line in tries)


@SQLITE
async def test_the_delivery_log_shows_where_each_attempt_went(
    console: Any, fanned: dict[str, Any]
) -> None:
    app = console(OPERATOR, mode="deliveries")
    async with run(app) as pilot:
        await settle(pilot)
        rows = rows_with(app, "Stand-up")
        assert len(rows) == 3
        assert any("permanent" in row and "slack:C0OLD" in row for row in rows)
        assert sum("slack:C0OPS" in row for row in rows) == 1
        assert any("slack:C0ALER" in row for row in rows)
        assert "log:" in line_of(app, "Coffee")
        await pilot.press("slash", *"to:slack:C0OLD", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 1
        assert "to slack:C0OLD" in pane(app)


@SQLITE
async def test_snapshots_of_a_fan_out_at_80x24(
    console: Any, fanned: dict[str, Any], tmp_path: Path
) -> None:
    """The list and the detail of the stand-up, as a person reads them at 80×24."""
    app = console(OPERATOR, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        listed = app.save_screenshot("list.svg", path=str(tmp_path))
        await pilot.press("enter")
        await settle(pilot)
        detail = app.save_screenshot("detail.svg", path=str(tmp_path))
    compare(Path(listed), SNAPSHOTS / "recipients-list-80x24.txt", 80)
    compare(Path(detail), SNAPSHOTS / "recipients-detail-80x24.txt", 80)


@SQLITE
async def test_the_form_shows_every_recipient_and_keeps_them_when_only_the_text_changes(
    console: Any, herald: Herald, fanned: dict[str, Any]
) -> None:
    zoned, _ = await herald.create_schedule(
        OPERATOR,
        to=["slack:C0OPS", Wanted(("email:bob@example.com",), zone="Europe/Berlin")],
        when="every weekday at 9am",
        text="Daily",
        tz="UTC",
    )
    before = await herald.store.get_schedule(zoned.id)
    app = console(OPERATOR, mode="schedules")
    async with run(app) as pilot:
        await settle(pilot)
        await pilot.press("e")  # the newest: the zoned one
        await settle(pilot)
        to = app.screen.query_one("#to", Input)
        assert to.value == "slack:C0OPS, email:bob@example.com"
        text = app.screen.query_one("#text", TextArea)
        text.text = "Daily, edited"
        await pilot.press("ctrl+s")
        await settle(pilot)
        after = await herald.store.get_schedule(zoned.id)
        assert after.body == "Daily, edited"
        assert after.recipients == before.recipients  # Bob keeps his zone
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        form.query_one("#to", Input).value = "slack:C0A, slack:C0B or email:b@example.com"
        form.query_one("#when", Input).value = "in 2 hours"
        form.query_one("#text", TextArea).text = "Two places"
        await pilot.press("ctrl+s")
        await settle(pilot)
    [made] = [s for s in await herald.list_schedules(OPERATOR) if s.body == "Two places"]
    assert made.recipients == [
        {"id": 0, "to": ["slack:C0A"]},
        {"id": 1, "to": ["slack:C0B", "email:b@example.com"]},
    ]


def test_the_forms_field_reads_chains_and_lists() -> None:
    assert parse_recipients("slack:C1, slack:C2 slack:@U1 or email:a@example.com,") == [
        "slack:C1",
        "slack:C2",
        {"first_of": ["slack:@U1", "email:a@example.com"]},
    ]
    assert parse_recipients("log:") == ["log:"]
    assert parse_recipients("  ") == []


def test_a_cut_keeps_how_many_more_there_are() -> None:
    cell = Text("webhook:https://hooks.example.com/x +12")
    assert _cut(cell, 16, tail=True).plain == "webhook:htt… +12"  # 16 cells
    assert _cut(cell, 16).plain == "webhook:https:/…"  # other columns cut as before
    assert _cut(Text("slack:C0OPS +2"), 4, tail=True).plain == "sla…"  # no room: plain cut
