"""Members' preferences (issue 37) through the use cases every surface calls: a member
reads and sets their own, an admin another member's and the tenant's defaults; bad
input changes nothing; a reminder to a person who refuses its author is refused at
save (create, edit, import); the read-back names a person's quiet hours; priorities
and who may send urgent. SQLite and PostgreSQL, an injected clock."""

from __future__ import annotations

import io
import re

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from bot.http_guard import HttpLimits, guarded_app
from core import views
from core.actors import Principal, Surface
from core.cases import Herald, ImportRejected, PreferenceChanges, import_schedules
from core.errors import InvalidInput, PermissionDenied
from core.models import Role
from core.settings import Settings
from core.store import AuditFilter

SLACK_T = "slack:T0AAA"
ALICE = Principal("slack:U0ALICE", SLACK_T)
BOB = Principal("slack:U0BOB", SLACK_T)
BOSS = Principal("slack:U0BOSS", SLACK_T, platform_admin=True)
CAROL = Principal("slack:U0CAROL", SLACK_T)
OPS = Principal("slack:U0OPS", SLACK_T)
TO_BOB, TO_CAROL, ROOM = "slack:@U0BOB", "slack:@U0CAROL", "slack:C0ROOM"


async def members(herald: Herald) -> None:
    for who in (ALICE, BOB, BOSS, CAROL, OPS):
        await herald.sync_member(who, display_name=who.id.removeprefix("slack:U0").title())
    await herald.set_role(BOSS, OPS.id, "operator")


async def prefs(herald: Herald, who: Principal, **changes: object) -> None:
    await herald.set_preferences(who, PreferenceChanges.from_mapping(changes))


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
    # what the API shows of quiet hours is what it takes back
    shown = again.to_json()["own"]["quiet"]
    same = await herald.set_preferences(ALICE, PreferenceChanges.from_mapping({"quiet": shown}))
    assert same.own.quiet == got.own.quiet
    cleared = await herald.set_preferences(
        ALICE, PreferenceChanges(place="", quiet="", quiet_days=(), unblock=("slack:@U0BOB",))
    )
    assert cleared.effective.place is None and cleared.effective.quiet is None
    assert cleared.effective.blocked == ()
    assert cleared.effective.accept_from == "admins"
    audit = await herald.store.audit_page(AuditFilter(action="preferences.set"))
    assert len(audit) == 3


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


#: Bad changes and what the refusal says.
BAD: list[tuple[dict[str, object], str]] = [
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
]


async def test_bad_input_changes_nothing(herald: Herald) -> None:
    await members(herald)
    before = await herald.set_preferences(
        ALICE,
        PreferenceChanges(accept_from="admins", quiet="22:00-08:00", place="sms:+12025550123"),
    )
    for changes, said in BAD:
        # a good change beside the bad one is not kept either
        with pytest.raises(InvalidInput, match=said) as raised:
            await herald.set_preferences(
                ALICE, PreferenceChanges.from_mapping({"accept_from": "anyone", **changes})
            )
        assert not re.search(r"[.!?] [A-Z]", str(raised.value))  # one sentence
        assert await herald.preferences(ALICE) == before, changes
    with pytest.raises(InvalidInput, match="name no place"):
        await herald.set_tenant_preferences(BOSS, PreferenceChanges(place="email:a@example.com"))
    assert await herald.tenant_preferences(BOSS) == (await herald.preferences(BOSS)).tenant


async def test_a_blocked_author_is_refused_at_save_on_create_edit_and_import(
    herald: Herald,
) -> None:
    await members(herald)
    await prefs(herald, BOB, block=["@U0ALICE"])
    said = "Bob does not accept reminders from you."
    with pytest.raises(PermissionDenied, match=said):
        await herald.create_schedule(ALICE, to=[ROOM, TO_BOB], when="tomorrow at 9:00", text="x")
    room, _ = await herald.create_schedule(ALICE, to=ROOM, when="tomorrow at 9:00", text="x")
    assert room.id is not None
    with pytest.raises(PermissionDenied, match=said):
        await herald.edit_schedule(ALICE, room.id, add=[TO_BOB])
    with pytest.raises(PermissionDenied, match=said):
        await herald.edit_schedule(ALICE, room.id, to=[{"first_of": [ROOM, TO_BOB]}])
    lines = [
        f'{{"to": "{ROOM}", "when": "tomorrow at 9:00", "text": "a"}}',
        f'{{"to": "{TO_BOB}", "when": "tomorrow at 9:00", "text": "b"}}',
    ]
    with pytest.raises(ImportRejected) as rejected:
        await import_schedules(herald, ALICE, "\n".join(lines))
    assert rejected.value.invalid == [(2, said.rstrip("."))]
    # the one schedule saved is the room's, unchanged; Carol still reminds Bob
    [only] = await herald.list_schedules(ALICE)
    assert only.id == room.id and only.version == 1
    await herald.create_schedule(CAROL, to=TO_BOB, when="tomorrow at 9:00", text="x")
    denied = await herald.store.audit_page(AuditFilter(action="schedule."))
    assert {a.action for a in denied if a.action.endswith(".denied")} == {
        "schedule.create.denied",
        "schedule.edit.denied",
        "schedule.import.denied",
    }


