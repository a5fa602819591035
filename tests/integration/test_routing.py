"""Routing through the dispatcher (issue 35): one schedule to several recipients, each
its own job, key and fate; a recipient's chain tried in order; recipients added and
removed; the caps and rights checked per destination. Real SQLite and PostgreSQL, the
fake Slack, SMTP and webhook servers, an injected clock and drain mode."""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr

from core import views
from core.actors import Principal
from core.cases import Herald
from core.channels.base import Channel, Delivery, DeliveryResult
from core.channels.email import EmailChannel, message_id
from core.channels.slack import SlackChannel
from core.channels.webhook import WebhookChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.models import LOCAL_TENANT, Job
from core.settings import Settings, load_settings
from core.store import ScheduleQuery, Store
from core.tenancy import MentionRefused, QuotaExceeded
from tests.fakes import FakeSlack, FakeSMTP, Scripted, WebhookReceiver
from tests.support.calendars import attach_skip_calendars, data
from tests.support.channels import RecordingChannel

ALICE, ADMIN = "local:alice", "local:root-admin"
SLACK_TOKEN = "xoxb-1234-routing-token"
WHSEC = "whsec_" + base64.b64encode(b"sixteen byte key").decode()
CONFIG = DispatcherConfig(max_attempts=3, backoff_base=5, backoff_cap=60, max_lateness=3600)
GONE = Scripted(status=410, json={"error": "gone"})
DOWN = Scripted(status=503, json={"error": "down"})


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=SLACK_TOKEN) as fake:
        for channel_id, name in (("C0OPS", "ops"), ("C0DEV", "dev"), ("C0OLD", "old")):
            fake.add_channel(channel_id, name)
        fake.add_person("U0ALICE")
        yield fake


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSMTP]:
    async with FakeSMTP() as fake:
        yield fake


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(secret=WHSEC) as fake:
        yield fake


@pytest.fixture
async def channels(
    slack: FakeSlack, smtp: FakeSMTP, receiver: WebhookReceiver
) -> AsyncIterator[dict[str, Channel]]:
    made: dict[str, Any] = {
        "slack": SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0),
        "email": EmailChannel(
            host="127.0.0.1",
            port=smtp.port,
            from_address="Herald <herald@example.com>",
            tls="none",
            timeout=2.0,
        ),
        "webhook": WebhookChannel(lambda url: WHSEC, timeout=2.0, allow_private=True),
    }
    yield made
    for channel in made.values():
        await channel.close()


@pytest.fixture
async def routed(
    store: Store, settings: Settings, clock: ManualClock, channels: dict[str, Channel]
) -> tuple[Herald, Dispatcher]:
    """A Herald that checks destinations with the fakes, and a dispatcher sending there
    (Alice's Slack account, slack:U0ALICE, is a member Herald knows)."""
    herald = Herald(store, settings, clock, channels=channels)
    await herald.sync_member(Principal("slack:U0ALICE", LOCAL_TENANT), display_name="Alice")
    dispatcher = Dispatcher(store, channels, clock=clock, config=CONFIG, rng=random.Random(7))
    return herald, dispatcher


def refuse_dms(slack: FakeSlack) -> None:
    """Alice's DM (opened when her schedule was checked) is archived: a post there
    fails for good."""
    for im in slack.ims.values():
        slack.channels[im].is_archived = True


def hook(receiver: WebhookReceiver, name: str = "herald") -> str:
    return f"webhook:{receiver.url}/hooks/{name}"


async def jobs_of(herald: Herald, schedule_id: int) -> list[Job]:
    jobs = await herald.store.schedule_jobs(schedule_id, limit=1000)
    return sorted(jobs, key=lambda j: (j.occurrence_at, j.recipient))


async def fared(herald: Herald, schedule_id: int) -> str | None:
    detail = await herald.show_schedule(ALICE, schedule_id)
    return views.fared(detail.schedule, detail.jobs)


# --- fan-out ------------------------------------------------------------------------


