"""Named templates on Discord (issue 39): ``/schedule create template: data:``, the
``template`` option's autocomplete and ``/schedule templates``, driven through the
command callbacks with interaction doubles and delivered by the dispatcher (drain
mode, the injected clock) through the fake Discord REST API, on SQLite and PostgreSQL.
A server sees only its own templates; bad input gets one sentence and stores nothing;
the command's registration payload stays within Discord's documented limits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import discord
import pytest

from bot.discord_bot import DiscordAdapter, create_adapter, render, templates
from core import limits, views
from core.actors import Principal, discord_tenant
from core.cases import Herald
from core.channels import build_channels
from core.channels.base import Channel
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.dispatcher.drain import DrainSummary
from core.errors import InvalidInput
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
    SENDER,
    STRANGER,
    Guild,
    Interaction,
    command,
    who,
)
from tests.discord_bot.test_discord_commands import run
from tests.fakes.discord_app import FakeDiscordApp

Make = Callable[..., Interaction]
ELSEWHERE = 700000000000000777  # another server with Herald in it
DEPLOY = "Deploy {{ service }} v{{ version }} on {{ date | date: '%A' }} (#{{ schedule.id }})"
DEPLOY_VARS = {"service": "text", "version": "number"}


def admin(guild: int = GUILD) -> Principal:
    """A server's admin (Manage Server, as the platform says): manages its templates."""
    return Principal(f"discord:{ADMIN}", discord_tenant(guild, ADMIN), platform_admin=True)


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
        server.add_user(str(OWNER))
        yield server


@pytest.fixture
def live(db_url: str, fake: FakeDiscordApp) -> Settings:
    return discord_settings(db_url, fake.api_url)


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
    """``interaction(user_id, **kw)`` in a server whose #general and #dev discord.py
    has cached (the member and the bot may post in both)."""

    def make(*args: Any, **kwargs: Any) -> Interaction:
        guild = kwargs.pop("guild", None) or Guild()
        both = {OWNER: SENDER, STRANGER: SENDER, BOT: SENDER}
        guild.add_channel(CHANNEL, both, "general")
        guild.add_channel(OTHER_CHANNEL, both, "dev")
        return Interaction(adapter.client, *args, guild=guild, **kwargs)

    return make


@pytest.fixture
async def deploy(herald: Herald) -> None:
    await herald.add_template(
        admin(), "deploy", DEPLOY, variables=DEPLOY_VARS, description="A release note"
    )


async def drain(herald: Herald, clock: ManualClock) -> DrainSummary:
    """Move the clock just past the first due occurrence and deliver what is due."""
    found = await herald.list_schedules(who(OWNER))
    due = min(s.next_run_at for s in found if s.next_run_at is not None)
    clock.advance((due - clock.now()).total_seconds() + 1)
    dispatcher = Dispatcher(herald.store, herald.channels, clock=clock, config=DispatcherConfig())
    return await dispatcher.drain()


def contents(fake: FakeDiscordApp, channel: int) -> list[str]:
    return [str(m["content"]).split("\n-# ")[0] for m in fake.channels[str(channel)].messages]


async def complete(
    adapter: DiscordAdapter,
    make: Make,
    command_name: str,
    option: str,
    guild: Guild | None = None,
    **ns: Any,
) -> list[tuple[str, Any]]:
    """Ask the command for choices as the tree does when Discord sends a focused option
    (in ``guild``, default the test server)."""
    inter = make(OWNER, namespace=ns, guild=guild)
    await command(adapter, command_name)._invoke_autocomplete(inter, option, inter.namespace)  # type: ignore[arg-type]
    return inter.response.choices


# --- /schedule create template: data: ---------------------------------------------------


