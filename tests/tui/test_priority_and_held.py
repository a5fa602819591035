"""Issue 37 in the console: the Queue screen's priority column and ``priority:`` filter,
jobs held by quiet hours shown as held with their reason and sent now by an operator
(never by a member), and a member's preferences and quiet hours in words (``m``).

A held job is set up as the dispatcher leaves one (:func:`hold`): waiting, due when the
window opens, its last error the hold's reason (core.preferences.held_reason)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from core import db
from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import Conflict, NotFound, PermissionDenied
from core.models import Job
from core.preferences import Preferences, QuietHours, held_reason
from core.settings import load_settings
from core.store import AuditEntry, AuditFilter, Store
from tests.conftest import START
from tests.support.channels import RecordingChannel
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, flat, notes, run, screen_text, settle, table
from tui.screens.confirm import ConfirmScreen
from tui.screens.detail import DetailScreen
from tui.screens.member import MemberScreen

ANN_DM = "slack:@U0ANN"
ANN = "slack:U0ANN"
#: 22:00 in Berlin on the test's day: Ann's quiet hours hold a reminder due then.
LATE = START.replace(hour=21)
OPENS = START.replace(hour=7) + timedelta(days=1)  # 08:00 in Berlin the next morning
REASON = held_reason(OPENS, "Europe/Berlin", "Ann's", LATE)


async def hold(store: Store, job_id: int, opens: datetime, reason: str) -> None:
    """Leave job ``job_id`` as the dispatcher leaves a held job."""
    async with store._engine.begin() as conn:
        await conn.execute(
            sa.update(Job.__table__)  # type: ignore[attr-defined]
            .where(sa.column("id") == job_id)
            .values(due_at=opens, last_error=reason)
        )


async def job_of(herald: Herald, schedule_id: int | None) -> Job:
    assert schedule_id is not None
    (job,) = await herald.store.schedule_jobs(schedule_id)
    return job


async def seed_priorities(herald: Herald, clock: ManualClock) -> dict[str, int]:
    """Bob's reminder to Ann held by her quiet hours (normal), an admin's urgent page and
    Bob's bulk digest; an operator; Ann's quiet hours and the tenant's default."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    await herald.set_member_timezone(ADMIN, ANN, "Europe/Berlin")
    held, _ = await herald.create_schedule(
        MEMBER, to=ANN_DM, when="in 9 hours", text="Water the plants", tz="UTC"
    )
    urgent, _ = await herald.create_schedule(
        ADMIN, to="log:", when="in 2 hours", text="Page the on-call", tz="UTC", priority="urgent"
    )
    bulk, _ = await herald.create_schedule(
        MEMBER, to="log:", when="in 3 hours", text="Weekly digest", tz="UTC", priority="bulk"
    )
    job = await job_of(herald, held.id)
    assert job.id is not None
    await hold(herald.store, job.id, OPENS, REASON)
    now = clock.now()
    for member, prefs in [
        (ANN, Preferences(quiet=QuietHours.parse("22:00-08:00"), accept_from="admins")),
        ("*", Preferences(quiet=QuietHours.parse(None, ["weekends"]))),
    ]:
        await herald.store.put_preferences(
            "local", member, prefs, now=now, by=ADMIN, audit=AuditEntry(ADMIN, "test", "member")
        )
    return {
        "held": job.id,
        "held_schedule": int(held.id or 0),
        "urgent": int(urgent.id or 0),
        "bulk": int(bulk.id or 0),
    }


@pytest.fixture
async def jobs(herald: Herald, clock: ManualClock) -> dict[str, int]:
    return await seed_priorities(herald, clock)


def line_of(app: Any, text: str) -> str:
    found = [line for line in screen_text(app).splitlines() if text in line]
    assert found, f"{text!r} is not on the screen"
    return found[0]


async def goto(pilot: Any, app: Any, key: str) -> None:
    """Put the cursor on the row ``key``."""
    rows = table(app).keys
    await pilot.press("home", *["down"] * rows.index(key))
    await settle(pilot)


