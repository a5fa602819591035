"""The Discord channels against a local fake of the Discord REST API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from core.channels import parse_destination
from core.channels.base import Outcome
from core.channels.discord import DiscordChannel, DiscordWebhookChannel, discord_nonce
from core.destinations import Destination
from core.errors import InvalidInput
from tests.fakes import FakeDiscord, Scripted, unused_port
from tests.fakes.deliveries import KEY, make_delivery

TOKEN = "MTIz.bot-secret-token"
CHAN = "123456789012345678"
OTHER = "223456789012345678"


class FakeTime:
    """A monotonic clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
async def discord(clock: FakeTime) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(TOKEN, clock=clock) as fake:
        fake.add_channel(CHAN)
        fake.add_channel(OTHER)
        fake.add_channel("323456789012345678", can_view=False)
        fake.add_channel("423456789012345678", can_send=False)
        yield fake


@pytest.fixture
async def channel(discord: FakeDiscord, clock: FakeTime) -> AsyncIterator[DiscordChannel]:
    ch = DiscordChannel(
        TOKEN,
        base_url=discord.api_url,
        timeout=2.0,
        max_wait=10.0,
        clock=clock,
        sleep=clock.sleep,
    )
    yield ch
    await ch.close()


async def test_message_is_created_with_nonce(discord: FakeDiscord, channel: DiscordChannel) -> None:
    result = await channel.send(make_delivery(f"discord:{CHAN}", "Deploy at 5"))

    assert result.outcome is Outcome.OK and result.status_code == 200
    [message] = discord.messages
    assert result.message_id == message["id"] and message["content"] == "Deploy at 5"
    request = discord.requests_to("/messages")[0]
    assert request.headers["authorization"] == f"Bot {TOKEN}"
    assert request.headers["user-agent"].startswith("DiscordBot (")
    body = request.json()
    assert body["nonce"] == discord_nonce(KEY) and body["enforce_nonce"] is True


async def test_every_message_carries_allowed_mentions(
    discord: FakeDiscord, channel: DiscordChannel, hook_channel: DiscordWebhookChannel
) -> None:
    """A message whose author's rights were recorded notifies whom they could; any
    other (rows from before tenants) notifies users only, never @everyone or a role."""
    recorded = {"allowed_mentions": {"parse": ["users"], "roles": ["55"]}}
    await channel.send(make_delivery(f"discord:{CHAN}", "@everyone <@&55>", options=recorded))
    await channel.send(make_delivery(f"discord:{CHAN}", "@everyone <@&55>"))
    url = discord.add_webhook("555", WEBHOOK_TOKEN, CHAN)
    await hook_channel.send(make_delivery(f"discord-webhook:{url}", "@here"))
    bodies = [r.json() for r in discord.requests if r.method == "POST"]
    assert [b["allowed_mentions"] for b in bodies] == [
        {"parse": ["users"], "roles": ["55"]},
        {"parse": ["users"]},
        {"parse": ["users"]},
    ]


def test_nonce_is_deterministic_and_short() -> None:
    assert discord_nonce(KEY) == discord_nonce(KEY)
    assert len(discord_nonce(KEY)) == 25 == len(discord_nonce("x" * 500))
    assert discord_nonce(KEY) != discord_nonce(KEY[:-1] + "h")


async def test_retried_job_carries_the_same_nonce_and_posts_once(
    discord: FakeDiscord, channel: DiscordChannel
) -> None:
    # Attempt 1 meets a 502 (nothing created); attempt 2 creates the message; attempt 3
    # stands for a retry whose earlier answer was lost: Discord returns the same message.
    discord.script(Scripted(status=502), on="/messages")
    uri = f"discord:{CHAN}"
    first = await channel.send(make_delivery(uri, attempt=1))
    second = await channel.send(make_delivery(uri, attempt=2))
    third = await channel.send(make_delivery(uri, attempt=3))

    assert first.outcome is Outcome.RETRY and first.status_code == 502
    assert second.outcome is Outcome.OK and third.outcome is Outcome.OK
    assert second.message_id == third.message_id
    assert len(discord.messages) == 1
    nonces = {r.json()["nonce"] for r in discord.requests_to("/messages")}
    assert nonces == {discord_nonce(KEY)}


