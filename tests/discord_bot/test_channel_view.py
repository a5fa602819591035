"""The channel's view on Discord (issue 41): who can see a channel, computed from
Discord's REST API as its "Permissions" topic documents (the fake Discord serves the
channel, the server's roles and the member), and ``/schedule list channel:``, the
channel's agenda, on SQLite and PostgreSQL: everyone's schedules there to a member who
can see it, never a direct message, never one marked private by someone else, never
another server's; ``private`` on create and edit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import discord
import pytest
from discord import app_commands
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from bot.discord_bot import DiscordAdapter, create_adapter, render
from core.actors import Principal
from core.cases import Herald
from core.channels import build_channels, parse_destination
from core.channels.base import Channel
from core.channels.discord import (
    ADMINISTRATOR,
    ALL_PERMISSIONS,
    VIEW_CHANNEL,
    DiscordChannel,
    channel_permissions,
)
from core.clock import ManualClock
from core.errors import InvalidInput
from core.settings import Settings
from core.store import AuditFilter, Store
from tests.discord_bot.conftest import TOKEN, discord_settings
from tests.discord_bot.doubles import (
    ADMIN,
    CHANNEL,
    GUILD,
    OTHER_CHANNEL,
    OWNER,
    READER,
    STRANGER,
    Interaction,
    command,
    who,
)
from tests.discord_bot.test_discord_commands import run
from tests.fakes import FakeDiscord, unused_port

SEND = 1 << 11
SERVER = str(GUILD)
ROLE_A, ROLE_B = "710000000000000001", "710000000000000002"
HIDDEN = 700000000000000030  # #hidden: @everyone may not view it
ELSEWHERE = 700000000000000040  # a channel of another server the bot is on
OTHER_GUILD = 700000000000000002
THREAD = 700000000000000050  # a public thread of #general
SECRET_THREAD = 700000000000000060  # a private thread of #general
OUTSIDER = 800000000000000099  # not a member of the server

Make = Callable[..., Interaction]


# --- the permission computation (Discord's "Permissions" topic, pure) -------------------


def guild(
    everyone: int = VIEW_CHANNEL | SEND, owner: str = "1", roles: dict[str, int] | None = None
) -> dict[str, Any]:
    listed = [{"id": SERVER, "permissions": str(everyone)}]
    listed += [{"id": role, "permissions": str(bits)} for role, bits in (roles or {}).items()]
    return {"id": SERVER, "owner_id": owner, "roles": listed}


def member(*roles: str) -> dict[str, Any]:
    return {"user": {"id": "5"}, "roles": list(roles)}


def channel(*overwrites: tuple[str, int, int, int]) -> dict[str, Any]:
    return {
        "id": str(CHANNEL),
        "permission_overwrites": [
            {"id": target, "type": kind, "allow": str(allow), "deny": str(deny)}
            for target, kind, allow, deny in overwrites
        ],
    }


def sees(g: dict[str, Any], m: dict[str, Any], c: dict[str, Any], user: str = "5") -> bool:
    return bool(channel_permissions(g, m, user, c) & VIEW_CHANNEL)


def test_base_permissions_come_from_everyone_and_the_members_roles() -> None:
    assert sees(guild(), member(), channel())
    assert not sees(guild(everyone=SEND), member(), channel())
    # a role's permissions add to @everyone's
    assert sees(guild(everyone=SEND, roles={ROLE_A: VIEW_CHANNEL}), member(ROLE_A), channel())
    assert not sees(guild(everyone=SEND, roles={ROLE_A: VIEW_CHANNEL}), member(ROLE_B), channel())


def test_the_owner_and_administrators_have_every_permission() -> None:
    hidden = channel((SERVER, 0, 0, VIEW_CHANNEL), ("5", 1, 0, VIEW_CHANNEL))
    assert channel_permissions(guild(owner="5"), member(), "5", hidden) == ALL_PERMISSIONS
    admins = guild(roles={ROLE_A: ADMINISTRATOR})
    assert channel_permissions(admins, member(ROLE_A), "5", hidden) == ALL_PERMISSIONS
    assert not sees(admins, member(), hidden)


def test_overwrites_apply_everyone_then_roles_together_then_the_member() -> None:
    g = guild()
    # @everyone's overwrite denies, a role's allows back, the member's denies again
    hidden = (SERVER, 0, 0, VIEW_CHANNEL)
    assert not sees(g, member(), channel(hidden))
    assert sees(g, member(ROLE_A), channel(hidden, (ROLE_A, 0, VIEW_CHANNEL, 0)))
    assert not sees(
        g, member(ROLE_A), channel(hidden, (ROLE_A, 0, VIEW_CHANNEL, 0), ("5", 1, 0, VIEW_CHANNEL))
    )
    # roles are aggregated: one role's allow beats another's deny, whatever their order
    for roles in ((ROLE_A, ROLE_B), (ROLE_B, ROLE_A)):
        both = channel((ROLE_A, 0, 0, VIEW_CHANNEL), (ROLE_B, 0, VIEW_CHANNEL, 0))
        assert sees(g, member(*roles), both)
    # the member's own allow beats every deny before it
    assert sees(
        g, member(ROLE_A), channel(hidden, (ROLE_A, 0, 0, VIEW_CHANNEL), ("5", 1, VIEW_CHANNEL, 0))
    )
    # an @everyone allow gives back what the base lacks; a role's deny takes it again
    closed = guild(everyone=SEND)
    assert sees(closed, member(), channel((SERVER, 0, VIEW_CHANNEL, 0)))
    assert not sees(
        closed, member(ROLE_A), channel((SERVER, 0, VIEW_CHANNEL, 0), (ROLE_A, 0, 0, VIEW_CHANNEL))
    )
    # another member's overwrite is not this one's
    assert not sees(g, member(), channel(hidden, ("6", 1, VIEW_CHANNEL, 0)))


_ROLES = ("710000000000000001", "710000000000000002", "710000000000000003")
_BITS = st.sampled_from([0, VIEW_CHANNEL, SEND, VIEW_CHANNEL | SEND, ADMINISTRATOR])
_SIDE = st.sampled_from([0, VIEW_CHANNEL])
_OVERWRITE = st.one_of(st.none(), st.tuples(_SIDE, _SIDE))


def _role(role_id: str, bits: int, position: int) -> dict[str, Any]:
    return {
        "id": role_id,
        "name": f"r{position}",
        "permissions": str(bits),
        "position": position,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


@examples(max_examples=400, deadline=None)
@given(
    everyone=_BITS,
    roles=st.tuples(_BITS, _BITS, _BITS),
    has=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    overwrites=st.tuples(_OVERWRITE, _OVERWRITE, _OVERWRITE, _OVERWRITE, _OVERWRITE),
    owner=st.booleans(),
)
def test_view_channel_is_what_discord_py_computes(
    everyone: int,
    roles: tuple[int, int, int],
    has: tuple[bool, bool, bool],
    overwrites: tuple[tuple[int, int] | None, ...],
    owner: bool,
) -> None:
    """The same answer as discord.py's own ``permissions_for`` (which follows the same
    documented algorithm, with its implicit rules) for every mix of @everyone's and
    three roles' permissions, the member's roles and overwrites on @everyone, each role
    and the member."""
    user = "5"
    g = {
        "id": SERVER,
        "name": "server",
        "owner_id": user if owner else "1",
        "roles": [_role(SERVER, everyone, 0)]
        + [_role(r, bits, n + 1) for n, (r, bits) in enumerate(zip(_ROLES, roles, strict=True))],
        "emojis": [],
        "stickers": [],
        "features": [],
    }
    m = {
        "user": {"id": user, "username": "u", "discriminator": "0", "avatar": None},
        "roles": [r for r, on in zip(_ROLES, has, strict=True) if on],
        "joined_at": None,
        "deaf": False,
        "mute": False,
        "flags": 0,
    }
    targets = [(SERVER, 0), *((r, 0) for r in _ROLES), (user, 1)]
    c = {
        "id": str(CHANNEL),
        "type": 0,
        "name": "general",
        "position": 0,
        "guild_id": SERVER,
        "permission_overwrites": [
            {"id": target, "type": kind, "allow": str(o[0]), "deny": str(o[1])}
            for (target, kind), o in zip(targets, overwrites, strict=True)
            if o is not None
        ],
    }
    state = discord.Client(intents=discord.Intents.none())._connection
    server = discord.Guild(data=g, state=state)  # type: ignore[arg-type]
    theirs = discord.TextChannel(state=state, guild=server, data=c)  # type: ignore[arg-type]
    person = discord.Member(data=m, guild=server, state=state)  # type: ignore[arg-type]
    expected = theirs.permissions_for(person).view_channel
    assert bool(channel_permissions(g, m, user, c) & VIEW_CHANNEL) is expected


# --- member_sees over the fake Discord --------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(TOKEN, guild_id=SERVER) as server:
        server.add_channel(str(CHANNEL), name="general")
        server.add_channel(str(OTHER_CHANNEL), name="dev")
        server.add_channel(str(HIDDEN), name="hidden")
        server.add_channel(str(ELSEWHERE), name="abroad", guild_id=str(OTHER_GUILD))
        server.add_channel(str(THREAD), type=11, parent_id=str(CHANNEL), name="thread")
        server.add_channel(str(SECRET_THREAD), type=12, parent_id=str(CHANNEL), name="secret")
        for user in (OWNER, STRANGER, ADMIN):
            server.add_member(str(user))
            server.add_user(str(user))  # takes direct messages from the bot
        server.add_member("800000000000000003", ROLE_A)  # in the team that sees #hidden
        server.overwrite(str(HIDDEN), SERVER, deny=VIEW_CHANNEL)
        server.overwrite(str(HIDDEN), ROLE_A, allow=VIEW_CHANNEL)
        yield server


def dest(channel_id: int | str) -> Any:
    return parse_destination(f"discord:{channel_id}")


async def test_member_sees_asks_discord_for_the_channel_the_server_and_the_member(
    fake: FakeDiscord,
) -> None:
    found = DiscordChannel(TOKEN, base_url=fake.api_url)
    tenant = f"discord:{GUILD}"
    try:
        assert await found.member_sees(dest(CHANNEL), str(STRANGER), tenant=tenant)
        assert not await found.member_sees(dest(HIDDEN), str(STRANGER), tenant=tenant)
        assert await found.member_sees(dest(HIDDEN), "800000000000000003", tenant=tenant)
        # not a member of the server; another server's channel; another tenant
        assert not await found.member_sees(dest(CHANNEL), str(OUTSIDER), tenant=tenant)
        assert not await found.member_sees(dest(ELSEWHERE), str(STRANGER), tenant=tenant)
        other = f"discord:{OTHER_GUILD}"
        assert not await found.member_sees(dest(CHANNEL), str(STRANGER), tenant=other)
        assert not await found.member_sees(dest(f"@{STRANGER}"), str(STRANGER), tenant=tenant)
        # a thread through its channel; a private one only for who is in it
        assert await found.member_sees(dest(THREAD), str(STRANGER), tenant=tenant)
        assert not await found.member_sees(dest(SECRET_THREAD), str(STRANGER), tenant=tenant)
        fake.channels[str(SECRET_THREAD)].thread_members.add(str(STRANGER))
        assert await found.member_sees(dest(SECRET_THREAD), str(STRANGER), tenant=tenant)
        # the owner sees a channel @everyone may not
        fake.owner_id = str(STRANGER)
        assert await found.member_sees(dest(HIDDEN), str(STRANGER), tenant=tenant)
    finally:
        await found.close()
    paths = {r.path for r in fake.requests}
    assert f"/api/v10/guilds/{GUILD}/members/{STRANGER}" in paths
    assert f"/api/v10/guilds/{GUILD}" in paths


async def test_member_sees_says_in_a_sentence_when_discord_cannot_be_asked(
    fake: FakeDiscord,
) -> None:
    tenant = f"discord:{GUILD}"
    unset = DiscordChannel(None, base_url=fake.api_url)
    with pytest.raises(InvalidInput, match="DISCORD_BOT_TOKEN"):
        await unset.member_sees(dest(CHANNEL), str(STRANGER), tenant=tenant)
    wrong = DiscordChannel("MTIz.wrong-secret-token", base_url=fake.api_url)
    down = DiscordChannel(TOKEN, base_url=f"http://127.0.0.1:{unused_port()}/api/v10")
    right = DiscordChannel(TOKEN, base_url=fake.api_url)
    fake.channels[str(OTHER_CHANNEL)].can_view = False  # the bot may not see #dev
    try:
        with pytest.raises(InvalidInput) as refused:
            await wrong.member_sees(dest(CHANNEL), str(STRANGER), tenant=tenant)
        assert "DISCORD_BOT_TOKEN" in str(refused.value) and "wrong-secret" not in str(
            refused.value
        )
        with pytest.raises(InvalidInput, match="try again in a minute") as unreachable:
            await down.member_sees(dest(CHANNEL), str(STRANGER), tenant=tenant)
        assert TOKEN not in str(unreachable.value)
        with pytest.raises(InvalidInput, match="Herald cannot see <#700000000000000020>"):
            await right.member_sees(dest(OTHER_CHANNEL), str(STRANGER), tenant=tenant)
    finally:
        for made in (wrong, down, right):
            await made.close()


# --- /schedule list channel: on SQLite and PostgreSQL -------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using the store runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
def live(db_url: str, fake: FakeDiscord) -> Settings:
    return discord_settings(db_url, fake.api_url)


@pytest.fixture
async def channels(live: Settings) -> AsyncIterator[dict[str, Channel]]:
    built = build_channels(live)
    yield built
    for made in built.values():
        await made.close()


@pytest.fixture
def herald(
    store: Store, live: Settings, clock: ManualClock, channels: dict[str, Channel]
) -> Herald:
    """Herald whose Discord channel asks the fake who can see a channel."""
    return Herald(store, live, clock, channels=channels)


@pytest.fixture
async def adapter(live: Settings, herald: Herald) -> AsyncIterator[DiscordAdapter]:
    made = create_adapter(live, herald)
    try:
        yield made
    finally:
        await made.stop()


def resolved(
    adapter: DiscordAdapter,
    channel_id: int,
    perms: discord.Permissions,
    guild_id: int = GUILD,
    thread_of: int | None = None,
) -> app_commands.AppCommandChannel | app_commands.AppCommandThread:
    """The ``channel`` option as discord.py reads it from the interaction's resolved
    data: the permissions Discord computed for the member there."""
    state = adapter.client._connection
    data: dict[str, Any] = {
        "id": str(channel_id),
        "type": 0 if thread_of is None else 11,
        "name": "general",
        "permissions": str(perms.value),
    }
    if thread_of is not None:
        data |= {
            "parent_id": str(thread_of),
            "owner_id": str(OWNER),
            "member_count": 2,
            "message_count": 1,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 60,
                "archive_timestamp": "2026-03-02T12:00:00.000000+00:00",
                "locked": False,
            },
        }
        return app_commands.AppCommandThread(state=state, data=data, guild_id=guild_id)  # type: ignore[arg-type]
    return app_commands.AppCommandChannel(state=state, data=data, guild_id=guild_id)  # type: ignore[arg-type]


async def scheduled(herald: Herald, actor: Principal, to: int | str, text: str, **kw: Any) -> int:
    schedule, _ = await herald.create_schedule(
        actor, to=f"discord:{to}", when="every weekday at 9am", text=text, **kw
    )
    assert schedule.id is not None
    return schedule.id


async def test_a_member_who_sees_the_channel_gets_everyones_schedules_there(
    adapter: DiscordAdapter, herald: Herald, store: Store, fake: FakeDiscord
) -> None:
    await herald.sync_member(who(OWNER), display_name="Ada *the* Great")
    standup = await scheduled(herald, who(OWNER), CHANNEL, "Stand-up in 5 minutes")
    secret = await scheduled(herald, who(OWNER), CHANNEL, "Surprise party", private=True)
    await scheduled(herald, who(OWNER), f"@{OWNER}", "Stand-up notes, by DM")
    await scheduled(herald, who(OWNER), OTHER_CHANNEL, "Elsewhere")
    abroad = Principal(f"discord:{OWNER}", f"discord:{OTHER_GUILD}")
    await scheduled(herald, abroad, CHANNEL, "Another server's")

    inter = Interaction(adapter.client, STRANGER)
    asked = len(fake.requests)
    text = await run(adapter, "list", inter, channel=resolved(adapter, CHANNEL, READER))
    assert fake.requests[asked:] == []  # the signed permissions said so: Discord not asked

    assert text.splitlines()[0] == f"**Scheduled into <#{CHANNEL}>** (1):"
    assert f"**#{standup}** · <t:" in text and "every weekday at 09:00 (UTC)" in text
    assert r"by Ada \*the\* Great" in text and "Stand-up in 5 minutes" in text
    for hidden in ("Surprise", "by DM", "Elsewhere", "Another server"):
        assert hidden not in text
    # the author sees their own private one, marked
    mine = await run(
        adapter, "list", Interaction(adapter.client), channel=resolved(adapter, CHANNEL, READER)
    )
    assert f"**#{secret}**" in mine and "by you · private ·" in mine
    # reading others' schedules is audited
    audits = await store.audit_page(AuditFilter(action="view.channel"), limit=10)
    assert [a.actor for a in audits] == [f"discord:{STRANGER}"]


async def test_without_view_channel_in_the_interaction_discord_is_asked(
    adapter: DiscordAdapter, herald: Herald, fake: FakeDiscord
) -> None:
    await scheduled(herald, who(OWNER), CHANNEL, "Stand-up")
    await scheduled(herald, who(OWNER), HIDDEN, "Hush")
    nothing = discord.Permissions.none()  # as if Discord had not said

    seen = await run(
        adapter,
        "list",
        Interaction(adapter.client, STRANGER),
        channel=resolved(adapter, CHANNEL, nothing),
    )
    assert "Stand-up" in seen
    assert f"/api/v10/guilds/{GUILD}/members/{STRANGER}" in {r.path for r in fake.requests}

    refused = await run(
        adapter,
        "list",
        Interaction(adapter.client, STRANGER),
        channel=resolved(adapter, HIDDEN, nothing),
    )
    assert refused == (
        "You can see what is scheduled into a channel you can see: "
        f"discord:{HIDDEN} is not one of them."
    )
    # an admin of Herald sees it without asking
    staff = await run(
        adapter,
        "list",
        Interaction(adapter.client, ADMIN),
        channel=resolved(adapter, HIDDEN, nothing),
    )
    assert "Hush" in staff


async def test_a_thread_and_the_options_that_do_not_go_with_channel(
    adapter: DiscordAdapter, herald: Herald
) -> None:
    await scheduled(herald, who(OWNER), THREAD, "In the thread")
    text = await run(
        adapter,
        "list",
        Interaction(adapter.client, STRANGER),
        channel=resolved(adapter, THREAD, READER, thread_of=CHANNEL),
    )
    assert "In the thread" in text
    both = await run(
        adapter,
        "list",
        Interaction(adapter.client, STRANGER),
        channel=resolved(adapter, CHANNEL, READER),
        state="paused",
    )
    assert both.startswith("`channel:` lists what everyone scheduled into that channel")
    empty = await run(
        adapter,
        "list",
        Interaction(adapter.client, STRANGER),
        channel=resolved(adapter, OTHER_CHANNEL, READER),
    )
    assert empty.startswith(f"Nothing is scheduled into <#{OTHER_CHANNEL}>")


async def test_private_on_create_and_edit(adapter: DiscordAdapter, herald: Herald) -> None:
    made = await run(
        adapter,
        "create",
        Interaction(adapter.client),
        when="tomorrow at 9am",
        message="Gift",
        private=True,
    )
    assert made.startswith("Scheduled.")
    [schedule] = await herald.list_schedules(who(OWNER))
    assert schedule.private

    def agenda() -> Any:
        return run(
            adapter,
            "list",
            Interaction(adapter.client, STRANGER),
            channel=resolved(adapter, CHANNEL, READER),
        )

    assert "Gift" not in await agenda()
    await run(adapter, "edit", Interaction(adapter.client), id=schedule.id, private=False)
    assert "Gift" in await agenda()
    await run(adapter, "edit", Interaction(adapter.client), id=schedule.id, private=True)
    assert "Gift" not in await agenda()


def test_the_channel_option_takes_text_channels_and_threads(adapter: DiscordAdapter) -> None:
    payload = command(adapter, "list").to_dict(adapter.client.tree)
    [option] = [o for o in payload["options"] if o["name"] == "channel"]
    assert option["type"] == 7 and not option["required"]
    assert sorted(option["channel_types"]) == [0, 5, 10, 11, 12]


def test_a_long_agenda_is_cut_with_how_many_more() -> None:
    body = "ü" * 300
    entries = [
        SimpleNamespace(
            schedule=SimpleNamespace(
                id=10**18 + n,
                private=False,
                owner="discord:1",
                body=body,
                options={},
                starts_at=None,
            ),
            author="A" * 100,
            when="every weekday at 09:00 (America/Argentina/ComodRivadavia)",
            next_at=None,
        )
        for n in range(60)
    ]
    text = render.agenda(entries, 10**19)  # type: ignore[arg-type]  # rows as read
    assert len(text) <= 2000
    shown = sum(1 for line in text.splitlines() if line.startswith("**#"))
    assert 0 < shown < 60 and text.endswith(f"… and {60 - shown} more")