async def test_accept_admins_and_self(herald: Herald) -> None:
    await members(herald)
    await prefs(herald, BOB, accept_from="admins")
    with pytest.raises(PermissionDenied, match=r"^Bob accepts reminders only from admins\.$"):
        await herald.create_schedule(ALICE, to=TO_BOB, when="tomorrow at 9:00", text="x")
    await herald.create_schedule(BOSS, to=TO_BOB, when="tomorrow at 9:00", text="x")
    await prefs(herald, BOB, accept_from="self")
    with pytest.raises(PermissionDenied, match="Bob accepts reminders only from themselves."):
        await herald.create_schedule(BOSS, to=TO_BOB, when="tomorrow at 9:00", text="x")
    await herald.create_schedule(BOB, to=TO_BOB, when="tomorrow at 9:00", text="mine")
    # the tenant's default applies to whoever set none of their own
    await herald.set_tenant_preferences(BOSS, PreferenceChanges(accept_from="admins"))
    with pytest.raises(PermissionDenied, match="Carol accepts reminders only from admins."):
        await herald.create_schedule(ALICE, to=TO_CAROL, when="tomorrow at 9:00", text="x")
    await herald.create_schedule(ALICE, to=ROOM, when="tomorrow at 9:00", text="a room")


async def test_the_read_back_names_quiet_hours_in_each_persons_zone(herald: Herald) -> None:
    await members(herald)
    await herald.set_member_timezone(BOSS, BOB.id, "Europe/Berlin")
    await herald.set_member_timezone(BOSS, CAROL.id, "America/New_York")
    for who in (BOB, CAROL):
        await prefs(herald, who, quiet="22:00-08:00")
    # 23:30 UTC: 00:30 in Berlin (quiet), 18:30 in New York (not)
    late, _ = await herald.create_schedule(
        ALICE, to=[TO_BOB, TO_CAROL, ROOM], when="2026-03-03 23:30", tz="UTC", text="x"
    )
    words = views.read_back(late)
    assert "Bob's quiet hours: sent at 08:00 their time" in words
    assert "Carol" not in words
    # 04:00 UTC: 05:00 in Berlin and 23:00 in New York, both quiet
    edited = await herald.edit_schedule(ALICE, late.id or 0, when="2026-03-04 04:00", tz="UTC")
    words = views.read_back(edited)
    assert "Bob's quiet hours: sent at 08:00 their time" in words
    assert "Carol's quiet hours: sent at Wed 08:00 their time" in words
    # read again, the note is not stored
    again = (await herald.show_schedule(ALICE, late.id or 0)).schedule
    assert "quiet hours" not in views.read_back(again)
    # urgent is not held: nothing to say (an admin may send it)
    urgent = await herald.edit_schedule(BOSS, late.id or 0, priority="urgent")
    assert "quiet hours" not in views.read_back(urgent)
    assert views.schedule_dict(urgent)["priority"] == "urgent"


async def test_only_operators_and_admins_send_urgent_to_people_with_quiet_hours(
    herald: Herald,
) -> None:
    await members(herald)
    await prefs(herald, BOB, quiet_days=["weekends"])
    said = "Only operators and admins may send urgent messages to people with quiet hours (Bob)."
    with pytest.raises(PermissionDenied, match=re.escape(said)):
        await herald.create_schedule(
            ALICE, to=[TO_BOB, TO_CAROL], when="tomorrow at 9:00", text="x", priority="urgent"
        )
    # urgent to a channel, or to someone without quiet hours: anyone
    room, _ = await herald.create_schedule(
        ALICE, to=[ROOM, TO_CAROL], when="tomorrow at 9:00", text="x", priority="urgent"
    )
    assert room.priority == "urgent"
    with pytest.raises(PermissionDenied, match=re.escape(said)):
        await herald.edit_schedule(ALICE, room.id or 0, add=[TO_BOB])
    normal = await herald.edit_schedule(ALICE, room.id or 0, priority="normal")
    mine, _ = await herald.create_schedule(ALICE, to=TO_BOB, when="tomorrow at 9:00", text="x")
    with pytest.raises(PermissionDenied, match=re.escape(said)):
        await herald.edit_schedule(ALICE, mine.id or 0, priority="urgent")
    assert normal.priority == "normal"
    for allowed in (OPS, BOSS, Principal(BOSS.id, SLACK_T, max_role=Role.OPERATOR)):
        made, _ = await herald.create_schedule(
            allowed, to=TO_BOB, when="tomorrow at 9:00", text="x", priority="urgent"
        )
        assert made.priority == "urgent"
    # an admin's token capped to a member's rights is a member's
    with pytest.raises(PermissionDenied, match=re.escape(said)):
        await herald.create_schedule(
            Principal(BOSS.id, SLACK_T, max_role=Role.MEMBER),
            to=TO_BOB,
            when="tomorrow at 9:00",
            text="x",
            priority="urgent",
        )
    with pytest.raises(InvalidInput, match="use urgent, normal or bulk"):
        await herald.create_schedule(ALICE, to=ROOM, when="tomorrow", text="x", priority="asap")


