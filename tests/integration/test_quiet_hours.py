"""The recipients' say at delivery time (issue 37), through the real dispatcher (drain
mode, injected clock) on SQLite and PostgreSQL: quiet hours in two zones (across
midnight, the DST changes, weekends), a recurring reminder through a night, a
preference changed between saving and sending (refused: skipped with the reason; a
place: sent there), urgent messages, and channels held only when the tenant says so.

2026's changes: the US springs forward on 8 March and falls back on 1 November, the EU
on 29 March and 25 October."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.models import LOCAL_TENANT, Job
from core.preferences import TENANT_DEFAULT, Preferences, QuietHours
from core.store import AuditEntry
from tests.support.channels import RecordingChannel

ALICE, ADMIN = "local:alice", "local:root-admin"
BOB, LOU = "email:bob@example.com", "email:lou@example.com"
BERLIN, LOS_ANGELES = "Europe/Berlin", "America/Los_Angeles"
#: Late jobs are still sent (a night's walk drains once an hour).
CONFIG = DispatcherConfig(max_attempts=3, backoff_base=5, backoff_cap=60, max_lateness=86400)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def person(herald: Herald, member: str, name: str, zone: str, **prefs: object) -> None:
    """``member`` known by ``name`` in ``zone``, with these preferences (stored as the
    preference use cases store them)."""
    now = herald.clock.now()
    await herald.store.save_member(LOCAL_TENANT, member, now=now, timezone=zone, display_name=name)
    await set_prefs(herald, member, Preferences(**prefs))  # type: ignore[arg-type]


async def set_prefs(herald: Herald, member: str, prefs: Preferences) -> None:
    audit = AuditEntry(ADMIN, "preferences.set", "member", member)
    await herald.store.put_preferences(
        LOCAL_TENANT, member, prefs, now=herald.clock.now(), by=ADMIN, audit=audit
    )


def night(window: str = "22:00-08:00", *days: str) -> QuietHours:
    return QuietHours.parse(window, days)


async def jobs_of(herald: Herald, sid: int) -> list[Job]:
    return sorted(
        await herald.store.schedule_jobs(sid, limit=1000),
        key=lambda j: (j.occurrence_at, j.recipient),
    )


async def schedule(
    herald: Herald,
    clock: ManualClock,
    at: str,
    to: list[str],
    when: str | None = None,
    *,
    by: str = ALICE,
    priority: str | None = None,
) -> int:
    """A schedule of Alice's (or ``by``'s) to ``to``, saved at ``at`` (UTC), due
    ``when`` (default: in 30 minutes)."""
    clock.set(utc(at))
    s, _ = await herald.create_schedule(
        by, to=to, when=when or "in 30 minutes", text="Stand-up", tz="UTC", priority=priority
    )
    assert s.id is not None
    return s.id


async def drain_at(d: Dispatcher, clock: ManualClock, when: str) -> None:
    clock.set(utc(when))
    summary = await d.drain()
    assert summary.outcomes["dead"] == summary.outcomes["expired"] == 0


def dispatcher(
    herald: Herald, clock: ManualClock, max_lateness: float = CONFIG.max_lateness
) -> tuple[Dispatcher, RecordingChannel]:
    email = RecordingChannel(kind="email")
    channels = {"email": email, "webhook": RecordingChannel(kind="webhook")}
    # HERALD_ADMINS, as DispatcherConfig.from_settings gives them
    config = replace(CONFIG, admins=frozenset(herald.settings.admins), max_lateness=max_lateness)
    d = Dispatcher(herald.store, channels, clock=clock, config=config, rng=random.Random(3))
    return d, email


# --- quiet hours in two zones --------------------------------------------------------


# (saved at, due in 30 min; Bob in Berlin, Lou in Los Angeles, both quiet 22:00-08:00)
# -> when each is sent (UTC)
NIGHTS = [
    # a winter night: 23:30 in Berlin (quiet until 08:00 = 07:00Z), 14:30 in LA
    ("2026-01-14 22:00", {BOB: "2026-01-15 07:00", LOU: "2026-01-14 22:30"}),
    # the EU springs forward in the night of 29 March: 08:00 CEST is 06:00Z
    ("2026-03-28 22:00", {BOB: "2026-03-29 06:00", LOU: "2026-03-28 22:30"}),
    # the EU falls back in the night of 25 October: 08:00 CET is 07:00Z
    ("2026-10-24 22:00", {BOB: "2026-10-25 07:00", LOU: "2026-10-24 22:30"}),
    # the US springs forward in the night of 8 March: 08:00 PDT is 15:00Z
    ("2026-03-08 07:00", {BOB: "2026-03-08 07:30", LOU: "2026-03-08 15:00"}),
    # the US falls back in the night of 1 November: 08:00 PST is 16:00Z
    ("2026-11-01 07:00", {BOB: "2026-11-01 07:30", LOU: "2026-11-01 16:00"}),
]


@pytest.mark.parametrize(("saved", "expected"), NIGHTS)
async def test_a_night_in_two_zones_holds_each_recipient_until_their_morning(
    herald: Herald, clock: ManualClock, saved: str, expected: dict[str, str]
) -> None:
    clock.set(utc(saved))
    await person(herald, BOB, "Bob", BERLIN, quiet=night())
    await person(herald, LOU, "Lou", LOS_ANGELES, quiet=night())
    sid = await schedule(herald, clock, saved, [BOB, LOU])
    d, email = dispatcher(herald, clock)
    due = utc(saved) + timedelta(minutes=30)
    sent: dict[str, str] = {}
    for when in sorted({due, *(utc(t) for t in expected.values())}):
        clock.set(when)
        before = len(email.deliveries)
        await d.drain()
        for delivery in email.deliveries[before:]:
            sent[str(delivery.destination)] = f"{when:%Y-%m-%d %H:%M}"
    assert sent == expected
    jobs = await jobs_of(herald, sid)
    assert [j.state for j in jobs] == ["delivered", "delivered"]
    assert [j.attempts for j in jobs] == [1, 1]  # a hold is no try
    assert len(email.deliveries) == 2  # never duplicated


async def test_a_held_job_says_until_when_and_is_no_try(herald: Herald, clock: ManualClock) -> None:
    clock.set(utc("2026-01-14 21:00"))
    await person(herald, BOB, "Bob", BERLIN, quiet=night())
    sid = await schedule(herald, clock, "2026-01-14 21:00", [BOB])  # due 22:30 in Berlin
    # a minute's lateness allowed: counted from the new due time, not the first one
    d, email = dispatcher(herald, clock, max_lateness=60)
    await drain_at(d, clock, "2026-01-14 21:30")
    [job] = await jobs_of(herald, sid)
    assert job.state == "pending" and job.attempts == 0 and not email.deliveries
    assert job.last_error == "Held until Thu 15 Jan 08:00 Europe/Berlin (Bob's quiet hours)."
    assert job.due_at == utc("2026-01-15 07:00")
    assert not await herald.store.job_attempts([job.id])
    # held again by the next drain? no: not due before the window opens
    await drain_at(d, clock, "2026-01-15 06:59")
    assert not email.deliveries
    await drain_at(d, clock, "2026-01-15 07:00")
    [job] = await jobs_of(herald, sid)
    assert job.state == "delivered" and job.attempts == 1 and len(email.deliveries) == 1


async def test_a_weekend_is_quiet_all_day(herald: Herald, clock: ManualClock) -> None:
    # Saturday 17 January 2026, 10:00 in Berlin; quiet at night and at weekends
    await person(herald, BOB, "Bob", BERLIN, quiet=night("22:00-08:00", "weekends"))
    await person(herald, LOU, "Lou", LOS_ANGELES, quiet=night("22:00-07:00", "sun"))
    sid = await schedule(herald, clock, "2026-01-17 08:30", [BOB, LOU])
    d, email = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-01-17 09:00")  # Saturday 01:00 in LA: night
    bob, lou = await jobs_of(herald, sid)
    # Monday 00:00 is still night in Berlin: Monday 08:00 CET
    assert bob.due_at == utc("2026-01-19 07:00")
    assert bob.last_error == "Held until Mon 19 Jan 08:00 Europe/Berlin (Bob's quiet hours)."
    # Saturday 07:00 in LA
    assert lou.due_at == utc("2026-01-17 15:00")
    await drain_at(d, clock, "2026-01-17 15:00")
    await drain_at(d, clock, "2026-01-19 07:00")
    assert [str(x.destination) for x in email.deliveries] == [LOU, BOB]


# --- a recurring reminder through a night ----------------------------------------------


async def test_an_hourly_reminder_through_the_night_is_sent_once_at_eight(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-01-14 18:00"))
    await person(herald, BOB, "Bob", BERLIN, quiet=night())
    sid = await schedule(herald, clock, "2026-01-14 18:10", [BOB], when="every hour")
    d, email = dispatcher(herald, clock)
    sent: list[str] = []
    start = utc("2026-01-14 19:00")  # 20:00 in Berlin
    for hour in range(15):  # until 10:00 in Berlin
        clock.set(start + timedelta(hours=hour))
        before = len(email.deliveries)
        summary = await d.drain()
        assert summary.outcomes["dead"] == summary.outcomes["expired"] == 0
        sent += [f"{clock.now():%H:%M}"] * (len(email.deliveries) - before)
    # Berlin 20:00 and 21:00; the 22:00 one held until 08:00 (07:00Z), sent once; then
    # hourly again: no burst of the night's occurrences
    assert sent == ["19:00", "20:00", "07:00", "08:00", "09:00"]
    jobs = await jobs_of(herald, sid)
    assert [j.state for j in jobs].count("pending") == 1  # the next one, 10:00Z
    assert all(j.attempts <= 1 for j in jobs)


# --- preferences changed between saving and sending ----------------------------------


async def test_a_block_after_saving_skips_with_the_reason(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-03-02 12:00"))
    await person(herald, BOB, "Bob", BERLIN)
    sid = await schedule(herald, clock, "2026-03-02 12:00", [BOB], when="every day at 13:00")
    outcomes: list[str] = []
    d, email = dispatcher(herald, clock)
    d.observer = lambda item: outcomes.append(item.state)
    await set_prefs(herald, BOB, Preferences(blocked=(ALICE,)))
    await drain_at(d, clock, "2026-03-02 13:00")
    assert not email.deliveries and outcomes == ["skipped"]  # the author's surfaces hear it
    jobs = await jobs_of(herald, sid)
    assert [j.state for j in jobs] == ["skipped", "pending"]  # a recurring one goes on
    assert jobs[0].last_error == (
        "Not sent: Bob does not accept reminders from you "
        "(their preferences changed after this was scheduled)."
    )
    assert jobs[0].attempts == 0 and jobs[1].due_at == utc("2026-03-03 13:00")
    s = await herald.store.get_schedule(sid)
    assert s is not None and s.last_outcome == "skipped"
    # unblocked: the next one goes
    await set_prefs(herald, BOB, Preferences())
    await drain_at(d, clock, "2026-03-03 13:00")
    assert len(email.deliveries) == 1


async def test_admins_only_after_saving_skips_a_members_one_off(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-03-02 12:00"))
    await person(herald, BOB, "Bob", BERLIN)
    sid = await schedule(herald, clock, "2026-03-02 12:00", [BOB])
    from_admin = await schedule(herald, clock, "2026-03-02 12:00", [BOB], by=ADMIN)
    await set_prefs(herald, BOB, Preferences(accept_from="admins"))
    d, email = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-03-02 12:30")
    [job] = await jobs_of(herald, sid)
    assert job.state == "skipped"
    assert job.last_error == (
        "Not sent: Bob accepts reminders only from admins "
        "(their preferences changed after this was scheduled)."
    )
    # an admin's (HERALD_ADMINS) is still welcome
    assert [j.state for j in await jobs_of(herald, from_admin)] == ["delivered"]
    assert len(email.deliveries) == 1
    # what `herald show` and `herald list` show the author
    detail = await herald.show_schedule(ALICE, sid)
    assert detail.schedule.state == "completed" and detail.schedule.last_outcome == "skipped"
    assert [j.last_error for j in detail.jobs] == [job.last_error]


async def test_a_place_set_after_saving_is_where_it_goes(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-03-02 12:00"))
    await person(herald, BOB, "Bob", BERLIN)
    sid = await schedule(herald, clock, "2026-03-02 12:00", [BOB], when="every day at 13:00")
    await set_prefs(herald, BOB, Preferences(place="email:bob.home@example.com"))
    d, email = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-03-02 13:00")
    assert [str(x.destination) for x in email.deliveries] == ["email:bob.home@example.com"]
    first, following = await jobs_of(herald, sid)
    [attempt] = await herald.store.job_attempts([first.id])
    assert attempt.destination == "email:bob.home@example.com"
    # the job keeps its own destination: the next one reads the preference afresh
    assert first.destination in (None, BOB) and following.destination in (None, BOB)
    await set_prefs(herald, BOB, Preferences())
    await drain_at(d, clock, "2026-03-03 13:00")
    assert [str(x.destination) for x in email.deliveries][1:] == [BOB]


# --- urgent, channels ----------------------------------------------------------------


async def test_channels_are_held_only_when_the_tenant_says_so(
    herald: Herald, clock: ManualClock
) -> None:
    hook = "webhook:https://hooks.example.com/x"
    clock.set(utc("2026-01-14 22:00"))
    await set_prefs(herald, TENANT_DEFAULT, Preferences(quiet=night()))  # zone: UTC
    free = await schedule(herald, clock, "2026-01-14 22:00", [hook])
    d, _ = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-01-14 22:30")
    assert [j.state for j in await jobs_of(herald, free)] == ["delivered"]
    await set_prefs(herald, TENANT_DEFAULT, Preferences(quiet=night(), hold_channels=True))
    held = await schedule(herald, clock, "2026-01-14 22:10", [hook])
    d, _ = dispatcher(herald, clock)  # a fresh read of the tenant's defaults
    await drain_at(d, clock, "2026-01-14 22:40")
    [job] = await jobs_of(herald, held)
    assert job.state == "pending" and job.due_at == utc("2026-01-15 08:00")
    assert job.last_error == "Held until Thu 15 Jan 08:00 UTC (the team's quiet hours)."


async def test_the_tenants_quiet_hours_hold_a_person_without_their_own(
    herald: Herald, clock: ManualClock
) -> None:
    clock.set(utc("2026-01-14 21:00"))
    await herald.store.save_member(LOCAL_TENANT, LOU, now=clock.now(), timezone=LOS_ANGELES)
    await set_prefs(herald, TENANT_DEFAULT, Preferences(quiet=night("20:00-06:00")))
    sid = await schedule(herald, clock, "2026-01-15 05:00", [LOU])  # 21:30 in LA
    d, _ = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-01-15 05:30")
    [job] = await jobs_of(herald, sid)
    assert job.due_at == utc("2026-01-15 14:00")  # 06:00 PST
    assert job.last_error is not None and job.last_error.endswith(
        f"America/Los_Angeles ({LOU}'s quiet hours)."
    )


async def test_urgent_bypasses_quiet_hours(herald: Herald, clock: ManualClock) -> None:
    clock.set(utc("2026-01-14 22:00"))
    await person(herald, BOB, "Bob", BERLIN, quiet=night())
    sid = await schedule(herald, clock, "2026-01-14 22:00", [BOB])
    urgent = await schedule(herald, clock, "2026-01-14 22:00", [BOB], by=ADMIN, priority="urgent")
    d, email = dispatcher(herald, clock)
    await drain_at(d, clock, "2026-01-14 22:30")
    assert [j.state for j in await jobs_of(herald, sid)] == ["pending"]
    assert [j.state for j in await jobs_of(herald, urgent)] == ["delivered"]
    assert len(email.deliveries) == 1
