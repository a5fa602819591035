"""Reminders until done (issue 40), proven through the use cases, the real dispatcher
(drained on a ManualClock: no wall-clock wait) and the real Slack and Discord channels
against the local fakes of their APIs, on SQLite and PostgreSQL.

A weekday 9am schedule "until done, nag every 15m, escalate to the lead after 1h":
without Done, exactly 24 nags (the ladder's cap, core.until_done.MAX_NAGS) each a reply
in the message's thread at its quarter hour and one escalation by direct message at
10:00, then nothing; Done before the first nag, between nags and after the escalation
stops the rest, edits the message to "Done by … at HH:MM" without its button, says
"already" the second time, and leaves the next occurrence's ladder its own; Done
pressed while the message (or a nag) is being sent; Done refused to another tenant and
to a member who did not see the message, allowed to a direct message's recipient.

The payloads the fakes receive are held to slack_sdk's models
(tests/unit/test_until_done_payloads.py: the channel's own unit tests) and to Discord's
documented component and content limits (the fake refuses what Discord refuses)."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from pydantic import SecretStr

from core import until_done
from core.actors import Principal
from core.cases import Herald
from core.channels.base import Channel, Delivery, DeliveryResult
from core.channels.discord import DONE_CUSTOM_PREFIX, DiscordChannel
from core.channels.slack import DONE_ACTION_ID, DONE_BLOCK_PREFIX, SlackChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.models import Job, JobState
from core.store import AuditFilter
from core.tenancy import QuotaExceeded
from tests.fakes import FakeDiscord, FakeSlack
from tests.unit.test_until_done_payloads import valid_slack_blocks

SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
GUILD = "700000000000000001"
ROOT = "local:root-admin"
CONFIG = DispatcherConfig(max_attempts=4, backoff_base=5, backoff_cap=60)

#: Tuesday 3 March 2026, the first weekday 9am after tests.conftest.START (Monday noon).
NINE = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
NEXT_NINE = NINE + timedelta(days=1)
RULE = {"nag": "15m", "escalate": [{"to": ["{lead}"], "after": "1h"}]}
NAGS = [NINE + timedelta(minutes=15 * k) for k in range(1, until_done.MAX_NAGS + 1)]


@dataclass(frozen=True)
class Sent:
    """One message or edit as the platform received it, at the dispatcher's time."""

    at: datetime
    channel: str
    id: str
    text: str
    #: The message it replies to (Slack thread_ts, Discord message_reference), if any.
    reply_to: str | None
    #: Slack's metadata idempotency key, Discord's nonce: one per job.
    key: str | None
    edit: bool
    #: Whether it carries the Done button.
    done_button: bool
    raw: dict[str, Any]


class TimedSlack(FakeSlack):
    """The fake Slack API, each message and edit recorded with the test clock's time."""

    def __init__(self, clock: ManualClock, **kw: Any) -> None:
        super().__init__(**kw)
        self.test_clock = clock
        self.sent: list[Sent] = []

    async def _dispatch(self, request: web.Request) -> web.Response:
        at, method = self.test_clock.now(), request.match_info["method"]
        args = self.requests[-1].params()
        answer = await super()._dispatch(request)
        data = json.loads(answer.text or "{}")
        if not data.get("ok") or method not in ("chat.postMessage", "chat.update"):
            return answer
        blocks = args.get("blocks") or []
        button = any(str(b.get("block_id", "")).startswith(DONE_BLOCK_PREFIX) for b in blocks)
        metadata = (args.get("metadata") or {}).get("event_payload") or {}
        self.sent.append(
            Sent(
                at,
                data["channel"],
                data["ts"],
                str(args.get("text") or ""),
                args.get("thread_ts"),
                metadata.get("idempotency_key"),
                method == "chat.update",
                button,
                args,
            )
        )
        return answer


