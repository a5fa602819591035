"""The dispatcher's event-hook pusher (issue 38) against a local HTTP receiver, over
real SQLite and PostgreSQL: every push verifies with the official Standard Webhooks
library; a receiver that is down, then back, gets what it missed with the same
``webhook-id``; a hook failing for a day (or answering 410 Gone) is disabled and its
owner told; the network guard refuses loopback unless allowed. Outcomes come from the
dispatcher in drain mode against a scripted provider; time is a ManualClock."""

from __future__ import annotations

import json
import random
import socket
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp import web
from standardwebhooks.webhooks import Webhook

from core.actors import Principal
from core.cases import Herald
from core.channels.base import Delivery, DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.dispatcher.hooks import HookPusher
from core.events import message_id
from core.http_client import HTTPClient
from core.metrics import Metrics
from core.netguard import Guard
from core.store import EventScope
from tests.support.channels import RecordingChannel
from tests.support.events import settled
from tests.support.store import audit_trail

TENANT = "slack:TA"
ADA = Principal("slack:UADA", TENANT, platform_admin=True)  # an admin of the tenant
ANNA = Principal("slack:UANNA", TENANT)
TYPES = ["job.delivered", "job.retrying", "job.dead"]
OK, FAIL = "webhook:https://example.com/ok", "webhook:https://example.com/fail"


class Receiver:
    """An application's endpoint on 127.0.0.1: records each request, answers
    ``answers`` in turn (then 200), and can go down (refusing connections) and come
    back on the same port."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes, int]] = []
        self.answers: list[int] = []
        #: webhook-ids answered 503 the first time they come
        self.refuse_once: set[str] = set()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/events"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/events", self._take)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _take(self, request: web.Request) -> web.Response:
        msg_id = request.headers.get("webhook-id", "")
        if msg_id in self.refuse_once:
            self.refuse_once.discard(msg_id)
            status = 503
        else:
            status = self.answers.pop(0) if self.answers else 200
        self.got.append(
            ({k.lower(): v for k, v in request.headers.items()}, await request.read(), status)
        )
        return web.Response(status=status)

    def accepted(self) -> list[str]:
        return [h["webhook-id"] for h, _, status in self.got if status == 200]


@pytest.fixture
async def receiver() -> Any:
    found = Receiver()
    await found.start()
    try:
        yield found
    finally:
        await found.stop()


@pytest.fixture(autouse=True)
async def _ada_is_an_admin(store: Any, clock: ManualClock) -> None:
    """Ada's admin standing as the Slack adapter keeps it in the members table (what a
    pusher reads of a tenant-wide hook's owner before every push)."""
    await store.save_member(TENANT, ADA.id, now=clock.now(), platform_admin=True)


def provider(delivery: Delivery) -> DeliveryResult:
    """Delivers to the ok URL; the other fails until its job is dead."""
    if "fail" in str(delivery.destination):
        return DeliveryResult.retry("503 Service Unavailable", status_code=503)
    return DeliveryResult.ok(200)


CONFIG = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=30, max_lateness=3600)


def dispatcher(herald: Herald) -> Dispatcher:
    channels = {"webhook": RecordingChannel(provider, kind="webhook")}
    return Dispatcher(
        herald.store, channels, clock=herald.clock, config=CONFIG, rng=random.Random(7)
    )


OPEN: list[HookPusher] = []


@pytest.fixture(autouse=True)
async def _close_pushers() -> Any:
    yield
    while OPEN:
        await OPEN.pop().close()


def pusher(herald: Herald, d: Dispatcher, *, allow_private: bool = True) -> HookPusher:
    """The pusher a dispatcher holds, with the tests' allowance of 127.0.0.1 (as the
    webhook channel's tests have it) unless ``allow_private`` is off."""
    made = HookPusher(
        herald.store,
        herald.clock,
        d.config,
        d.policy,
        Metrics(),
        d.worker_id,
        d.channels,
        http=HTTPClient(guard=Guard(allow_private=allow_private), connections=8),
        rng=random.Random(3),
    )
    OPEN.append(made)
    return made


