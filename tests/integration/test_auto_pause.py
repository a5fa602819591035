"""A recurring schedule that keeps failing is paused by the system (issue 38), and the
events recorded outside the dispatcher: over real SQLite and PostgreSQL, the dispatcher
in drain mode against a scripted provider, time on a ManualClock."""

from __future__ import annotations

import io
import json
import random
from datetime import timedelta

import sqlalchemy as sa

from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from core import timeexpr
from core.actors import Principal, Surface
from core.cases import Herald
from core.channels.base import Delivery, DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.events import AUTO_PAUSE_ACTOR, OutcomePolicy
from core.models import Event, EventHook, JobState, Notice, Schedule
from core.receipts import ReceiptReport
from core.settings import Settings
from core.store import Verdict
from tests.support.channels import RecordingChannel
from tests.support.store import audit_trail

TENANT = "slack:TA"
ANNA = Principal("slack:UANNA", TENANT)
ALICE = "local:alice"
OK_HOOK, BROKEN_HOOK = "webhook:https://example.com/ok", "webhook:https://example.com/broken"


class Provider:
    """Answers as a provider would: a 503 while ``failing`` (or for a broken URL)."""

    def __init__(self) -> None:
        self.failing = True

    def __call__(self, delivery: Delivery) -> DeliveryResult:
        if self.failing or "broken" in str(delivery.destination):
            return DeliveryResult.retry("503 Service Unavailable", status_code=503)
        return DeliveryResult.ok(200, f"msg-{delivery.job_id}")


def dispatcher(herald: Herald, provider: Provider, *, auto_pause_after: int = 3) -> Dispatcher:
    config = DispatcherConfig(
        max_attempts=2,
        backoff_base=5,
        backoff_cap=30,
        max_lateness=3600,
        auto_pause_after=auto_pause_after,
    )
    channels = {
        "log": RecordingChannel(provider),
        "webhook": RecordingChannel(provider, kind="webhook"),
    }
    return Dispatcher(
        herald.store, channels, clock=herald.clock, config=config, rng=random.Random(7)
    )


async def occurrence(d: Dispatcher, clock: ManualClock) -> dict[str, int]:
    """The next hourly occurrence: due, tried until it is delivered or dead."""
    clock.advance(timedelta(hours=1))
    return dict((await d.drain(retry_window=600)).outcomes)


async def schedule_of(herald: Herald, schedule_id: int) -> Schedule:
    return (await herald.show_schedule(ALICE, schedule_id)).schedule


async def rows(herald: Herald, table: sa.Table, schedule_id: int) -> list[sa.Row]:
    async with herald.store._read() as conn:
        stmt = table.select().where(table.c.schedule_id == schedule_id).order_by(table.c.id)
        return list(await conn.execute(stmt))


EVENT = Event.__table__  # type: ignore[attr-defined]
NOTICE = Notice.__table__  # type: ignore[attr-defined]


async def hear(herald: Herald, *types: str) -> None:
    """An active hook of the tenant that hears ``types``."""
    now = herald.clock.now()
    async with herald.store._session() as s:
        s.add(
            EventHook(
                tenant=TENANT,
                owner=ANNA.id,
                url="https://example.com/events",
                types=list(types),
                secret="whsec_c2VjcmV0",
                created_at=now,
                updated_at=now,
            )
        )


async def test_three_failed_occurrences_pause_it_and_tell_its_author(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ANNA, to="log:", when="every hour", text="tick")
    d = dispatcher(herald, Provider())
    for _ in range(2):
        assert (await occurrence(d, clock))["dead"] == 1
    assert (await herald.show_schedule(ANNA, s.id)).schedule.state == "active"
    assert (await occurrence(d, clock))["dead"] == 1

    detail = await herald.show_schedule(ANNA, s.id)
    assert detail.schedule.state == "paused" and detail.schedule.failed_streak == 3
    assert detail.schedule.next_run_at is None
    assert {j.state for j in detail.jobs} == {JobState.DEAD, JobState.CANCELLED}
    pause = (await audit_trail(herald.store, "schedule", str(s.id)))[-1]
    assert (pause.action, pause.actor, pause.surface) == (
        "schedule.pause",
        AUTO_PAUSE_ACTOR,
        "system",
    )
    assert pause.details["failed"] == 3
    kinds = [n.kind for n in await rows(herald, NOTICE, s.id)]
    assert kinds == ["dead", "dead", "dead", "paused"]
    [paused] = [e for e in await rows(herald, EVENT, s.id) if e.type == "schedule.paused"]
    assert json.loads(paused.data)["by"] == "system"
    # nothing more is sent while it is paused
    assert (await occurrence(d, clock)) == {}


