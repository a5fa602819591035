"""``herald member device add|list|remove``: the push devices ``push:MEMBER`` reaches.

The grammar (:func:`add_parser`, called by bot/cli/parser.py; argparse only, so
``herald --help`` stays light) and the handler (:func:`cmd_device`, called by
bot/cli/commands.py's ``member`` handler over the use cases). A device token is never
printed whole: its last 6 characters only.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.cli.commands import Cli
    from core.cases import Herald

#: core.cases.DEVICE_PLATFORMS, written again here: the grammar imports no core, so
#: that ``herald --help`` stays fast (tests/integration/test_devices.py keeps them equal).
PLATFORMS = ("android", "ios", "web")


def _whose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--member", help="another member's (admins), e.g. slack:U123; default: yours")
    p.add_argument("--tenant", help="their tenant (Herald-wide admins), e.g. slack:T0123")


def add_parser(members: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """``device`` under ``herald member`` (``members``: its subparsers)."""
    d = members.add_parser(
        "device",
        help="push devices (what push:MEMBER sends to)",
        description="The devices a push:MEMBER schedule reaches: each is an FCM "
        "registration token (what the app's getToken() returns).",
    )
    sub = d.add_subparsers(dest="device_command", required=True, parser_class=parser_class)
    a = sub.add_parser("add", help="register a device's FCM token")
    a.add_argument("token", help="the FCM registration token, or - to read it from stdin")
    a.add_argument("--label", default="", help="what it is, e.g. 'Pixel 8' (at most 100)")
    a.add_argument("--platform", choices=PLATFORMS, default="")
    a.add_argument("--json", action="store_true")
    _whose(a)
    ls = sub.add_parser("list", help="the devices (tokens by their last 6 characters)")
    ls.add_argument("--json", action="store_true")
    _whose(ls)
    r = sub.add_parser("remove", help="forget a device")
    r.add_argument("id", type=int, help="its id, from herald member device list")
    _whose(r)


def _shown(device: Any, tail: str) -> dict[str, Any]:
    return {
        "id": device.id,
        "member": device.member_id,
        "label": device.label,
        "platform": device.platform,
        "token": tail,
    }


async def cmd_device(cli: Cli, herald: Herald) -> None:
    from core.cases import token_tail

    a = cli.args
    whose = {"member": a.member, "tenant": a.tenant}
    if a.device_command == "add":
        token = sys.stdin.readline() if a.token == "-" else a.token
        device, new = await herald.add_device(
            cli.actor, token, label=a.label, platform=a.platform, **whose
        )
        if a.json:
            cli.emit_json({**_shown(device, token_tail(device.token)), "new": new})
            return
        what = "is registered" if new else "was registered already"
        cli.emit(
            f"Device {device.id} ({token_tail(device.token)}) of {device.member_id} {what}: "
            f"push:{device.member_id} reaches it."
        )
    elif a.device_command == "list":
        devices = await herald.list_devices(cli.actor, **whose)
        if a.json:
            cli.emit_json([_shown(d, token_tail(d.token)) for d in devices])
        elif not devices:
            who = a.member or "You"
            cli.emit(f"{who} registered no device yet: herald member device add TOKEN.")
        else:
            rows = [[str(d.id), d.platform or "-", token_tail(d.token), d.label] for d in devices]
            cli.table(["ID", "PLATFORM", "TOKEN", "LABEL"], rows)
    else:
        await herald.remove_device(cli.actor, a.id, **whose)
        cli.emit(f"Device {a.id} is removed: push no longer reaches it.")