async def test_a_template_with_data_is_scheduled_said_truthfully_and_sent_filled_in(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
    deploy: None,
) -> None:
    text = await run(
        adapter,
        "create",
        interaction(),
        when="every monday at 9am",
        template="deploy",
        data="service=api version=1.4",
    )

    assert text.startswith(
        f"Scheduled template **deploy** v1 to <#{CHANNEL}> every Monday at 09:00 (UTC).\n"
    )
    assert "**Template:** `deploy` v1 · service=api version=1.4" in text
    # the next send as it will go out: its date, the schedule's own number
    assert "> Deploy api v1.4 on Monday (#1)" in text
    assert "{{" not in text
    [schedule] = await herald.list_schedules(who(OWNER))
    assert views.template_of(schedule) == {
        "name": "deploy",
        "version": 1,
        "data": {"service": "api", "version": 1.4},
        "data_by_recipient": {},
    }
    assert schedule.destination == f"discord:{CHANNEL}"

    summary = await drain(herald, clock)

    assert summary.outcomes["delivered"] == 1
    assert contents(fake, CHANNEL) == ["Deploy api v1.4 on Monday (#1)"]
    shown = await run(adapter, "show", interaction(), id=1)
    assert "**Template:** `deploy` v1" in shown and "> Deploy api v1.4 on Monday (#1)" in shown
    listed = await run(adapter, "list", interaction())
    assert "Deploy api v1.4 on Monday" in listed


async def test_a_template_goes_to_every_target_of_to_with_quoted_values(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    clock: ManualClock,
    fake: FakeDiscordApp,
    deploy: None,
) -> None:
    text = await run(
        adapter,
        "create",
        interaction(),
        when="in 10 minutes",
        template="Deploy",  # a name as typed, not picked: read in lower case
        data="service=“web app”, version=2",  # a phone's curly quotes, a comma between
        to=f"<#{CHANNEL}> #dev",
    )

    assert text.startswith(
        f"Scheduled template **deploy** v1 to <#{CHANNEL}>, <#{OTHER_CHANNEL}> once,"
    )
    assert 'service="web app" version=2' in text
    await drain(herald, clock)
    sent = ["Deploy web app v2 on Monday (#1)"]
    assert contents(fake, CHANNEL) == contents(fake, OTHER_CHANNEL) == sent


async def test_a_reminder_to_me_may_send_a_template(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, deploy: None
) -> None:
    text = await run(
        adapter,
        "create",
        interaction(),
        when="every monday at 9am",
        template="deploy",
        data="service=api version=3",
        to="me",
    )

    assert text.startswith("Reminder for you scheduled")
    assert "**Template:** `deploy` v1" in text and "> Deploy api v3 on Monday (#1)" in text
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.destination == f"discord:@{OWNER}"


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (
            {"template": "nope", "data": "service=api"},
            "There is no template named 'nope' in this server: start typing in `template:` "
            "to pick one (`/schedule templates` lists them).",
        ),
        (
            {"template": "deploy", "data": "service=api"},
            "Template 'deploy' needs a value for 'version' for discord:",
        ),
        (
            {"template": "deploy", "data": "service=api version=soon"},
            "'version' must be a number, not 'soon'.",
        ),
        (
            {"template": "deploy", "data": "service=api version=2 colour=red"},
            "Template 'deploy' has no variable 'colour' (its variables: service, version).",
        ),
        (
            {"template": "deploy", "data": 'service="api version=2'},
            "Herald reads `data:` as name=value pairs with spaces between, e.g. "
            'service=api version=1.4 note="big release"; a quote is not closed in',
        ),
        (
            {"template": "deploy", "data": "service api"},
            "Herald reads `data:` as name=value pairs with spaces between, e.g. "
            "service=api version=1.4 note=\"big release\"; 'service' is not one.",
        ),
        (
            {"template": "deploy", "message": "hello", "data": "service=api version=2"},
            templates.BOTH,
        ),
        ({"data": "service=api"}, templates.DATA_ALONE),
        ({}, templates.NO_CONTENT),
    ],
)
async def test_bad_template_input_is_one_sentence_and_stores_nothing(
    adapter: DiscordAdapter,
    interaction: Make,
    herald: Herald,
    deploy: None,
    params: dict[str, str],
    said: str,
) -> None:
    text = await run(adapter, "create", interaction(), when="every monday at 9am", **params)

    assert text.startswith(said)
    assert text.endswith(".") and "\n" not in text
    assert await herald.list_schedules(who(OWNER)) == []
    assert await herald.list_schedules(admin(), everyone=True) == []