@pytest.mark.parametrize(
    ("channel_id", "status", "advice"),
    [
        ("999999999999999999", 404, "Unknown Channel (code 10003): Discord channel"),
        ("323456789012345678", 403, "Missing Access (code 50001): the bot cannot post"),
        ("423456789012345678", 403, "Missing Permissions (code 50013)"),
    ],
)
async def test_missing_access_and_unknown_channel_are_permanent(
    channel: DiscordChannel, channel_id: str, status: int, advice: str
) -> None:
    result = await channel.send(make_delivery(f"discord:{channel_id}"))
    assert result.outcome is Outcome.PERMANENT and result.status_code == status
    assert advice in (result.error or "")


async def test_bad_token_is_permanent_and_never_shown(
    discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ch = DiscordChannel("wrong.secret.token", base_url=discord.api_url)
    try:
        result = await ch.send(make_delivery(f"discord:{CHAN}"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and result.status_code == 401
    assert "DISCORD_BOT_TOKEN" in (result.error or "")
    assert "wrong.secret" not in repr(result) and "wrong.secret" not in caplog.text


async def test_too_long_and_empty_messages_are_permanent(
    discord: FakeDiscord, channel: DiscordChannel
) -> None:
    long = await channel.send(make_delivery(f"discord:{CHAN}", "x" * 2001))
    empty = await channel.send(make_delivery(f"discord:{CHAN}", ""))
    assert long.outcome is Outcome.PERMANENT and "Discord allows 2,000" in (long.error or "")
    assert empty.outcome is Outcome.PERMANENT and empty.status_code == 400
    assert "Cannot send an empty message" in (empty.error or "")
    assert len(discord.requests) == 1  # the long one never left Herald


async def test_exhausted_bucket_waits_when_the_wait_is_short(
    discord: FakeDiscord, channel: DiscordChannel, clock: FakeTime
) -> None:
    discord.bucket_limit = 2
    results = [await channel.send(make_delivery(f"discord:{CHAN}", key=f"k{i}")) for i in range(3)]

    assert [r.outcome for r in results] == [Outcome.OK] * 3
    assert clock.sleeps == [5.0]  # the third waited for the bucket to reset, then went
    assert len(discord.requests) == 3  # no 429 was provoked


async def test_exhausted_bucket_returns_a_retry_when_the_wait_is_long(
    discord: FakeDiscord, clock: FakeTime
) -> None:
    discord.bucket_limit = 1
    ch = DiscordChannel(
        TOKEN, base_url=discord.api_url, max_wait=1.0, clock=clock, sleep=clock.sleep
    )
    try:
        first = await ch.send(make_delivery(f"discord:{CHAN}", key="a"))
        second = await ch.send(make_delivery(f"discord:{CHAN}", key="b"))
        elsewhere = await ch.send(make_delivery(f"discord:{OTHER}", key="c"))
    finally:
        await ch.close()
    assert first.outcome is Outcome.OK and elsewhere.outcome is Outcome.OK
    assert second.outcome is Outcome.RETRY and second.retry_after == pytest.approx(5.0)
    assert len(discord.requests) == 2 and clock.sleeps == []


async def test_429_is_retried_after_retry_after(
    discord: FakeDiscord, channel: DiscordChannel
) -> None:
    discord.script(
        Scripted(
            status=429,
            json={"message": "You are being rate limited.", "retry_after": 2.5, "global": False},
            headers={"Retry-After": "3", "X-RateLimit-Scope": "shared"},
        ),
        on="/messages",
    )
    result = await channel.send(make_delivery(f"discord:{CHAN}"))
    assert result.outcome is Outcome.RETRY
    assert result.status_code == 429 and result.retry_after == 2.5


async def test_429_from_the_fakes_own_bucket(discord: FakeDiscord, clock: FakeTime) -> None:
    """Two Herald processes share a bucket: the second one hits Discord's 429."""
    discord.bucket_limit = 1
    one = DiscordChannel(TOKEN, base_url=discord.api_url, clock=clock, sleep=clock.sleep)
    two = DiscordChannel(TOKEN, base_url=discord.api_url, clock=clock, sleep=clock.sleep)
    try:
        ok = await one.send(make_delivery(f"discord:{CHAN}", key="a"))
        limited = await two.send(make_delivery(f"discord:{CHAN}", key="b"))
    finally:
        await one.close()
        await two.close()
    assert ok.outcome is Outcome.OK
    assert limited.outcome is Outcome.RETRY and limited.status_code == 429
    assert limited.retry_after == pytest.approx(5.0)


async def test_global_429_holds_every_channel(discord: FakeDiscord, clock: FakeTime) -> None:
    discord.script(
        Scripted(
            status=429,
            json={"message": "rate limited", "retry_after": 30, "global": True},
            headers={"X-RateLimit-Global": "true", "Retry-After": "30"},
        ),
        on="/messages",
    )
    ch = DiscordChannel(
        TOKEN, base_url=discord.api_url, max_wait=1.0, clock=clock, sleep=clock.sleep
    )
    try:
        first = await ch.send(make_delivery(f"discord:{CHAN}"))
        other = await ch.send(make_delivery(f"discord:{OTHER}"))
    finally:
        await ch.close()
    assert first.outcome is Outcome.RETRY and "the bot everywhere" in (first.error or "")
    assert other.outcome is Outcome.RETRY and other.retry_after == pytest.approx(30.0)
    assert len(discord.requests) == 1


async def test_global_requests_per_second_limit(discord: FakeDiscord, clock: FakeTime) -> None:
    ch = DiscordChannel(
        TOKEN, base_url=discord.api_url, global_rate=2, clock=clock, sleep=clock.sleep
    )
    try:
        for i, target in enumerate([CHAN, OTHER, CHAN]):
            result = await ch.send(make_delivery(f"discord:{target}", key=f"g{i}"))
            assert result.outcome is Outcome.OK
    finally:
        await ch.close()
    assert clock.sleeps == [0.5]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retryable(
    discord: FakeDiscord, channel: DiscordChannel, status: int
) -> None:
    discord.script(Scripted(status=status), on="/messages")
    result = await channel.send(make_delivery(f"discord:{CHAN}"))
    assert result.outcome is Outcome.RETRY and result.status_code == status


async def test_stalled_api_times_out_and_unreachable_api_is_retryable(
    discord: FakeDiscord,
) -> None:
    discord.script(Scripted(stall=True), on="/messages")
    slow = DiscordChannel(TOKEN, base_url=discord.api_url, timeout=0.2, connect_timeout=0.2)
    gone = DiscordChannel(TOKEN, base_url=f"http://127.0.0.1:{unused_port()}/api/v10")
    try:
        timed_out = await slow.send(make_delivery(f"discord:{CHAN}"))
        refused = await gone.send(make_delivery(f"discord:{CHAN}"))
    finally:
        await slow.close()
        await gone.close()
    assert timed_out.outcome is Outcome.RETRY and "in time" in (timed_out.error or "")
    assert refused.outcome is Outcome.RETRY and "Could not reach" in (refused.error or "")


async def test_without_token(discord: FakeDiscord) -> None:
    ch = DiscordChannel(None, base_url=discord.api_url)
    try:
        result = await ch.send(make_delivery(f"discord:{CHAN}"))
        await ch.validate(parse_destination("discord:999999999999999999"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "DISCORD_BOT_TOKEN" in (result.error or "")
    assert discord.requests == []


async def test_validate(discord: FakeDiscord, channel: DiscordChannel) -> None:
    await channel.validate(parse_destination(f"discord:{CHAN}"))
    with pytest.raises(InvalidInput, match="check the channel id"):
        await channel.validate(parse_destination("discord:999999999999999999"))
    with pytest.raises(InvalidInput, match="View Channel and Send Messages"):
        await channel.validate(parse_destination("discord:323456789012345678"))
    discord.script(Scripted(status=503), on="GET /api/v10/channels")
    await channel.validate(parse_destination("discord:999999999999999999"))  # can't tell


# -- channel webhooks --------------------------------------------------------------------

WEBHOOK_TOKEN = "hook-secret-token-abc"


@pytest.fixture
async def hook_channel(clock: FakeTime) -> AsyncIterator[DiscordWebhookChannel]:
    ch = DiscordWebhookChannel(timeout=2.0, clock=clock, sleep=clock.sleep, allow_private=True)
    yield ch
    await ch.close()


async def test_webhook_posts_embeds_with_a_custom_sender(
    discord: FakeDiscord, hook_channel: DiscordWebhookChannel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = discord.add_webhook("555", WEBHOOK_TOKEN, CHAN)
    embeds = [{"title": "Release", "description": "v2 ships today", "color": 5763719}]
    options = {"embeds": embeds, "username": "Release bot", "avatar_url": "https://e.x/a.png"}
    result = await hook_channel.send(
        make_delivery(f"discord-webhook:{url}", "Heads up", options=options)
    )

    assert result.outcome is Outcome.OK
    [message] = discord.messages
    assert result.message_id == message["id"]
    assert message["content"] == "Heads up" and message["embeds"] == embeds
    assert message["author"]["username"] == "Release bot"
    assert message["author"]["avatar_url"] == "https://e.x/a.png"
    assert discord.requests[0].query == {"wait": "true"}
    assert "authorization" not in discord.requests[0].headers
    assert "HTTP Request: POST" in caplog.text and WEBHOOK_TOKEN not in caplog.text


@pytest.mark.parametrize(
    ("webhook_id", "token", "advice"),
    [
        ("556", WEBHOOK_TOKEN, "Discord webhook 556 was deleted"),
        ("555", "wrong-token-xyz", "Discord webhook 555 has an invalid token"),
    ],
)
async def test_webhook_errors_are_permanent_without_the_token(
    discord: FakeDiscord,
    hook_channel: DiscordWebhookChannel,
    webhook_id: str,
    token: str,
    advice: str,
) -> None:
    discord.add_webhook("555", WEBHOOK_TOKEN, CHAN)
    url = f"{discord.url}/api/webhooks/{webhook_id}/{token}"
    result = await hook_channel.send(make_delivery(f"discord-webhook:{url}"))
    assert result.outcome is Outcome.PERMANENT and advice in (result.error or "")
    assert token not in repr(result)
    with pytest.raises(InvalidInput, match=advice):
        await hook_channel.validate(Destination("discord-webhook", url, DiscordWebhookChannel.uri))


async def test_webhook_rate_limit_and_retry(
    discord: FakeDiscord, hook_channel: DiscordWebhookChannel
) -> None:
    url = discord.add_webhook("555", WEBHOOK_TOKEN, CHAN)
    discord.script(
        Scripted(status=429, json={"retry_after": 1.5, "global": False}), on="/webhooks/"
    )
    limited = await hook_channel.send(make_delivery(f"discord-webhook:{url}"))
    in_thread = {"thread_id": "777777777777777777"}
    after = await hook_channel.send(
        make_delivery(f"discord-webhook:{url}", attempt=2, options=in_thread)
    )
    assert limited.outcome is Outcome.RETRY and limited.retry_after == 1.5
    assert after.outcome is Outcome.OK
    assert discord.requests[-1].query == {"wait": "true", "thread_id": "777777777777777777"}


async def test_webhook_url_must_look_like_one(hook_channel: DiscordWebhookChannel) -> None:
    result = await hook_channel.send(make_delivery("discord-webhook:https://example.com/x"))
    assert result.outcome is Outcome.PERMANENT and "not a Discord webhook URL" in (
        result.error or ""
    )
    with pytest.raises(InvalidInput, match="not a Discord webhook URL"):
        await hook_channel.validate(
            Destination("discord-webhook", "ftp://x/webhooks/1/t", DiscordWebhookChannel.uri)
        )


async def test_webhook_validate_accepts_a_live_webhook(
    discord: FakeDiscord, hook_channel: DiscordWebhookChannel
) -> None:
    url = discord.add_webhook("555", WEBHOOK_TOKEN, CHAN)
    await hook_channel.validate(Destination("discord-webhook", url, DiscordWebhookChannel.uri))
    assert discord.requests[0].method == "GET"