async def test_three_recipients_three_jobs_one_failing_for_good_holds_none(
    routed: tuple[Herald, Dispatcher],
    clock: ManualClock,
    slack: FakeSlack,
    smtp: FakeSMTP,
    receiver: WebhookReceiver,
) -> None:
    herald, d = routed
    to = ["slack:C0OPS", hook(receiver), "email:bob@example.com"]
    s, _ = await herald.create_schedule(ALICE, to=to, when="in 5 minutes", text="Stand-up")
    assert views.recipients_text(s) == f"slack:C0OPS, {views.destination(to[1])}, {to[2]}"
    jobs = await jobs_of(herald, s.id)
    assert [(j.recipient, j.state) for j in jobs] == [
        (0, "pending"),
        (1, "pending"),
        (2, "pending"),
    ]
    keys = [j.idempotency_key for j in jobs]
    assert len(set(keys)) == 3

    smtp.reply("rcpt", "550 5.1.1 No such mailbox")  # bob's address is refused for good
    clock.advance(timedelta(minutes=5))
    summary = await d.drain(retry_window=3600)

    assert (summary.outcomes["delivered"], summary.outcomes["dead"]) == (2, 1)
    [posted] = slack.messages
    assert (posted["channel"], posted["text"]) == ("C0OPS", "Stand-up")
    [webhook] = receiver.received
    assert webhook.verified and webhook.payload["text"] == "Stand-up"
    assert webhook.id == keys[1]  # each recipient's own key
    assert smtp.messages == []
    [letter] = await herald.dead_letters(ALICE)
    assert letter.destination == "email:bob@example.com" and letter.job_id == jobs[2].id
    assert [j.state for j in await jobs_of(herald, s.id)] == ["delivered", "delivered", "dead"]
    assert await fared(herald, s.id) == "delivered to 2 of 3; email:bob@example.com failed"
    assert (await d.drain()).as_dict()["delivered"] == 0  # never twice


async def test_a_recurring_fan_out_plans_each_recipients_next_occurrence(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, slack: FakeSlack, smtp: FakeSMTP
) -> None:
    herald, d = routed
    s, _ = await herald.create_schedule(
        ALICE,
        to=["slack:C0OPS", "slack:C0DEV", {"first_of": ["slack:@U0ALICE", "email:a@example.com"]}],
        when="every day at 13:00",
        text="Daily",
    )
    refuse_dms(slack)  # the DM fails for good: the email delivers
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=600)
    jobs = await jobs_of(herald, s.id)
    first, following = jobs[:3], jobs[3:]
    assert [(j.recipient, j.state, j.step) for j in first] == [
        (0, "delivered", 0),
        (1, "delivered", 0),
        (2, "delivered", 1),
    ]
    assert sorted(m["channel"] for m in slack.messages) == ["C0DEV", "C0OPS"]
    assert [m.rcpt_tos for m in smtp.messages] == [["a@example.com"]]
    # the next day: one job per recipient, each at its chain's first step, new keys
    assert [(j.recipient, j.state, j.step, j.destination) for j in following] == [
        (0, "pending", 0, None),
        (1, "pending", 0, "slack:C0DEV"),
        (2, "pending", 0, "slack:@U0ALICE"),
    ]
    assert {j.occurrence_at for j in following} == {first[0].occurrence_at + timedelta(days=1)}
    assert not {j.idempotency_key for j in following} & {j.idempotency_key for j in first}
    assert await fared(herald, s.id) == "delivered to 3 of 3"


# --- fallback -----------------------------------------------------------------------


async def test_a_chain_falls_back_when_its_first_step_is_refused_for_good(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, slack: FakeSlack, smtp: FakeSMTP
) -> None:
    herald, d = routed
    s, _ = await herald.create_schedule(
        ALICE,
        to=[{"first_of": ["slack:@U0ALICE", "email:alice@example.com"]}],
        when="in 1 minute",
        text="Your turn",
    )
    assert views.recipients_text(s) == "slack:@U0ALICE or email:alice@example.com"
    refuse_dms(slack)
    clock.advance(60)
    summary = await d.drain(retry_window=3600)

    assert summary.outcomes["delivered"] == 1 and summary.outcomes["dead"] == 0
    assert slack.messages == []  # exactly one step delivers
    [mail] = smtp.messages
    assert mail.rcpt_tos == ["alice@example.com"]
    [job] = await jobs_of(herald, s.id)
    assert (job.state, job.step, job.destination) == ("delivered", 1, "email:alice@example.com")
    # the second step sends with a key of its own: a new message, not a repeat
    assert mail.message["Message-ID"] == message_id(f"{job.idempotency_key}.1", "example.com")
    detail = await herald.show_schedule(ALICE, s.id)
    tries = [(a.destination, a.outcome) for a in reversed(detail.attempts)]
    assert tries == [("slack:@U0ALICE", "permanent"), ("email:alice@example.com", "ok")]
    assert await herald.dead_letters(ALICE) == []
    assert detail.schedule.state == "completed"