async def test_another_servers_template_answers_like_a_missing_one(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.add_template(admin(ELSEWHERE), "theirs", "Only there")

    text = await run(adapter, "create", interaction(), when="in 1 hour", template="theirs")

    assert text.startswith("There is no template named 'theirs' in this server:")
    assert await herald.list_schedules(who(OWNER)) == []
    elsewhere = interaction(OWNER, guild=Guild(ELSEWHERE))
    text = await run(adapter, "create", elsewhere, when="in 1 hour", template="theirs")
    assert text.startswith("Scheduled template **theirs** v1 to ")


# --- /schedule edit template: data: -----------------------------------------------------


async def test_edit_changes_the_values_moves_to_a_template_and_back_to_own_text(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, deploy: None
) -> None:
    await run(adapter, "create", interaction(), when="every monday at 9am", message="Plain")

    moved = await run(
        adapter, "edit", interaction(), id=1, template="deploy", data="service=api version=1"
    )
    assert moved.startswith("Changed.") and "> Deploy api v1 on Monday (#1)" in moved

    values = await run(adapter, "edit", interaction(), id=1, data="service=web version=2")
    assert "**Template:** `deploy` v1 · service=web version=2" in values
    assert "> Deploy web v2 on Monday (#1)" in values

    refused = await run(adapter, "edit", interaction(), id=1, message="Own words")
    assert refused == (
        "Schedule #1 sends template 'deploy': change its values with `data:`, or give "
        "`template:none` with the new message to stop using it."
    )
    [schedule] = await herald.list_schedules(who(OWNER))
    assert views.template_of(schedule)["data"] == {"service": "web", "version": 2}  # type: ignore[index]

    bad = await run(adapter, "edit", interaction(), id=1, data="service=web version=two")
    assert bad == "'version' must be a number, not 'two'."

    own = await run(adapter, "edit", interaction(), id=1, template="none", message="Own words")
    assert own.startswith("Changed.") and "> Own words" in own and "**Template:**" not in own
    [schedule] = await herald.list_schedules(who(OWNER))
    assert views.template_of(schedule) is None and schedule.body == "Own words"


# --- autocomplete ------------------------------------------------------------------------


async def test_autocomplete_offers_only_this_servers_names_starting_with_the_text(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, deploy: None
) -> None:
    for name in ("daily", "standup"):
        await herald.add_template(admin(), name, f"{name}!")
    for name in ("deploy-eu", "digest"):
        await herald.add_template(admin(ELSEWHERE), name, f"{name}!")

    here = await complete(adapter, interaction, "create", "template", template="d")
    assert here == [("daily", "daily"), ("deploy", "deploy")]
    assert await complete(adapter, interaction, "create", "template", template="DEP") == [
        ("deploy", "deploy")
    ]
    everything = await complete(adapter, interaction, "create", "template", template="")
    assert [value for _, value in everything] == ["daily", "deploy", "standup"]
    there = await complete(
        adapter, interaction, "create", "template", template="d", guild=Guild(ELSEWHERE)
    )
    assert there == [("deploy-eu", "deploy-eu"), ("digest", "digest")]
    # /schedule templates template: offers the same
    assert await complete(adapter, interaction, "templates", "template", template="st") == [
        ("standup", "standup")
    ]
    assert await complete(adapter, interaction, "create", "template", template="zz") == []


async def test_autocomplete_offers_at_most_25_names_of_at_most_100_characters(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    longest = "t" * 64  # core.render.NAME: the longest name a template may have
    for n in range(30):
        await herald.add_template(admin(), f"t{n:02d}", "x")
    await herald.add_template(admin(), longest, "x")

    offered = await complete(adapter, interaction, "create", "template", template="t")

    assert len(offered) == limits.DISCORD_CHOICES.size == 25
    assert offered[0] == ("t00", "t00")
    pairs = await templates.choices(herald, who(OWNER), "ttt")
    assert pairs == [(longest, longest)]
    for name, value in pairs + offered:
        assert 1 <= len(name) <= limits.DISCORD_CHOICE_NAME.size
        assert 1 <= len(value) <= limits.DISCORD_CHOICE_NAME.size


# --- /schedule templates -----------------------------------------------------------------


async def test_templates_lists_this_servers_templates_and_previews_one(
    adapter: DiscordAdapter, interaction: Make, herald: Herald, deploy: None
) -> None:
    await herald.add_template(admin(ELSEWHERE), "theirs", "Only there")
    await run(
        adapter,
        "create",
        interaction(),
        when="every monday at 9am",
        template="deploy",
        data="service=api version=1",
    )

    listed = await run(adapter, "templates", interaction())
    assert listed.startswith("**Templates** (1):\n")
    assert "**deploy** v1 · service, version (number) · used by 1 schedule · A release note" in (
        listed
    )
    assert "theirs" not in listed

    one = await run(adapter, "templates", interaction(), template="deploy", data="service=api")
    assert one.startswith("**Template deploy** v1\nA release note\n")
    assert "**Used by:** #1" in one
    # a value not given shows as its placeholder; the built-ins are samples
    assert "> Deploy api v{{ version }} on " in one and "(#123)" in one
    assert "`/schedule create when: template:deploy data:service=… version=…`" in one

    nothing = await run(adapter, "templates", interaction(OWNER, guild=Guild(ELSEWHERE + 1)))
    assert nothing.startswith("This server has no templates yet.")
    hidden = await run(adapter, "templates", interaction(), template="theirs")
    assert hidden.startswith("There is no template named 'theirs' in this server:")


# --- the data option's syntax ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("service=api version=1.4", {"service": "api", "version": "1.4"}),
        ("service=api,version=1.4", {"service": "api", "version": "1.4"}),
        ("  service=api ,  version=1.4  ", {"service": "api", "version": "1.4"}),
        ('note="big release" who=\'Ann "A" B\'', {"note": "big release", "who": 'Ann "A" B'}),
        ("note=“curly quotes”", {"note": "curly quotes"}),
        ("url=https://e.org/?a=b empty=", {"url": "https://e.org/?a=b", "empty": ""}),
        ('list="a, b"', {"list": "a, b"}),
        ("", {}),
    ],
)
def test_data_reads_name_value_pairs(text: str, values: dict[str, str]) -> None:
    assert templates.parse_data(text) == values
    again = render.data_text(values)  # as the card shows it: read back the same
    assert templates.parse_data(again) == values