async def test_a_delivery_resets_the_streak(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every hour", text="tick")
    provider = Provider()
    d = dispatcher(herald, provider)
    for _ in range(2):
        await occurrence(d, clock)
    assert (await schedule_of(herald, s.id)).failed_streak == 2
    provider.failing = False
    assert (await occurrence(d, clock))["delivered"] == 1
    assert (await schedule_of(herald, s.id)).failed_streak == 0
    provider.failing = True
    for _ in range(2):
        await occurrence(d, clock)
    found = await schedule_of(herald, s.id)
    assert (found.state, found.failed_streak) == ("active", 2)


async def test_one_recipient_failing_while_another_gets_it_never_pauses(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(
        ALICE, to=[OK_HOOK, BROKEN_HOOK], when="every hour", text="tick"
    )
    provider = Provider()
    provider.failing = False
    d = dispatcher(herald, provider)
    for _ in range(5):
        outcomes = await occurrence(d, clock)
        assert (outcomes["delivered"], outcomes["dead"]) == (1, 1)
    found = await schedule_of(herald, s.id)
    assert (found.state, found.failed_streak) == ("active", 0)


async def recorded(herald: Herald, delivered: set[int]) -> None:
    """The next hourly occurrence claimed and recorded in one batch, its recipients in
    ``delivered`` delivered and the others dead, the dead recorded last."""
    clock = herald.clock
    assert isinstance(clock, ManualClock)
    clock.advance(timedelta(hours=1))
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w", lease_until=now + timedelta(minutes=1), limit=10
    )
    verdicts = [
        Verdict(
            job,
            "delivered" if job.recipient in delivered else "dead",
            error=None if job.recipient in delivered else "410 Gone",
            next_run=timeexpr.next_occurrence(job.rrule or "", job.occurrence_at),
        )
        for job in jobs
    ]
    verdicts.sort(key=lambda v: v.state == "dead")
    await herald.store.finish(verdicts, worker="w", now=now, policy=OutcomePolicy())


async def test_a_death_recorded_after_anothers_delivery_in_one_batch_does_not_count(
    herald: Herald,
) -> None:
    s, _ = await herald.create_schedule(
        ALICE, to=[OK_HOOK, BROKEN_HOOK], when="every hour", text="tick"
    )
    for _ in range(2):
        await recorded(herald, delivered=set())
    assert (await schedule_of(herald, s.id)).failed_streak == 2
    await recorded(herald, delivered={0})  # one got it: the count starts again
    assert (await schedule_of(herald, s.id)).failed_streak == 0
    await recorded(herald, delivered=set())
    found = await schedule_of(herald, s.id)
    assert (found.state, found.failed_streak) == ("active", 1)


async def test_never_paused_when_off(herald: Herald, clock: ManualClock) -> None:
    off, _ = await herald.create_schedule(
        ALICE, to="log:", when="every hour", text="tick", auto_pause=False
    )
    d = dispatcher(herald, Provider())
    for _ in range(4):
        await occurrence(d, clock)
    found = await schedule_of(herald, off.id)
    assert (found.state, found.failed_streak, found.auto_pause) == ("active", 4, False)
    # and on again by an edit: the next failure pauses it
    await herald.edit_schedule(ALICE, off.id, auto_pause=True)
    await occurrence(d, clock)
    assert (await schedule_of(herald, off.id)).state == "paused"


async def test_never_paused_when_the_deployment_says_zero(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every hour", text="tick")
    d = dispatcher(herald, Provider(), auto_pause_after=0)
    for _ in range(4):
        await occurrence(d, clock)
    assert (await schedule_of(herald, s.id)).state == "active"


async def test_resume_starts_the_count_again(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every hour", text="tick")
    provider = Provider()
    d = dispatcher(herald, provider)
    for _ in range(3):
        await occurrence(d, clock)
    assert (await schedule_of(herald, s.id)).state == "paused"
    resumed = await herald.resume_schedule(ALICE, s.id)
    assert (resumed.state, resumed.failed_streak, resumed.failed_through) == ("active", 0, None)
    await occurrence(d, clock)
    found = await schedule_of(herald, s.id)
    assert (found.state, found.failed_streak) == ("active", 1)
    provider.failing = False
    assert (await occurrence(d, clock))["delivered"] == 1


async def test_a_one_off_is_never_paused(herald: Herald, clock: ManualClock) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 hour", text="once")
    await occurrence(dispatcher(herald, Provider(), auto_pause_after=1), clock)
    found = await schedule_of(herald, s.id)
    assert (found.state, found.failed_streak) == ("completed", 0)


async def test_a_persons_pause_and_an_end_are_events_only_when_heard(
    herald: Herald, clock: ManualClock
) -> None:
    provider = Provider()
    provider.failing = False
    d = dispatcher(herald, provider)
    quiet, _ = await herald.create_schedule(ANNA, to="log:", when="every hour", text="a")
    await herald.pause_schedule(ANNA, quiet.id)
    once, _ = await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="b")
    await occurrence(d, clock)
    assert await rows(herald, EVENT, quiet.id) == [] and await rows(herald, EVENT, once.id) == []

    await hear(herald, "schedule.paused", "schedule.ended")
    d.policy.listening = {TENANT: frozenset({"schedule.paused", "schedule.ended"})}
    heard, _ = await herald.create_schedule(ANNA, to="log:", when="every hour", text="c")
    await herald.pause_schedule(ANNA, heard.id)
    [paused] = await rows(herald, EVENT, heard.id)
    assert paused.type == "schedule.paused" and paused.owner == ANNA.id
    assert json.loads(paused.data)["by"] == ANNA.id
    ending, _ = await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="d")
    await occurrence(d, clock)
    [ended] = await rows(herald, EVENT, ending.id)
    assert (ended.type, ended.tenant) == ("schedule.ended", TENANT)
    # a cancel is no event
    await herald.cancel_schedule(ANNA, heard.id)
    assert len(await rows(herald, EVENT, heard.id)) == 1


async def test_a_receipt_is_an_event_when_heard(herald: Herald, clock: ManualClock) -> None:
    await hear(herald, "job.receipt")
    s, _ = await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="x")
    provider = Provider()
    provider.failing = False
    await occurrence(dispatcher(herald, provider), clock)
    [job] = (await herald.show_schedule(ANNA, s.id)).jobs
    async with herald.store._session() as session:  # as a provider's send answer said
        await session.execute(
            sa.text("UPDATE attempt SET provider = 'twilio' WHERE job_id = :j"), {"j": job.id}
        )
    report = ReceiptReport("twilio", f"msg-{job.id}", "undelivered", clock.now(), "30003")
    [taken] = await herald.store.take_callback("twilio", "digest-1", [report], now=clock.now())
    assert taken.outcome == "applied"
    [event] = [e for e in await rows(herald, EVENT, s.id) if e.type == "job.receipt"]
    data = json.loads(event.data)
    assert (data["receipt"], data["detail"], data["job_id"], data["state"]) == (
        "undelivered",
        "30003",
        job.id,
        "dead",
    )
    # the receipt made a dead letter: told as the dispatcher's own are, an event always
    # and its chat author's notice
    [dead] = [e for e in await rows(herald, EVENT, s.id) if e.type == "job.dead"]
    assert json.loads(dead.data)["error"] == "Twilio reported it undelivered: 30003."
    [notice] = await rows(herald, NOTICE, s.id)
    assert (notice.owner, notice.kind, notice.job_id) == (ANNA.id, "dead", job.id)