async def test_only_the_last_steps_failure_is_a_dead_letter_and_a_retry_starts_over(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, smtp: FakeSMTP, receiver: WebhookReceiver
) -> None:
    herald, d = routed
    first = hook(receiver, "first")
    s, _ = await herald.create_schedule(
        ALICE, to=[{"first_of": [first, "email:alice@example.com"]}], when="in 1 minute", text="x"
    )
    receiver.script(GONE, on="/hooks/first")
    smtp.reply("rcpt", "550 5.1.1 No such mailbox")
    clock.advance(60)
    summary = await d.drain(retry_window=3600)
    assert summary.outcomes["dead"] == 1
    [letter] = await herald.dead_letters(ALICE)
    assert letter.destination == "email:alice@example.com"
    assert "550" in (letter.last_error or "")
    detail = await herald.show_schedule(ALICE, s.id)
    assert [a.destination for a in reversed(detail.attempts)] == [first, "email:alice@example.com"]
    assert await fared(herald, s.id) is None  # one recipient: its state says it

    # a member asks, an admin approves: the chain starts again at its first step
    assert await herald.retry_dead_letters(ALICE, [letter.job_id]) == ("requested", 1)
    assert await herald.retry_dead_letters(ADMIN, [letter.job_id]) == ("retried", 1)
    [job] = await jobs_of(herald, s.id)
    assert (job.state, job.step, job.destination) == ("pending", 0, first)
    summary = await d.drain(retry_window=3600)
    assert summary.outcomes["delivered"] == 1
    assert [r.path for r in receiver.requests] == ["/hooks/first", "/hooks/first"]
    assert receiver.received[-1].id == job.idempotency_key  # step 0's key, as before
    assert smtp.messages == []
    assert await herald.dead_letters(ADMIN) == []


async def test_a_step_past_its_time_limit_falls_back(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, smtp: FakeSMTP, receiver: WebhookReceiver
) -> None:
    herald, _ = routed
    patient = DispatcherConfig(max_attempts=50, backoff_base=60, backoff_cap=120, max_lateness=7200)
    d = Dispatcher(herald.store, herald.channels, clock=clock, config=patient, rng=random.Random(7))
    first = hook(receiver, "slow")
    s, _ = await herald.create_schedule(
        ALICE,
        to=[{"first_of": [first, "email:alice@example.com"]}],
        when="in 1 minute",
        text="x",
        step_timeout=600,
    )
    assert s.recipients == [{"id": 0, "to": [first, "email:alice@example.com"], "timeout": 600}]
    receiver.script(*[DOWN] * 40, on="/hooks/slow")  # it keeps failing, retryably
    clock.advance(60)
    due = clock.now()
    await d.drain(retry_window=3600)
    [job] = await jobs_of(herald, s.id)
    assert (job.state, job.step) == ("delivered", 1)
    [mail] = smtp.messages
    assert mail.rcpt_tos == ["alice@example.com"]
    detail = await herald.show_schedule(ALICE, s.id)
    attempts = list(reversed(detail.attempts))
    webhook_tries = [a for a in attempts if a.destination == first]
    assert len(webhook_tries) >= 2 and all(a.outcome == "retry" for a in webhook_tries)
    # it kept to the first step for its 10 minutes, and moved on when they were up
    # (not at the first failure after them: the next try would have been later)
    limit = due + timedelta(seconds=600)
    assert all(a.started_at < limit for a in webhook_tries)
    [emailed] = [a for a in attempts if a.destination == "email:alice@example.com"]
    assert emailed.outcome == "ok" and emailed.started_at == limit
    assert job.step_since == limit


# --- editing and cancelling ---------------------------------------------------------


