"""Push (``push:MEMBER``) through FCM HTTP v1 against a local fake of FCM and of Google's
token endpoint (tests/fakes/fcm.py, a service account key made now), and ntfy against a
local fake ntfy: through the dispatcher's drain on SQLite and PostgreSQL (the token
asked for once for several sends), dead tokens forgotten device by device, retries,
the token refreshed on a 401, and the refusals that say what to fix."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from core.cases import Herald
from core.channels.base import Delivery, Outcome
from core.channels.ntfy import NtfyChannel
from core.channels.push import PushChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from core.http_client import HTTPClient
from core.netguard import Guard
from core.settings import load_settings
from core.store import AuditFilter, Store
from tests.fakes.deliveries import make_delivery
from tests.fakes.fcm import Account, FakeFCM, fcm_error, service_account
from tests.fakes.http import Scripted
from tests.fakes.ntfy import FakeNtfy

ALICE = "local:alice"
PHONE = "fGx1Q2x5:APA91bH8zT0kqW3v-phone-AAAAAA"
TABLET = "cK9pR2m1:APA91bQ7yU2wE4r-tablet-BBBBBB"
CONFIG = DispatcherConfig(max_attempts=3, backoff_base=5, backoff_cap=60, max_lateness=3600)


@pytest.fixture(scope="module")
def account(tmp_path_factory: pytest.TempPathFactory) -> Account:
    """One key for the module (an RSA key takes a moment to make); its token_uri is
    Google's, HERALD_FCM_TOKEN_URL points at the fake."""
    return service_account(tmp_path_factory.mktemp("fcm"), "https://oauth2.googleapis.com/token")


@pytest.fixture
async def fcm(account: Account) -> AsyncIterator[FakeFCM]:
    async with FakeFCM(account.public_key) as fake:
        yield fake


def fcm_channel(account: Account, fcm: FakeFCM, store: Store) -> PushChannel:
    channel = PushChannel(
        str(account.path), api_url=fcm.url, token_url=fcm.token_url, http=HTTPClient(), timeout=5
    )
    channel.attach(store)
    return channel


@pytest.fixture
async def push(account: Account, fcm: FakeFCM, store: Store) -> AsyncIterator[PushChannel]:
    """Through the dispatcher: on SQLite and PostgreSQL."""
    channel = fcm_channel(account, fcm, store)
    yield channel
    await channel.close()


@pytest.fixture
async def lite(sqlite_url: str, clock: ManualClock) -> AsyncIterator[Herald]:
    """The channel's own answers: SQLite is enough (the store's part is the same)."""
    store = await Store.open(sqlite_url)
    settings = load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_WEBHOOK_ALLOW_PRIVATE="false",
        _env_file=None,
    )
    yield Herald(store, settings, clock)
    await store.close()


@pytest.fixture
async def lite_push(account: Account, fcm: FakeFCM, lite: Herald) -> AsyncIterator[PushChannel]:
    channel = fcm_channel(account, fcm, lite.store)
    yield channel
    await channel.close()


async def add(herald: Herald, token: str, member: str = ALICE, label: str = "") -> int:
    device, _ = await herald.add_device(member, token, label=label, platform="android")
    assert device.id is not None
    return device.id


def alice_delivery(body: str = "Stand-up in 5 minutes") -> Delivery:
    delivery = make_delivery(f"push:{ALICE}", body)
    delivery.tenant = "local"
    return delivery


# --- through the dispatcher ---------------------------------------------------------


