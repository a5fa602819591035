"""``/schedule`` to several recipients, chains and "their time" (issue 35), through the
Bolt app and the fake Slack Web API, on SQLite and PostgreSQL: one schedule, one job per
recipient and occurrence, each delivered where it goes; a chain falls back to email; a
member's own zone comes from ``users.info`` (``tz``); bad input changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from core.channels.slack import SlackChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.dispatcher.drain import DrainSummary
from tests.fakes.slack import slack_error
from tests.fakes.slack_app import FakeSlackApp
from tests.fakes.smtp import FakeSMTP
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import text_of


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSMTP]:
    async with FakeSMTP() as fake:
        yield fake


@pytest.fixture
async def routed(
    slack: FakeSlackApp, db_url: str, clock: ManualClock, smtp: FakeSMTP
) -> AsyncIterator[SlackEnv]:
    """The Slack app over SQLite, then PostgreSQL, with email through the fake SMTP."""
    extra = {
        "HERALD_SMTP_HOST": "127.0.0.1",
        "HERALD_SMTP_PORT": str(smtp.port),
        "HERALD_SMTP_TLS": "none",
        "HERALD_SMTP_FROM": "Herald <herald@example.com>",
    }
    async with slack_env(slack, db_url, clock, extra) as env:
        yield env


async def _command(env: SlackEnv, text: str, user: str = "U2") -> str:
    """Run ``/schedule text`` as ``user``; what the ephemeral reply says."""
    count = len(env.slack.responses)
    answer = await env.send.command(text, user=user)
    assert answer.status == 200
    reply = await env.reply(count + 1)
    assert reply["response_type"] == "ephemeral"
    return text_of(reply)


async def _drain(env: SlackEnv) -> DrainSummary:
    """Run the dispatcher once the first occurrence is due."""
    due = min(s.next_run_at for s in await env.schedules() if s.next_run_at is not None)
    env.clock.advance((due - env.clock.now()).total_seconds() + 1)
    dispatcher = Dispatcher(
        env.herald.store, env.herald.channels, clock=env.clock, config=DispatcherConfig()
    )
    return await dispatcher.drain()


async def test_several_targets_make_one_schedule_delivered_to_each(routed: SlackEnv) -> None:
    said = await _command(
        routed, "<#C0123|general> <#C0RANDOM|random> <@U2|grace> in 10 minutes: Stand-up"
    )
    assert ":white_check_mark: Scheduled for <#C0123>, <#C0RANDOM>, <@U2> (direct message)." in said
    [schedule] = await routed.schedules()
    assert schedule.destinations == ["slack:C0123", "slack:C0RANDOM", "slack:@U2"]
    listed = await _command(routed, "list")
    named = f"*#{schedule.id}* to <#C0123>, <#C0RANDOM>, <@U2> (direct message)"
    assert named in listed
    await routed.send.home_opened("U2")
    await routed.slack.until(lambda: routed.slack.published)
    assert named in text_of(routed.slack.published[-1]["view"])
    summary = await _drain(routed)
    assert summary.outcomes["delivered"] == 3
    posted = {m["channel"]: m["text"] for m in routed.slack.messages}
    dm = routed.slack.ims["U2"]
    assert set(posted) == {"C0123", "C0RANDOM", dm}
    assert posted["C0123"] == posted["C0RANDOM"] == "Stand-up"
    shown = await _command(routed, f"show {schedule.id}")
    assert "delivered to 3 of 3" in shown


async def test_a_chain_falls_back_to_email_when_the_direct_message_fails(
    routed: SlackEnv, smtp: FakeSMTP
) -> None:
    said = await _command(routed, "<@U1|ada> or ada@example.com in 10 minutes: The deck")
    assert "Scheduled for <@U1> (direct message) or `email:ada@example.com`" in said
    [schedule] = await routed.schedules()
    assert schedule.recipients == [{"id": 0, "to": ["slack:@U1", "email:ada@example.com"]}]
    # the direct message fails for good (Slack: the conversation is gone)
    routed.slack.script(slack_error("channel_not_found"), on="/api/chat.postMessage")
    await _drain(routed)
    [mail] = smtp.messages
    assert mail.rcpt_tos == ["ada@example.com"]
    assert "The deck" in mail.message.get_content()
    assert not [m for m in routed.slack.messages if m["text"].endswith("The deck")]
    assert schedule.id is not None
    [job] = (await routed.herald.show_schedule("slack:UADMIN", schedule.id)).jobs
    assert (job.state, job.step, job.destination) == ("delivered", 1, "email:ada@example.com")


async def test_their_time_reads_each_members_zone_from_slack(routed: SlackEnv) -> None:
    said = await _command(
        routed, "<@U1|ada> <@U2|grace> every day at 9am their time: Stand-up", user="UADMIN"
    )
    # 2026-03-03: Berlin is UTC+1, New York UTC-5
    assert (
        "Their times: <@U1> 09:00 Europe/Berlin = 08:00Z, <@U2> 09:00 America/New_York = 14:00Z"
        in said
    )
    [schedule] = await routed.schedules()
    zones = [(r["to"], r.get("zone")) for r in schedule.recipients]
    assert zones == [(["slack:@U1"], "Europe/Berlin"), (["slack:@U2"], "America/New_York")]
    asked = {c["user"] for c in routed.slack.calls("users.info")}
    assert {"U1", "U2"} <= asked
    # each at 09:00 on their own clock: Ada's at 08:00Z, Grace's at 14:00Z
    sent: list[str] = []
    for hour in (8, 14):
        at = datetime(2026, 3, 3, hour, 0, 1, tzinfo=UTC)
        routed.clock.advance((at - routed.clock.now()).total_seconds())
        dispatcher = Dispatcher(
            routed.herald.store,
            routed.herald.channels,
            clock=routed.clock,
            config=DispatcherConfig(),
        )
        await dispatcher.drain()
        sent.append(
            ",".join(m["channel"] for m in routed.slack.messages if "Stand-up" in m["text"])
        )
    ada, grace = routed.slack.ims["U1"], routed.slack.ims["U2"]
    assert sent == [ada, f"{ada},{grace}"]


async def test_one_person_their_time_is_read_in_their_zone(routed: SlackEnv) -> None:
    said = await _command(routed, "<@U1|ada> every day at 9am their time: Stand-up")
    assert "Reminder for <@U1> scheduled" in said
    assert "Their times: <@U1> 09:00 Europe/Berlin = 08:00Z" in said


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            " ".join(f"<#C{n:04d}>" for n in range(1, 52)) + " in 10 minutes: x",
            "A schedule may go to at most 50 recipients; this one names 51",
        ),
        ("<#C0123> <#C0000> in 10 minutes: x", "Herald cannot see <#C0000>"),
        ("<#C0123> <#CNOPE> in 10 minutes: x", "Herald cannot see <#CNOPE>"),
        ("<#C0123> #nowhere in 10 minutes: x", "#nowhere"),
        ("<#C0123> <#C0RANDOM> in 10 minutes: x", "join <#C0RANDOM> first"),
        ("<#C0123> <#CNOBOT> in 10 minutes: x", "The bot is not in Slack channel CNOBOT"),
        ("<#C0123> <@UNOBODY> in 10 minutes: x", "Slack knows no user <@UNOBODY> here"),
        ("<#C0123> <#C0123> in 10 minutes: x", "named twice"),
        ("<#C0123> <!channel> in 10 minutes: x", "not a group"),
    ],
    ids=[
        "too-many",
        "unknown-id",
        "unknown-channel",
        "unknown-name",
        "not-a-member",
        "bot-not-in",
        "unknown-user",
        "twice",
        "group",
    ],
)
async def test_bad_targets_get_a_clear_reply_and_change_nothing(
    routed: SlackEnv, text: str, problem: str
) -> None:
    for n in range(1, 52):  # channels U1 may post in (C0000 is none)
        routed.slack.add_channel(f"C{n:04d}", f"c{n}")
        routed.slack.add_members(f"C{n:04d}", "U1")
    said = await _command(routed, text, user="U1")
    assert said.startswith(":warning:") and problem in said
    assert await routed.schedules() == []
    assert routed.slack.messages == []


async def test_member_zone_asks_users_info_once_and_never_raises(slack: FakeSlackApp) -> None:
    channel = SlackChannel(slack.token, base_url=slack.api_url, timeout=2.0)
    try:
        assert await channel.member_zone("slack:@U1") == "Europe/Berlin"
        assert await channel.member_zone("slack:@U1") == "Europe/Berlin"  # cached
        assert len(slack.calls("users.info")) == 1
        assert await channel.member_zone("slack:C0123") is None  # a channel, not a person
        assert await channel.member_zone("email:a@example.com") is None
        assert await channel.member_zone("slack:@UNOBODY") is None  # user_not_found
        slack.add_user("UNOZONE", tz=None)
        assert await channel.member_zone("slack:@UNOZONE") is None
        slack.add_user("UODD", tz="Mars/Olympus_Mons")
        assert await channel.member_zone("slack:@UODD") is None
        slack.add_user("U9", tz="Asia/Tokyo")
        slack.script(slack_error("internal_error", status=500), on="/api/users.info")
        assert await channel.member_zone("slack:@U9") is None  # Slack down: no zone
        assert await channel.member_zone("slack:@U9") == "Asia/Tokyo"  # not cached
    finally:
        await channel.close()


async def test_member_zone_without_a_token_asks_nothing(slack: FakeSlackApp) -> None:
    channel = SlackChannel(None, base_url=slack.api_url)
    try:
        assert await channel.member_zone("slack:@U1") is None
        assert slack.calls("users.info") == []
    finally:
        await channel.close()


async def test_a_list_names_the_first_ten_recipients_and_counts_the_rest(routed: SlackEnv) -> None:
    for n in range(12):
        routed.slack.add_channel(f"CTEAM{n:02d}", f"team-{n}")
        routed.slack.add_members(f"CTEAM{n:02d}", "U1")
    targets = " ".join(f"<#CTEAM{n:02d}|team-{n}>" for n in range(12))
    said = await _command(routed, f"{targets} every monday at 9am: Weekly", user="U1")
    assert "<#CTEAM11>." in said  # the reply names every one
    listed = await _command(routed, "list", user="U1")
    assert "<#CTEAM09> and 2 more: every Monday at 09:00" in listed
    assert "<#CTEAM10>" not in listed