async def test_edit_adds_and_removes_recipients_and_cancel_stops_all(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, slack: FakeSlack
) -> None:
    herald, d = routed
    s, _ = await herald.create_schedule(
        ALICE, to=["slack:C0OPS", "slack:C0DEV"], when="every day at 13:00", text="Daily"
    )
    before = {j.recipient: j for j in await jobs_of(herald, s.id)}
    edited = await herald.edit_schedule(ALICE, s.id, remove=["slack:C0DEV"], add=["slack:C0OLD"])
    assert views.recipients_text(edited) == "slack:C0OPS, slack:C0OLD"
    jobs = await jobs_of(herald, s.id)
    assert [(j.recipient, j.state) for j in jobs] == [
        (0, "pending"),
        (1, "cancelled"),
        (2, "pending"),
    ]
    assert jobs[0].idempotency_key == before[0].idempotency_key  # a kept recipient keeps its job
    assert jobs[2].destination == "slack:C0OLD"
    assert jobs[2].occurrence_at == jobs[0].occurrence_at

    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=600)
    assert sorted(m["channel"] for m in slack.messages) == ["C0OLD", "C0OPS"]
    nxt = [j for j in await jobs_of(herald, s.id) if j.state == "pending"]
    assert [j.recipient for j in nxt] == [0, 2]  # none for the removed recipient

    await herald.cancel_schedule(ALICE, s.id)
    assert all(j.state != "pending" for j in await jobs_of(herald, s.id))
    clock.advance(timedelta(days=1))
    assert (await d.drain()).as_dict()["delivered"] == 0


async def test_replacing_the_only_recipient_rearms_it_as_a_new_one(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, slack: FakeSlack
) -> None:
    herald, d = routed
    s, _ = await herald.create_schedule(ALICE, to="slack:C0OPS", when="in 1 hour", text="x")
    edited = await herald.edit_schedule(ALICE, s.id, to="slack:C0DEV")
    assert (edited.destination, views.recipients_text(edited)) == ("slack:C0DEV", "slack:C0DEV")
    jobs = await jobs_of(herald, s.id)
    assert [(j.recipient, j.state) for j in jobs] == [(0, "cancelled"), (1, "pending")]
    clock.advance(timedelta(hours=1))
    assert (await d.drain()).outcomes["delivered"] == 1
    assert [m["channel"] for m in slack.messages] == ["C0DEV"]


class EditingChannel(Channel):
    """Slack as the fake answers it, but the author removes #dev while its message is
    on its way (the job is claimed)."""

    kind = "slack"

    def __init__(self, inner: Channel, herald: Herald, schedule_id: list[int]) -> None:
        self.inner, self.herald, self.schedule_id = inner, herald, schedule_id
        self.rate_limit = inner.rate_limit

    async def send(self, delivery: Delivery) -> DeliveryResult:
        if str(delivery.destination) == "slack:C0DEV" and self.schedule_id:
            await self.herald.edit_schedule(ALICE, self.schedule_id.pop(), remove=["slack:C0DEV"])
        return await self.inner.send(delivery)


async def test_a_removed_recipients_claimed_job_plans_no_next_one(
    routed: tuple[Herald, Dispatcher], clock: ManualClock, slack: FakeSlack
) -> None:
    herald, _ = routed
    s, _ = await herald.create_schedule(
        ALICE, to=["slack:C0OPS", "slack:C0DEV"], when="every day at 13:00", text="Daily"
    )
    editing = EditingChannel(herald.channels["slack"], herald, [s.id])
    d = Dispatcher(herald.store, {"slack": editing}, clock=clock, config=CONFIG)
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=600)
    assert sorted(m["channel"] for m in slack.messages) == ["C0DEV", "C0OPS"]  # already sent
    jobs = await jobs_of(herald, s.id)
    assert [(j.recipient, j.state) for j in jobs if j.state == "pending"] == [(0, "pending")]
    assert views.recipients_text(await herald.store.get_schedule(s.id)) == "slack:C0OPS"


# --- caps, quotas and rights per destination ----------------------------------------


