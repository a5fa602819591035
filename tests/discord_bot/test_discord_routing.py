"""``/schedule create to:`` with several targets, chains and ``their_time`` (issue 35),
driven through the command callbacks with interaction doubles and delivered by the
dispatcher (drain mode, the injected clock) through the fake Discord REST API and the fake
SMTP server, on SQLite and PostgreSQL: one schedule, one job per recipient, each delivered
where it goes; a chain falls back to email; a member's zone from the store; bad input
gets its sentence, ephemerally, and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import discord
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from bot.discord_bot import DiscordAdapter, create_adapter
from bot.discord_bot.targets import Target, chains, read
from core.cases import Herald
from core.channels import build_channels, parse_destination
from core.channels.base import Channel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.dispatcher.drain import DrainSummary
from core.errors import InvalidInput
from core.models import Schedule
from core.settings import Settings
from core.store import Store
from tests.discord_bot.conftest import TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    BOT,
    CHANNEL,
    GUILD,
    OTHER_CHANNEL,
    OWNER,
    READER,
    SENDER,
    STRANGER,
    Guild,
    Interaction,
    who,
)
from tests.discord_bot.test_discord_commands import run
from tests.fakes.discord_app import FakeDiscordApp
from tests.fakes.smtp import FakeSMTP

BLOCKED = 700000000000000030  # the bot may not send there (Missing Permissions)
CLOSED = 700000000000000040  # the member may only read there
UNKNOWN = 700000000000000050  # not a channel of this server
OUTSIDER = 800000000000000099  # not a member of this server
SAM_MAIL = "sam@example.com"

Make = Callable[..., Interaction]
FUZZ = examples(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using the store runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscordApp]:
    async with FakeDiscordApp(TOKEN) as server:
        server.add_channel(str(CHANNEL), name="general")
        server.add_channel(str(OTHER_CHANNEL), name="dev")
        server.add_channel(str(BLOCKED), can_send=False, name="old")
        server.add_user(str(STRANGER))
        server.add_user(str(OWNER))
        yield server


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSMTP]:
    async with FakeSMTP() as server:
        yield server


@pytest.fixture
def live(db_url: str, fake: FakeDiscordApp, smtp: FakeSMTP) -> Settings:
    return discord_settings(
        db_url,
        fake.api_url,
        HERALD_SMTP_HOST="127.0.0.1",
        HERALD_SMTP_PORT=str(smtp.port),
        HERALD_SMTP_TLS="none",
        HERALD_SMTP_FROM="Herald <herald@example.com>",
    )


@pytest.fixture
async def channels(live: Settings) -> AsyncIterator[dict[str, Channel]]:
    built = build_channels(live)
    yield built
    for channel in built.values():
        await channel.close()


@pytest.fixture
def herald(
    store: Store, live: Settings, clock: ManualClock, channels: dict[str, Channel]
) -> Herald:
    """Herald whose destinations are checked against the fakes (the channels' validate)."""
    return Herald(store, live, clock, channels=channels)


@pytest.fixture
async def adapter(live: Settings, herald: Herald) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(live, herald)
    try:
        yield made
    finally:
        await made.stop()


@pytest.fixture
def interaction(adapter: DiscordAdapter) -> Make:
    """``interaction(user_id, **kw)`` in a server whose channels discord.py has cached:
    #general (where the command is typed), #dev, #old, and #news where the member may
    only read."""

    def make(*args: Any, **kwargs: Any) -> Interaction:
        guild = Guild()
        both = {OWNER: SENDER, BOT: SENDER}
        guild.add_channel(CHANNEL, both, "general")
        guild.add_channel(OTHER_CHANNEL, both, "dev")
        guild.add_channel(BLOCKED, both, "old")
        guild.add_channel(CLOSED, {OWNER: READER, BOT: SENDER}, "news")
        return Interaction(adapter.client, *args, guild=guild, **kwargs)

    return make


async def drain(herald: Herald, clock: ManualClock) -> DrainSummary:
    """Move the clock just past the first due occurrence and deliver what is due."""
    found = await herald.list_schedules(who(OWNER))
    due = min(s.next_run_at for s in found if s.next_run_at is not None)
    clock.advance((due - clock.now()).total_seconds() + 1)
    dispatcher = Dispatcher(herald.store, herald.channels, clock=clock, config=DispatcherConfig())
    return await dispatcher.drain()


async def only_schedule(herald: Herald) -> Schedule:
    [schedule] = await herald.list_schedules(who(OWNER))
    return schedule


def contents(fake: FakeDiscordApp, channel: int | str) -> list[str]:
    return [str(m["content"]).split("\n-# ")[0] for m in fake.channels[str(channel)].messages]


# --- reading to: ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#ops #dev @alice", [["#ops"], ["#dev"], ["@alice"]]),
        ("#ops,#dev, @alice", [["#ops"], ["#dev"], ["@alice"]]),
        ("@alice or alice@example.com", [["@alice", "alice@example.com"]]),
        ("<#1> @a OR b@x.io or email:c@x.io", [["<#1>"], ["@a", "b@x.io", "email:c@x.io"]]),
    ],
)
def test_to_reads_targets_separated_by_spaces_or_commas_and_or_makes_a_chain(
    text: str, expected: list[list[str]]
) -> None:
    assert chains(text) == expected


