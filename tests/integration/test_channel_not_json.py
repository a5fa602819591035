"""A provider URL that answers something that is not its API (issue 33): the Slack and
Discord channels give each delivery a retry or a permanent failure with one sentence
(the URL without secrets, the status, the content type; never the page), log it once
while it lasts, and keep it for ``/readyz`` until the API answers again."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from bot.http import Readiness
from core.channels.base import Outcome
from core.channels.discord import DiscordChannel, DiscordWebhookChannel
from core.channels.slack import SlackChannel
from core.destinations import ChannelName
from core.errors import InvalidInput
from tests.fakes import FakeDiscord, FakeSlack, Scripted
from tests.fakes.deliveries import make_delivery

SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
CHAN = "123456789012345678"
GUILD = "700000000000000001"

HTML = Scripted(
    status=200,
    body="<html><h1>Welcome to nginx!</h1></html>",
    headers={"Content-Type": "text/html"},
)
TEXT_404 = Scripted(status=404, body="404 page not found", headers={"Content-Type": "text/plain"})


async def test_slack_says_what_answered_once_and_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with FakeSlack(token=SLACK_TOKEN) as slack:
        slack.add_channel("C0GENERAL", "general")
        slack.script(HTML, HTML, TEXT_404, on="chat.postMessage")
        channel = SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0)
        try:
            caplog.set_level(logging.INFO)
            first = await channel.send(make_delivery("slack:C0GENERAL", "one"))
            second = await channel.send(make_delivery("slack:C0GENERAL", "two"))
            assert channel.api_health is not None
            problem = channel.api_health.problem
            third = await channel.send(make_delivery("slack:C0GENERAL", "three"))
            fourth = await channel.send(make_delivery("slack:C0GENERAL", "four"))
        finally:
            await channel.close()

    url = f"{slack.api_url}chat.postMessage"
    said = f"Slack's API at {url} answered HTTP 200 with text/html, not JSON: check SLACK_API_URL."
    assert (first.outcome, first.error) == (Outcome.RETRY, said)
    assert (second.outcome, second.error) == (Outcome.RETRY, said)
    assert problem == said
    assert third.outcome is Outcome.PERMANENT  # a 404 page: the URL is wrong
    assert third.error == said.replace("200 with text/html", "404 with text/plain")
    assert fourth.outcome is Outcome.OK  # the API answers again: the problem is gone
    assert channel.api_health.problem is None
    warned = [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()]
    assert warned == [said, third.error]  # one line per distinct answer, not per delivery
    assert SLACK_TOKEN not in caplog.text


async def test_discord_never_takes_a_page_for_a_delivered_message() -> None:
    async with FakeDiscord(DISCORD_TOKEN) as discord:
        discord.add_channel(CHAN)
        discord.script(HTML, on="/messages")
        channel = DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url, timeout=2.0)
        try:
            result = await channel.send(make_delivery(f"discord:{CHAN}"))
        finally:
            await channel.close()

    assert result.outcome is Outcome.RETRY  # it was recorded as delivered (HTTP 200)
    assert result.error == (
        f"Discord's API at {discord.api_url}/channels/{CHAN}/messages answered HTTP 200 "
        "with text/html, not JSON: check DISCORD_API_URL."
    )
    assert discord.channels[CHAN].messages == []
    assert channel.api_health is not None and channel.api_health.problem == result.error


async def test_a_discord_404_page_is_not_taken_for_an_unknown_server() -> None:
    async with FakeDiscord(DISCORD_TOKEN, guild_id=GUILD) as discord:
        discord.script(TEXT_404, on="/guilds/")
        channel = DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url, timeout=2.0)
        try:
            with pytest.raises(InvalidInput) as refused:
                await channel.channels_named(ChannelName("discord", "general", GUILD))
        finally:
            await channel.close()

    assert str(refused.value) == (
        f"Discord's API at {discord.api_url}/guilds/{GUILD}/channels answered HTTP 404 "
        "with text/plain, not JSON: check DISCORD_API_URL."
    )


async def test_a_discord_webhook_page_is_a_sentence_without_its_token() -> None:
    async with FakeDiscord(DISCORD_TOKEN) as discord:
        discord.add_channel(CHAN)
        hook = discord.add_webhook("998877", "hook-secret-token", CHAN)
        discord.script(TEXT_404, on="/webhooks/")
        channel = DiscordWebhookChannel(allow_private=True, timeout=2.0)
        try:
            result = await channel.send(make_delivery(f"discord-webhook:{hook}"))
        finally:
            await channel.close()

    assert result.outcome is Outcome.PERMANENT
    assert result.error == (
        f"The Discord webhook at {discord.url}/… answered HTTP 404 with text/plain, not "
        "JSON: check the webhook's URL (the channel's Integrations settings)."
    )
    assert channel.api_health is None  # a member's URL does not make Herald unready


class _Dispatcher:
    def __init__(self, channels: dict[str, object]) -> None:
        self.channels = channels
        self.last_tick = 0.0


async def test_readyz_names_a_channel_whose_api_is_not_answering() -> None:
    async with FakeSlack(token=SLACK_TOKEN) as slack:
        slack.add_channel("C0GENERAL", "general")
        slack.script(HTML, on="chat.postMessage")
        channel = SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url, timeout=2.0)
        unconfigured = DiscordChannel(None)
        readiness = Readiness(
            None,  # type: ignore[arg-type]
            _Dispatcher({"slack": channel, "discord": unconfigured}),  # type: ignore[arg-type]
        )
        try:
            await channel.send(make_delivery("slack:C0GENERAL", "one"))
            readiness.database = readiness.writes = readiness.migrations = _ok  # type: ignore[method-assign]
            readiness.dispatcher_loop = _ok  # type: ignore[method-assign]
            ok, checks = await readiness.run()
            await channel.send(make_delivery("slack:C0GENERAL", "two"))
            again, _ = await readiness.run()
        finally:
            await channel.close()
            await unconfigured.close()

    assert not ok
    assert checks["channel:slack"] == {"ok": False, "detail": channel_error(slack)}
    assert "channel:discord" not in checks  # no token: nothing to watch
    assert again  # the next answer was Slack's


def channel_error(slack: FakeSlack) -> str:
    return (
        f"Slack's API at {slack.api_url}chat.postMessage answered HTTP 200 with text/html, "
        "not JSON: check SLACK_API_URL."
    )


async def _ok() -> tuple[bool, str]:
    return True, "ok"