async def test_a_member_may_name_fifty_recipients_not_fifty_one(herald: Herald) -> None:
    many = [f"slack:C{n:08d}" for n in range(51)]
    with pytest.raises(InvalidInput) as refused:
        await herald.create_schedule(ALICE, to=many, when="in 1 hour", text="x")
    assert str(refused.value) == (
        "A schedule may go to at most 50 recipients; this one names 51. Split it, or ask an admin."
    )
    assert await herald.store.list_schedules(ScheduleQuery(limit=10)) == []  # nothing stored
    mine, _ = await herald.create_schedule(ALICE, to=many[:50], when="in 1 hour", text="x")
    assert len(await jobs_of(herald, mine.id)) == 50
    theirs, _ = await herald.create_schedule(ADMIN, to=many, when="in 1 hour", text="x")
    assert len(await jobs_of(herald, theirs.id)) == 51
    with pytest.raises(InvalidInput, match="at most 50 recipients; this one names 51"):
        await herald.edit_schedule(ALICE, mine.id, add=["slack:C99999999"])
    assert len(await jobs_of(herald, mine.id)) == 50


def _slack_settings(db_url: str, **extra: Any) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_SLACK_ADMINS_FROM_WORKSPACE=True,
        _env_file=None,
        **extra,
    )


TEAM = "slack:TA"
ANNA = Principal("slack:UANNA", TEAM)
BOB = Principal("slack:UBOB", TEAM)
ADA = Principal("slack:UADA", TEAM, platform_admin=True)


@pytest.fixture
async def team(store: Store, db_url: str, clock: ManualClock) -> Herald:
    herald = Herald(store, _slack_settings(db_url, HERALD_RECIPIENT_HOURLY_CAP=2), clock)
    for who in (ANNA, BOB, ADA):
        await herald.sync_member(who, display_name=who.id.removeprefix("slack:U").title())
    return herald


async def test_the_hourly_cap_counts_each_recipient_of_a_fan_out(team: Herald) -> None:
    for n in range(2):
        await team.create_schedule(ANNA, to="slack:@UBOB", when="in 2 hours", text=f"ping {n}")
    with pytest.raises(QuotaExceeded, match="slack:@UBOB"):
        await team.create_schedule(
            ANNA, to=["slack:C0TEAM", "slack:@UBOB"], when="in 2 hours", text="both"
        )
    s, _ = await team.create_schedule(
        ANNA, to=["slack:C0TEAM", "slack:C0DEV"], when="in 2 hours", text="rooms"
    )
    assert len(await jobs_of(team, s.id)) == 2
    # the rooms now have two each within that hour too
    await team.create_schedule(ANNA, to="slack:C0TEAM", when="in 2 hours", text="again")
    with pytest.raises(QuotaExceeded, match="slack:C0TEAM"):
        await team.create_schedule(
            ANNA, to=["slack:C0NEW", "slack:C0TEAM"], when="in 2 hours", text="x"
        )
    await team.create_schedule(ADA, to=["slack:C0TEAM", "slack:@UBOB"], when="in 2 hours", text="x")


async def test_a_members_quick_rule_is_refused_for_any_shared_recipient(team: Herald) -> None:
    with pytest.raises(QuotaExceeded, match="into a shared channel"):
        await team.create_schedule(
            ANNA, to=["slack:@UANNA", "slack:C0TEAM"], when="every minute", text="x"
        )
    mine, _ = await team.create_schedule(ANNA, to=["slack:@UANNA"], when="every minute", text="x")
    # nor can an edit add one to the quick rule it keeps
    with pytest.raises(QuotaExceeded, match="into a shared channel"):
        await team.edit_schedule(ANNA, mine.id, add=["slack:C0TEAM"])
    with pytest.raises(QuotaExceeded, match="into a shared channel"):
        await team.edit_schedule(ANNA, mine.id, to="slack:C0TEAM")
    # with a slower rule in the same edit, it may
    slower = await team.edit_schedule(ANNA, mine.id, add=["slack:C0TEAM"], when="every day at 9am")
    assert views.recipients_text(slower) == "slack:@UANNA, slack:C0TEAM"


async def test_mass_mentions_stay_admin_only_for_each_slack_recipient(team: Herald) -> None:
    with pytest.raises(MentionRefused, match="Only admins can notify a whole channel"):
        await team.create_schedule(
            ANNA,
            to=["email:ops@example.com", "slack:C0TEAM"],
            when="in 1 hour",
            text="<!channel> up",
        )
    s, _ = await team.create_schedule(
        ANNA, to=["email:ops@example.com"], when="in 1 hour", text="<!channel> up"
    )
    with pytest.raises(MentionRefused):
        await team.edit_schedule(ANNA, s.id, add=["slack:C0TEAM"])
    s, _ = await team.create_schedule(
        ADA, to=["email:ops@example.com", "slack:C0TEAM"], when="in 1 hour", text="<!channel> up"
    )
    assert views.recipients_text(s) == "email:ops@example.com, slack:C0TEAM"


