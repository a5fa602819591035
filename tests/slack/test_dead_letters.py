"""Dead letters in Slack: alerts (one each, or a digest), Retry / Discard buttons that
only admins' clicks move, the message updated with who decided."""

from __future__ import annotations

from typing import Any

import pytest

from core.channels.base import DeliveryResult
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.slack.conftest import ALERTS, SlackEnv
from tests.slack.support import action_ids, text_of, who
from tests.support.channels import RecordingChannel
from tests.support.store import audit_trail


async def kill(env: SlackEnv, count: int) -> list[int]:
    """``count`` schedules whose delivery fails for good; returns their job ids."""
    for n in range(count):
        await env.herald.create_schedule(
            who("U1"), to="slack:C0123", when="in 1 minute", text=f"doomed {n}"
        )
    env.clock.advance(60)
    failing = RecordingChannel(
        lambda d: DeliveryResult.permanent("Slack channel C0123 was not found", 404),
        kind="slack",
    )
    dispatcher = Dispatcher(
        env.herald.store,
        {"slack": failing},
        clock=env.clock,
        config=DispatcherConfig(max_attempts=1),
        observer=env.adapter.on_finished,
    )
    summary = await dispatcher.drain()
    assert summary.outcomes["dead"] == count
    return sorted(d.job_id for d in await env.herald.dead_letters("slack:UADMIN"))


def alerts(env: SlackEnv) -> list[dict[str, Any]]:
    return [m for m in env.slack.messages if m["channel"] == ALERTS]


async def alert(env: SlackEnv, count: int = 1) -> dict[str, Any]:
    await env.slack.until(lambda: len(alerts(env)) >= count)
    return alerts(env)[count - 1]


async def edited(env: SlackEnv, count: int = 1) -> dict[str, Any]:
    """The ``count``-th alert update (``chat.update``), once it arrives."""
    await env.slack.until(lambda: len(env.slack.edits) >= count)
    return env.slack.edits[count - 1]


async def test_a_dead_letter_is_posted_with_retry_and_discard(env: SlackEnv) -> None:
    [job] = await kill(env, 1)
    posted = await alert(env)
    shown = text_of(posted)
    assert f"Dead letter {job}" in shown and "schedule #1" in shown and "<#C0123>" in shown
    assert "was not found" in shown and ">doomed 0" in shown
    assert action_ids(posted) == ["herald_dead_retry", "herald_dead_discard"]


async def test_many_at_once_become_one_digest(env: SlackEnv) -> None:
    jobs = await kill(env, 5)
    posted = await alert(env)
    assert "5 messages could not be delivered" in text_of(posted)
    retry_all = posted["blocks"][-1]["elements"][0]
    assert retry_all["text"]["text"] == "Retry all"
    assert sorted(int(j) for j in retry_all["value"].split(",")) == jobs
    assert len(alerts(env)) == 1


async def test_only_an_admins_retry_takes_effect(env: SlackEnv) -> None:
    [job] = await kill(env, 1)
    posted = await alert(env)
    message = {"ts": posted["ts"], "blocks": posted["blocks"]}
    await env.send.click("herald_dead_retry", str(job), user="U2", channel=ALERTS, message=message)
    await env.slack.until(lambda: env.slack.ephemerals)
    [refusal] = env.slack.ephemerals
    assert (refusal["channel"], refusal["user"]) == (ALERTS, "U2")
    assert "Only Herald admins" in text_of(refusal)
    [letter] = await env.herald.dead_letters("slack:UADMIN")
    assert letter.retry_requested_by is None  # refused, not turned into a request

    await env.send.click(
        "herald_dead_retry", str(job), user="UADMIN", channel=ALERTS, message=message
    )
    update = await edited(env)
    assert (update["channel"], update["ts"]) == (ALERTS, posted["ts"])
    assert "Retried 1 by <@UADMIN>" in text_of(update) and "Dead letter" in text_of(update)
    assert action_ids(update) == []
    assert env.slack.responses == []
    assert await env.herald.dead_letters("slack:UADMIN") == []
    assert (await env.herald.store.job_counts()).get("pending") == 1
    trail = await audit_trail(env.herald.store, "job", str(job))
    actions = [(a.actor, a.action) for a in trail]
    assert ("slack:UADMIN", "dead.retry") in actions
    assert [a for a in actions if a[0] == "slack:U2"] == [("slack:U2", "dead.retry.denied")]


async def test_an_admin_discards_a_digest(env: SlackEnv) -> None:
    jobs = await kill(env, 4)
    posted = await alert(env)
    value = ",".join(str(j) for j in jobs)
    message = {"ts": posted["ts"], "blocks": posted["blocks"]}
    await env.send.click(
        "herald_dead_discard", value, user="UADMIN", channel=ALERTS, message=message
    )
    assert "Discarded 4 by <@UADMIN>" in text_of(await edited(env))
    assert (await env.herald.store.job_counts()).get("discarded") == 4


@pytest.mark.parametrize(
    "slack_extra", [{"HERALD_SLACK_ADMINS_FROM_WORKSPACE": "true"}], indirect=True
)
async def test_a_trusted_workspace_owner_may_decide(env: SlackEnv) -> None:
    [job] = await kill(env, 1)
    posted = await alert(env)
    message = {"ts": posted["ts"], "blocks": posted["blocks"]}
    await env.send.click(
        "herald_dead_retry", str(job), user="UOWNER", channel=ALERTS, message=message
    )
    assert "Retried 1 by <@UOWNER>" in text_of(await edited(env))


async def test_admins_decide_from_the_home_tab_too(env: SlackEnv) -> None:
    [job] = await kill(env, 1)
    await env.send.home_opened("UADMIN")
    await env.slack.until(lambda: env.slack.published)
    home = env.slack.published[-1]["view"]
    assert "Dead letters *1*" in text_of(home) and "herald_dead_retry" in action_ids(home)
    await env.send.click("herald_dead_retry", str(job), user="U1", home=True)
    await env.slack.until(lambda: len(env.slack.published) == 2)
    assert "Only Herald admins" in text_of(env.slack.published[-1]["view"])
    await env.send.click("herald_dead_retry", str(job), user="UADMIN", home=True)
    await env.slack.until(lambda: len(env.slack.published) == 3)
    assert "Retried 1 by <@UADMIN>" in text_of(env.slack.published[-1]["view"])


async def test_an_already_decided_letter_says_so(env: SlackEnv) -> None:
    [job] = await kill(env, 1)
    await env.herald.discard_dead_letters("slack:UADMIN", [job])
    await env.send.click("herald_dead_retry", str(job), user="UADMIN", channel=ALERTS, message={})
    await env.slack.until(lambda: env.slack.ephemerals)
    assert "No dead letter" in text_of(env.slack.ephemerals[0])


@pytest.mark.parametrize("slack_extra", [{"HERALD_SLACK_ALERT_CHANNEL": None}], indirect=True)
async def test_no_alert_channel_no_alerts(env: SlackEnv) -> None:
    await kill(env, 2)
    await env.adapter.stop()  # flushes anything pending
    assert alerts(env) == [] and env.slack.messages == []


async def test_without_the_alerts_timestamp_the_decision_answers_through_response_url(
    env: SlackEnv,
) -> None:
    [job] = await kill(env, 1)
    posted = await alert(env)
    message = {"blocks": posted["blocks"]}
    await env.send.click(
        "herald_dead_discard", str(job), user="UADMIN", channel=ALERTS, message=message
    )
    reply = await env.reply()
    assert reply["replace_original"] is True and "Discarded 1 by <@UADMIN>" in text_of(reply)
    assert env.slack.edits == []
