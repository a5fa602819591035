"""Issue 41's review, Slack: a Create anyway that fails for a reason of the moment
(Slack could not be asked, "try again in a minute") keeps its request, so that trying
again creates it instead of answering that the request expired; and one person's
requests cannot push everyone else's out of the held store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.slack import pending
from bot.slack.pending import Pending
from core.clock import ManualClock
from core.errors import InvalidInput
from tests.fakes.slack import slack_error
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import TENANT, text_of
from tests.slack.test_channel_view import answer, scheduled, token_of
from tests.slack.test_payload_contract import valid_message


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


def test_one_person_cannot_push_out_everyone_else_s_requests() -> None:
    held = Pending(kept=50)

    async def rerun(_: Any) -> Any:
        return None

    theirs = held.hold(TENANT, "U1", rerun)
    flood = [held.hold(TENANT, "U2", rerun) for _ in range(200)]
    assert held.take(theirs, TENANT, "U1").owner == (TENANT, "U1")
    assert held.take(flood[-1], TENANT, "U2").owner == (TENANT, "U2")  # their latest still waits
    with pytest.raises(InvalidInput):
        held.take(flood[0], TENANT, "U2")  # their oldest went first


@pytest.mark.full(
    "a 200+ schedule agenda on PostgreSQL; the default run reads it on SQLite", backend="postgres"
)
async def test_an_agenda_longer_than_core_reads_does_not_claim_a_count(env: SlackEnv) -> None:
    from bot.slack import blocks as b
    from tests.slack.support import who

    total = b.AGENDA_COUNTED + 5
    for i in range(total):
        await env.herald.create_schedule(
            who("U2" if i % 2 else "UADMIN"),  # each member may have 200
            to="slack:C0123",
            when=f"tomorrow at {i % 24}:{i % 60:02d}",
            text=f"m{i}",
        )
    reply = await answer(env, "list here", user="U1")
    valid_message((reply["text"], reply["blocks"]))
    shown = text_of(reply)
    assert f"({b.AGENDA_COUNTED})" not in shown  # there are more than that
    assert f"(more than {b.AGENDA_COUNTED})" in shown
    assert f"… and {b.AGENDA_COUNTED - b.AGENDA_SHOWN} more" not in shown
    assert f"… and more than {b.AGENDA_COUNTED - b.AGENDA_SHOWN} more" in shown