async def test_push_through_the_drain_reaches_every_device_with_one_token(
    herald: Herald, store: Store, clock: ManualClock, fcm: FakeFCM, push: PushChannel
) -> None:
    await add(herald, PHONE, label="Pixel")
    await add(herald, TABLET)
    herald.channels = {"push": push}
    ids = []
    for n in range(3):
        s, _ = await herald.create_schedule(
            ALICE, to=f"push:{ALICE}", when="in 5 minutes", text=f"Stand-up {n}\nRoom 4"
        )
        ids.append(s.id)
    d = Dispatcher(store, {"push": push}, clock=clock, config=CONFIG, rng=random.Random(7))
    clock.advance(timedelta(minutes=5))
    summary = await d.drain()

    assert summary.outcomes["delivered"] == 3
    assert fcm.token_requests == 1  # cached: one token for six messages
    assert len(fcm.sent) == 6
    assert {m["token"] for m in fcm.sent} == {PHONE, TABLET}
    first = next(m for m in fcm.sent if m["notification"]["body"] == "Stand-up 0\nRoom 4")
    assert first["notification"]["title"] == "Stand-up 0"
    jobs = [j for i in ids for j in await store.schedule_jobs(i, limit=10)]
    assert {m["data"]["herald_job"] for m in fcm.sent} == {str(j.id) for j in jobs}
    assert first["android"]["collapse_key"] in {j.idempotency_key for j in jobs}
    attempts = await store.job_attempts([j.id for j in jobs if j.id is not None])
    assert [a.outcome for a in attempts] == ["ok"] * 3
    assert {a.provider for a in attempts} == {"fcm"}
    names = {m["name"] for m in fcm.sent}
    assert all(a.provider_message_id in names for a in attempts)
    assert all(a.error is None for a in attempts)


async def test_a_dead_token_is_forgotten_while_the_other_device_receives(
    herald: Herald,
    store: Store,
    clock: ManualClock,
    fcm: FakeFCM,
    push: PushChannel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="core")
    phone = await add(herald, PHONE)
    await add(herald, TABLET)
    fcm.unregistered.add(PHONE)
    s, _ = await herald.create_schedule(ALICE, to=f"push:{ALICE}", when="in 5 minutes", text="Hi")
    d = Dispatcher(store, {"push": push}, clock=clock, config=CONFIG, rng=random.Random(7))
    clock.advance(timedelta(minutes=5))
    summary = await d.drain()

    assert summary.outcomes["delivered"] == 1
    assert [m["token"] for m in fcm.sent] == [TABLET]
    assert [x.token for x in await herald.list_devices(ALICE)] == [TABLET]
    [job] = await store.schedule_jobs(s.id, limit=10)
    [attempt] = await store.job_attempts([job.id])
    assert attempt.outcome == "ok" and attempt.error is not None
    assert f"device {phone}" in attempt.error and "UNREGISTERED" in attempt.error
    assert "…AAAAAA" in attempt.error and PHONE not in attempt.error
    assert PHONE not in caplog.text
    [forgot] = await store.audit_page(AuditFilter(action="device.forget"))
    assert forgot.object_id == str(phone) and "UNREGISTERED" in forgot.details["reason"]


async def test_every_token_dead_is_permanent_and_leaves_no_device(
    herald: Herald, store: Store, clock: ManualClock, fcm: FakeFCM, push: PushChannel
) -> None:
    await add(herald, PHONE)
    await add(herald, TABLET)
    fcm.unregistered.add(PHONE)
    fcm.invalid.add(TABLET)
    await herald.create_schedule(ALICE, to=f"push:{ALICE}", when="in 5 minutes", text="Hi")
    d = Dispatcher(store, {"push": push}, clock=clock, config=CONFIG, rng=random.Random(7))
    clock.advance(timedelta(minutes=5))
    summary = await d.drain()

    assert summary.outcomes["dead"] == 1
    [letter] = await herald.dead_letters(ALICE)
    assert "No device of local:alice took it" in (letter.last_error or "")
    assert "INVALID_ARGUMENT" in (letter.last_error or "")
    assert await herald.list_devices(ALICE) == []
    # nothing left to reach: the next schedule to her is refused when it is saved
    with pytest.raises(InvalidInput, match="has no registered device here"):
        await herald.create_schedule(ALICE, to=f"push:{ALICE}", when="in 5 minutes", text="x")


# --- the channel's answers ----------------------------------------------------------


