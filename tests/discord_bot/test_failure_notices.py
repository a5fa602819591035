"""The author is told (issue 38) on Discord: a schedule's delivery that dies makes its
author a direct message (mentions escaped, none allowed) with Request retry and Edit;
a burst within HERALD_NOTICE_DIGEST is one digest; an admin who hears of it in the
alert channel is not told twice; closed direct messages drop the notice; Request retry
from the direct message becomes the request an admin decides on. Against the local
fake of Discord's API, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.discord_bot import DiscordAdapter, create_adapter
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import Settings
from core.store import Store
from tests.discord_bot.conftest import ALERTS, TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    CHANNEL,
    GUILD,
    OWNER,
    Interaction,
    click,
    in_dm,
    message_from,
    who,
)
from tests.fakes.discord_app import FakeDiscordApp
from tests.support.channels import RecordingChannel

WHY = "Missing Access: @everyone cannot be posted to"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url"))


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL))
        server.add_channel(ALERTS)
        server.add_user(str(OWNER))
        server.add_user(str(ADMIN))
        yield server


@pytest.fixture
def live(db_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(db_url, fake.api_url, HERALD_SWEEP_SECONDS=3600)


@pytest.fixture
async def adapter(
    live: Settings, store: Store, clock: ManualClock
) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(live, Herald(store, live, clock))
    try:
        await made.start()
        yield made
    finally:
        await made.stop()


async def kill(
    adapter: DiscordAdapter,
    count: int = 1,
    author: int = OWNER,
    when: str = "in 1 minute",
    *,
    observed: bool = True,
) -> list[int]:
    """``count`` schedules of ``author`` whose delivery (due in a minute) fails for
    good; their ids. Not ``observed``: settled where this adapter does not hear of it
    (another process, a provider's receipt)."""
    herald = adapter.herald
    ids = []
    for n in range(count):
        schedule, _ = await herald.create_schedule(
            who(author), to=f"discord:{CHANNEL}", when=when, text=f"doomed {n}"
        )
        assert schedule.id is not None
        ids.append(schedule.id)
    herald.clock.advance(60)  # type: ignore[attr-defined]
    failing = RecordingChannel(lambda d: DeliveryResult.permanent(WHY, 403), kind="discord")
    dispatcher = Dispatcher(
        herald.store,
        {"discord": failing},
        clock=herald.clock,
        config=DispatcherConfig(max_attempts=1),
        observer=adapter.on_finished if observed else None,
    )
    assert (await dispatcher.drain()).outcomes["dead"] == count
    return ids


def dms(fake: FakeDiscordApp, user: int = OWNER) -> list[dict[str, Any]]:
    dm = fake.dms.get(str(user))
    return list(fake.channels[dm].messages) if dm else []


def custom_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message.get("components", []) for c in row["components"]]


async def test_a_dead_letters_author_is_told_with_retry_and_edit(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    [sid] = await kill(adapter, when="every day at 12:01 UTC")
    assert await adapter.notices.sweep() == 1
    [told] = dms(fake)
    assert told["content"] == (
        f"Your message to discord:{CHANNEL} (schedule {sid}) was not sent: "
        "Missing Access: @\u200beveryone cannot be posted to."
    )
    [job] = [d.job_id for d in await adapter.herald.dead_letters(who(ADMIN))]
    assert custom_ids(told) == [
        f"herald:notice:retry:{GUILD}:{job}",
        f"herald:notice:edit:{GUILD}:{sid}",
    ]
    [posted] = fake.requests_to(f"POST /api/v10/channels/{fake.dms[str(OWNER)]}/messages")
    assert posted.json()["allowed_mentions"] == {"parse": []}
    assert await adapter.herald.pending_notices("discord") == 0


async def test_failures_within_the_window_make_one_digest(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    await kill(adapter)
    await adapter.notices.sweep()
    await kill(adapter, 3)
    assert await adapter.notices.sweep() == 0 and len(dms(fake)) == 1
    adapter.herald.clock.advance(adapter.settings.notice_digest_seconds)  # type: ignore[attr-defined]
    assert await adapter.notices.sweep() == 1
    digest = dms(fake)[-1]
    assert digest["content"].splitlines()[0] == "3 of your messages were not sent:"
    assert len(custom_ids(digest)) == 3


async def test_an_admin_watching_the_alert_channel_is_told_once(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    await kill(adapter, author=ADMIN)
    pending = [t for t in asyncio.all_tasks() if t.get_name().startswith("herald-discord-alert")]
    await asyncio.gather(*pending)
    assert len(fake.channels[ALERTS].messages) == 1
    assert await adapter.notices.sweep() == 0
    assert dms(fake, ADMIN) == [] and await adapter.herald.pending_notices() == 0


async def test_an_admin_is_told_of_what_the_alert_channel_never_showed(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    await kill(adapter, author=ADMIN, observed=False)
    assert await adapter.notices.sweep() == 1
    assert fake.channels[ALERTS].messages == []
    [told] = dms(fake, ADMIN)
    assert "was not sent" in told["content"]


async def test_closed_direct_messages_drop_the_notice(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    fake.add_user(str(OWNER), takes_dms=False)
    await kill(adapter)
    assert await adapter.notices.sweep() == 0
    assert await adapter.herald.pending_notices() == 0


async def test_request_retry_from_the_direct_message_reaches_an_admin(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    await kill(adapter)
    await adapter.notices.sweep()
    [told] = dms(fake)
    [job] = [d.job_id for d in await adapter.herald.dead_letters(who(ADMIN))]
    message = message_from(
        adapter.client, {"content": told["content"], "components": told["components"]}
    )
    inter = in_dm(Interaction(adapter.client, OWNER, message=message))
    await click(adapter.client, inter, f"herald:notice:retry:{GUILD}:{job}")
    assert str(inter.last.content).endswith(
        f"-# Asked an admin to retry dead letter {job}; you will hear here what they decide."
    )
    [letter] = await adapter.herald.dead_letters(who(ADMIN))
    assert letter.retry_requested_by == f"discord:{OWNER}"
    assert await adapter.herald.approve_dead_retry(who(ADMIN), [job]) == 1


async def test_an_expired_message_says_it_cannot_be_retried(
    fake: FakeDiscordApp, adapter: DiscordAdapter
) -> None:
    herald = adapter.herald
    schedule, _ = await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="in 1 minute", text="late", max_lateness=60
    )
    herald.clock.advance(3600)  # type: ignore[attr-defined]
    dispatcher = Dispatcher(
        herald.store, {"discord": RecordingChannel(kind="discord")}, clock=herald.clock
    )
    assert (await dispatcher.drain()).outcomes["expired"] == 1
    assert await adapter.notices.sweep() == 1
    [told] = dms(fake)
    first, hint = told["content"].splitlines()
    assert first == (
        f"Your message to discord:{CHANNEL} (schedule {schedule.id}) was not sent in time: it "
        "was 59 min late, over the 60s limit (the dispatcher was probably down)."
    )
    assert hint == "-# An expired message cannot be retried: schedule it again to send it."
    assert custom_ids(told) == []  # a one-off: nothing to retry or edit
