"""The Slack channel against a local fake of the Slack Web API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from core.channels import parse_destination
from core.channels.base import Outcome
from core.channels.slack import SlackChannel
from core.errors import InvalidInput
from tests.fakes import FakeSlack, Scripted, slack_error, unused_port
from tests.fakes.deliveries import KEY, make_delivery

TOKEN = "xoxb-1234-secret-token"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=TOKEN) as fake:
        fake.add_channel("C0GENERAL", "general")
        fake.add_channel("C0OUTSIDE", "outside", is_member=False)
        fake.add_channel("C0ARCHIVE", "old", is_archived=True)
        fake.add_channel("G0PRIVATE", "secret", is_private=True, is_member=False)
        yield fake


@pytest.fixture
async def channel(slack: FakeSlack) -> AsyncIterator[SlackChannel]:
    ch = SlackChannel(SecretStr(TOKEN), base_url=slack.api_url, timeout=2.0)
    yield ch
    await ch.close()


async def test_plain_text_is_posted_with_metadata(slack: FakeSlack, channel: SlackChannel) -> None:
    result = await channel.send(make_delivery("slack:C0GENERAL", "Stand-up *now*"))

    assert result.outcome is Outcome.OK and result.status_code == 200
    [posted] = slack.messages
    assert result.message_id == f"C0GENERAL/{posted['ts']}"
    assert posted["text"] == "Stand-up *now*"
    assert "thread_ts" not in posted and "blocks" not in posted
    assert posted["metadata"] == {
        "event_type": "herald_delivery",
        "event_payload": {"idempotency_key": KEY, "schedule_id": 3, "job_id": 7},
    }
    request = slack.requests_to("chat.postMessage")[0]
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["content-type"].startswith("application/json")


async def test_blocks_thread_reply_and_custom_sender(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*Release* today"}}]
    options = {"blocks": blocks, "username": "Release bot", "icon_emoji": ":rocket:"}
    result = await channel.send(
        make_delivery("slack:C0GENERAL/1700000000.000100", "Release today", options=options)
    )

    assert result.outcome is Outcome.OK
    [posted] = slack.messages
    assert posted["thread_ts"] == "1700000000.000100"
    assert posted["blocks"] == blocks and posted["text"] == "Release today"
    assert posted["username"] == "Release bot" and posted["icon_emoji"] == ":rocket:"


async def test_blocks_given_as_json_text(slack: FakeSlack, channel: SlackChannel) -> None:
    options = {"blocks": '[{"type": "divider"}]', "icon_url": "https://example.com/i.png"}
    result = await channel.send(make_delivery("slack:C0GENERAL", "x", options=options))
    assert result.outcome is Outcome.OK
    assert slack.messages[0]["blocks"] == [{"type": "divider"}]
    assert slack.messages[0]["icon_url"] == "https://example.com/i.png"


async def test_blocks_that_are_not_json_are_permanent(channel: SlackChannel) -> None:
    result = await channel.send(make_delivery("slack:C0GENERAL", options={"blocks": "[oops"}))
    assert result.outcome is Outcome.PERMANENT and "not valid JSON" in (result.error or "")


@pytest.mark.parametrize(
    ("uri", "body", "advice"),
    [
        ("slack:C0MISSING", "hi", "was not found: check the id"),
        ("slack:G0PRIVATE", "hi", "/invite @Herald"),
        ("slack:C0OUTSIDE", "hi", "invite it with /invite @Herald"),
        ("slack:C0ARCHIVE", "hi", "is archived: unarchive it"),
        ("slack:C0GENERAL", "x" * 40_001, "too long for Slack: shorten it"),
    ],
)
async def test_channel_errors_are_permanent_with_advice(
    channel: SlackChannel, uri: str, body: str, advice: str
) -> None:
    result = await channel.send(make_delivery(uri, body))
    assert result.outcome is Outcome.PERMANENT and result.status_code == 200
    assert advice in (result.error or "")


async def test_invalid_token_is_permanent_and_never_shown(
    slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ch = SlackChannel("xoxb-wrong-token-value", base_url=slack.api_url)
    try:
        result = await ch.send(make_delivery("slack:C0GENERAL"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT
    assert "invalid_auth" in (result.error or "") and "SLACK_BOT_TOKEN" in (result.error or "")
    assert "xoxb" not in repr(result) and "xoxb-wrong" not in caplog.text


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        ("account_inactive", "reinstall the app"),
        ("token_revoked", "reinstall the Slack app"),
        ("restricted_action", "workspace admin"),
        ("invalid_blocks", "Block Kit"),
        ("something_new", "Slack refused the message (something_new)"),
    ],
)
async def test_scripted_permanent_errors(
    slack: FakeSlack, channel: SlackChannel, code: str, advice: str
) -> None:
    slack.script(slack_error(code), on="chat.postMessage")
    result = await channel.send(make_delivery("slack:C0GENERAL"))
    assert result.outcome is Outcome.PERMANENT and advice in (result.error or "")


async def test_missing_customize_scope_names_the_scope() -> None:
    async with FakeSlack(token=TOKEN, scopes=("chat:write",)) as fake:
        fake.add_channel("C0GENERAL")
        ch = SlackChannel(TOKEN, base_url=fake.api_url)
        try:
            result = await ch.send(make_delivery("slack:C0GENERAL", options={"username": "Bob"}))
        finally:
            await ch.close()
    assert result.outcome is Outcome.PERMANENT
    assert "chat:write.customize" in (result.error or "")


async def test_rate_limit_is_retried_after_retry_after(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    slack.script(slack_error("ratelimited", status=429, retry_after=30), on="chat.postMessage")
    first = await channel.send(make_delivery("slack:C0GENERAL"))
    second = await channel.send(make_delivery("slack:C0GENERAL", attempt=2))

    assert first.outcome is Outcome.RETRY
    assert first.status_code == 429 and first.retry_after == 30.0
    assert second.outcome is Outcome.OK and len(slack.messages) == 1


@pytest.mark.parametrize(
    "answer",
    [
        Scripted(status=500, body="<html>oops</html>"),
        Scripted(status=503, json={"ok": False, "error": "service_unavailable"}),
        slack_error("internal_error"),
        slack_error("fatal_error"),
        Scripted(status=200, body="not json"),
    ],
)
async def test_server_errors_are_retryable(
    slack: FakeSlack, channel: SlackChannel, answer: Scripted
) -> None:
    slack.script(answer, on="chat.postMessage")
    result = await channel.send(make_delivery("slack:C0GENERAL"))
    assert result.outcome is Outcome.RETRY
    assert "Slack" in (result.error or "")


async def test_wrong_api_url_is_permanent(slack: FakeSlack) -> None:
    ch = SlackChannel(TOKEN, base_url=f"{slack.url}/nope/")
    try:
        result = await ch.send(make_delivery("slack:C0GENERAL"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "SLACK_API_URL" in (result.error or "")


async def test_stalled_api_times_out_and_is_retryable(slack: FakeSlack) -> None:
    slack.script(Scripted(stall=True), on="chat.postMessage")
    ch = SlackChannel(TOKEN, base_url=slack.api_url, timeout=0.2, connect_timeout=0.2)
    try:
        result = await ch.send(make_delivery("slack:C0GENERAL"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY and "did not answer in time" in (result.error or "")


async def test_unreachable_api_is_retryable() -> None:
    ch = SlackChannel(TOKEN, base_url=f"http://127.0.0.1:{unused_port()}/api/")
    try:
        result = await ch.send(make_delivery("slack:C0GENERAL"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.RETRY and "Could not reach Slack" in (result.error or "")


async def test_without_token_send_is_permanent_and_validate_checks_nothing(
    slack: FakeSlack,
) -> None:
    ch = SlackChannel(None, base_url=slack.api_url)
    try:
        result = await ch.send(make_delivery("slack:C0GENERAL"))
        await ch.validate(parse_destination("slack:C0MISSING"))
    finally:
        await ch.close()
    assert result.outcome is Outcome.PERMANENT and "SLACK_BOT_TOKEN" in (result.error or "")
    assert slack.requests == []


async def test_validate_accepts_a_channel_the_bot_is_in(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    await channel.validate(parse_destination("slack:C0GENERAL/1700000000.000100"))
    [request] = slack.requests_to("conversations.info")
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.form() == {"channel": "C0GENERAL"}


@pytest.mark.parametrize(
    ("uri", "advice"),
    [
        ("slack:C0MISSING", "was not found"),
        ("slack:G0PRIVATE", "was not found"),
        ("slack:C0OUTSIDE", "/invite @Herald"),
        ("slack:C0ARCHIVE", "is archived"),
    ],
)
async def test_validate_rejects_unusable_channels(
    channel: SlackChannel, uri: str, advice: str
) -> None:
    with pytest.raises(InvalidInput, match=advice):
        await channel.validate(parse_destination(uri))


async def test_validate_accepts_public_channel_with_chat_write_public() -> None:
    async with FakeSlack(token=TOKEN, scopes=("chat:write", "chat:write.public")) as fake:
        fake.add_channel("C0OUTSIDE", is_member=False)
        ch = SlackChannel(TOKEN, base_url=fake.api_url)
        try:
            await ch.validate(parse_destination("slack:C0OUTSIDE"))
            result = await ch.send(make_delivery("slack:C0OUTSIDE"))
        finally:
            await ch.close()
    assert result.outcome is Outcome.OK


async def test_validate_does_not_block_when_slack_cannot_be_asked(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    slack.script(Scripted(status=503), slack_error("missing_scope"), on="conversations.info")
    await channel.validate(parse_destination("slack:C0MISSING"))
    await channel.validate(parse_destination("slack:C0MISSING"))
    assert len(slack.requests_to("conversations.info")) == 2  # asked, and let through


async def test_fake_speaks_the_protocol_of_slack_sdk(slack: FakeSlack) -> None:
    """The same fake serves slack_sdk's AsyncWebClient (the bot surface's client)."""
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=TOKEN, base_url=slack.api_url)
    response = await client.chat_postMessage(channel="C0GENERAL", text="from the sdk")
    assert response["ok"] is True and response["channel"] == "C0GENERAL"
    info = await client.conversations_info(channel="C0OUTSIDE")
    assert info["channel"]["is_member"] is False
    slack.script(slack_error("ratelimited", status=429, retry_after=1), on="chat.postMessage")
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0GENERAL", text="again")
    assert raised.value.response.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "1"
    assert [m["text"] for m in slack.messages] == ["from the sdk"]
