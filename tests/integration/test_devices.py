"""Members' push devices (issue 36): ``herald member device add|list|remove`` and the use
cases under it, within a tenant (another tenant's member neither sees nor removes
them), bounded and audited; and the save-time refusal of ``push:`` to a member with no
device there, for a create, an edit and an import line. SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json

import pytest

from bot.cli import devices as cli_devices
from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from core import routing
from core.actors import Principal, Surface
from core.cases import DEVICE_PLATFORMS, MAX_DEVICES, Herald, import_schedules
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.settings import Settings
from core.store import AuditFilter

ALICE, BOB, ADMIN = "local:alice", "local:bob", "local:root-admin"
SLACK_T = "slack:T0AAA"
CAROL = Principal("slack:U0CAROL", SLACK_T)
PHONE = "fGx1Q2x5:APA91bH8zT0kqW3v-phone-AAAAAA"


async def cli(herald: Herald, settings: Settings, *argv: str, actor: str = ALICE) -> str:
    """What ``herald <argv>`` prints, run as ``actor`` through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_device_add_list_remove_through_the_cli(herald: Herald, settings: Settings) -> None:
    said = await cli(
        herald, settings, "member", "device", "add", PHONE, "--label", "Pixel 8",
        "--platform", "android",
    )  # fmt: skip
    assert said.startswith("Device ") and "(…AAAAAA) of local:alice is registered" in said
    again = await cli(herald, settings, "member", "device", "add", PHONE)
    assert "was registered already" in again
    listed = await cli(herald, settings, "member", "device", "list")
    assert PHONE not in listed
    [header, row] = listed.splitlines()
    assert header.split() == ["ID", "PLATFORM", "TOKEN", "LABEL"]
    assert row.split()[1:] == ["android", "…AAAAAA", "Pixel", "8"]
    [shown] = json.loads(await cli(herald, settings, "member", "device", "list", "--json"))
    assert shown["token"] == "…AAAAAA" and shown["member"] == ALICE
    assert await cli(herald, settings, "member", "device", "list", actor=BOB) == (
        "You registered no device yet: herald member device add TOKEN.\n"
    )
    device_id = str(shown["id"])
    with pytest.raises(NotFound):  # Bob cannot remove Alice's, and is not told it exists
        await cli(herald, settings, "member", "device", "remove", device_id, actor=BOB)
    said = await cli(herald, settings, "member", "device", "remove", device_id)
    assert said == f"Device {device_id} is removed: push no longer reaches it.\n"
    [added, removed] = sorted(
        await herald.store.audit_page(AuditFilter(action="device.")), key=lambda a: a.id or 0
    )
    assert (added.action, added.actor, added.details["device_token"]) == (
        "device.add",
        ALICE,
        "…AAAAAA",
    )
    assert (removed.action, removed.details["device"]) == ("device.remove", int(device_id))
    assert PHONE not in json.dumps([added.details, removed.details])


async def test_devices_stay_in_their_tenant(herald: Herald) -> None:
    """Carol's device is hers in her Slack workspace: a member of another tenant, even
    with her id, neither lists nor removes it; an admin of local acting Herald-wide
    may name her tenant."""
    device, new = await herald.add_device(CAROL, PHONE, label="phone")
    assert new and device.tenant == SLACK_T
    assert await herald.list_devices(Principal("slack:U0CAROL", "local")) == []
    with pytest.raises(NotFound):
        await herald.remove_device(Principal("slack:U0CAROL", "slack:T0OTHER"), device.id or 0)
    with pytest.raises(NotFound):  # naming her tenant from another one
        await herald.list_devices(BOB, member="slack:U0CAROL", tenant=SLACK_T)
    with pytest.raises(PermissionDenied):  # another member of her tenant, not an admin
        await herald.list_devices(Principal("slack:U0DAVE", SLACK_T), member="slack:U0CAROL")
    [seen] = await herald.list_devices(ADMIN, member="slack:U0CAROL", tenant=SLACK_T)
    assert seen.id == device.id
    assert [d.id for d in await herald.list_devices(CAROL)] == [device.id]
    denied = await herald.store.audit_page(AuditFilter(action="device.list.denied"))
    assert len(denied) == 2


