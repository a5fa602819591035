"""Approvals (issue 40) through the use cases every surface calls, on SQLite and
PostgreSQL, with the real dispatcher (drained on a ManualClock) and the real Slack and
Discord channels against the local fakes of their APIs.

Held: a member's message into an announcement channel, or with a broadcast mention in
a tenant that holds them (``HERALD_APPROVE_BROADCASTS``); a member of a tenant that does
not hold them is refused as before; an admin is never held. Approved: the job is armed
and delivered at its time (Discord: with the ``allowed_mentions`` the approver
granted). Rejected with a reason: cancelled, and the author told why. Not decided in
time: a one-off expires at its due time, a recurring one waits for its next occurrence.
An edit after approval asks again. Nobody approves their own request; another tenant's
request is not found; a dead letter's retry request is decided by the same
``approve``/``reject``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from core.actors import Principal
from core.cases import Herald
from core.channels.discord import DiscordChannel
from core.channels.slack import SlackChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from core.events import ALERT_OWNER
from core.models import ApprovalState, JobState, ScheduleState
from core.settings import Settings, load_settings
from core.store import AuditEntry, AuditFilter
from core.tenancy import MentionRefused
from tests.conftest import START
from tests.fakes import FakeDiscord, FakeSlack, slack_error

SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
A, B = "slack:TA", "slack:TB"
GUILD = "700000000000000001"
D = f"discord:{GUILD}"
ANNA = Principal("slack:UANNA", A)  # a member of A
VERA = Principal("slack:UVERA", A)  # a member of A listed in HERALD_APPROVERS
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A
BEN = Principal("slack:UBEN", B)  # a member of B, which holds nothing
BEA = Principal("slack:UBEA", B, platform_admin=True)  # an admin of B
DORA = Principal("discord:223456789012345670", D)  # a member of the Discord server
DAN = Principal("discord:223456789012345671", D, platform_admin=True)  # its admin
ROOT = "local:root-admin"
ANNOUNCE, GENERAL = "slack:C0ANNOUNCE", "slack:C0GENERAL"
DCHAN = "123456789012345678"
IN_TWO_HOURS = START + timedelta(hours=2)
#: The first weekday 9am after START (Monday noon): Tuesday's, then Wednesday's.
TUESDAY_NINE = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
WEDNESDAY_NINE = TUESDAY_NINE + timedelta(days=1)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS=ROOT,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_APPROVE_BROADCASTS=f"{A},{D}",
        HERALD_ANNOUNCEMENT_CHANNELS=ANNOUNCE,
        HERALD_APPROVERS=VERA.id,
        _env_file=None,
    )


@dataclass
class World:
    slack: FakeSlack
    discord: FakeDiscord
    dispatcher: Dispatcher


@pytest.fixture
async def world(herald: Herald) -> AsyncIterator[World]:
    for who in (ANNA, VERA, ADA, BEN, BEA, DORA, DAN):
        await herald.sync_member(who)
    async with (
        FakeSlack(token=SLACK_TOKEN, team_id="TA") as slack,
        FakeDiscord(DISCORD_TOKEN, bucket_limit=1000) as discord,
    ):
        slack.add_channel("C0ANNOUNCE", "announcements")
        slack.add_channel("C0GENERAL", "general")
        discord.add_channel(DCHAN)
        channels = {
            "slack": SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url),
            "discord": DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url),
        }
        dispatcher = Dispatcher(
            herald.store,
            channels,
            clock=herald.clock,
            config=DispatcherConfig(max_attempts=2, backoff_base=1, backoff_cap=5),
            rng=random.Random(7),
        )
        try:
            yield World(slack, discord, dispatcher)
        finally:
            for channel in channels.values():
                await channel.close()


async def held(herald: Herald, who: Principal, **kw: Any) -> tuple[int, int]:
    """A message of ``who`` saved awaiting approval: (schedule id, its request's id)."""
    values = {"when": "in 2 hours", "text": "Town hall at 3pm", "to": ANNOUNCE, **kw}
    schedule, created = await herald.create_schedule(who, **values)
    assert created and schedule.state == ScheduleState.AWAITING and schedule.id is not None
    assert await herald.store.schedule_jobs(schedule.id) == []  # nothing to send yet
    [request] = [r for r in await herald.approvals(who) if r.schedule_id == schedule.id]
    assert request.requested_by == who.id
    return schedule.id, request.id


async def notices(herald: Herald, platform: str) -> dict[str, list[Any]]:
    """The notices waiting for ``platform``'s people, by owner (taken)."""
    taken = await herald.take_notices(platform, herald.clock.now())
    return {group.owner: list(group.lines) for group in taken}


async def jobs(herald: Herald, schedule_id: int) -> list[Any]:
    return sorted(await herald.store.schedule_jobs(schedule_id), key=lambda j: j.id)


async def drain_to(world: World, clock: ManualClock, end: datetime) -> None:
    await world.dispatcher.drain(retry_window=(end - clock.now()).total_seconds())
    clock.set(end)


# --- held, and who is not -------------------------------------------------------------


async def test_who_is_held_and_who_is_not(herald: Herald, world: World) -> None:
    announced, first = await held(herald, ANNA)
    broadcast, second = await held(herald, ANNA, to=GENERAL, text="<!channel> lunch is here")
    requests = {r.id: r for r in await herald.approvals(ADA)}
    assert list(requests) == [first, second]
    assert requests[first].why == f"it goes to {ANNOUNCE}, an announcement channel"
    assert requests[second].why == "it mentions <!channel>, which notifies many people"
    assert (requests[first].kind, requests[first].state) == ("send", ApprovalState.PENDING)
    assert requests[first].expires_at == IN_TWO_HOURS  # decided before it is due
    detail = await herald.show_schedule(ANNA, announced)
    assert detail.schedule.state == ScheduleState.AWAITING and detail.jobs == []

    # the approvers are asked by DM (the admin, the listed approver) and in the alert
    # channel, with the request's id for their buttons; the author is not asked
    told = await notices(herald, "slack")
    assert set(told) == {ADA.id, VERA.id, f"slack:{ALERT_OWNER}"}
    for lines in told.values():
        assert [line.approval_id for line in lines] == [first, second]
        assert all(line.kind == "approval" for line in lines)
    assert "<@UANNA> asks to send to <#C0ANNOUNCE>" in told[ADA.id][0].text
    assert "<!channel>" not in told[ADA.id][1].text  # quoted, never pinging the approvers

    # a member of a tenant that holds nothing is refused as before; nothing saved
    with pytest.raises(MentionRefused):
        await herald.create_schedule(
            BEN, to="slack:C0BBBB", when="in 2 hours", text="<!channel> lunch is here"
        )
    assert await herald.approvals(BEA) == [] and await herald.list_schedules(BEN) == []
    # an admin is never held, in an announcement channel or with a broadcast
    schedule, _ = await herald.create_schedule(
        ADA, to=ANNOUNCE, when="in 2 hours", text="<!channel> town hall at 3pm"
    )
    assert schedule.state == ScheduleState.ACTIVE and schedule.id is not None
    assert [j.state for j in await jobs(herald, schedule.id)] == [JobState.PENDING]
    # a member reads their own requests; another tenant's approver none of them
    assert [r.id for r in await herald.approvals(ANNA)] == [first, second]
    assert await herald.approvals(BEA) == []
    assert broadcast != announced


# --- approved, rejected --------------------------------------------------------------


async def test_approved_message_is_armed_and_delivered_at_its_time(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    sid, request = await held(herald, ANNA, to=GENERAL, text="<!channel> lunch is here")
    did, drequest = await held(herald, DORA, to=f"discord:{DCHAN}", text="@everyone lunch is here")
    await notices(herald, "slack")  # the approvers' asks, out of the way
    clock.advance(timedelta(minutes=10))
    decided = await herald.approve(ADA, [request])
    assert (decided.sends, decided.retries, decided.count) == (1, 0, 1)
    assert (await herald.approve(DAN, [drequest])).count == 1
    for schedule_id in (sid, did):
        detail = await herald.show_schedule(ROOT, schedule_id)
        assert detail.schedule.state == ScheduleState.ACTIVE
        [job] = detail.jobs
        assert (job.state, job.due_at) == (JobState.PENDING, IN_TWO_HOURS)
    [row] = await herald.approvals(ADA, state=ApprovalState.APPROVED)
    assert (row.decided_by, row.decided_at) == (ADA.id, START + timedelta(minutes=10))
    [entry] = await herald.audit_log(ROOT, AuditFilter(action="approval.approve", tenant=A))
    assert (entry.actor, entry.object_id) == (ADA.id, str(request))
    [line] = (await notices(herald, "slack"))[ANNA.id]
    assert line.kind == "decided" and line.text == (
        f"<@UADA> approved your message (schedule {sid}): it will be sent."
    )

    await drain_to(world, clock, IN_TWO_HOURS - timedelta(seconds=1))
    assert world.slack.messages == [] and world.discord.messages == []
    await drain_to(world, clock, IN_TWO_HOURS)
    [sent] = world.slack.messages
    assert (sent["channel"], sent["text"]) == ("C0GENERAL", "<!channel> lunch is here")
    [message] = world.discord.messages
    assert message["content"] == "@everyone lunch is here"
    [post] = world.discord.requests_to(f"POST /api/v10/channels/{DCHAN}/messages")
    # what the approver vouched for: Discord notifies @everyone
    assert post.json()["allowed_mentions"] == {"parse": ["users", "roles", "everyone"]}
    with pytest.raises(InvalidInput, match="approved already"):
        await herald.approve(VERA, [request])


async def test_rejected_with_a_reason_is_cancelled_and_the_author_told_why(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    sid, request = await held(herald, ANNA)
    await notices(herald, "slack")
    decided = await herald.reject(VERA, [request], reason="Not before the all-hands, please")
    assert decided.sends == 1
    detail = await herald.show_schedule(ANNA, sid)
    assert detail.schedule.state == ScheduleState.CANCELLED and detail.jobs == []
    [row] = await herald.approvals(ANNA, state=ApprovalState.REJECTED)
    assert (row.decided_by, row.reason) == (VERA.id, "Not before the all-hands, please")
    [line] = (await notices(herald, "slack"))[ANNA.id]
    assert line.kind == "decided" and line.text == (
        f"<@UVERA> rejected your message (schedule {sid}): Not before the all-hands, "
        "please Nothing was sent."
    )
    [entry] = await herald.audit_log(ROOT, AuditFilter(action="approval.reject"))
    assert entry.details["reason"] == "Not before the all-hands, please"
    with pytest.raises(InvalidInput, match="rejected already"):
        await herald.approve(ADA, [request])
    await drain_to(world, clock, IN_TWO_HOURS + timedelta(hours=1))
    assert world.slack.messages == []


# --- not decided in time ---------------------------------------------------------------


async def test_one_off_not_decided_expires_at_its_due_time(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    sid, request = await held(herald, ANNA)
    await notices(herald, "slack")
    clock.set(IN_TWO_HOURS - timedelta(seconds=1))
    assert await herald.lapse_approvals() == 0
    clock.set(IN_TWO_HOURS)
    assert await herald.lapse_approvals() == 1
    assert await herald.lapse_approvals() == 0  # once
    [row] = await herald.approvals(ADA, state=ApprovalState.EXPIRED)
    assert (row.id, row.reason) == (request, "Not approved before it was due.")
    detail = await herald.show_schedule(ANNA, sid)
    assert detail.schedule.state == ScheduleState.CANCELLED and detail.jobs == []
    [line] = (await notices(herald, "slack"))[ANNA.id]
    assert line.text == (
        f"Your message (schedule {sid}) was not approved before 2026-03-02 14:00 UTC: it "
        "expired and was not sent. Schedule it again if it still matters."
    )
    with pytest.raises(InvalidInput, match="expired already"):
        await herald.approve(ADA, [request])
    await drain_to(world, clock, IN_TWO_HOURS + timedelta(hours=1))
    assert world.slack.messages == []


async def test_recurring_not_decided_waits_for_its_next_occurrence(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    sid, request = await held(herald, ANNA, when="every weekday at 9am")
    await notices(herald, "slack")
    clock.set(TUESDAY_NINE)
    assert await herald.lapse_approvals() == 1
    [row] = await herald.approvals(ADA)
    assert (row.id, row.state, row.expires_at) == (request, "pending", WEDNESDAY_NINE)
    detail = await herald.show_schedule(ANNA, sid)
    assert detail.schedule.state == ScheduleState.AWAITING
    assert detail.schedule.next_run_at == WEDNESDAY_NINE
    [line] = (await notices(herald, "slack"))[ANNA.id]
    assert "that occurrence was not sent. It still waits for an approver." in line.text

    clock.set(TUESDAY_NINE + timedelta(hours=1))
    await herald.approve(ADA, [request])
    await drain_to(world, clock, WEDNESDAY_NINE - timedelta(seconds=1))
    assert world.slack.messages == []  # Tuesday's was never sent
    await drain_to(world, clock, WEDNESDAY_NINE)
    [sent] = world.slack.messages
    assert (sent["channel"], sent["text"]) == ("C0ANNOUNCE", "Town hall at 3pm")


# --- edits, self-approval, tenants ------------------------------------------------------


async def test_an_edit_after_approval_asks_again(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    sid, first = await held(herald, ANNA)
    await herald.approve(ADA, [first])
    [job] = await jobs(herald, sid)
    assert job.state == JobState.PENDING

    await herald.edit_schedule(ANNA, sid, text="Town hall moved to 4pm")
    detail = await herald.show_schedule(ANNA, sid)
    assert detail.schedule.state == ScheduleState.AWAITING
    assert {j.state for j in detail.jobs} <= {JobState.CANCELLED}  # nothing left to send
    [second] = await herald.approvals(ADA)
    assert second.id != first and second.body == "Town hall moved to 4pm"
    [kept] = await herald.approvals(ADA, state=ApprovalState.APPROVED)
    assert kept.id == first  # the first decision stays what it was
    await drain_to(world, clock, IN_TWO_HOURS)
    assert world.slack.messages == []

    clock.set(START + timedelta(minutes=30))
    await herald.approve(VERA, [second.id])
    await drain_to(world, clock, IN_TWO_HOURS)
    [sent] = world.slack.messages
    assert sent["text"] == "Town hall moved to 4pm"


async def test_an_edit_of_a_request_pending_replaces_it(herald: Herald, world: World) -> None:
    sid, first = await held(herald, ANNA)
    await herald.edit_schedule(ANNA, sid, text="Town hall moved to 4pm")
    [request] = await herald.approvals(ADA)
    assert request.id != first and request.body == "Town hall moved to 4pm"
    [withdrawn] = await herald.approvals(ADA, state=ApprovalState.WITHDRAWN)
    assert withdrawn.id == first
    with pytest.raises(InvalidInput):
        await herald.approve(ADA, [first])


async def test_nobody_approves_their_own_and_members_none(herald: Herald, world: World) -> None:
    _, own = await held(herald, VERA)  # an approver's own message is held too
    with pytest.raises(PermissionDenied, match="your own"):
        await herald.approve(VERA, [own])
    with pytest.raises(PermissionDenied, match="your own"):
        await herald.reject(VERA, [own], reason="changed my mind")
    with pytest.raises(PermissionDenied, match="approvers"):
        await herald.approve(ANNA, [own])  # a member who is no approver
    denied = await herald.audit_log(ROOT, AuditFilter(action="approval.approve.denied"))
    assert sorted(row.actor for row in denied) == sorted([VERA.id, ANNA.id])
    [row] = await herald.approvals(ADA)
    assert row.state == ApprovalState.PENDING  # refusals changed nothing
    assert (await herald.approve(ADA, [own])).sends == 1


async def test_another_tenants_requests_are_not_found(herald: Herald, world: World) -> None:
    sid, request = await held(herald, ANNA)
    with pytest.raises(NotFound):
        await herald.approve(BEA, [request])
    with pytest.raises(NotFound):
        await herald.reject(BEA, [request], reason="no")
    with pytest.raises(NotFound):
        await herald.approve(DAN, [request])
    assert await herald.approvals(BEA, state=None) == []
    [row] = await herald.approvals(ADA)
    assert row.state == ApprovalState.PENDING
    schedule = (await herald.show_schedule(ANNA, sid)).schedule
    assert schedule.state == ScheduleState.AWAITING


async def test_decided_by_another_approver_first_is_a_conflict(
    herald: Herald, world: World
) -> None:
    """Two approvers at once: the second reads a request still pending, then finds it
    decided when it writes."""
    _, request = await held(herald, ANNA)
    [row] = await herald.approvals(ADA)
    await herald.approve(VERA, [request])
    with pytest.raises(Conflict):
        await herald.store.decide_send(
            row,
            approve=False,
            by=ADA.id,
            reason=None,
            now=herald.clock.now(),
            schedule_values={"state": ScheduleState.CANCELLED.value, "next_run_at": None},
            arm_at=None,
            audit=AuditEntry(ADA.id, "approval.reject", "approval", tenant=A),
            tell=[],
        )
    [row] = await herald.approvals(ADA, state=ApprovalState.APPROVED)
    assert row.decided_by == VERA.id  # the first decision stands


async def test_a_decision_racing_an_edit_waits_for_it_without_a_deadlock(
    herald: Herald, world: World, db_url: str
) -> None:
    """An edit locks the schedule, then replaces its request; a decision arriving
    meanwhile waits on the schedule's lock, not the request's (PostgreSQL's deadlock
    detector aborted one of the two), then finds the request withdrawn: a Conflict."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite writes one transaction at a time: nothing to interleave")
    schedule_id, request = await held(herald, ANNA)
    engine = herald.store._engine
    async with engine.connect() as edit, engine.connect() as watch:
        await edit.execute(sa.text("SET lock_timeout = '10s'"))
        pid = (await edit.execute(sa.text("SELECT pg_backend_pid()"))).scalar_one()
        await edit.execute(  # the edit's first write: the schedule's row
            sa.text("UPDATE schedule SET version = version + 1 WHERE id = :id"),
            {"id": schedule_id},
        )
        deciding = asyncio.create_task(herald.approve(VERA, [request]))
        blocked = sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"
        )
        for _ in range(1000):  # until the decision waits for the edit's lock
            waiting = (await watch.execute(blocked, {"pid": pid})).scalar_one()
            await watch.rollback()  # pg_stat_activity is read once a transaction
            if waiting:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the decision never waited for the edit")
        await edit.execute(  # the edit's request replaces the pending one (_hold)
            sa.text(
                "UPDATE approval SET state = 'withdrawn', shown = false "
                "WHERE schedule_id = :id AND state = 'pending'"
            ),
            {"id": schedule_id},
        )
        await edit.commit()
        with pytest.raises(Conflict):
            await deciding
    assert await herald.store.schedule_jobs(schedule_id) == []


async def test_a_decision_read_before_a_lapse_moved_the_request_is_a_conflict(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    """An approver reads a recurring message's request just before its occurrence; the
    lapse moves it to the next one and tells the author that one was not sent: the
    approval then arms nothing at the occurrence gone (sent late, against what the
    author was told) but is a conflict, and the request waits as it was moved."""
    sid, request = await held(herald, ANNA, when="every weekday at 9am")
    [row] = await herald.approvals(ADA)
    clock.set(TUESDAY_NINE)
    assert await herald.lapse_approvals() == 1
    with pytest.raises(Conflict, match="moved to its next occurrence"):
        await herald.store.decide_send(
            row,
            approve=True,
            by=ADA.id,
            reason=None,
            now=clock.now(),
            schedule_values={"state": ScheduleState.ACTIVE.value, "next_run_at": TUESDAY_NINE},
            arm_at=TUESDAY_NINE,
            audit=AuditEntry(ADA.id, "approval.approve", "approval", tenant=A),
            tell=[],
        )
    assert await herald.store.schedule_jobs(sid) == []
    [row] = await herald.approvals(ADA)
    assert (row.id, row.state, row.expires_at) == (request, "pending", WEDNESDAY_NINE)


# --- a dead letter's retry request, decided the same way --------------------------------


async def test_retry_requests_are_decided_by_the_same_verbs(
    herald: Herald, clock: ManualClock, world: World
) -> None:
    world.slack.add_channel("C0GONE", "gone")
    world.slack.script(
        slack_error("channel_not_found"), slack_error("channel_not_found"), on="chat.postMessage"
    )
    one, _ = await herald.create_schedule(ANNA, to="slack:C0GONE", when="in 1 minute", text="a")
    two, _ = await herald.create_schedule(ANNA, to="slack:C0GONE", when="in 1 minute", text="b")
    await drain_to(world, clock, START + timedelta(minutes=1))
    letters: dict[int | None, int] = {
        d.schedule_id: d.job_id for d in await herald.dead_letters(ANNA)
    }
    assert set(letters) == {one.id, two.id}
    assert await herald.retry_dead_letters(ANNA, list(letters.values())) == ("requested", 2)
    requests = {r.job_id or 0: r for r in await herald.approvals(ADA, kind="retry")}
    assert set(requests) == set(letters.values())
    assert all(r.requested_by == ANNA.id and r.kind == "retry" for r in requests.values())
    assert [r.job_id for r in await herald.approvals(ANNA, kind="retry")] == sorted(requests)
    with pytest.raises(PermissionDenied):  # a listed approver decides held messages only
        await herald.approve(VERA, [requests[letters[one.id]].id])
    with pytest.raises(NotFound):
        await herald.approve(BEA, [requests[letters[one.id]].id])

    decided = await herald.approve(ADA, [requests[letters[one.id]].id])
    assert (decided.sends, decided.retries) == (0, 1)
    rejected = await herald.reject(ADA, [requests[letters[two.id]].id], reason="it is gone")
    assert rejected.retries == 1
    await drain_to(world, clock, START + timedelta(minutes=2))
    [sent] = world.slack.messages  # the approved retry went out; the rejected did not
    assert (sent["channel"], sent["text"]) == ("C0GONE", "a")
    [still] = await herald.dead_letter(ANNA, letters[two.id])
    assert (still.retry_rejected_by, still.retry_reject_reason) == (ADA.id, "it is gone")
    states = {r.job_id: r.state for r in await herald.approvals(ADA, kind="retry", state=None)}
    assert states == {letters[one.id]: "approved", letters[two.id]: "rejected"}


async def test_a_request_for_approval_is_not_held_back_by_the_digest(
    herald: Herald, world: World, clock: ManualClock
) -> None:
    """An approver messaged a minute ago (their other notices wait for the digest window,
    HERALD_NOTICE_DIGEST) is asked at once: the author waits on the answer."""
    told = {VERA.id: clock.now() - timedelta(minutes=1)}
    schedule, _ = await herald.create_schedule(ANNA, to=ANNOUNCE, when="in 2 hours", text="hi")
    assert schedule.state == ScheduleState.AWAITING.value
    taken = await herald.take_notices("slack", clock.now(), told=told)
    asked = {group.owner: group for group in taken}
    [line] = asked[VERA.id].lines
    assert line.approval_id is not None and "asks to send to" in line.text