class TimedDiscord(FakeDiscord):
    """The fake Discord API, each message and edit recorded with the test clock's time."""

    def __init__(self, clock: ManualClock, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.test_clock = clock
        self.sent: list[Sent] = []

    def _record(self, at: datetime, answer: web.Response, edit: bool) -> web.Response:
        if answer.status != 200:
            return answer
        payload = self.requests[-1].json()
        message = json.loads(answer.text or "{}")
        reference = payload.get("message_reference") or {}
        self.sent.append(
            Sent(
                at,
                message["channel_id"],
                message["id"],
                str(payload.get("content") or ""),
                reference.get("message_id"),
                payload.get("nonce"),
                edit,
                bool(payload.get("components")),
                payload,
            )
        )
        return answer

    async def _create_message(self, request: web.Request) -> web.Response:
        at = self.test_clock.now()
        return self._record(at, await super()._create_message(request), edit=False)

    async def _edit_message(self, request: web.Request) -> web.Response:
        at = self.test_clock.now()
        return self._record(at, await super()._edit_message(request), edit=True)


@dataclass(frozen=True)
class Place:
    """One platform's side of a test: its people, its channels, its fake."""

    name: str
    tenant: str
    #: The message's channel (its destination) and its id at the platform.
    channel: str
    channel_id: str
    other_channel: str
    lead: str
    owner: Principal
    carol: Principal
    bob: Principal
    stranger: Principal
    fake: TimedSlack | TimedDiscord
    #: How a platform id reads in "Done by <@…>".
    mention: Callable[[Principal], str]

    @property
    def lead_member(self) -> str:
        """The lead as a member id (``slack:ULEAD``), not a destination."""
        return self.lead.replace(":@", ":", 1)

    @property
    def sent(self) -> list[Sent]:
        return self.fake.sent

    def dm_of(self, user: str) -> str:
        if isinstance(self.fake, TimedSlack):
            return self.fake.ims[user]
        return self.fake.dms[user]

    def button_of(self, sent: Sent) -> str:
        """The Done button's job id, as the platform would send it back on a click."""
        if isinstance(self.fake, TimedSlack):
            [block] = [b for b in sent.raw["blocks"] if b["type"] == "actions"]
            [button] = block["elements"]
            assert button["action_id"] == DONE_ACTION_ID
            return str(button["value"])
        [row] = sent.raw["components"]
        [button] = row["components"]
        assert button["custom_id"].startswith(DONE_CUSTOM_PREFIX)
        return str(button["custom_id"]).removeprefix(DONE_CUSTOM_PREFIX)

    def check_payload(self, sent: Sent) -> None:
        """Slack's blocks as slack_sdk's models take them (Discord's fake already
        refused anything past Discord's documented limits)."""
        if isinstance(self.fake, TimedSlack) and sent.raw.get("blocks"):
            valid_slack_blocks(sent.raw["blocks"])


def slack_place(fake: TimedSlack) -> Place:
    fake.add_channel("C0ONCALL", "oncall")
    fake.add_channel("C0RANDOM", "random")
    for user in ("ULEAD", "UBOB", "UCAROL"):
        fake.add_person(user)
    tenant = "slack:TA"
    return Place(
        "slack",
        tenant,
        "slack:C0ONCALL",
        "C0ONCALL",
        "slack:C0RANDOM",
        "slack:@ULEAD",
        Principal("slack:UALICE", tenant),
        Principal("slack:UCAROL", tenant),
        Principal("slack:UBOB", tenant),
        Principal("slack:UBEN", "slack:TB"),
        fake,
        lambda p: f"<@{p.id.removeprefix('slack:')}>",
    )


def discord_place(fake: TimedDiscord) -> Place:
    chan, other = "123456789012345678", "123456789012345679"
    lead, bob, carol = "223456789012345671", "223456789012345672", "223456789012345673"
    fake.add_channel(chan)
    fake.add_channel(other)
    for user in (lead, bob, carol):
        fake.add_user(user)
    tenant = f"discord:{GUILD}"
    return Place(
        "discord",
        tenant,
        f"discord:{chan}",
        chan,
        f"discord:{other}",
        f"discord:@{lead}",
        Principal("discord:223456789012345670", tenant),
        Principal(f"discord:{carol}", tenant),
        Principal(f"discord:{bob}", tenant),
        Principal("discord:323456789012345678", "discord:800000000000000002"),
        fake,
        lambda p: f"<@{p.id.removeprefix('discord:')}>",
    )


@pytest.fixture(params=["slack", "discord"])
async def place(
    request: pytest.FixtureRequest, clock: ManualClock, herald: Herald
) -> AsyncIterator[Place]:
    """One platform's side, its lead a member Herald knows in the tenant (they have used
    Herald there): escalated to by DM as a reminder to them would be."""
    if request.param == "slack":
        async with TimedSlack(clock, token=SLACK_TOKEN, team_id="TA") as slack:
            made = slack_place(slack)
            await herald.store.save_member(made.tenant, made.lead_member, now=clock.now())
            yield made
    else:
        async with TimedDiscord(clock, DISCORD_TOKEN, bucket_limit=10_000) as discord:
            made = discord_place(discord)
            await herald.store.save_member(made.tenant, made.lead_member, now=clock.now())
            yield made


def channels_for(place: Place) -> dict[str, Channel]:
    if isinstance(place.fake, TimedSlack):
        return {"slack": SlackChannel(SecretStr(SLACK_TOKEN), base_url=place.fake.api_url)}
    return {"discord": DiscordChannel(DISCORD_TOKEN, base_url=place.fake.api_url)}


@pytest.fixture
async def dispatcher(herald: Herald, place: Place) -> AsyncIterator[Dispatcher]:
    channels = channels_for(place)
    yield Dispatcher(
        herald.store, channels, clock=herald.clock, config=CONFIG, rng=random.Random(7)
    )
    for channel in channels.values():
        await channel.close()


async def until_done_schedule(herald: Herald, place: Place, **kw: Any) -> int:
    rule = json.loads(json.dumps(RULE).replace("{lead}", place.lead))
    schedule, _ = await herald.create_schedule(
        place.owner,
        to=kw.pop("to", place.channel),
        when="every weekday at 9am",
        text="Check the backups",
        until_done=rule,
        **kw,
    )
    assert schedule.id is not None and schedule.next_run_at == NINE
    return schedule.id


async def run_until(d: Dispatcher, clock: ManualClock, end: datetime) -> None:
    """Deliver everything due up to ``end`` at its own time (the ManualClock moves
    from one due job to the next), then stand at ``end``."""
    await d.drain(retry_window=(end - clock.now()).total_seconds())
    assert clock.now() <= end
    clock.set(end)


async def jobs(herald: Herald, schedule_id: int) -> list[Job]:
    return sorted(await herald.store.schedule_jobs(schedule_id), key=lambda j: j.id or 0)


def messages(place: Place) -> list[Sent]:
    return [s for s in place.sent if not s.edit]


# --- 1. no Done -----------------------------------------------------------------------


async def test_without_done_exactly_the_nags_and_one_escalation(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NEXT_NINE - timedelta(minutes=1))

    first, *rest = place.sent
    assert (first.at, first.channel, first.reply_to, first.done_button) == (
        NINE,
        place.channel_id,
        None,
        True,
    )
    place.check_payload(first)
    nags = [s for s in rest if s.channel == place.channel_id]
    escalations = [s for s in rest if s.channel != place.channel_id]
    assert [n.at for n in nags] == NAGS  # 09:15 … 15:00, 24 of them, then nothing
    assert all(n.reply_to == first.id and not n.done_button and not n.edit for n in nags)
    assert nags[0].text.startswith("Still not done: Check the backups")
    assert nags[23].text.startswith("Still not done (reminder 24): Check the backups")
    [escalation] = escalations
    assert (escalation.at, escalation.channel) == (
        NINE + timedelta(hours=1),
        place.dm_of(place.lead.split("@", 1)[1]),
    )
    assert escalation.reply_to is None and not escalation.done_button
    assert escalation.text.startswith("Not done after 1 hour: Check the backups")
    assert place.mention(place.owner) in escalation.text
    # each message its own job and idempotency key
    assert len({s.key for s in place.sent}) == len(place.sent) == 1 + 24 + 1

    # past the ladder's last step nothing is left of it: the next occurrence waits
    ladder = [j for j in await jobs(herald, sid) if j.ladder]
    assert len(ladder) == 25 and {j.state for j in ladder} == {JobState.DELIVERED}
    [waiting] = await herald.awaiting_done(place.owner)
    assert (waiting.job_id, waiting.nags_sent, waiting.steps_waiting) == (
        int(place.button_of(first)),
        24,
        0,
    )
    [following] = [j for j in await jobs(herald, sid) if j.state == JobState.PENDING]
    assert (following.occurrence_at, following.ladder) == (NEXT_NINE, "")


# --- 2. Done at each point of the ladder ------------------------------------------------


@pytest.mark.parametrize(
    ("pressed", "nags_before", "escalated"),
    [
        (timedelta(minutes=5), 0, False),  # before the first nag
        (timedelta(minutes=40), 2, False),  # between the second and third
        (timedelta(minutes=80), 5, True),  # after the escalation
    ],
    ids=["before-first-nag", "between-nags", "after-escalation"],
)
async def test_done_stops_the_ladder_and_edits_the_message(
    herald: Herald,
    clock: ManualClock,
    place: Place,
    dispatcher: Dispatcher,
    pressed: timedelta,
    nags_before: int,
    escalated: bool,
) -> None:
    sid = await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + pressed)
    first = place.sent[0]
    job_id = int(place.button_of(first))
    assert len(place.sent) == 1 + nags_before + int(escalated)

    done = await herald.mark_done(place.carol, job_id, seen_in=place.channel)
    assert (done.by, done.at, done.already, done.destination) == (
        place.carol.id,
        NINE + pressed,
        False,
        place.channel,
    )
    assert done.stopped == 24 - nags_before + (0 if escalated else 1)
    assert done.waited == pressed.total_seconds()

    await run_until(dispatcher, clock, NEXT_NINE - timedelta(minutes=1))
    after = place.sent[1 + nags_before + int(escalated) :]
    [edit] = after  # only the edit: no nag, no escalation after Done
    assert edit.edit and edit.at == NINE + pressed
    assert (edit.channel, edit.id) == (place.channel_id, first.id)
    hhmm = f"{(NINE + pressed):%H:%M}"
    assert edit.text.startswith("Check the backups\n\n")
    assert edit.text.endswith(f"Done by {place.mention(place.carol)} at {hhmm}")
    assert not edit.done_button  # the button is gone
    place.check_payload(edit)

    occurrence = next(j for j in await jobs(herald, sid) if j.id == job_id)
    assert (occurrence.state, occurrence.done_by, occurrence.done_at) == (
        JobState.ACKNOWLEDGED,
        place.carol.id,
        NINE + pressed,
    )
    assert await herald.awaiting_done(ROOT) == []
    [entry] = await herald.audit_log(ROOT, AuditFilter(action="job.done"))
    assert (entry.actor, entry.object_id) == (place.carol.id, str(job_id))

    again = await herald.mark_done(place.bob, job_id, seen_in=place.channel)
    assert (again.already, again.by, again.at, again.stopped) == (
        True,
        place.carol.id,
        NINE + pressed,
        0,
    )

    # the next occurrence: a new message, a ladder of its own
    await run_until(dispatcher, clock, NEXT_NINE + timedelta(minutes=31))
    second, *nags = place.sent[len(place.sent) - 3 :]
    assert second.at == NEXT_NINE and second.done_button and second.id != first.id
    assert int(place.button_of(second)) != job_id
    assert [(n.at, n.reply_to) for n in nags] == [
        (NEXT_NINE + timedelta(minutes=15), second.id),
        (NEXT_NINE + timedelta(minutes=30), second.id),
    ]


