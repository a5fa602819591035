"""``herald prefs``: how Herald reaches a member, and a tenant's defaults (admins).

``herald prefs`` shows your preferences in words (each field's effective value and
whose it is: yours, the tenant's default, or Herald's); ``herald prefs set`` changes
them; ``--member`` names another member (admins); ``herald prefs tenant [set]`` shows
or changes the tenant's defaults (admins). The grammar (:func:`add_parser`, called by
bot/cli/parser.py; argparse only, so ``herald --help`` stays light) and the handler
(:func:`cmd_prefs`, over the use cases ``core.cases.PreferenceCases``, which check
rights, validate and audit). With HERALD_API_URL and HERALD_API_TOKEN set, ``prefs``
asks the running service instead (:func:`remote_prefs`: the token's own preferences and
its tenant's defaults; ``--member`` needs the local database). Both print the same
words, from the same JSON (``MemberPreferences.to_json()``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.cli.commands import Cli
    from core.cases import Herald


class Output(Protocol):
    """Where a command prints (the local :class:`~bot.cli.commands.Cli` or
    bot/cli/remote.py's ``Remote``)."""

    def emit(self, text: str = "") -> None: ...

    def emit_json(self, data: Any) -> None: ...


#: core.preferences.ACCEPT, written again here: the grammar imports no core.
ACCEPT = ("anyone", "admins", "self")
#: What each ``accept_from`` means, said of a member (``{you}``: "you" or their id).
_ACCEPT_WORDS = {
    "anyone": "anyone in the tenant",
    "admins": "only admins",
    "self": "nobody but {you}",
}
_NONE = "none"


def _changes(p: argparse.ArgumentParser, *, tenant: bool = False) -> None:
    """The options of ``prefs set`` and ``prefs tenant set`` (a tenant names no place:
    each member names their own)."""
    if not tenant:
        p.add_argument(
            "--place",
            metavar="DEST|none",
            help="where reminders to you go: slack:@U123, discord:@<user id>, email:you@"
            "example.com, sms:+4915…, push:slack:U123; none: where the author sends them",
        )
    p.add_argument("--accept", choices=ACCEPT, help="who may remind you (self: nobody but you)")
    p.add_argument(
        "--block",
        action="append",
        default=[],
        metavar="MEMBER",
        help="refuse reminders from this member (repeatable), e.g. slack:U123 or @bob",
    )
    p.add_argument(
        "--unblock", action="append", default=[], metavar="MEMBER", help="take one off the list"
    )
    p.add_argument(
        "--quiet",
        metavar="HH:MM-HH:MM|none",
        help="a daily quiet window in your zone, e.g. 22:00-08:00 (none: no window)",
    )
    p.add_argument(
        "--quiet-days",
        metavar="DAYS|none",
        help="whole quiet days: sat,sun or weekends (none: no quiet day)",
    )
    p.add_argument(
        "--notices",
        choices=("on", "off"),
        help="a direct message (Slack, Discord) when a message you scheduled fails (default on)",
    )
    if tenant:
        p.add_argument(
            "--hold-channels",
            choices=("yes", "no"),
            help="hold messages to channels in the tenant's quiet hours too (default no)",
        )
    _json(p)


def _json(p: argparse.ArgumentParser) -> None:
    """``--json`` at any level of ``prefs``: given before or after the subcommand, it
    holds (SUPPRESS: a subcommand's default does not undo the level above's)."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS)


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """``prefs`` (``sub``: herald's subparsers)."""
    help_text = "Your preferences: where reminders reach you, from whom, and quiet hours."
    p = sub.add_parser(
        "prefs",
        help=help_text,
        description=help_text + " Without a subcommand: show them.",
    )
    p.add_argument("--member", help="another member's (admins), e.g. slack:U123; default: yours")
    p.add_argument("--json", action="store_true")
    psub = p.add_subparsers(dest="prefs_command", parser_class=parser_class)
    s = psub.add_parser(
        "set",
        help="change your preferences",
        description="Change your preferences; what you do not name stays as it is.",
    )
    s.add_argument(
        "--member", default=argparse.SUPPRESS, help="another member's (admins); default: yours"
    )
    _changes(s)
    t = psub.add_parser(
        "tenant",
        help="the tenant's defaults (admins)",
        description="The defaults of every member of your tenant (admins): a member's own "
        "preferences override them; block lists add up.",
    )
    _json(t)
    tsub = t.add_subparsers(dest="tenant_command", parser_class=parser_class)
    _changes(tsub.add_parser("set", help="change the tenant's defaults (admins)"), tenant=True)


def changes_json(a: argparse.Namespace) -> dict[str, Any]:
    """The options given, as the fields of ``PreferenceChanges`` (and of the API's PUT):
    ``none`` clears. InvalidInput when none is given."""
    from core.errors import InvalidInput

    def cleared(value: str) -> str:
        return "" if value.strip().lower() == _NONE else value

    tenant = hasattr(a, "hold_channels")
    data: dict[str, Any] = {}
    if getattr(a, "place", None) is not None:
        data["place"] = cleared(a.place)
    if a.accept is not None:
        data["accept_from"] = a.accept
    if a.block:
        data["block"] = list(a.block)
    if a.unblock:
        data["unblock"] = list(a.unblock)
    if a.quiet is not None:
        data["quiet"] = cleared(a.quiet)
    if a.quiet_days is not None:
        words = [d.strip() for d in a.quiet_days.split(",") if d.strip()]
        data["quiet_days"] = [] if [w.lower() for w in words] == [_NONE] else words
    if a.notices is not None:
        data["notices"] = a.notices == "on"
    if tenant and a.hold_channels is not None:
        data["hold_channels"] = a.hold_channels == "yes"
    if not data:
        first = "" if tenant else "--place, "
        also = ", --hold-channels" if tenant else ""
        raise InvalidInput(
            f"Say what to change: {first}--accept, --block, --unblock, --quiet, "
            f"--quiet-days or --notices{also} "
            f"(see herald prefs{' tenant' if tenant else ''} set --help)."
        )
    return data


async def cmd_prefs(cli: Cli, herald: Herald) -> None:
    from core.cases import PreferenceChanges, prefs_json

    a = cli.args
    if a.prefs_command == "tenant":
        if a.tenant_command == "set":
            changes = PreferenceChanges.from_mapping(changes_json(a))
            prefs = await herald.set_tenant_preferences(cli.actor, changes)
        else:
            prefs = await herald.tenant_preferences(cli.actor)
        show_tenant(cli, a, prefs_json(prefs))
        return
    if a.prefs_command == "set":
        changes = PreferenceChanges.from_mapping(changes_json(a))
        shown = await herald.set_preferences(cli.actor, changes, member=a.member)
    else:
        shown = await herald.preferences(cli.actor, member=a.member)
    show_member(cli, a, shown.to_json(), yours=a.member is None or a.member == cli.actor.id)


def show_member(out: Output, a: argparse.Namespace, shown: dict[str, Any], *, yours: bool) -> None:
    """A member's preferences (``MemberPreferences.to_json()``), in words or as JSON."""
    if a.json:
        out.emit_json(shown)
        return
    if a.prefs_command == "set":
        out.emit("Saved.")
    for line in member_lines(shown, yours=yours):
        out.emit(line)


def show_tenant(out: Output, a: argparse.Namespace, defaults: dict[str, Any]) -> None:
    """A tenant's defaults (``prefs_json``), in words or as JSON."""
    if a.json:
        out.emit_json(defaults)
        return
    if a.tenant_command == "set":
        out.emit("The tenant's defaults are saved.")
    for line in tenant_lines(defaults):
        out.emit(line)


def _whose(own: Any, tenant: Any, *, yours: bool) -> str:
    if own is not None:
        return "yours" if yours else "their own"
    if tenant is not None:
        return "the tenant's default"
    return "Herald's default"


def member_lines(m: dict[str, Any], *, yours: bool = True) -> list[str]:
    """A member's preferences in words (``MemberPreferences.to_json()``, as the API
    answers it too): each field's effective value, and whose it is."""
    own, tenant, eff = m["own"], m["tenant"], m["effective"]
    member, zone = m["member"], m["zone"]
    you = "you" if yours else "them"

    def whose(name: str) -> str:
        return _whose(own.get(name), tenant.get(name), yours=yours)

    place = eff["place"] or "where the author sends them"
    accept = _ACCEPT_WORDS[eff["accept_from"] or "anyone"].format(you=you)
    quiet = eff["quiet_text"] or _NONE
    if quiet != _NONE:
        quiet += f", {zone} time"
    blocked = [
        f"{b} (the tenant's)" if b in tenant["blocked"] and b not in own["blocked"] else b
        for b in eff["blocked"]
    ]
    title = "Your preferences" if yours else f"{member}'s preferences"
    return [
        f"{title} ({member}, zone {zone}):",
        f"  reminders go to:    {place} ({whose('place')})",
        f"  {'who may remind ' + you + ':':<19} {accept} ({whose('accept_from')})",
        f"  blocked:            {', '.join(blocked) or 'nobody'}",
        f"  quiet hours:        {quiet} ({whose('quiet')})",
        *(
            [
                f"  failure notices:    {'off' if eff.get('notices') is False else 'on'} "
                f"({whose('notices')})"
            ]
            if member.startswith(("slack:", "discord:"))  # who is told by direct message
            else []
        ),
    ]


def tenant_lines(prefs: dict[str, Any]) -> list[str]:
    """A tenant's defaults in words (``prefs_json``, as the API answers them)."""
    accept = _ACCEPT_WORDS[prefs["accept_from"] or "anyone"].format(you="the member")
    quiet = prefs["quiet_text"] or _NONE
    return [
        "The tenant's defaults (a member's own preferences override them):",
        f"  who may remind:     {accept}",
        f"  blocked:            {', '.join(prefs['blocked']) or 'nobody'}",
        f"  quiet hours:        {quiet}" + (", in each member's zone" if quiet != _NONE else ""),
        f"  channels held too:  {'yes' if prefs['hold_channels'] else 'no'}",
        *(["  failure notices:    off"] if prefs.get("notices") is False else []),
    ]


def remote_prefs(remote: Any, a: argparse.Namespace) -> None:
    """``herald prefs`` through a running service's API (bot/cli/remote.py), as the
    token's member: ``/v1/me/preferences``, ``/v1/tenant/preferences``."""
    from bot.cli.remote import RemoteError

    if getattr(a, "member", None):
        raise RemoteError(
            "--member works on the local database only: the API serves the token's own "
            "preferences (unset HERALD_API_URL to use the database)."
        )
    if a.prefs_command == "tenant":
        body = changes_json(a) if a.tenant_command == "set" else None
        method = "PUT" if body is not None else "GET"
        _, _, answer = remote.call(method, "/tenant/preferences", body)
        show_tenant(remote, a, answer["defaults"])
        return
    body = changes_json(a) if a.prefs_command == "set" else None
    _, _, shown = remote.call("PUT" if body is not None else "GET", "/me/preferences", body)
    show_member(remote, a, shown, yours=True)
