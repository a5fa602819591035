"""Until done in Slack (issue 40): ``/schedule … until done, nag every …, escalate to …``
saves the ladder and reads it back; the message goes out with a Done button; Done by a
member who saw it in its channel stops the ladder and the dispatcher edits the message;
Done again says who did it first; Done from another workspace or from elsewhere is
refused with core's sentence. Through the fake Slack, with a ManualClock and the
dispatcher's drain, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from bot.slack import grammar
from bot.slack.ladder_words import Ladder
from core import until_done
from core.channels import build_channels
from core.channels.base import Channel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.until_done import Level, UntilDone
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import action_ids, text_of
from tests.slack.test_payload_contract import valid_message

OTHER_TEAM = "T0OTHER"
COMMAND = (
    "<#C0123|general> in 1 minute until done, nag every 15m, "
    "escalate to <@U2|grace> after 1h: Check the backups"
)


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    """The adapter over SQLite and PostgreSQL, serving a second workspace too."""
    slack.add_user("UX", team=OTHER_TEAM, name="Stranger")
    extra = {
        "HERALD_SLACK_TEAM_IDS": f"T0HERALD,{OTHER_TEAM}",
        "HERALD_ADMINS": "slack:UADMIN,local:root",  # an operator at the terminal too
    }
    async with slack_env(slack, db_url, clock, extra) as built:
        yield built


@pytest.fixture
async def channels(env: SlackEnv) -> AsyncIterator[dict[str, Channel]]:
    """The delivery channels, pointed at the fake Slack."""
    built = build_channels(env.settings)
    try:
        yield built
    finally:
        for channel in built.values():
            await channel.close()


async def drain(env: SlackEnv, channels: dict[str, Channel]) -> dict[str, int]:
    dispatcher = Dispatcher(env.herald.store, channels, clock=env.clock, config=DispatcherConfig())
    return (await dispatcher.drain()).outcomes


async def handled(env: SlackEnv) -> None:
    """Every handler running after its acknowledgement has finished."""
    await env.adapter.tracker.drain(10.0)


def in_channel(env: SlackEnv, channel: str = "C0123") -> list[dict[str, Any]]:
    return [m for m in env.slack.messages if m["channel"] == channel]


async def posted(env: SlackEnv, channels: dict[str, Channel]) -> tuple[int, dict[str, Any]]:
    """Schedule :data:`COMMAND`, send its occurrence; its job id and its message."""
    await env.send.command(COMMAND, user="U1")
    await env.reply()
    env.clock.advance(60)
    assert (await drain(env, channels))["delivered"] == 1
    [message] = in_channel(env)
    [done] = [b for b in message["blocks"] if b.get("type") == "actions"]
    [button] = done["elements"]
    return int(button["value"]), message


def clicked(message: dict[str, Any]) -> dict[str, Any]:
    return {"ts": message["ts"], "blocks": message["blocks"], "text": message["text"]}


async def test_the_grammar_saves_the_ladder_and_reads_it_back(env: SlackEnv) -> None:
    await env.send.command(
        "<#C0123|general> every weekday at 9am until done, nag every 15m, escalate to "
        "<@U1|ada> after 1h, then escalate to <@UADMIN|root>, <#C0RANDOM|random> after 2h: "
        "Check the backups",
        user="U2",  # a member of both channels
    )
    reply = await env.reply()
    shown = text_of(reply)
    assert ":white_check_mark: Scheduled for <#C0123>" in shown
    assert (
        "Until done, nag every 15 minutes, escalate to <@U1> after 1 hour, "
        "escalate to <@UADMIN>, <#C0RANDOM> after 2 hours"
    ) in shown
    valid_message((reply["text"], reply["blocks"]))
    [schedule] = await env.schedules()
    assert (schedule.body, schedule.expression) == ("Check the backups", "every weekday at 9am")
    assert until_done.of_options(schedule.options) == UntilDone(
        timedelta(minutes=15),
        (
            Level(("slack:@U1",), timedelta(hours=1)),
            Level(("slack:@UADMIN", "slack:C0RANDOM"), timedelta(hours=2)),
        ),
    )
    # escalating into a channel the author is not in is refused, as posting there is
    await env.send.command(
        "<#C0123|general> in 1 hour until done, escalate to <#CNOBOT|nobot> after 1h: hi",
        user="U2",
    )
    assert "You can only schedule into channels you are a member of" in text_of(await env.reply(2))


async def test_a_ladder_core_refuses_is_answered_with_its_sentence(env: SlackEnv) -> None:
    await env.send.command("<#C0123|general> in 1 hour until done, nag every 1m: hi", user="U1")
    assert "Nags come at most every 5 minutes" in text_of(await env.reply())
    await env.send.command("<#C0123|general> in 1 hour until done, nag 15m: hi", user="U1")
    assert "Could not read `nag 15m` after “until done”" in text_of(await env.reply(2))
    assert await env.schedules() == []


async def test_done_by_a_member_in_the_channel_stops_the_ladder(
    env: SlackEnv, channels: dict[str, Channel]
) -> None:
    job_id, message = await posted(env, channels)
    assert action_ids(message) == ["herald_done"]
    valid_message((message["text"], message["blocks"]))
    env.clock.advance(timedelta(minutes=15))
    assert (await drain(env, channels))["delivered"] == 1  # nag 1, in the thread
    [nag] = [m for m in in_channel(env) if m.get("thread_ts") == message["ts"]]
    assert "Still not done" in nag["text"]

    answer = await env.send.click(
        "herald_done", str(job_id), user="U2", channel="C0123", message=clicked(message)
    )
    assert answer.status == 200
    await handled(env)
    assert len(env.slack.responses) == 1  # the create's: the message itself changes
    await drain(env, channels)  # the done step: the edit of the message (in Berlin time)
    [edit] = env.slack.edits
    assert (edit["channel"], edit["ts"]) == ("C0123", message["ts"])
    assert "Done by <@U2> at 13:16" in text_of(edit) and action_ids(edit) == []

    env.clock.advance(timedelta(hours=3))  # past every nag and the escalation
    await drain(env, channels)
    assert len(in_channel(env)) == 2  # the message and the one nag
    assert in_channel(env, env.slack.ims.get("U2", "-")) == []  # never escalated to

    await env.send.click(
        "herald_done", str(job_id), user="U1", channel="C0123", message=clicked(message)
    )
    reply = await env.reply(2)
    assert reply["response_type"] == "ephemeral" and reply["replace_original"] is False
    assert text_of(reply).startswith("Already done by <@U2> at 13:16.")  # U1 reads Berlin time
    await env.send.command("show 1", user="U1")
    shown = text_of(await env.reply(3))  # the ladder's steps, each labelled
    assert ": delivered (nag 1)" in shown and ": cancelled (escalation)" in shown
    assert ": acknowledged" in shown and ": delivered (done edit)" in shown


async def test_done_from_the_terminal_first_is_named_as_it_is_known(
    env: SlackEnv, channels: dict[str, Channel]
) -> None:
    """Done by an operator from the CLI (a member no Slack mention names): a later click
    says who by their id, never as a broken ``<@root>``."""
    job_id, message = await posted(env, channels)
    await env.herald.mark_done("local:root", job_id)
    await env.send.click(
        "herald_done", str(job_id), user="U2", channel="C0123", message=clicked(message)
    )
    said = text_of(await env.reply(2))
    assert said.startswith("Already done by local:root at ") and "<@" not in said


async def test_done_from_another_workspace_is_refused(
    env: SlackEnv, channels: dict[str, Channel]
) -> None:
    job_id, message = await posted(env, channels)
    await env.send.click(
        "herald_done",
        str(job_id),
        user="UX",
        channel="C0123",
        message=clicked(message),
        team=OTHER_TEAM,
    )
    assert f"There is no message {job_id} to mark done." in text_of(await env.reply(2))
    await env.send.click(
        "herald_done", str(job_id), user="U2", channel="C0123", message=clicked(message), team="T9"
    )
    assert "Herald is not installed in this Slack workspace." in text_of(await env.reply(3))
    env.clock.advance(timedelta(minutes=15))
    await drain(env, channels)
    assert env.slack.edits == []
    assert any(m.get("thread_ts") == message["ts"] for m in in_channel(env))  # still nagging


async def test_done_seen_elsewhere_is_refused(env: SlackEnv, channels: dict[str, Channel]) -> None:
    job_id, message = await posted(env, channels)
    await env.send.click(
        "herald_done", str(job_id), user="U2", channel="C0RANDOM", message=clicked(message)
    )
    reply = await env.reply(2)
    assert "Only someone who can see the message (in its channel)" in text_of(reply)
    assert reply["response_type"] == "ephemeral"
    [waiting] = await env.herald.awaiting_done("slack:UADMIN")
    assert waiting.job_id == job_id


async def test_done_in_a_direct_message_is_its_recipients(
    env: SlackEnv, channels: dict[str, Channel]
) -> None:
    await env.send.command("me in 1 minute until done, nag every 10m: stretch", user="U1")
    await env.reply()
    env.clock.advance(60)
    assert (await drain(env, channels))["delivered"] == 1
    im = env.slack.ims["U1"]
    [message] = in_channel(env, im)
    assert "herald_done" in action_ids(message)
    job_id = int(
        next(b for b in message["blocks"] if b.get("block_id", "").startswith("herald_done:"))[
            "elements"
        ][0]["value"]
    )
    await env.send.click("herald_done", str(job_id), user="U1", channel=im, message=message)
    await handled(env)
    assert len(env.slack.responses) == 1  # the create's
    assert await env.herald.awaiting_done("slack:UADMIN") == []


async def test_without_done_it_nags_on_time_and_escalates_once(
    env: SlackEnv, channels: dict[str, Channel]
) -> None:
    _, message = await posted(env, channels)
    for _ in range(4):  # 15, 30, 45 and 60 minutes after the message
        env.clock.advance(timedelta(minutes=15))
        await drain(env, channels)
    nags = [m for m in in_channel(env) if m.get("thread_ts") == message["ts"]]
    assert [n["text"].split(":")[0] for n in nags] == [
        "Still not done",
        "Still not done (reminder 2)",
        "Still not done (reminder 3)",
        "Still not done (reminder 4)",
    ]
    [escalation] = in_channel(env, env.slack.ims["U2"])
    assert escalation["text"].startswith("Not done after 1 hour: Check the backups")


@pytest.mark.parametrize(
    ("text", "ladder"),
    [
        ("every day at 9 until done: x", Ladder()),
        (
            "every day at 9 until done, nag every 15 minutes and escalate to <@U1|a> and "
            "<#C2|ops> after 1h, then escalate to me after 2h: x",
            Ladder("15 minutes", ((("slack:@U1", "slack:C2"), "1h"), (("me",), "2h"))),
        ),
        (
            "every day at 9 until done escalate to <@U1|a b> after 90m: x",
            Ladder(None, ((("slack:@U1",), "90m"),)),
        ),
    ],
)
def test_the_clause_reads(text: str, ladder: Ladder) -> None:
    found = grammar.parse(text)
    assert isinstance(found, grammar.Create)
    assert (found.when, found.text, found.until_done) == ("every day at 9", "x", ladder)
    assert Ladder(None, ((("me",), "1h"),)).request("U7") == {
        "nag": None,
        "escalate": [{"to": ["slack:@U7"], "after": "1h"}],
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("until done: x", "Say when before “until done”"),
        ("every day until done, nag 15m: x", "Could not read `nag 15m`"),
        ("every day until done, escalate to @lead after 1h: x", "did not turn `@lead`"),
        ("every day until done, escalate to <@U1>: x", "Say after how long to escalate"),
        ("every day until done, escalate to bob after 1h: x", "not `bob`"),
        ("every day until done, nag every 5m, nag every 9m: x", "Say “nag every …” once."),
    ],
)
def test_a_clause_it_cannot_read_is_refused(text: str, said: str) -> None:
    with pytest.raises(grammar.Refusal, match=re.escape(said)):
        grammar.parse(text)


def test_until_a_date_is_still_a_time() -> None:
    found = grammar.parse("every friday at 5pm until june 30: x")
    assert isinstance(found, grammar.Create) and found.until_done is None
    assert found.when == "every friday at 5pm until june 30"