@pytest.mark.parametrize(
    ("word", "target"),
    [
        ("me", Target("me")),
        (f"<@{STRANGER}>", Target("user", str(STRANGER))),
        (f"<@!{STRANGER}>", Target("user", str(STRANGER))),
        (f"<#{CHANNEL}>", Target("channel", str(CHANNEL))),
        (str(CHANNEL), Target("id", str(CHANNEL))),
        ("#dev", Target("channel_name", "dev")),
        ("@Sam", Target("member_name", "Sam")),
        (SAM_MAIL, Target("email", SAM_MAIL)),
        (f"email:{SAM_MAIL}", Target("email", SAM_MAIL)),
    ],
)
def test_each_kind_of_target_is_read(word: str, target: Target) -> None:
    assert read(word) == target


@pytest.mark.parametrize("text", ["or #ops", "#ops or", "#ops or or #dev", " , "])
def test_an_or_without_two_sides_or_nothing_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        chains(text)


_WORDS = st.one_of(
    st.sampled_from(
        [
            "or",
            "OR",
            ",",
            " ",
            "me",
            "#dev",
            "@Sam",
            "@everyone",
            f"<#{CHANNEL}>",
            f"<@{STRANGER}>",
            f"<@!{STRANGER}>",
            f"<@&{GUILD}>",
            str(CHANNEL),
            SAM_MAIL,
            f"email:{SAM_MAIL}",
            "email:",
            "@",
            "#",
            "<#>",
        ]
    ),
    st.text(max_size=12),
)


@FUZZ
@given(st.lists(_WORDS, max_size=12).map(" ".join))
def test_any_to_is_read_or_refused_in_a_sentence(text: str) -> None:
    """The to: grammar's fuzz run: several targets, chains, junk; never a crash."""
    try:
        found = chains(text)
        targets = [read(word) for chain in found for word in chain]
    except InvalidInput as exc:
        assert str(exc).endswith(".")
        return
    assert found and all(chain for chain in found)
    assert not any(word.lower() == "or" for chain in found for word in chain)
    for target in targets:
        if target.kind == "email":
            try:
                parse_destination(f"email:{target.value}")
            except InvalidInput as exc:  # core refuses it in a sentence when saving
                assert str(exc).endswith(".")
        elif target.kind in {"user", "channel", "id"}:
            assert parse_destination(f"discord:{target.value}").kind == "discord"


# --- several targets -------------------------------------------------------------------


async def test_several_targets_make_one_schedule_delivered_to_each(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
) -> None:
    to = f"<#{CHANNEL}> #dev, <@{STRANGER}>"
    text = await run(
        adapter, "create", interaction(), when="in 10 minutes", message="Stand-up", to=to
    )

    assert text.startswith("Scheduled.")
    every = f"<#{CHANNEL}>, <#{OTHER_CHANNEL}>, <@{STRANGER}> (direct message)"
    assert f"**Schedule #1** · pending · to {every}" in text
    schedule = await only_schedule(herald)
    assert schedule.destinations == [
        f"discord:{CHANNEL}",
        f"discord:{OTHER_CHANNEL}",
        f"discord:@{STRANGER}",
    ]

    listed = await run(adapter, "list", interaction())
    assert f"<#{CHANNEL}>, <#{OTHER_CHANNEL}> +1 more · Stand-up" in listed

    summary = await drain(herald, clock)

    assert summary.outcomes["delivered"] == 3
    assert contents(fake, CHANNEL) == contents(fake, OTHER_CHANNEL) == ["Stand-up"]
    [dm] = fake.channels[fake.dms[str(STRANGER)]].messages
    assert "Stand-up" in str(dm["content"])
    shown = await run(adapter, "show", interaction(), id=1)
    assert "**Latest:** delivered to 3 of 3" in shown
    assert f"✅ delivered to <#{OTHER_CHANNEL}>" in shown


