"""Members' preferences (issue 37) through the use cases every surface calls: a member
reads and sets their own, an admin another member's and the tenant's defaults; bad
input changes nothing; a reminder to a person who refuses its author is refused at
save (create, edit, import); the read-back names a person's quiet hours; priorities
and who may send urgent. SQLite and PostgreSQL, an injected clock."""

from __future__ import annotations

import re

import pytest

from core.actors import Principal
from core.cases import Herald, PreferenceChanges
from core.errors import InvalidInput, PermissionDenied
from core.store import AuditFilter

SLACK_T = "slack:T0AAA"
ALICE = Principal("slack:U0ALICE", SLACK_T)
BOB = Principal("slack:U0BOB", SLACK_T)
BOSS = Principal("slack:U0BOSS", SLACK_T, platform_admin=True)


async def members(herald: Herald) -> None:
    for who in (ALICE, BOB, BOSS):
        await herald.sync_member(who, display_name=who.id.removeprefix("slack:U0").title())


async def test_a_member_sets_and_reads_their_own(herald: Herald) -> None:
    await members(herald)
    got = await herald.set_preferences(
        ALICE,
        PreferenceChanges.from_mapping(
            {
                "place": "slack:@U0ALICE",
                "accept_from": "admins",
                "block": ["@U0BOB"],
                "quiet": "22:00-08:00",
                "quiet_days": ["weekends"],
            }
        ),
    )
    assert got.member_id == "slack:U0ALICE"
    assert got.effective.place == "slack:@U0ALICE"
    assert got.effective.accept_from == "admins"
    assert got.effective.blocked == ("slack:U0BOB",)
    assert got.effective.quiet is not None
    assert got.effective.quiet.describe() == "22:00–08:00 and weekends"
    again = await herald.preferences(ALICE)
    assert again.to_json() == got.to_json()
    assert again.to_json()["effective"]["quiet"] == {
        "window": "22:00-08:00",
        "days": ["sat", "sun"],
    }
    cleared = await herald.set_preferences(
        ALICE, PreferenceChanges(place="", quiet="", quiet_days=(), unblock=("slack:@U0BOB",))
    )
    assert cleared.effective.place is None and cleared.effective.quiet is None
    assert cleared.effective.blocked == ()
    assert cleared.effective.accept_from == "admins"
    audit = await herald.store.audit_page(AuditFilter(action="preferences.set"))
    assert len(audit) == 2


async def test_an_admin_sets_another_members_and_the_tenants_defaults(herald: Herald) -> None:
    await members(herald)
    got = await herald.set_preferences(
        BOSS, PreferenceChanges(quiet="23:00-07:00"), member="slack:@U0BOB"
    )
    assert got.member_id == "slack:U0BOB" and got.own.quiet is not None
    tenant = await herald.set_tenant_preferences(
        BOSS, PreferenceChanges(accept_from="admins", quiet_days=("sun",), hold_channels=True)
    )
    assert tenant.hold_channels is True and tenant.accept_from == "admins"
    assert await herald.tenant_preferences(BOSS) == tenant
    bob = await herald.preferences(BOB)
    assert bob.effective.accept_from == "admins"  # the tenant's, Bob set none
    assert bob.effective.quiet is not None and bob.effective.quiet.describe() == "23:00–07:00"
    assert bob.tenant.hold_channels is True
    audit = await herald.store.audit_page(AuditFilter(action="preferences.tenant"))
    assert [a.object_id for a in audit] == [SLACK_T]


async def test_a_member_cannot_set_anothers_or_the_tenants(herald: Herald) -> None:
    await members(herald)
    with pytest.raises(PermissionDenied, match="Only an admin"):
        await herald.set_preferences(ALICE, PreferenceChanges(accept_from="self"), member="@U0BOB")
    with pytest.raises(PermissionDenied, match="Only an admin"):
        await herald.preferences(ALICE, member="slack:U0BOB")
    with pytest.raises(PermissionDenied, match="Only an admin"):
        await herald.set_tenant_preferences(ALICE, PreferenceChanges(accept_from="self"))
    with pytest.raises(PermissionDenied):
        await herald.tenant_preferences(ALICE)
    assert (await herald.preferences(BOB)).own.accept_from is None
    denied = await herald.store.audit_page(AuditFilter(action="preferences."))
    assert {a.action for a in denied} == {
        "preferences.set.denied",
        "preferences.show.denied",
        "preferences.tenant.denied",
        "preferences.tenant_show.denied",
    }


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"place": "slack:@U0BOB"}, "only to a place of yours"),
        ({"place": "slack:C0OPS"}, "only to a place of yours"),
        ({"place": "push:slack:U0BOB"}, "only to a place of yours"),
        ({"place": "email:" + "a" * 400 + "@example.com"}, "at most"),
        ({"place": "nonsense"}, "cannot be read"),
        ({"accept_from": "friends"}, "use anyone, admins or self"),
        ({"quiet": "22:00"}, "not a window"),
        ({"quiet": "25:00-08:00"}, "not a time of day"),
        ({"quiet_days": ["someday"]}, "is not a day"),
        ({"block": ["@U0ALICE"]}, "Nobody can block themselves"),
        ({"block": ["not a member"]}, "is not a member"),
        ({"block": [f"@U{i}" for i in range(201)]}, "at most"),
        ({"hold_channels": True}, "tenant default"),
        ({"hold_channels": "yes"}, "true or false"),
        ({"colour": "blue"}, "Unknown preference"),
        ({"quiet": 22}, "must be text"),
    ],
)
async def test_bad_input_changes_nothing(
    herald: Herald, changes: dict[str, object], said: str
) -> None:
    await members(herald)
    before = await herald.set_preferences(
        ALICE,
        PreferenceChanges(accept_from="admins", quiet="22:00-08:00", place="sms:+12025550123"),
    )
    # a good change beside the bad one is not kept either
    with pytest.raises(InvalidInput, match=said) as raised:
        await herald.set_preferences(
            ALICE, PreferenceChanges.from_mapping({"accept_from": "anyone", **changes})
        )
    assert not re.search(r"[.!?] [A-Z]", str(raised.value))  # one sentence
    assert await herald.preferences(ALICE) == before
