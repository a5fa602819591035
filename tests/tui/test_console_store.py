"""The console's queries and use cases, without the screen: pages, filters, bulk
actions and refusals. The overview's per-minute buckets are dialect-specific, so this
module runs on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core import verbs
from core.actors import Principal, Surface
from core.cases import Herald, parse_shift, unavailable, verb_rule
from core.clock import ManualClock
from core.errors import InvalidInput, PermissionDenied
from core.store import AttemptFilter, AuditFilter, DeadFilter, ScheduleFilter
from tests.conftest import START
from tests.tui.conftest import ADMIN, FAILING, MEMBER, OPERATOR, seed, seed_calendars


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


async def test_overview_counts_and_per_minute_buckets(herald: Herald, clock: ManualClock) -> None:
    await seed(herald, clock)
    o = await herald.overview(MEMBER)
    assert o.counts["delivered"] == 2 and o.counts["dead"] == 3
    f = o.figures
    assert len(f.per_minute) == 60
    assert sum(ok for _, ok, _ in f.per_minute) == 2
    assert sum(bad for _, _, bad in f.per_minute) == 3
    # the two deliveries fell in the minute before the failures
    assert [m for m, ok, _ in f.per_minute if ok][0] + timedelta(minutes=1) == [
        m for m, _, bad in f.per_minute if bad
    ][0]
    assert (f.finished_last_hour, f.first_try_ok) == (5, 2)
    assert (f.dead, f.dead_requested) == (3, 1)
    assert f.due_next_hour == 0 and f.oldest_overdue is None
    clock.advance(timedelta(hours=2, minutes=1))
    later = await herald.overview(MEMBER)
    assert later.figures.oldest_overdue is not None  # the release job is now late


async def test_pages_follow_the_keyset_without_gaps_or_repeats(
    herald: Herald, clock: ManualClock
) -> None:
    for i in range(25):
        await herald.create_schedule(MEMBER, to="log:", when=f"in {i + 1} hours", text=f"m{i}")
    seen: list[int] = []
    before = None
    while page := await herald.schedules_page(ADMIN, ScheduleFilter(), before_id=before, limit=10):
        seen += [s.id for s in page if s.id is not None]
        before = page[-1].id
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) == 25
    jobs: list[int] = []
    after = None
    while rows := await herald.queue_page(ADMIN, "pending", after=after, limit=7):
        jobs += [r.job_id for r in rows]
        after = (rows[-1].due_at, rows[-1].job_id)
    assert len(jobs) == len(set(jobs)) == 25


async def test_members_see_their_own_operators_everything(
    herald: Herald, clock: ManualClock
) -> None:
    await seed(herald, clock)
    mine = await herald.schedules_page(MEMBER, ScheduleFilter(owner=OPERATOR))
    assert mine and {s.owner for s in mine} == {MEMBER}  # the owner filter cannot widen
    everyone = await herald.schedules_page(OPERATOR, ScheduleFilter())
    assert {s.owner for s in everyone} == {MEMBER, OPERATOR}
    log = await herald.delivery_log(MEMBER, AttemptFilter())
    assert log and all(r.destination != "log:" or r.job_id == 1 for r in log)
    audit = await herald.audit_log(MEMBER, AuditFilter())
    assert {a.actor for a in audit} == {MEMBER}


async def test_filters(herald: Herald, clock: ManualClock) -> None:
    ids = await seed(herald, clock)
    by_text = await herald.schedules_page(ADMIN, ScheduleFilter(text="BROKEN hook"))
    assert {s.id for s in by_text} == {ids["dead1"], ids["dead2"]}
    by_dest = await herald.schedules_page(ADMIN, ScheduleFilter(destination="webhook:"))
    assert {s.id for s in by_dest} == {ids["dead1"], ids["dead2"]}
    active = await herald.schedules_page(ADMIN, ScheduleFilter(states=("active",)))
    assert {s.id for s in active} == {ids["standup"], ids["release"]}
    failed = await herald.delivery_log(ADMIN, AttemptFilter(outcome="permanent"))
    assert len(failed) == 3
    one = await herald.delivery_log(ADMIN, AttemptFilter(schedule_id=ids["ok1"]))
    assert [r.outcome for r in one] == ["ok"]
    since = await herald.delivery_log(ADMIN, AttemptFilter(since=clock.now()))
    assert len(since) == 3
    groups = await herald.dead_groups(ADMIN, DeadFilter())
    assert [(g.reason, g.count, g.requested) for g in groups] == [
        ("HTTP 410 Gone", 2, 1),
        ("channel_not_found", 1, 0),
    ]
    gone = await herald.dead_page(ADMIN, DeadFilter(reason="HTTP 410 Gone"))
    assert {d.destination for d in gone} == {FAILING}
    assert await herald.count_dead(ADMIN, DeadFilter(requested=True)) == 1
    actions = await herald.audit_log(ADMIN, AuditFilter(action="dead."))
    assert [a.action for a in actions] == ["dead.retry_request"]


async def test_bulk_cancel_pause_shift_audit_each(herald: Herald, clock: ManualClock) -> None:
    ids = [
        (await herald.create_schedule(MEMBER, to="log:", when=f"in {i + 1} hours", text="x"))[0].id
        for i in range(3)
    ]
    console = Principal(MEMBER, surface=Surface.CONSOLE)
    plan = await herald.plan_schedules_bulk(console, "pause", ScheduleFilter())
    assert (plan.count, plan.matching) == (3, 3)
    assert await herald.bulk_schedules(console, "pause", ScheduleFilter(ids=(ids[0],))) == 1
    before = (await herald.queue_page(MEMBER, "pending"))[0].due_at
    shifted = await herald.bulk_schedules(
        console, "shift", ScheduleFilter(states=("active",)), shift=timedelta(hours=2)
    )
    assert shifted == 2
    after = await herald.queue_page(MEMBER, "pending")
    assert after[0].due_at == before + timedelta(hours=2)
    assert await herald.bulk_schedules(console, "cancel", ScheduleFilter()) == 3
    trail = await herald.audit_log(ADMIN, AuditFilter(action="schedule."))
    actions = sorted(a.action for a in trail if a.surface == "console")
    assert actions == ["schedule.cancel"] * 3 + ["schedule.pause"] + ["schedule.shift"] * 2
    assert await herald.queue_page(MEMBER, "pending") == []


async def test_bulk_resume_resumes_only_what_the_actor_may_change(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.set_role(ADMIN, OPERATOR, "operator")
    made = {}
    for name, actor, when in [
        ("daily", MEMBER, "every day at 9am"),
        ("later", MEMBER, "in 2 hours"),
        ("soon", MEMBER, "in 10 minutes"),
        ("ops", OPERATOR, "in 3 hours"),
        ("live", MEMBER, "in 4 hours"),
    ]:
        s, _ = await herald.create_schedule(actor, to="log:", when=when, text=name, tz="UTC")
        assert s.id is not None
        made[name] = s.id
        if name != "live":
            await herald.pause_schedule(actor, s.id)
    clock.advance(timedelta(minutes=20))  # "soon" passed while paused

    operator = Principal(OPERATOR, surface=Surface.CONSOLE)
    plan = await herald.plan_schedules_bulk(operator, "resume", ScheduleFilter())
    assert (plan.count, plan.matching) == (1, 5)  # sees everyone's, may resume its own
    assert plan.note is not None and "yours only" in plan.note
    assert await herald.bulk_schedules(operator, "resume", ScheduleFilter()) == 1
    member = Principal(MEMBER, surface=Surface.CONSOLE)
    plan = await herald.plan_schedules_bulk(member, "resume", ScheduleFilter())
    assert (plan.count, plan.matching) == (3, 4)  # its own, three of them paused
    assert await herald.bulk_schedules(member, "resume", ScheduleFilter()) == 2  # not "soon"
    states = {}
    for name, schedule_id in made.items():
        found = await herald.store.get_schedule(schedule_id)
        states[name] = found.state if found else None
    assert states == {
        "daily": "active",
        "later": "active",
        "soon": "paused",
        "ops": "active",
        "live": "active",
    }
    resumed = await herald.audit_log(ADMIN, AuditFilter(action="schedule.resume"))
    assert sorted((r.actor, r.object_id, r.surface) for r in resumed) == sorted(
        [
            (OPERATOR, str(made["ops"]), "console"),
            (MEMBER, str(made["daily"]), "console"),
            (MEMBER, str(made["later"]), "console"),
        ]
    )
    pending = {r.schedule_id for r in await herald.queue_page(ADMIN, "pending")}
    assert {made["daily"], made["later"], made["ops"]} <= pending
    assert made["soon"] not in pending
    # an admin may resume anyone's; "soon" still cannot (its time passed): 0, no error
    assert await herald.bulk_schedules(ADMIN, "resume", ScheduleFilter()) == 0


async def test_operators_bulk_only_their_own_and_a_refusal_is_audited(
    herald: Herald, clock: ManualClock
) -> None:
    await seed(herald, clock)
    plan = await herald.plan_schedules_bulk(OPERATOR, "cancel", ScheduleFilter())
    assert plan.count == 1 and plan.matching == 7 and "admin" in (plan.note or "")
    with pytest.raises(PermissionDenied):
        await herald.bulk_schedules(OPERATOR, "cancel", ScheduleFilter(owner=MEMBER))
    [denied] = await herald.audit_log(ADMIN, AuditFilter(action="schedule.cancel.denied"))
    assert denied.actor == OPERATOR and denied.object_id == MEMBER
    assert await herald.bulk_schedules(ADMIN, "cancel", ScheduleFilter(owner=MEMBER)) == 1


async def test_dead_letter_decisions(herald: Herald, clock: ManualClock) -> None:
    ids = await seed(herald, clock)
    requested = ids["requested"]
    with pytest.raises(PermissionDenied, match="Only an approver decides requests"):
        await herald.dead_letter_action(OPERATOR, "approve", ids=requested)
    [refusal] = await herald.audit_log(ADMIN, AuditFilter(action="dead.approve.denied"))
    assert refusal.actor == OPERATOR
    assert refusal.object_id == ", ".join(map(str, requested))
    with pytest.raises(PermissionDenied):
        await herald.dead_letter_action(MEMBER, "discard", ids=requested)
    assert await herald.dead_letter_action(ADMIN, "approve", ids=requested) == ("approved", 1)
    assert await herald.count_dead(ADMIN, DeadFilter()) == 2
    # everything matching a filter: the operator asks for a retry of all 410s
    verb, n = await herald.dead_letter_action(
        OPERATOR, "retry", f=DeadFilter(reason="HTTP 410 Gone")
    )
    assert (verb, n) == ("requested", 1)
    assert await herald.dead_letter_action(ADMIN, "reject", f=DeadFilter()) == ("rejected", 1)
    assert await herald.dead_letter_action(ADMIN, "discard", f=DeadFilter()) == ("discarded", 2)
    assert await herald.count_dead(ADMIN, DeadFilter()) == 0


async def test_timeline_tells_what_happened(herald: Herald, clock: ManualClock) -> None:
    ids = await seed(herald, clock)
    t = await herald.timeline(MEMBER, schedule_id=ids["dead1"])
    kinds = [e.kind for e in t.events]
    assert kinds[0] == "created" and "schedule.create" in t.events[0].text
    assert {"planned", "attempt", "dead"} <= set(kinds)
    attempt = next(e for e in t.events if e.kind == "attempt")
    assert "permanent 410" in attempt.text and attempt.detail == "HTTP 410 Gone"
    assert any("dead.retry_request" in e.text for e in t.events)
    standup = await herald.timeline(MEMBER, schedule_id=ids["standup"])
    assert "weekday" in standup.description and len(standup.upcoming) == 5
    job = await herald.timeline(ADMIN, job_id=ids["dead_jobs"][0])
    assert job.focus_job == ids["dead_jobs"][0]
    with pytest.raises(InvalidInput):
        await herald.timeline(ADMIN, attempt_id=10_000)


@pytest.mark.parametrize(
    ("text", "shift"),
    [
        # what the shift dialog took before
        ("1h30m", timedelta(minutes=90)),
        ("-15m", timedelta(minutes=-15)),
        (" 2 d ", timedelta(days=2)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1d2h", timedelta(hours=26)),
        ("1 h 30 m", timedelta(minutes=90)),
        ("+45s", timedelta(seconds=45)),
        ("366d", timedelta(days=366)),
        # and what "in <duration>" takes everywhere else in Herald
        ("2 hours", timedelta(hours=2)),
        ("90m", timedelta(minutes=90)),
        ("1 day", timedelta(days=1)),
        ("-15 minutes", timedelta(minutes=-15)),
        ("- 2 Hours", timedelta(hours=-2)),
        ("half an hour", timedelta(minutes=30)),
        ("an hour and 15 mins", timedelta(minutes=75)),
        ("1 week, 2 days", timedelta(days=9)),
        ("three hrs", timedelta(hours=3)),
        ("1 month", timedelta(days=31)),  # from January 1970 when no `now` is given
    ],
)
def test_a_shift_takes_the_durations_the_rest_of_herald_takes(text: str, shift: timedelta) -> None:
    assert parse_shift(text) == shift


def test_durations_and_rules() -> None:
    assert parse_shift("1 month", START) == timedelta(days=31)  # March 2 to April 2
    assert parse_shift("-1 month", START.replace(month=2)) == -timedelta(days=28)
    for bad in ("", "soon", "0m", "400d", "5x", "-", "2 years", "3 days at 9am", "tomorrow"):
        with pytest.raises(InvalidInput):
            parse_shift(bad)
    from core.actors import Actor
    from core.models import Role

    member, operator, admin = (Actor("local:x", r, None) for r in Role)
    assert unavailable(member, "dead.discard") and not unavailable(operator, "dead.discard")
    # the decisions on requests of every kind (core/verbs.py APPROVAL_VERBS): admins
    approve = verb_rule(verbs.verb("approve"))
    assert unavailable(operator, approve) and not unavailable(admin, approve)


async def test_calendars_page_counts_uses_and_redacts(herald: Herald, clock: ManualClock) -> None:
    ids = await seed_calendars(herald, clock)
    first = await herald.calendars_page(ADMIN, limit=2)
    assert (first.calendars, first.failing) == (3, 1)
    assert [r.id for r in first.rows] == [ids["team"], ids["holidays"]]
    rest = await herald.calendars_page(ADMIN, after_id=first.rows[-1].id, limit=2)
    assert [r.id for r in rest.rows] == [ids["upload"]] and not rest.rows[0].is_url
    team, holidays = first.rows
    assert team.failing and team.failures == 3 and team.error_at == START + timedelta(minutes=15)
    assert team.source == "https://calendar.example.com/…"
    assert team.last_error == "Fetching https://calendar.example.com/… answered HTTP 503."
    waiting = [s for s in await herald.store.feed_reminders(ids["feed"]) if s.state == "active"]
    [feed] = team.feeds
    assert (feed.feed_id, feed.destination, feed.pending) == (ids["feed"], "slack:C0TEAM", 10)
    assert team.pending == len(waiting) and team.skipping == 0
    assert not holidays.failing and holidays.skipping == 1 and holidays.feeds == ()
    assert holidays.fetched_at == clock.now()
    failing = await herald.calendars_page(OPERATOR, failing_only=True)
    assert [r.id for r in failing.rows] == [ids["team"]]
    mine = await herald.calendars_page(MEMBER)
    assert [r.id for r in mine.rows] == [ids["holidays"]]
    assert (mine.calendars, mine.failing) == (1, 0)
    health = await herald.store.calendar_health()
    assert health.failing == 1
    assert {c.calendar_id: c.failing_since for c in health.calendars} == {
        ids["team"]: START + timedelta(minutes=15),
        ids["holidays"]: None,
    }