async def test_imports_are_bulk_unless_a_line_says(herald: Herald) -> None:
    await members(herald)
    await prefs(herald, BOB, quiet="22:00-08:00")
    lines = [
        f'{{"to": "{ROOM}", "when": "tomorrow at 9:00", "text": "a"}}',
        f'{{"to": "{ROOM}", "when": "tomorrow at 9:00", "text": "b", "priority": "urgent"}}',
        f'{{"to": "{TO_CAROL}", "when": "tomorrow at 9:00", "text": "c", "priority": "normal"}}',
    ]
    report = await import_schedules(herald, ALICE, "\n".join(lines))
    made = {s.body: s.priority for s in await herald.list_schedules(ALICE)}
    assert report.imported == 3 and made == {"a": "bulk", "b": "urgent", "c": "normal"}
    bad = [
        f'{{"to": "{ROOM}", "when": "tomorrow at 9:00", "text": "d", "priority": "asap"}}',
        f'{{"to": "{TO_BOB}", "when": "tomorrow at 9:00", "text": "e", "priority": "urgent"}}',
        f'{{"to": "{TO_BOB}", "when": "tomorrow at 9:00", "text": "f"}}',
    ]
    with pytest.raises(ImportRejected) as rejected:
        await import_schedules(herald, ALICE, "\n".join(bad))
    assert [n for n, _ in rejected.value.invalid] == [1, 2]
    assert "Only operators and admins" in rejected.value.invalid[1][1]
    # the import's own default, for the lines that name none
    normal = [f'{{"to": "{ROOM}", "when": "tomorrow at 9:00", "text": "g", "key": "g"}}']
    await import_schedules(herald, ALICE, "\n".join(normal), priority="normal")
    made = {s.body: s.priority for s in await herald.list_schedules(ALICE)}
    assert made["g"] == "normal"
    with pytest.raises(InvalidInput, match="use urgent, normal or bulk"):
        await import_schedules(herald, ALICE, "\n".join(normal), priority="later")


LOCAL_ALICE, LOCAL_ADMIN, MAIL_BOB = "local:alice", "local:root-admin", "email:bob@example.com"


async def cli(herald: Herald, settings: Settings, *argv: str, actor: str) -> str:
    """What ``herald <argv>`` prints, run as ``actor`` through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_the_cli_and_the_api_refuse_and_read_back_as_the_cases_do(
    herald: Herald, settings: Settings
) -> None:
    await herald.set_member_timezone(LOCAL_ADMIN, MAIL_BOB, "Europe/Berlin")
    await herald.set_preferences(
        LOCAL_ADMIN,
        PreferenceChanges(accept_from="admins", quiet="22:00-08:00"),
        member=MAIL_BOB,
    )
    said = "email:bob@example.com accepts reminders only from admins."
    when = ("--when", "2026-03-03 23:30", "--tz", "UTC")
    with pytest.raises(PermissionDenied, match=re.escape(said)):
        await cli(herald, settings, "schedule", "--to", MAIL_BOB, *when, "--text", "x",
                  actor=LOCAL_ALICE)  # fmt: skip
    printed = await cli(herald, settings, "schedule", "--to", MAIL_BOB, *when, "--text", "x",
                        actor=LOCAL_ADMIN)  # fmt: skip
    assert "email:bob@example.com's quiet hours: sent at 08:00 their time" in printed
    minted = await herald.create_token(LOCAL_ALICE, LOCAL_ALICE, tenant="local", scope="write")
    auth = {"Authorization": f"Bearer {minted.secret}"}
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    body = {"to": MAIL_BOB, "when": "2026-03-03 23:30", "timezone": "UTC", "text": "x"}
    async with TestClient(TestServer(app)) as client:
        refused = await client.post("/v1/schedules", json=body, headers=auth)
        answer = await refused.json()
        made = await client.post(
            "/v1/schedules", json={**body, "to": "log:", "priority": "urgent"}, headers=auth
        )
        assert made.status == 201, await made.text()
        shown = await made.json()
        lines = '{"to": "log:", "when": "tomorrow", "text": "a"}\n' + (
            f'{{"to": "{MAIL_BOB}", "when": "tomorrow", "text": "b"}}'
        )
        imported = await client.post(
            "/v1/imports",
            data=lines.encode(),
            headers={**auth, "Content-Type": "application/jsonl"},
        )
        rejected = await imported.json()
    assert refused.status == 403 and said in str(answer)
    assert shown["priority"] == "urgent"
    assert imported.status == 422 and said.rstrip(".") in str(rejected)