@pytest.mark.parametrize(
    "text", ["service", "=api", 'a="open', "a=b c", "a=1 a=2", 'a="x"y', "a=x'y"]
)
def test_data_that_is_no_pairs_is_refused_in_one_sentence(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        templates.parse_data(text)
    said = str(refused.value)
    assert said.endswith(".") and "\n" not in said


# --- Discord's limits --------------------------------------------------------------------


def test_the_create_commands_payload_is_within_discords_limits(adapter: DiscordAdapter) -> None:
    """The options Discord registers (application-commands page: 25 options, names of
    at most 32 characters, descriptions of at most 100, a string's max_length at most
    6,000; required options first)."""
    tree = adapter.client.tree
    group = tree.get_command("schedule")
    assert isinstance(group, discord.app_commands.Group)
    payload = group.to_dict(tree)
    create = next(o for o in payload["options"] if o["name"] == "create")
    options = {o["name"]: o for o in create["options"]}
    assert len(options) <= limits.DISCORD_COMMAND_OPTIONS.size
    required = [o.get("required", False) for o in create["options"]]
    assert required == sorted(required, reverse=True)  # required ones first
    assert [n for n, o in options.items() if o.get("required")] == ["when"]
    assert options["template"]["autocomplete"] is True
    assert options["template"]["max_length"] == 64
    assert options["data"]["max_length"] <= 6000
    assert options["message"]["max_length"] == limits.DISCORD_CONTENT.size
    for option in [*options.values(), *payload["options"]]:
        assert len(option["name"]) <= limits.DISCORD_COMMAND_NAME.size
        assert 1 <= len(option["description"]) <= limits.DISCORD_COMMAND_DESCRIPTION.size
    listing = next(o for o in payload["options"] if o["name"] == "templates")
    assert [o["name"] for o in listing["options"]] == ["template", "data"]
    assert len(payload["options"]) <= 25  # subcommands of a group


async def test_a_templated_card_and_the_list_fit_a_message(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    """The longest values a template takes (1,000 characters of text each) still give a
    reply within 2,000 characters."""
    names = [f"v{n}" for n in range(6)]
    await herald.add_template(
        admin(),
        "t" * 64,
        " ".join("{{ " + n + " }}" for n in names),
        variables=dict.fromkeys(names, "text"),
        description="d" * 500,
    )
    data = " ".join(f'{n}="{"ü" * 200}"' for n in names)
    text = await run(
        adapter, "create", interaction(), when="in 1 hour", template="t" * 64, data=data
    )
    assert text.startswith("Scheduled template")
    for n in range(25):
        await herald.add_template(admin(), f"x{n:02d}", "x", description="d" * 500)
    listed = await run(adapter, "templates", interaction())
    assert listed.startswith("**Templates** (26):")
    one = await run(adapter, "templates", interaction(), template="t" * 64, data=data)
    assert one.startswith("**Template " + "t" * 64)