# --- skip calendars -----------------------------------------------------------------


async def test_a_skipped_occurrence_is_skipped_for_every_recipient(
    herald: Herald, clock: ManualClock
) -> None:
    """Good Friday (3 Apr 2026) and Easter Monday are on the calendar: the waiting jobs
    of both recipients on Good Friday are skipped, and Easter Monday's skip is recorded
    for each; nothing is sent to either that day."""
    clock.set(datetime(2026, 4, 2, 12, tzinfo=UTC))
    s, _ = await herald.create_schedule(
        ALICE,
        to=["webhook:https://example.com/a", "webhook:https://example.com/b"],
        when="every weekday at 9am",
        text="x",
        tz="Europe/Berlin",
    )
    s = await attach_skip_calendars(
        herald, ALICE, s.id, files={"holidays.ics": data("holidays.ics")}
    )
    nine = datetime(2026, 4, 7, 7, tzinfo=UTC)
    assert s.next_run_at == nine
    rows = [(j.occurrence_at.day, j.recipient, j.state) for j in await jobs_of(herald, s.id)]
    assert rows[:6] == [
        (3, 0, "skipped"),
        (3, 1, "skipped"),
        (6, 0, "skipped"),
        (6, 1, "skipped"),
        (7, 0, "pending"),
        (7, 1, "pending"),
    ]
    channel = RecordingChannel(kind="webhook")
    d = Dispatcher(herald.store, {"webhook": channel}, clock=clock, config=CONFIG)
    clock.set(datetime(2026, 4, 6, 12, tzinfo=UTC))
    await d.drain()
    assert channel.deliveries == []
    clock.set(nine)
    await d.drain()
    assert sorted(str(x.destination) for x in channel.deliveries) == [
        "webhook:https://example.com/a",
        "webhook:https://example.com/b",
    ]


async def test_how_many_recipients_fared_counts_them_all(
    herald: Herald, clock: ManualClock
) -> None:
    """With 40 recipients the next occurrence's 40 waiting jobs do not hide the last
    one's from the schedule's detail."""
    to = [f"webhook:https://example.com/{n}" for n in range(40)]
    s, _ = await herald.create_schedule(ALICE, to=to, when="every day at 13:00", text="x")

    def script(delivery: Delivery) -> DeliveryResult:
        if str(delivery.destination).endswith("/7"):
            return DeliveryResult.permanent("gone", 410)
        return DeliveryResult.ok(200)

    channel = RecordingChannel(script, kind="webhook")
    d = Dispatcher(herald.store, {"webhook": channel}, clock=clock, config=CONFIG)
    clock.advance(timedelta(hours=1))
    await d.drain()
    detail = await herald.show_schedule(ALICE, s.id)
    assert len(detail.jobs) == 80
    assert views.fared(detail.schedule, detail.jobs) == (
        "delivered to 39 of 40; webhook:https://example.com/… failed"
    )


async def test_replacing_all_recipients_keeps_those_named_again_as_they_were(
    herald: Herald,
) -> None:
    chain = {"first_of": ["webhook:https://example.com/a", "email:a@example.com"]}
    s, _ = await herald.create_schedule(
        ALICE, to=["slack:C0OPS", chain], when="every day at 13:00", text="x", step_timeout=600
    )
    before = {j.recipient: j.idempotency_key for j in await jobs_of(herald, s.id)}
    edited = await herald.edit_schedule(ALICE, s.id, to=[chain, "slack:C0DEV"])
    assert edited.recipients == [
        {"id": 1, "to": ["webhook:https://example.com/a", "email:a@example.com"], "timeout": 600},
        {"id": 2, "to": ["slack:C0DEV"]},
    ]
    jobs = {j.recipient: j for j in await jobs_of(herald, s.id)}
    assert jobs[1].idempotency_key == before[1] and jobs[1].state == "pending"
    assert (jobs[0].state, jobs[2].state) == ("cancelled", "pending")