async def outcomes(herald: Herald, clock: ManualClock, d: Dispatcher) -> None:
    """One schedule delivered and one that retries then dies, each Anna's."""
    await herald.create_schedule(ANNA, to=OK, when="in 1 hour", text="hi", key="order-1")
    await herald.create_schedule(ANNA, to=FAIL, when="in 1 hour", text="x", key="order-2")
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=600)


async def test_every_push_verifies_with_the_official_library(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    made = await herald.register_hook(ADA, receiver.url, TYPES)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    assert d.policy.listening == {TENANT: frozenset(TYPES)}
    await outcomes(herald, clock, d)
    await settled(herald.store)
    assert await p.push() == 3
    verifier = Webhook(made.secret)
    seen = []
    for headers, body, _ in receiver.got:
        payload = verifier.verify(body, headers)  # raises WebhookVerificationError if not
        assert headers["webhook-id"].startswith("evt_")
        seen.append((payload["type"], payload["data"]["idempotency_key"]))
    assert sorted(t for t, _ in seen) == ["job.dead", "job.delivered", "job.retrying"]
    assert all(key for _, key in seen)
    dead = next(json.loads(b) for _, b, _ in receiver.got if b"job.dead" in b)
    assert (
        dead["data"]["recipient"] == "webhook:https://example.com/…"
        and dead["data"]["attempt"] == 2
    )
    assert {"schedule_id", "due_at", "at", "error"} <= dead["data"].keys()
    # a forged body fails the same check
    headers, body, _ = receiver.got[0]
    with pytest.raises(Exception, match="(?i)signature"):
        verifier.verify(body.replace(b"job", b"jab"), headers)
    assert await p.push() == 0  # each once


async def test_a_receiver_down_then_back_gets_the_same_events_again(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    made = await herald.register_hook(ADA, receiver.url, TYPES)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await outcomes(herald, clock, d)
    await settled(herald.store)
    await receiver.stop()  # refusing connections
    assert await p.push() == 0
    hook = await herald.show_hook(ADA, made.hook.id or 0)
    assert hook.tries == 1 and hook.failing_since == clock.now()
    assert "connection refused" in (hook.last_error or "")
    assert hook.next_try_at is not None and hook.next_try_at > clock.now()
    assert await p.push() == 0  # backing off: not tried again yet
    await receiver.start()
    events = await herald.store.events_after(EventScope(TENANT), None, limit=10)
    receiver.refuse_once = {message_id(events[1].id or 0)}  # the second: refused once
    clock.advance(timedelta(hours=1))
    assert await p.push() == 1  # the cursor stops before the refused one
    assert (await herald.show_hook(ADA, made.hook.id or 0)).tries == 2  # still failing
    clock.advance(timedelta(hours=1))
    await p.push()
    ids = [h["webhook-id"] for h, _, _ in receiver.got]
    refused = [h["webhook-id"] for h, _, status in receiver.got if status == 503]
    assert len(set(receiver.accepted())) == 3
    assert set(refused) <= set(receiver.accepted())  # redelivered, with the same id
    assert len(ids) >= 4
    verifier = Webhook(made.secret)
    for headers, body, _ in receiver.got:
        verifier.verify(body, headers)
    after = await herald.show_hook(ADA, made.hook.id or 0)
    assert (after.tries, after.failing_since, after.delivered) == (0, None, 3)


async def test_a_hook_failing_for_a_day_is_disabled_and_its_owner_told(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    made = await herald.register_hook(ADA, receiver.url, TYPES)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await outcomes(herald, clock, d)
    await settled(herald.store)
    await receiver.stop()
    began = clock.now()
    while (await herald.show_hook(ADA, made.hook.id or 0)).state == "active":
        assert clock.now() - began <= timedelta(hours=26), "never disabled"
        await p.push()
        clock.advance(timedelta(hours=1))
    hook = await herald.show_hook(ADA, made.hook.id or 0)
    assert hook.disabled_at is not None
    assert hook.disabled_at - began >= timedelta(days=1)
    [audit] = (await audit_trail(herald.store, "event_hook", str(made.hook.id)))[-1:]
    assert (audit.action, audit.actor) == ("hook.disable", "system:event-hooks")
    async with herald.store._read() as conn:
        told = list(await conn.execute(sa.text("SELECT owner, kind, reason FROM notice")))
    hook_notices = [n for n in told if n.kind == "hook_disabled"]
    assert [(n.owner, n.kind) for n in hook_notices] == [(ADA.id, "hook_disabled")]
    assert "failed for 24 h" in hook_notices[0].reason
    await p.refresh()
    assert TENANT not in d.policy.listening  # its types are no longer recorded for it
    await receiver.start()
    clock.advance(timedelta(hours=1))
    assert await p.push() == 0  # disabled: nothing pushed
    await herald.enable_hook(ADA, made.hook.id or 0)
    assert await p.push() == 3  # from where it stopped


async def test_410_gone_disables_at_once(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    made = await herald.register_hook(ANNA, receiver.url, TYPES)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await outcomes(herald, clock, d)
    await settled(herald.store)
    receiver.answers = [410] * 8
    await p.push()
    hook = await herald.show_hook(ANNA, made.hook.id or 0)
    assert hook.state == "disabled" and "410" in (hook.last_error or "")


async def test_the_network_guard_refuses_loopback_unless_allowed(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    made = await herald.register_hook(ADA, receiver.url, TYPES)  # allowed at registration
    d = dispatcher(herald)
    p = pusher(herald, d, allow_private=False)
    await p.refresh()
    await outcomes(herald, clock, d)
    await settled(herald.store)
    assert await p.push() == 0
    assert receiver.got == []
    hook = await herald.show_hook(ADA, made.hook.id or 0)
    assert "internal address" in (hook.last_error or "")


async def test_a_members_hook_hears_only_its_schedules(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    annas = await herald.register_hook(ANNA, receiver.url, TYPES)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await herald.create_schedule(ADA, to=OK, when="in 1 hour", text="not anna's")
    await outcomes(herald, clock, d)
    await settled(herald.store)
    assert await p.push() == 3
    owners = set()
    verifier = Webhook(annas.secret)
    for headers, body, _ in receiver.got:
        payload = verifier.verify(body, headers)
        owners.add(payload["data"]["schedule_id"])
    assert len(owners) == 2  # Anna's two schedules, not Ada's


async def test_a_filtered_hook_moves_past_the_events_it_does_not_hear(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    """A hook of one schedule in a busy workspace reads each other event once: its
    cursor passes them, so no push reads them again (each second, for ever)."""
    later, _ = await herald.create_schedule(ANNA, to=OK, when="in 2 hours", text="later")
    made = await herald.register_hook(ADA, receiver.url, TYPES, schedule_id=later.id)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await outcomes(herald, clock, d)  # other schedules': not heard
    await settled(herald.store)
    assert await p.push() == 0 and receiver.got == []
    passed = await herald.store.get_hook(TENANT, made.hook.id or 0)
    events = await herald.store.events_after(EventScope(TENANT), None, limit=10)
    assert passed is not None and len(events) == 3
    assert (passed.cursor_tx, passed.cursor_id) >= (events[-1].tx, events[-1].id or 0)
    clock.advance(timedelta(hours=1))
    await dispatcher(herald).drain(retry_window=600)  # the first was declared dead meanwhile
    await settled(herald.store)
    assert await p.push() == 1
    [(_, body, _)] = receiver.got
    assert json.loads(body)["data"]["schedule_id"] == later.id


async def test_an_admins_hook_hears_only_their_schedules_once_they_are_no_admin(
    herald: Herald, clock: ManualClock, receiver: Receiver
) -> None:
    """A hook registered by an admin hears the workspace only while its owner is one:
    demoted, they hear their own schedules, as a member's hook does."""
    made = await herald.register_hook(ADA, receiver.url, TYPES)
    assert made.hook.tenant_wide
    await herald.store.save_member(TENANT, ADA.id, now=clock.now(), platform_admin=False)
    d = dispatcher(herald)
    p = pusher(herald, d)
    await p.refresh()
    await outcomes(herald, clock, d)  # Anna's schedules only
    await settled(herald.store)
    assert await p.push() == 0 and receiver.got == []
    own, _ = await herald.create_schedule(ADA, to=OK, when="in 1 hour", text="ada's own")
    clock.advance(timedelta(hours=1))
    await d.drain(retry_window=600)
    await settled(herald.store)
    assert await p.push() >= 1
    schedules = {json.loads(body)["data"]["schedule_id"] for _, body, _ in receiver.got}
    assert schedules == {own.id}