async def test_device_input_is_bounded(herald: Herald) -> None:
    for bad in ("", "has space", "x" * 4097, "tok<script>", "a\nb"):
        with pytest.raises(InvalidInput, match="not an FCM registration token"):
            await herald.add_device(ALICE, bad)
    with pytest.raises(InvalidInput, match="at most 100 characters"):
        await herald.add_device(ALICE, PHONE, label="x" * 101)
    with pytest.raises(InvalidInput, match="Unknown platform"):
        await herald.add_device(ALICE, PHONE, platform="symbian")
    assert cli_devices.PLATFORMS == DEVICE_PLATFORMS  # the CLI's choices, written again
    for n in range(MAX_DEVICES):
        await herald.add_device(ALICE, f"tok{n}:APA91b")
    with pytest.raises(InvalidInput, match=f"has {MAX_DEVICES} devices already"):
        await herald.add_device(ALICE, "one-more:APA91b")
    _, new = await herald.add_device(ALICE, "tok0:APA91b")  # the same one again: no new device
    assert not new and len(await herald.list_devices(ALICE)) == MAX_DEVICES


# --- save time ----------------------------------------------------------------------


async def test_push_to_a_member_without_a_device_is_refused_when_saved(herald: Herald) -> None:
    with pytest.raises(InvalidInput) as refused:
        await herald.create_schedule(ALICE, to="push:local:alice", when="in 1 hour", text="Hi")
    assert str(refused.value) == (
        "local:alice has no registered device here, so push:local:alice would reach nobody: "
        "they can add one with `herald member device add` (or POST /v1/me/devices)."
    )
    [denied] = await herald.store.audit_page(AuditFilter(action="schedule.create.denied"))
    assert "no registered device" in denied.details["reason"]
    await herald.add_device(ALICE, PHONE)
    mine, _ = await herald.create_schedule(
        ALICE, to="push:local:alice", when="in 1 hour", text="Hi"
    )
    # Bob may push to Alice, a member with a device here (as he may DM her)
    theirs, _ = await herald.create_schedule(
        BOB, to=["log:", "push:local:alice"], when="in 1 hour", text="Hi"
    )
    assert theirs.destinations == ["log:", "push:local:alice"]
    # read in her time, a push to her follows the zone she set
    await herald.set_timezone(ALICE, "Europe/Berlin")
    zoned, _ = await herald.create_schedule(
        BOB, to="push:local:alice", when="tomorrow at 9am", text="Hi", their_time=True
    )
    assert [r.zone for r in routing.from_json(zoned.recipients, zoned.destination)] == [
        "Europe/Berlin"
    ]
    # Carol's device is in her workspace: from local, push:slack:U0CAROL reaches nobody
    await herald.add_device(CAROL, PHONE)
    with pytest.raises(InvalidInput, match="no registered device here"):
        await herald.create_schedule(BOB, to="push:slack:U0CAROL", when="in 1 hour", text="Hi")
    await herald.create_schedule(
        Principal("slack:U0DAVE", SLACK_T), to="push:slack:U0CAROL", when="in 1 hour", text="Hi"
    )
    with pytest.raises(InvalidInput, match="push:local:bob would reach nobody"):
        await herald.edit_schedule(ALICE, mine.id, add=["push:local:bob"])
    with pytest.raises(InvalidInput, match="does not name a member"):
        await herald.create_schedule(ALICE, to="push:alice", when="in 1 hour", text="Hi")
    # an import line is checked as a create is
    lines = "\n".join(
        json.dumps({"to": to, "when": "in 1 hour", "text": "Hi"})
        for to in ("push:local:alice", "push:local:bob")
    )
    report = await import_schedules(herald, ALICE, lines, skip_invalid=True)
    assert report.imported == 1
    [(number, why)] = report.invalid
    assert number == 2 and "local:bob has no registered device here" in why