async def cli(herald: Herald, settings: Settings, *argv: str) -> str:
    """What ``herald <argv>`` prints, run as Alice through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(ALICE, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_the_cli_turns_it_off_and_says_who_paused(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    said = await cli(
        herald, settings, "schedule", "--to", "log:", "--when", "every hour", "--text", "t",
        "--no-auto-pause",
    )  # fmt: skip
    assert "  auto-pause: off" in said.splitlines()
    [s] = await herald.list_schedules(ALICE)
    assert "  auto-pause: off" in (await cli(herald, settings, "show", str(s.id))).splitlines()
    await cli(herald, settings, "edit", str(s.id), "--auto-pause")
    d = dispatcher(herald, Provider())
    await occurrence(d, clock)
    shown = (await cli(herald, settings, "show", str(s.id))).splitlines()
    assert "  failing: its last occurrence failed" in shown
    assert "  auto-pause: off" not in shown
    for _ in range(2):
        await occurrence(d, clock)
    shown = (await cli(herald, settings, "show", str(s.id))).splitlines()
    assert "  paused by the system after 3 failed occurrences" in shown
    listed = await cli(herald, settings, "list")
    assert "paused (failing)" in listed
    record = json.loads(await cli(herald, settings, "show", str(s.id), "--json"))
    assert (record["auto_pause"], record["failed_streak"], record["lifecycle"]) == (
        True,
        3,
        "paused",
    )