async def test_priority_column_filter_held_and_send_now(
    console: Any, herald: Herald, jobs: dict[str, int]
) -> None:
    app = console(OPERATOR, mode="queue")
    async with run(app, size=(140, 40)) as pilot:
        await settle(pilot)
        # the pending view: each job with its priority; the held one as held, its reason
        assert "held" in line_of(app, "Water the plants").split()
        assert "normal" in line_of(app, "Water the plants").split()
        assert "urgent" in line_of(app, "Page the on-call").split()
        assert "bulk" in line_of(app, "Weekly digest").split()
        assert "Held until" in line_of(app, "Water the plants")
        await goto(pilot, app, str(jobs["held"]))
        pane = flat(screen_text(app))
        assert REASON == "Held until Tue 03 Mar 08:00 Europe/Berlin (Ann's quiet hours)."
        assert f"{REASON} s sends it now." in pane
        assert "· held · normal · due" in pane

        # priority: filters, a comma list too; a bad one says the choices
        await pilot.press("slash", *"priority:urgent", "enter")
        await settle(pilot)
        assert table(app).keys == [str(jobs["urgent"])]
        assert "filter: priority:urgent" in screen_text(app)
        await pilot.press("slash", "ctrl+u", *"priority:normal,bulk", "enter")
        await settle(pilot)
        assert set(table(app).keys) == {str(jobs["held"]), str(jobs["bulk"])}
        await pilot.press("slash", "ctrl+u", *"priority:soon", "enter")
        await settle(pilot)
        assert "Filter: Unknown priority 'soon': use urgent|normal|bulk" in notes(app)
        await pilot.press("slash", "ctrl+u", "enter")
        await settle(pilot)
        assert len(table(app).keys) == 3

        # send now: not on a job that is not held; on the held one after a yes
        await goto(pilot, app, str(jobs["urgent"]))
        await pilot.press("s")
        await settle(pilot)
        assert any("is not held (pending)" in n for n in notes(app))
        await goto(pilot, app, str(jobs["held"]))
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "despite the hold" in flat(screen_text(app))
        await pilot.press("y")
        await settle(pilot)
        assert (
            f"Done: Job {jobs['held']} is due now, as urgent: it is sent despite the quiet hours."
            in notes(app)
        )
        # it left the pending jobs for those due now: urgent, no longer held
        assert str(jobs["held"]) not in table(app).keys
        await pilot.press("d")
        await settle(pilot)
        assert table(app).keys == [str(jobs["held"])]
        row = line_of(app, "Water the plants").split()
        assert "urgent" in row and "pending" in row and "held" not in row

        # the keys panel says what send now does, and for whom
        await pilot.press("question_mark")
        await settle(pilot)
        keys = screen_text(app)  # the panel wraps: "s Send now a held job, at once …"
        assert "s Send now a held job, at once" in keys and "(operators, admins)" in keys
    audit = await herald.store.audit_page(AuditFilter(action="job.send_now"))
    assert [(a.actor, a.object_id) for a in audit] == [(OPERATOR, str(jobs["held"]))]
    assert audit[0].details["held"] == REASON


async def test_a_member_cannot_send_now(console: Any, herald: Herald, jobs: dict[str, int]) -> None:
    app = console(MEMBER, mode="queue")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        assert "held" in line_of(app, "Water the plants").split()  # Ann's own job
        assert "Only operators and admins can send a held job now." in flat(screen_text(app))
        await goto(pilot, app, str(jobs["held"]))
        assert "s sends it now" not in flat(screen_text(app))
        await pilot.press("s")  # greyed out: nothing happens
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    with pytest.raises(PermissionDenied, match="Only operators and admins"):
        await herald.send_now(MEMBER, jobs["held"])
    denied = await herald.store.audit_page(AuditFilter(action="job.send_now.denied"))
    assert [a.actor for a in denied] == [MEMBER]
    job = await herald.store.get_job(jobs["held"])
    assert job is not None and job.due_at == OPENS and job.last_error == REASON


async def test_member_detail_shows_preferences_in_words(
    console: Any, herald: Herald, jobs: dict[str, int]
) -> None:
    app = console(ADMIN, mode="queue")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await goto(pilot, app, str(jobs["held"]))
        await pilot.press("m")  # the member the job goes to: Ann, by her DM
        await settle(pilot)
        assert isinstance(app.screen, MemberScreen)
        text = flat(screen_text(app))
        assert "Quiet hours: 22:00–08:00, Europe/Berlin time (their own)" in text
        assert (
            "Own: reminders where sent · from admins only · quiet 22:00–08:00" in text
            and "Tenant default: reminders where sent · from anyone · quiet weekends" in text
            and "Effective: reminders where sent · from admins only · quiet 22:00–08:00" in text
        )
        assert "Quiet hours Own: 22:00–08:00 Tenant default: weekends" in text
        await pilot.press("escape")
        await settle(pilot)
        await goto(pilot, app, str(jobs["urgent"]))
        await pilot.press("m")  # a job to a channel: its owner, who set nothing
        await settle(pilot)
        text = flat(screen_text(app))
        assert f"{ADMIN} · zone UTC" in text
        assert "Own: not set" in text and "Quiet hours: weekends, UTC time (the tenant's" in text
        await pilot.press("escape")
        await settle(pilot)
        await goto(pilot, app, str(jobs["held"]))
        await pilot.press("enter")  # the held job's detail says it is held, and why
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert REASON in flat(screen_text(app))
        await pilot.press("escape", "2")
        await settle(pilot)
        await goto(pilot, app, str(jobs["held_schedule"]))
        await pilot.press("m")  # from the schedules: the owner, Bob, who set nothing
        await settle(pilot)
        assert isinstance(app.screen, MemberScreen)
        text = flat(screen_text(app))
        assert f"{MEMBER} · zone UTC" in text and "Own: not set" in text
        assert "Effective: reminders where sent · from anyone · quiet weekends" in text
    # an operator is not an admin: another member's preferences are refused, in words
    app = console(OPERATOR, mode="queue")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        await goto(pilot, app, str(jobs["held"]))
        await pilot.press("m")
        await settle(pilot)
        assert "Only an admin can see or change another member's preferences" in flat(
            screen_text(app)
        )