async def test_unavailable_and_quota_are_retried_with_retry_after(
    lite: Herald, fcm: FakeFCM, lite_push: PushChannel
) -> None:
    await add(lite, PHONE)
    fcm.script(fcm_error(503, "UNAVAILABLE", **{"Retry-After": "30"}), on="messages:send")
    result = await lite_push.send(alice_delivery())
    assert result.outcome is Outcome.RETRY and result.retry_after == 30
    assert result.status_code == 503 and "UNAVAILABLE" in (result.error or "")
    fcm.script(fcm_error(429, "QUOTA_EXCEEDED"), on="messages:send")
    result = await lite_push.send(alice_delivery())
    assert result.outcome is Outcome.RETRY and result.status_code == 429
    result = await lite_push.send(alice_delivery())
    assert result.outcome is Outcome.OK and result.message_id == fcm.sent[0]["name"]
    assert fcm.token_requests == 1
    assert len(await lite.list_devices(ALICE)) == 1  # a busy FCM forgets nothing


async def test_a_refused_access_token_is_replaced_once(
    lite: Herald, fcm: FakeFCM, lite_push: PushChannel
) -> None:
    await add(lite, PHONE)
    await add(lite, TABLET)
    assert (await lite_push.send(alice_delivery())).outcome is Outcome.OK
    fcm.revoke_tokens()  # both devices' sends meet a 401: one new token between them
    result = await lite_push.send(alice_delivery())
    assert result.outcome is Outcome.OK and result.error is None
    assert fcm.token_requests == 2 and len(fcm.sent) == 4


async def test_the_token_is_replaced_shortly_before_it_expires(
    account: Account, fcm: FakeFCM, lite: Herald
) -> None:
    """The fake's tokens last 3,599 s: kept until 300 s before that, then replaced."""
    now = [1000.0]
    channel = PushChannel(
        str(account.path), api_url=fcm.url, token_url=fcm.token_url, clock=lambda: now[0]
    )
    channel.attach(lite.store)
    await add(lite, PHONE)
    for step, asked in ((0.0, 1), (3298.0, 1), (2.0, 2), (60.0, 2)):
        now[0] += step
        assert (await channel.send(alice_delivery())).outcome is Outcome.OK
        assert fcm.token_requests == asked, now[0]
    await channel.close()


async def test_concurrent_sends_ask_for_one_token(
    lite: Herald, fcm: FakeFCM, lite_push: PushChannel
) -> None:
    await add(lite, PHONE)
    results = await asyncio.gather(*(lite_push.send(alice_delivery()) for _ in range(5)))
    assert {r.outcome for r in results} == {Outcome.OK}
    assert fcm.token_requests == 1


async def test_a_member_without_a_device_is_told_how_to_add_one(lite_push: PushChannel) -> None:
    result = await lite_push.send(alice_delivery())
    assert result.outcome is Outcome.PERMANENT
    assert result.error == (
        "local:alice has no registered device: they can add one with `herald member device add`."
    )


async def test_unconfigured_and_broken_key_files_say_what_to_fix(
    lite: Herald, fcm: FakeFCM, tmp_path: Path
) -> None:
    await add(lite, PHONE)
    unset = PushChannel(None)
    result = await unset.send(alice_delivery())
    assert result.outcome is Outcome.PERMANENT and "FCM_SERVICE_ACCOUNT_FILE" in (
        result.error or ""
    )
    secret = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-not-a-key-SECRETBITS"
    bad = tmp_path / "key.json"
    bad.write_text(
        json.dumps(
            {
                "project_id": "p",
                "client_email": "x@p.iam.gserviceaccount.com",
                "private_key": f"-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----",
            }
        )
    )
    for path, words in (
        (bad, "is not an unencrypted RSA key"),
        (tmp_path / "none", "cannot be read"),
    ):
        channel = PushChannel(
            str(path), api_url=fcm.url, token_url=fcm.token_url, http=HTTPClient()
        )
        channel.attach(lite.store)
        result = await channel.send(alice_delivery())
        assert result.outcome is Outcome.PERMANENT and words in (result.error or "")
        assert "FCM_SERVICE_ACCOUNT_FILE" in (result.error or "")
        assert secret not in (result.error or "")
        await channel.close()
    assert fcm.token_requests == 0 and fcm.sent == []