async def test_one_recipient_failing_is_said_and_holds_up_no_other(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
) -> None:
    to = f"<#{CHANNEL}>, #old"
    await run(adapter, "create", interaction(), when="in 10 minutes", message="Deploy", to=to)

    await drain(herald, clock)

    assert contents(fake, CHANNEL) == ["Deploy"] and contents(fake, BLOCKED) == []
    shown = await run(adapter, "show", interaction(), id=1)
    assert f"**Latest:** delivered to 1 of 2; <#{BLOCKED}> failed" in shown
    assert f"❌ dead to <#{BLOCKED}>" in shown


async def test_one_channel_target_is_a_schedule_into_that_channel(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(adapter, "create", interaction(), when="in 1 hour", message="x", to="#dev")
    assert f"· to <#{OTHER_CHANNEL}>\n" in text
    schedule = await only_schedule(herald)
    assert schedule.destinations == [f"discord:{OTHER_CHANNEL}"]
    assert len(schedule.recipients) == 1


# --- a chain ----------------------------------------------------------------------------


async def test_a_chain_falls_back_to_email_when_the_direct_message_is_refused(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
    smtp: FakeSMTP,
) -> None:
    fake.add_user(str(STRANGER), takes_dms=False)
    to = f"<@{STRANGER}> or {SAM_MAIL}"
    text = await run(
        adapter, "create", interaction(), when="in 10 minutes", message="Review", to=to
    )

    assert f"to <@{STRANGER}> (direct message) or `email:{SAM_MAIL}`" in text
    schedule = await only_schedule(herald)
    assert [r["to"] for r in schedule.recipients] == [[f"discord:@{STRANGER}", f"email:{SAM_MAIL}"]]

    await drain(herald, clock)

    [mail] = smtp.messages
    assert mail.rcpt_tos == [SAM_MAIL] and "Review" in mail.message.get_content()
    assert all(not c.messages for c in fake.channels.values() if c.recipient == str(STRANGER))
    [job] = [j for j in (await herald.show_schedule(who(OWNER), 1)).jobs if j.state == "delivered"]
    assert (job.step, job.destination) == (1, f"email:{SAM_MAIL}")


# --- their time -------------------------------------------------------------------------


async def test_their_time_reads_the_hour_in_a_members_zone_from_the_store(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
) -> None:
    await herald.set_timezone(who(STRANGER), "Europe/Berlin")
    to = f"<@{STRANGER}> <#{CHANNEL}>"
    text = await run(
        adapter,
        "create",
        interaction(),
        when="every day at 9am",
        message="Plan your day",
        to=to,
        their_time=True,
    )

    assert f"<@{STRANGER}> (Europe/Berlin time) (direct message)" not in text
    assert f"to <@{STRANGER}> (direct message) (Europe/Berlin time), <#{CHANNEL}>" in text
    assert f"**Their time:** <@{STRANGER}> 09:00 Europe/Berlin = 08:00Z" in text
    schedule = await only_schedule(herald)
    assert [r.get("zone") for r in schedule.recipients] == ["Europe/Berlin", None]

    # 08:00Z (09:00 in Berlin): the member's direct message; the channel at 09:00 UTC
    dispatcher = Dispatcher(herald.store, herald.channels, clock=clock, config=DispatcherConfig())
    clock.advance((datetime(2026, 3, 3, 8, 0, 30, tzinfo=UTC) - clock.now()).total_seconds())
    await dispatcher.drain()
    assert len(fake.channels[fake.dms[str(STRANGER)]].messages) == 1
    assert contents(fake, CHANNEL) == []
    clock.advance(timedelta(hours=1).total_seconds())
    await dispatcher.drain()
    assert contents(fake, CHANNEL) == ["Plan your day"]
    assert len(fake.channels[fake.dms[str(STRANGER)]].messages) == 1


async def test_their_time_uses_a_zone_an_admin_set_and_the_authors_for_anyone_without(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.set_member_timezone(who(ADMIN), f"discord:{STRANGER}", "America/New_York")
    await herald.set_member_timezone(who(ADMIN), f"email:{SAM_MAIL}", "Asia/Tokyo")
    text = await run(
        adapter,
        "create",
        interaction(),
        when="every day at 9am",
        message="Plan your day",
        to=f"<@{STRANGER}>, me, {SAM_MAIL}",
        their_time=True,
    )
    assert (
        f"**Their time:** <@{STRANGER}> 09:00 America/New_York = 14:00Z, "
        f"<@{OWNER}> 09:00 UTC = 09:00Z, email:{SAM_MAIL} 09:00 Asia/Tokyo = 00:00Z"
    ) in text


# --- bad input changes nothing ------------------------------------------------------------


@pytest.mark.parametrize(
    ("to", "problem"),
    [
        (
            " ".join(f"p{i}@example.com" for i in range(51)),
            "at most 50 recipients; this one names 51",
        ),
        (f"<#{CHANNEL}> <@{STRANGER}> bob", "Herald cannot tell what 'bob' is"),
        (f"<@{STRANGER}> <@&{GUILD}>", "is a role"),
        (f"<@{STRANGER}> or", "`or` goes between two targets"),
        (f"<@{STRANGER}> <#{UNKNOWN}>", f"Herald cannot find <#{UNKNOWN}> in this server"),
        (f"<@{STRANGER}> <@{OUTSIDER}>", "is not a member of this server"),
        (f"<@{STRANGER}> <#{CHANNEL}> #general", f"<#{CHANNEL}> is named twice"),
        (f"<@{STRANGER}> #nope", "No channel is called #nope"),
        (f"<@{STRANGER}> @everyone", "is everyone in a channel"),
        (f"<@{STRANGER}> #news", f"You cannot send messages in <#{CLOSED}>"),
        (f"<@{STRANGER}> @Nobody", "Herald cannot tell who @Nobody is"),
    ],
)
async def test_bad_targets_are_refused_ephemerally_and_nothing_changes(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, to: str, problem: str
) -> None:
    text = await run(adapter, "create", interaction(), when="in 1 hour", message="hi", to=to)
    assert problem in text
    assert await herald.list_schedules(who(OWNER)) == []
    # the member named before the refusal is not recorded either
    assert await herald.store.get_member(f"discord:{GUILD}", f"discord:{STRANGER}") is None


async def test_channel_and_to_together_are_refused(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    text = await run(
        adapter, "create", interaction(), when="in 1 hour", message="x", to="#dev", channel=object()
    )
    assert "not both" in text
    assert await herald.list_schedules(who(OWNER)) == []


# --- edit ------------------------------------------------------------------------------


async def test_edit_to_replaces_the_recipients_with_several(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await run(adapter, "create", interaction(), when="every day at 9am", message="Stand-up")
    text = await run(adapter, "edit", interaction(), id=1, to=f"<#{CHANNEL}> #dev {SAM_MAIL}")

    assert text.startswith("Changed.")
    assert f"to <#{CHANNEL}>, <#{OTHER_CHANNEL}>, `email:{SAM_MAIL}`" in text
    schedule = await only_schedule(herald)
    assert schedule.destinations == [
        f"discord:{CHANNEL}",
        f"discord:{OTHER_CHANNEL}",
        f"email:{SAM_MAIL}",
    ]
    assert [r["id"] for r in schedule.recipients] == [0, 1, 2]  # the first one kept


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"to": f"<#{CHANNEL}> bob"}, "Herald cannot tell what 'bob' is"),
        ({"to": "#dev", "channel": object()}, "not both"),
    ],
)
async def test_a_bad_edit_changes_nothing(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    params: dict[str, Any],
    problem: str,
) -> None:
    await run(adapter, "create", interaction(), when="every day at 9am", message="Stand-up")
    text = await run(adapter, "edit", interaction(), id=1, **params)
    assert problem in text
    schedule = await only_schedule(herald)
    assert schedule.destinations == [f"discord:{CHANNEL}"] and schedule.version == 1


# --- whom it may notify ------------------------------------------------------------------


async def test_a_message_to_several_channels_notifies_whom_the_author_could_in_each(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    """Mention Everyone here (#general), not in #dev: @everyone pings no one anywhere."""
    loud = discord.Permissions(view_channel=True, send_messages=True, mention_everyone=True)
    message = "@everyone ship it"
    await run(
        adapter,
        "create",
        interaction(permissions=loud),
        when="in 1 hour",
        message=message,
        to=f"<#{CHANNEL}> #dev",
    )
    await run(
        adapter,
        "create",
        interaction(permissions=loud),
        when="in 1 hour",
        message=message + " today",  # another text: the same would be a duplicate (issue 41)
        to=f"<#{CHANNEL}> <@{STRANGER}>",
    )
    both, here = sorted(await herald.list_schedules(who(OWNER)), key=lambda s: s.id or 0)
    assert both.options["allowed_mentions"] == {"parse": ["users"]}
    assert here.options["allowed_mentions"] == {"parse": ["users", "roles", "everyone"]}