# --- 3. Done while the message (or a nag) is being sent -------------------------------


def pressing(
    channel: Channel, herald: Herald, place: Place, when: Callable[[Delivery], bool]
) -> Channel:
    """``channel``, with Done pressed by Carol right after the platform accepted a
    delivery ``when`` picks: its job is still claimed, its outcome not recorded."""
    send = channel.send
    pressed: list[Any] = []

    async def send_and_press(delivery: Delivery) -> DeliveryResult:
        result = await send(delivery)
        if when(delivery) and not pressed:
            mine = await jobs(herald, delivery.schedule_id)
            sending = next(j for j in mine if j.id == delivery.job_id)
            assert sending.state == JobState.CLAIMED  # its outcome is not recorded yet
            [occurrence] = [
                j for j in mine if not j.ladder and j.occurrence_at == delivery.occurrence_at
            ]
            assert occurrence.id is not None
            done = await herald.mark_done(place.carol, occurrence.id, seen_in=place.channel)
            pressed.append(done)
        return result

    channel.send = send_and_press  # type: ignore[method-assign]
    channel.pressed = pressed  # type: ignore[attr-defined]
    return channel


async def test_done_pressed_while_the_message_is_sent_acknowledges_it_when_recorded(
    herald: Herald, clock: ManualClock, place: Place
) -> None:
    [(kind, channel)] = channels_for(place).items()
    pressing(channel, herald, place, lambda d: until_done.DONE_BUTTON in d.options)
    d = Dispatcher(herald.store, {kind: channel}, clock=clock, config=CONFIG)
    sid = await until_done_schedule(herald, place)
    try:
        await run_until(d, clock, NEXT_NINE - timedelta(minutes=1))
    finally:
        await channel.close()
    [done] = channel.pressed  # type: ignore[attr-defined]
    assert (done.already, done.stopped, done.waited) == (False, 0, None)

    first, edit = place.sent  # the message, then only its edit: no nag, no escalation
    assert (edit.edit, edit.id, edit.at) == (True, first.id, NINE)
    assert edit.text.endswith(f"Done by {place.mention(place.carol)} at 09:00")
    place.check_payload(edit)
    occurrence, step = [j for j in await jobs(herald, sid) if j.occurrence_at == NINE]
    assert (occurrence.state, occurrence.done_by) == (JobState.ACKNOWLEDGED, place.carol.id)
    assert (step.ladder, step.state) == (until_done.DONE, JobState.DELIVERED)
    assert occurrence.id is not None
    again = await herald.mark_done(place.owner, occurrence.id)
    assert again.already and again.by == place.carol.id


