"""Issue 41's review, Slack: a Create anyway that fails for a reason of the moment
(Slack could not be asked, "try again in a minute") keeps its request, so that trying
again creates it instead of answering that the request expired."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.slack import pending
from core.clock import ManualClock
from tests.fakes.slack import slack_error
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import text_of
from tests.slack.test_channel_view import answer, scheduled, token_of


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    async with slack_env(slack, db_url, clock, {}) as built:
        yield built


async def test_create_anyway_refused_for_a_moment_can_be_pressed_again(env: SlackEnv) -> None:
    await scheduled(env, "every weekday at 9am: Stand-up", user="U1")
    await scheduled(env, "timezone Europe/Berlin", user="U2")  # U1's zone
    asked = await answer(env, "every weekday at 9:05am: stand-up", user="U2")
    token = token_of(asked)
    assert len(await env.schedules()) == 1
    # Slack cannot say who is in the channel just now: the create is refused
    env.slack.script(slack_error("ratelimited"), on="conversations.members")
    count = len(env.slack.responses)
    await env.send.click(pending.ANYWAY, token, user="U2")
    refused = text_of(await env.reply(count + 1))
    assert "try again in a minute" in refused
    assert len(await env.schedules()) == 1
    # trying again, as told: created (not "That request expired")
    await env.send.click(pending.ANYWAY, token, user="U2")
    created = text_of(await env.reply(count + 2))
    assert pending.EXPIRED not in created
    assert ":white_check_mark: Scheduled" in created
    assert len(await env.schedules()) == 2