@asynccontextmanager
async def backend(request: pytest.FixtureRequest, url_fixture: str) -> AsyncIterator[Herald]:
    """A Herald on SQLite or PostgreSQL (the console's tests are on SQLite only), its
    clock at 22:00 in Berlin."""
    url = str(request.getfixturevalue(url_fixture))
    if db.backend(url) == "postgresql":
        db.upgrade(url)
    settings = load_settings(
        HERALD_DATABASE_URL=url, HERALD_ADMINS=ADMIN, HERALD_DEFAULT_TZ="UTC", _env_file=None
    )
    store = await Store.open(url)
    try:
        yield Herald(store, settings, ManualClock(LATE))
    finally:
        await store.close()


BACKENDS = pytest.mark.parametrize(
    "url_fixture", ["sqlite_url", "pg_url"], ids=["sqlite", "postgres"]
)


@BACKENDS
async def test_send_now_through_the_dispatcher(
    request: pytest.FixtureRequest, url_fixture: str
) -> None:
    """The dispatcher holds a reminder to Ann in her quiet hours; an operator sends it
    now and the next drain delivers it, once."""
    async with backend(request, url_fixture) as herald:
        clock = herald.clock
        assert isinstance(clock, ManualClock)
        await herald.set_role(ADMIN, OPERATOR, "operator")
        ann = "email:ann@example.com"
        await herald.store.save_member(
            "local", ann, now=LATE, timezone="Europe/Berlin", display_name="Ann"
        )
        await herald.store.put_preferences(
            "local",
            ann,
            Preferences(quiet=QuietHours.parse("22:00-08:00")),
            now=LATE,
            by=ADMIN,
            audit=AuditEntry(ADMIN, "preferences.set", "member", ann),
        )
        s, _ = await herald.create_schedule(
            MEMBER, to=ann, when="in 30 minutes", text="Late reminder", tz="UTC"
        )
        email = RecordingChannel(kind="email")
        config = DispatcherConfig(max_lateness=86400, admins=frozenset(herald.settings.admins))
        d = Dispatcher(herald.store, {"email": email}, clock=clock, config=config)
        clock.advance(timedelta(minutes=30))
        await d.drain()
        job = await job_of(herald, s.id)
        assert job.id is not None and job.state == "pending" and email.deliveries == []
        assert job.last_error == REASON  # "Held until Tue 03 Mar 08:00 Europe/Berlin (Ann's…"
        assert "urgent" in await herald.send_now(OPERATOR, job.id)
        await d.drain()
        await d.drain()
        assert [str(x.destination) for x in email.deliveries] == [ann]
        done = await herald.store.get_job(job.id)
        assert done is not None and done.state == "delivered" and done.attempts == 1


@BACKENDS
async def test_send_now_use_case(request: pytest.FixtureRequest, url_fixture: str) -> None:
    """On both backends: due now and urgent, its reason cleared, audited; a job not (or
    no longer) held, another tenant's or none is refused with a sentence."""
    async with backend(request, url_fixture) as herald:
        store = herald.store
        await herald.set_role(ADMIN, OPERATOR, "operator")
        await herald.set_member_timezone(ADMIN, ANN, "Europe/Berlin")
        s, _ = await herald.create_schedule(
            MEMBER, to=ANN_DM, when="in 30 minutes", text="Late reminder", tz="UTC"
        )
        job = await job_of(herald, s.id)
        assert job.id is not None
        with pytest.raises(Conflict, match=f"Job {job.id} is not held"):
            await herald.send_now(OPERATOR, job.id)
        await hold(store, job.id, OPENS, REASON)
        with pytest.raises(NotFound, match="There is no job"):
            await herald.send_now(Principal("local:olive", "slack:T0ACME"), job.id)
        with pytest.raises(NotFound, match="There is no job 999999"):
            await herald.send_now(OPERATOR, 999_999)
        assert "urgent" in await herald.send_now(OPERATOR, job.id)
        sent = await store.get_job(job.id)
        assert sent is not None
        assert (sent.due_at, sent.priority, sent.last_error) == (LATE, 0, None)
        assert sent.state == "pending"
        with pytest.raises(Conflict, match="is not held"):
            await herald.send_now(OPERATOR, job.id)  # twice: the second finds nothing held
        audit = [
            a
            for a in await store.audit_page(AuditFilter(action="job.send_now"))
            if a.action == "job.send_now"
        ]
        assert len(audit) == 1 and audit[0].details["was_due"] == OPENS.isoformat()