async def test_done_racing_a_nag_leaves_at_most_that_nag(
    herald: Herald, clock: ManualClock, place: Place
) -> None:
    [(kind, channel)] = channels_for(place).items()
    pressing(channel, herald, place, lambda d: d.body.startswith("Still not done (reminder 2)"))
    d = Dispatcher(herald.store, {kind: channel}, clock=clock, config=CONFIG)
    await until_done_schedule(herald, place)
    try:
        await run_until(d, clock, NEXT_NINE - timedelta(minutes=1))
    finally:
        await channel.close()
    [done] = channel.pressed  # type: ignore[attr-defined]
    assert done.stopped == 22 + 1  # nags 3..24 and the escalation
    first, nag1, nag2, edit = place.sent
    assert [nag1.at, nag2.at] == NAGS[:2]  # the nag being sent went out, none after
    assert (edit.edit, edit.id) == (True, first.id)


# --- 4. who may press Done ---------------------------------------------------------------


async def test_done_refused_to_another_tenant_and_to_who_did_not_see_it(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    await until_done_schedule(herald, place)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=1))
    job_id = int(place.button_of(place.sent[0]))

    with pytest.raises(NotFound):
        await herald.mark_done(place.stranger, job_id, seen_in=place.channel)
    with pytest.raises(PermissionDenied):  # a member of the tenant, clicking elsewhere
        await herald.mark_done(place.carol, job_id, seen_in=place.other_channel)
    with pytest.raises(PermissionDenied):  # the CLI or the API: no channel to have seen
        await herald.mark_done(place.carol, job_id)
    denied = await herald.audit_log(ROOT, AuditFilter(action="job.done.denied"))
    assert {row.actor for row in denied} == {place.stranger.id, place.carol.id}
    [waiting] = await herald.awaiting_done(place.owner)
    assert waiting.job_id == job_id  # nothing was marked
    with pytest.raises(InvalidInput):  # a step is no message to mark done
        await herald.mark_done(ROOT, job_id + 1)

    done = await herald.mark_done(place.carol, job_id, seen_in=place.channel)
    assert not done.already