async def test_a_key_the_token_endpoint_refuses_is_permanent(
    lite: Herald, fcm: FakeFCM, tmp_path_factory: pytest.TempPathFactory
) -> None:
    await add(lite, PHONE)
    other = service_account(tmp_path_factory.mktemp("other"), fcm.token_url)  # not the fake's key
    channel = PushChannel(str(other.path), api_url=fcm.url, http=HTTPClient())
    channel.attach(lite.store)
    result = await channel.send(alice_delivery())
    await channel.close()
    assert result.outcome is Outcome.PERMANENT and result.status_code == 400
    assert "refused the service account" in (result.error or "") and fcm.sent == []


# --- ntfy ---------------------------------------------------------------------------


@pytest.fixture
async def ntfy() -> AsyncIterator[FakeNtfy]:
    async with FakeNtfy() as fake:
        yield fake


async def test_ntfy_publishes_to_its_topic_through_the_drain(
    lite: Herald, clock: ManualClock, ntfy: FakeNtfy
) -> None:
    channel = NtfyChannel(http=HTTPClient(guard=Guard(allow_private=True)), timeout=5)
    lite.channels = {"ntfy": channel}
    to = f"ntfy:{ntfy.url}/team-alerts"
    s, _ = await lite.create_schedule(
        ALICE,
        to=to,
        when="in 5 minutes",
        text="Déploiement fini ✅\nall green",
        options={"subject": "Déploiement ✅"},
    )
    d = Dispatcher(lite.store, lite.channels, clock=clock, config=CONFIG, rng=random.Random(7))
    clock.advance(timedelta(minutes=5))
    assert (await d.drain()).outcomes["delivered"] == 1
    [sent] = ntfy.published
    assert (sent.topic, sent.message) == ("team-alerts", "Déploiement fini ✅\nall green")
    assert sent.title == "Déploiement ✅" and sent.priority is None
    [job] = await lite.store.schedule_jobs(s.id, limit=5)
    [attempt] = await lite.store.job_attempts([job.id])
    assert attempt.provider_message_id == sent.id
    await channel.close()


async def test_ntfy_answers(ntfy: FakeNtfy) -> None:
    channel = NtfyChannel(http=HTTPClient(guard=Guard(allow_private=True)), timeout=5)
    to = f"ntfy:{ntfy.url}/ops"
    result = await channel.send(make_delivery(to, "Disk full"))
    assert result.outcome is Outcome.OK and ntfy.published[0].message == "Disk full"
    ntfy.script(ntfy_answer(429, {"Retry-After": "12"}), on="POST /ops")
    result = await channel.send(make_delivery(to))
    assert result.outcome is Outcome.RETRY and result.retry_after == 12
    ntfy.script(ntfy_answer(502))
    assert (await channel.send(make_delivery(to))).outcome is Outcome.RETRY
    ntfy.script(ntfy_answer(403))
    result = await channel.send(make_delivery(to))
    assert result.outcome is Outcome.PERMANENT and "/ops" not in (result.error or "")
    await channel.close()


def ntfy_answer(status: int, headers: dict[str, str] | None = None) -> Scripted:
    return Scripted(
        status=status, json={"code": status * 100, "http": status}, headers=headers or {}
    )


async def test_ntfy_refuses_a_private_address_at_save_and_at_send(
    lite: Herald, ntfy: FakeNtfy
) -> None:
    channel = NtfyChannel(http=HTTPClient(guard=Guard()), timeout=5)
    herald = lite
    herald.channels = {"ntfy": channel}
    to = f"ntfy:{ntfy.url}/team-alerts"
    with pytest.raises(InvalidInput, match="127.0.0.1"):
        await herald.create_schedule(ALICE, to=to, when="in 5 minutes", text="x")
    result = await channel.send(make_delivery(to))
    assert result.outcome is Outcome.PERMANENT and ntfy.published == []
    for bad in ("ntfy:team-alerts", "ntfy:https://ntfy.sh/", "ntfy:https://ntfy.sh/a/b"):
        with pytest.raises(InvalidInput, match="ntfy"):
            await herald.create_schedule(ALICE, to=bad, when="in 5 minutes", text="x")
    await channel.close()
