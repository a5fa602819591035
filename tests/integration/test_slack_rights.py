"""Issue 32, findings 4 and 6, through the use cases every surface calls (real SQLite and
PostgreSQL): Block Kit's rich-text broadcast and user-group elements follow the rule
text mentions follow; a member may not post into Slack under another name or icon; a
message with no room for its "scheduled by" line is refused when it is saved; and each
of the nine bad ``--blocks`` inputs is refused, changing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from core.actors import Principal
from core.cases import Herald
from core.channels import parse_destination
from core.clock import ManualClock
from core.dispatcher import DispatcherConfig
from core.errors import InvalidInput
from core.settings import Settings, load_settings
from core.store import AuditFilter, ClaimedJob, ScheduleQuery, Store
from core.tenancy import MentionRefused, SenderRefused
from tests.conftest import START
from tests.unit.test_slack_blocks_table import BAD

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)  # a member of A
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A
BEN = Principal("slack:UBEN", B)  # a member of B
ROOT = "local:root-admin"


def rights_settings(db_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "HERALD_DATABASE_URL": db_url,
        "HERALD_ADMINS": ROOT,
        "HERALD_DEFAULT_TZ": "UTC",
        "_env_file": None,
        **extra,
    }
    return load_settings(**values)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return rights_settings(db_url)


async def schedules(herald: Herald) -> list[Any]:
    return [s.model_dump() for s in await herald.store.list_schedules(ScheduleQuery())]


async def denied(herald: Herald) -> list[str]:
    rows = await herald.audit_log(ROOT, AuditFilter(action="schedule.create.denied"))
    return [row.tenant for row in rows]


def rich(*elements: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "rich_text", "elements": list(elements)}]


def sect(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rich_text_section", "elements": [{"type": "text", "text": "hi "}, *elements]}


CHANNEL_ALL = {"type": "broadcast", "range": "channel"}
HERE = {"type": "broadcast", "range": "here"}
EVERYONE = {"type": "broadcast", "range": "everyone"}
GROUP = {"type": "usergroup", "usergroup_id": "S123"}

#: Rich-text broadcasts and user groups wherever a rich_text block can hold them.
RICH: list[tuple[str, list[dict[str, Any]], str]] = [
    ("channel in a section", rich(sect(CHANNEL_ALL)), "<!channel>"),
    ("user group in a section", rich(sect(GROUP)), "<!subteam^S123>"),
    (
        "here in a list",
        rich({"type": "rich_text_list", "style": "bullet", "elements": [sect(HERE)]}),
        "<!here>",
    ),
    (
        "everyone in a quote",
        rich({"type": "rich_text_quote", "elements": [EVERYONE]}),
        "<!everyone>",
    ),
    (
        "user group in preformatted",
        rich({"type": "rich_text_preformatted", "elements": [GROUP]}),
        "<!subteam^S123>",
    ),
    (
        "channel in a list in a list, after another block",
        [
            {"type": "divider"},
            *rich(
                sect(),
                {
                    "type": "rich_text_list",
                    "style": "ordered",
                    "indent": 1,
                    "elements": [sect(), sect({"type": "text", "text": "x"}, CHANNEL_ALL)],
                },
            ),
        ],
        "<!channel>",
    ),
]


@pytest.mark.parametrize(("name", "blocks", "shown"), RICH, ids=[r[0] for r in RICH])
async def test_rich_text_broadcasts_follow_the_rule_of_text_mentions(
    herald: Herald, name: str, blocks: list[dict[str, Any]], shown: str
) -> None:
    options = {"blocks": blocks}
    with pytest.raises(MentionRefused, match="Only admins can notify a whole channel") as refused:
        await herald.create_schedule(
            ANNA, to="slack:C0AAAA", when="in 1 hour", text="lunch", options=options
        )
    assert f"({shown})" in str(refused.value)
    assert await schedules(herald) == [] and await denied(herald) == [A]
    made, _ = await herald.create_schedule(  # an admin may, as with text mentions
        ADA, to="slack:C0AAAA", when="in 1 hour", text="lunch", options=options
    )
    assert made.options["blocks"] == blocks


async def test_a_broadcast_tenant_may_use_them(db_url: str, store: Store) -> None:
    settings = rights_settings(db_url, HERALD_BROADCAST_TENANTS=A)
    herald = Herald(store, settings, ManualClock(START))
    options = {"blocks": rich(sect(CHANNEL_ALL, GROUP))}
    made, _ = await herald.create_schedule(
        ANNA, to="slack:C0AAAA", when="in 1 hour", text="all hands", options=options
    )
    assert made.id is not None
    with pytest.raises(MentionRefused):
        await herald.create_schedule(
            BEN, to="slack:C0BBBB", when="in 1 hour", text="all hands", options=options
        )


async def test_a_harmless_rich_text_block_passes(herald: Herald) -> None:
    user = {"type": "user", "user_id": "U0ADA"}
    options = {"blocks": rich(sect(user, {"type": "emoji", "name": "tada"}))}
    made, _ = await herald.create_schedule(
        ANNA, to="slack:C0AAAA", when="in 1 hour", text="hi", options=options
    )
    assert made.id is not None


@pytest.mark.parametrize(
    "sender",
    [
        {"username": "Ada Lovelace (CEO)"},
        {"icon_url": "https://example.org/ceo.png"},
        {"icon_emoji": ":crown:"},
    ],
)
async def test_a_member_may_not_post_as_someone_else(
    herald: Herald, sender: dict[str, str]
) -> None:
    with pytest.raises(SenderRefused, match="Only admins can post under another name or icon"):
        await herald.create_schedule(
            ANNA, to="slack:C0AAAA", when="in 1 hour", text="Raise approved.", options=sender
        )
    assert await schedules(herald) == [] and await denied(herald) == [A]
    made, _ = await herald.create_schedule(
        ADA, to="slack:C0AAAA", when="in 1 hour", text="Release notes", options=sender
    )
    assert made.options == sender  # an admin may
    local, _ = await herald.create_schedule(  # the terminal's tenant (the default list)
        "local:alice", to="slack:C0AAAA", when="in 1 hour", text="Deploy", options=sender
    )
    assert local.options == sender


async def test_a_tenant_may_let_its_members_choose_a_sender(db_url: str, store: Store) -> None:
    settings = rights_settings(db_url, HERALD_CUSTOM_SENDER_TENANTS=A)
    herald = Herald(store, settings, ManualClock(START))
    sender = {"username": "Release bot", "icon_emoji": ":rocket:"}
    made, _ = await herald.create_schedule(
        ANNA, to="slack:C0AAAA", when="in 1 hour", text="v2 is out", options=sender
    )
    assert made.options == sender
    with pytest.raises(SenderRefused):
        await herald.create_schedule(
            BEN, to="slack:C0BBBB", when="in 1 hour", text="v2 is out", options=sender
        )
    with pytest.raises(SenderRefused):  # the terminal's tenant is no longer listed
        await herald.create_schedule(
            "local:alice", to="slack:C0AAAA", when="in 1 hour", text="x", options=sender
        )


@pytest.mark.parametrize(
    ("name", "destination", "blocks", "sentence", "sdk"), BAD, ids=[row[0] for row in BAD]
)
async def test_the_nine_bad_blocks_are_refused_and_nothing_is_saved(
    herald: Herald,
    name: str,
    destination: str,
    blocks: list[dict[str, Any]],
    sentence: str,
    sdk: str | None,
) -> None:
    actor = ADA  # an admin: nothing but the blocks stands in the way
    with pytest.raises(InvalidInput) as refused:
        await herald.create_schedule(
            actor, to=destination, when="in 1 hour", text="fallback", options={"blocks": blocks}
        )
    assert str(refused.value) == sentence
    assert await schedules(herald) == []


async def test_a_discord_message_with_no_room_for_its_credit_is_refused(herald: Herald) -> None:
    member = Principal("discord:1", "discord:700")
    with pytest.raises(InvalidInput, match='with the "scheduled by" line Herald adds'):
        await herald.create_schedule(
            member, to="discord:700000000000000900", when="in 1 hour", text="x" * 1990
        )
    assert await schedules(herald) == []
    made, _ = await herald.create_schedule(
        member, to="discord:700000000000000900", when="in 1 hour", text="x" * 1941
    )
    with pytest.raises(InvalidInput, match="scheduled by"):  # an edit is held to it too
        await herald.edit_schedule(member, made.id, text="y" * 1990)


def test_an_owner_without_a_name_is_credited_by_id() -> None:
    config = DispatcherConfig(scheduled_by=True)
    job = ClaimedJob(1, 1, START, START, 1, "k", "slack:C0123", "x", None, None, {})
    job.tenant, job.owner = A, "slack:UNEW"
    assert config.scheduled_by_name(job, parse_destination("slack:C0123")) == "UNEW"
    job.owner_name = "  Ada "
    assert config.scheduled_by_name(job, parse_destination("slack:C0123")) == "Ada"
    assert config.scheduled_by_name(job, parse_destination("slack:@UNEW")) is None  # a DM: none