async def test_done_of_a_direct_message_is_its_recipients(
    herald: Herald, clock: ManualClock, place: Place, dispatcher: Dispatcher
) -> None:
    bob = place.bob.id.split(":", 1)[1]
    dm = f"{place.name}:@{bob}"
    await herald.sync_member(place.bob)  # Herald reminds only members it knows
    await until_done_schedule(herald, place, to=dm)
    await run_until(dispatcher, clock, NINE + timedelta(minutes=20))
    first, nag = place.sent
    assert first.channel == place.dm_of(bob) and first.done_button
    assert (nag.channel, nag.reply_to) == (first.channel, first.id)
    job_id = int(place.button_of(first))

    carol = place.carol.id.split(":", 1)[1]
    with pytest.raises(PermissionDenied):  # someone else's direct messages
        await herald.mark_done(place.carol, job_id, seen_in=f"{place.name}:@{carol}")
    with pytest.raises(PermissionDenied):  # the DM is not a channel of the tenant
        await herald.mark_done(place.carol, job_id, seen_in=place.channel)
    # a Discord direct message carries no server: its click comes from the clicker's
    # personal tenant, and counts for the person it was sent to, from that DM only
    personal = Principal(place.bob.id, dm)
    stranger_dm = Principal(place.carol.id, f"{place.name}:@{carol}")
    with pytest.raises(NotFound):
        await herald.mark_done(stranger_dm, job_id, seen_in=f"{place.name}:@{carol}")
    with pytest.raises(NotFound):  # no DM to have seen it in
        await herald.mark_done(personal, job_id)
    done = await herald.mark_done(personal, job_id, seen_in=dm)
    assert (done.by, done.already) == (place.bob.id, False)
    assert (await herald.mark_done(place.bob, job_id, seen_in=dm)).already
    await run_until(dispatcher, clock, NINE + timedelta(hours=3))
    [edit] = place.sent[2:]
    assert (edit.edit, edit.channel, edit.id) == (True, first.channel, first.id)
    assert edit.text.endswith(f"Done by {place.mention(place.bob)} at 09:20")


async def test_escalation_to_someone_herald_does_not_know_is_refused_like_a_dm(
    herald: Herald, place: Place
) -> None:
    nobody = place.lead.replace("LEAD", "NOBODY").replace("671", "679")
    with pytest.raises(PermissionDenied):  # as to=nobody would be
        await herald.create_schedule(place.owner, to=nobody, when="in 1 hour", text="x")
    rule = {"nag": "15m", "escalate": [{"to": [nobody], "after": "1h"}]}
    with pytest.raises(PermissionDenied):
        await herald.create_schedule(
            place.owner, to=place.channel, when="every weekday at 9am", text="x", until_done=rule
        )
    assert await herald.list_schedules(place.owner) == []


async def test_nags_have_their_own_floor_not_the_channel_interval(
    herald: Herald, place: Place
) -> None:
    """A member's nag every 5 minutes into a shared channel is taken (its floor), though
    the schedule's own rule may not repeat faster than HERALD_QUOTA_MIN_INTERVAL (15
    minutes) there; under 5 minutes is refused in one sentence, nothing saved."""
    rule = {"nag": "5m", "escalate": [{"to": [place.lead], "after": "1h"}]}
    schedule, _ = await herald.create_schedule(
        place.owner, to=place.channel, when="every weekday at 9am", text="x", until_done=rule
    )
    assert schedule.options[until_done.OPTION]["nag"] == 300
    with pytest.raises(InvalidInput, match="Nags come at most every 5 minutes"):
        await herald.create_schedule(
            place.owner,
            to=place.channel,
            when="every weekday at 9am",
            text="y",
            until_done={**rule, "nag": "4m"},
        )
    with pytest.raises(QuotaExceeded):  # the rule itself is still held to the interval
        await herald.create_schedule(
            place.owner, to=place.channel, when="every 5 minutes", text="z", until_done=rule
        )
    assert [s.id for s in await herald.list_schedules(place.owner)] == [schedule.id]
