"""``herald template add|edit|show|list|preview|remove``: named templates (issue 39),
over the use cases as the terminal's actor.

The grammar (:func:`add_parser`, called by bot/cli/parser.py; argparse only, so
``herald --help`` stays light) and the handler (:func:`cmd_template`, called by
bot/cli/commands.py). A template's text is Liquid (``Deploy {{ service }} v{{ version
}}``); its variables are declared with ``--var NAME[:KIND]``. Templates are managed on
this database only: the HTTP API's routes are not used here.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from bot.cli.commands import Cli
    from core.cases import Herald
    from core.models import Template, TemplateVersion
    from core.render import Parts

#: core.render.KINDS' names, written again here: the grammar imports no core, so that
#: ``herald --help`` stays fast (tests/integration/test_cli_templates.py keeps them equal).
KINDS = ("text", "number", "date")
#: The most characters --file reads: more than any template part core takes, so that an
#: over-long file is refused by core's own sentence, and a huge one is not read whole.
FILE_CHARS = 100_000


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """``template`` and its subcommands (``sub``: herald's subparsers)."""
    t = sub.add_parser(
        "template",
        help="named templates: a message written once, scheduled with data",
        description="Named templates: a message (Liquid: 'Deploy {{ service }} v{{ version "
        "}}') written once and scheduled many times with data (herald schedule --template "
        "NAME --data service=api). Members use them; operators and admins manage them.",
    )
    tsub = t.add_subparsers(dest="template_command", required=True, parser_class=parser_class)

    a = tsub.add_parser(
        "add",
        help="add a template (operators and admins)",
        description="Add a template. Its variables are declared with --var (text unless "
        "a kind is given: --var version:number); the built-in fields date, time, "
        "schedule.id and recipient.name need no declaration.",
    )
    a.add_argument("name", help="lower-case letters, digits, - and _ (e.g. deploy)")
    _add_parts(a, edit=False)

    e = tsub.add_parser(
        "edit",
        help="save a new version (schedules using it move to it)",
        description="Save a new version of a template: the schedules using it move to it "
        "from their next occurrence. An edit that would break one of them (a limit passed, "
        "a value missing) is refused naming them, unless --force-version keeps those on "
        "the version they have.",
    )
    e.add_argument("name")
    _add_parts(e, edit=True)
    e.add_argument(
        "--if-version",
        type=int,
        metavar="N",
        help="refuse if the template is not at version N (someone else edited it)",
    )
    e.add_argument(
        "--force-version",
        action="store_true",
        help="save even if some schedules would break: those stay on their version",
    )

    s = tsub.add_parser("show", help="a template: text, variables, versions, schedules using it")
    s.add_argument("name")
    s.add_argument("--json", action="store_true")

    ls = tsub.add_parser("list", help="this workspace's templates")
    ls.add_argument("--json", action="store_true")

    p = tsub.add_parser(
        "preview",
        help="a template filled in with sample data",
        description="A template filled in with --data and sample built-ins (schedule #123, "
        "now); a variable without a value shows as {{ name }}.",
    )
    p.add_argument("name")
    p.add_argument(
        "--data", action="append", default=[], metavar="NAME=VALUE", help="a value (repeatable)"
    )
    p.add_argument("--version", type=int, metavar="N", help="an older version (default: current)")
    p.add_argument("--json", action="store_true")

    r = tsub.add_parser("remove", help="remove a template (refused while schedules use it)")
    r.add_argument("name")


def _add_parts(cmd: argparse.ArgumentParser, *, edit: bool) -> None:
    """The options of a template's parts, shared by ``add`` and ``edit``."""
    unchanged = " (default: unchanged)" if edit else ""
    text = cmd.add_mutually_exclusive_group()
    text.add_argument("--text", help="the message, in Liquid: 'Deploy {{ service }}'")
    text.add_argument(
        "--file",
        metavar="PATH",
        help="read the message from PATH (- for stdin; final newlines dropped)",
    )
    emptied = "; an empty one takes it out" if edit else ""
    cmd.add_argument("--subject", help=f"email subject (Liquid too){emptied}{unchanged}")
    cmd.add_argument("--blocks", help=f"Slack Block Kit blocks: JSON, or @FILE{emptied}")
    cmd.add_argument("--embeds", help=f"Discord embeds: JSON, or @FILE{emptied}")
    cmd.add_argument(
        "--var",
        dest="variables",
        action="append",
        metavar="NAME[:KIND]",
        help=f"a variable it uses, of kind {', '.join(KINDS)} (default text); repeat for "
        "more" + ("; given, they replace the declared ones" if edit else ""),
    )
    if edit:
        cmd.add_argument("--no-vars", action="store_true", help="it declares no variable any more")
    cmd.add_argument("--description", help=f"what it is for (at most 500){unchanged}")
    cmd.add_argument("--json", action="store_true", help="print the template as JSON")


# --- reading the options ------------------------------------------------------------


def variables_arg(given: list[str] | None) -> dict[str, str] | None:
    """``--var service --var version:number`` as core takes them (None: not given);
    core refuses a bad name or kind in its own sentence."""
    from core.errors import InvalidInput

    if given is None:
        return None
    declared: dict[str, str] = {}
    for item in given:
        name, _, kind = item.partition(":")
        name = name.strip()
        if name in declared:
            raise InvalidInput(f"--var {name} is given twice: declare each variable once.")
        declared[name] = kind.strip() or "text"
    return declared


def _text_arg(a: argparse.Namespace) -> str | None:
    """The template's text: --text, or --file PATH (- for standard input)."""
    from bot.cli.options import open_text
    from core.errors import InvalidInput

    if a.file is None:
        return a.text  # type: ignore[no-any-return]
    stream = sys.stdin if a.file == "-" else open_text(a.file)
    try:
        with stream:
            return stream.read(FILE_CHARS).rstrip("\n")  # a file's last newline is no text
    except UnicodeDecodeError:
        raise InvalidInput(f"{a.file} is not UTF-8 text.") from None


def _part(name: str, value: str | None) -> Any:
    """``--blocks``/``--embeds``: None not given, [] given empty (take it out), else JSON."""
    if value is None:
        return None
    if not value.strip():
        return []
    from bot.cli.options import json_arg

    return json_arg(name, value)


# --- what is shown ------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else "-"


def template_dict(t: Template) -> dict[str, Any]:
    from core.views import iso

    return {
        "name": t.name,
        "version": t.version,
        "description": t.description,
        "text": t.body,
        "subject": t.subject,
        "blocks": t.blocks,
        "embeds": t.embeds,
        "variables": dict(t.variables),
        "created_by": t.created_by,
        "updated_by": t.updated_by,
        "created_at": iso(t.created_at),
        "updated_at": iso(t.updated_at),
    }


def _version_dict(v: TemplateVersion) -> dict[str, Any]:
    from core.views import iso

    return {"version": v.version, "author": v.author, "created_at": iso(v.created_at)}


def variables_text(variables: dict[str, str]) -> str:
    """``service (text), version (number)``, or ``none``."""
    return ", ".join(f"{name} ({kind})" for name, kind in variables.items()) or "none"


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _parts_dict(parts: Parts) -> dict[str, Any]:
    return {
        "text": parts.body,
        "subject": parts.subject,
        "blocks": parts.blocks,
        "embeds": parts.embeds,
    }


# --- the commands -------------------------------------------------------------------


async def cmd_template(cli: Cli, herald: Herald) -> None:
    command = cli.args.template_command
    await {
        "add": _add,
        "edit": _edit,
        "show": _show,
        "list": _list,
        "preview": _preview,
        "remove": _remove,
    }[command](cli, herald)


async def _add(cli: Cli, herald: Herald) -> None:
    from core.errors import InvalidInput

    a = cli.args
    text = _text_arg(a)
    if text is None:
        raise InvalidInput(
            "Give the template's text with --text, or --file PATH (- for standard input)."
        )
    template = await herald.add_template(
        cli.actor,
        a.name,
        text,
        subject=a.subject or None,
        blocks=_part("blocks", a.blocks) or None,
        embeds=_part("embeds", a.embeds) or None,
        variables=variables_arg(a.variables) or {},
        description=a.description or "",
    )
    if a.json:
        cli.emit_json(template_dict(template))
        return
    cli.emit(
        f"Template {template.name} saved as version 1; variables: "
        f"{variables_text(template.variables)}."
    )
    cli.emit(f"  use it: herald schedule --template {template.name}" + _data_hint(template))


def _data_hint(template: Template) -> str:
    hints = {"text": "…", "number": "1", "date": "2026-01-31"}
    return "".join(f" --data {n}={hints.get(k, '…')}" for n, k in template.variables.items())


async def _edit(cli: Cli, herald: Herald) -> None:
    from core.cases import WouldBreak
    from core.errors import InvalidInput

    a = cli.args
    if a.no_vars and a.variables:
        raise InvalidInput("Give --var or --no-vars, not both.")
    variables = {} if a.no_vars else variables_arg(a.variables)
    before = await herald.show_template(cli.actor, a.name)
    try:
        edited = await herald.edit_template(
            cli.actor,
            a.name,
            body=_text_arg(a),
            subject=a.subject,
            blocks=_part("blocks", a.blocks),
            embeds=_part("embeds", a.embeds),
            variables=variables,
            description=a.description,
            expected_version=a.if_version,
            force_version=a.force_version,
        )
    except WouldBreak as exc:
        raise InvalidInput(exc.said("--force-version")) from None
    t = edited.template
    if a.json:
        cli.emit_json(
            {
                **template_dict(t),
                "moved": edited.moved,
                "kept": [{"schedule": i, "reason": why} for i, why in edited.kept],
            }
        )
        return
    if t.version == before.template.version:
        what = "description" if a.description is not None else "edit"
        cli.emit(
            f"Template {t.name}'s {what} saved; its text is unchanged (still version {t.version})."
        )
        return
    old = t.version - 1  # the version it was at when this edit saved
    said = f"Version {t.version} of template {t.name} saved"
    if edited.moved:
        said += f"; moved {_plural(len(edited.moved), 'schedule')} {_ids(edited.moved)}"
    if edited.kept:
        said += f"; kept {_ids([i for i, _ in edited.kept])} on version {old} because: "
        said += edited.kept[0][1].rstrip(".")
    elif not edited.moved:
        said += "; no schedule uses it"
    cli.emit(said + ".")
    for schedule_id, why in edited.kept[1:]:
        cli.emit(f"  kept #{schedule_id}: {why}")


async def _show(cli: Cli, herald: Herald) -> None:
    from bot.cli.options import one_line
    from core.render import BUILTINS

    detail = await herald.show_template(cli.actor, cli.args.name)
    t = detail.template
    used = [s.id for s in detail.used_by if s.id is not None]
    if cli.args.json:
        cli.emit_json(
            {
                **template_dict(t),
                "versions": [_version_dict(v) for v in detail.versions],
                "used_by": used,
            }
        )
        return
    viewer = await herald.actor(cli.actor)
    cli.emit(f"Template {t.name} (version {t.version})")
    if t.description:
        cli.emit(f"  description: {t.description}")
    cli.emit(f"  variables: {variables_text(t.variables)}")
    cli.emit(f"  built-ins: {', '.join(BUILTINS)}")
    if t.subject:
        cli.emit(f"  subject:   {t.subject}")
    for name, value in (("blocks", t.blocks), ("embeds", t.embeds)):
        if value:
            cli.emit(f"  {name + ':':<10} {one_line(json.dumps(value), 80)}")
    cli.emit("  text:")
    for line in t.body.splitlines() or [""]:
        cli.emit(f"    {line}")
    cli.emit("  versions:")
    for v in detail.versions:
        current = "  (current)" if v.version == t.version else ""
        cli.emit(f"    v{v.version:<3} {_when(v.created_at)}  by {v.author}{current}")
    whose = "" if viewer.sees_everything else " of yours"
    if not used:
        cli.emit(f"  used by no schedule{whose}")
        return
    kept = {s.id: s.template_version for s in detail.used_by}
    listed = ", ".join(f"#{i}" + ("" if kept[i] == t.version else f" (v{kept[i]})") for i in used)
    cli.emit(f"  used by {_plural(len(used), 'schedule')}{whose}: {listed}")


async def _list(cli: Cli, herald: Herald) -> None:
    from bot.cli.options import one_line

    rows = await herald.list_templates(cli.actor)
    if cli.args.json:
        cli.emit_json([{**template_dict(t), "used_by": count} for t, count in rows])
        return
    if not rows:
        cli.emit("No templates yet: herald template add NAME --text '…' (operators and admins).")
        return
    table = [
        [
            t.name,
            str(t.version),
            one_line(", ".join(f"{n}:{k}" for n, k in t.variables.items()) or "-", 40),
            str(count),
            t.description or "-",
        ]
        for t, count in rows
    ]
    cli.table(
        ["NAME", "VERSION", "VARIABLES", "USED BY", "DESCRIPTION"], table, least=[20, 7, 20, 7, 12]
    )


async def _preview(cli: Cli, herald: Herald) -> None:
    from bot.cli.options import data_arg

    a = cli.args
    parts = await herald.preview_template(cli.actor, a.name, data_arg(a.data), version=a.version)
    if a.json:
        cli.emit_json(_parts_dict(parts))
        return
    if parts.subject:
        cli.emit(f"Subject: {parts.subject}")
        cli.emit()
    cli.emit(parts.body)
    for name, value in (("blocks", parts.blocks), ("embeds", parts.embeds)):
        if value:
            cli.emit()
            cli.emit(f"{name.capitalize()}:")
            cli.emit(json.dumps(value, ensure_ascii=False, indent=2))


async def _remove(cli: Cli, herald: Herald) -> None:
    removed = await herald.remove_template(cli.actor, cli.args.name)
    cli.emit(f"Template {removed.name} is removed, with its {_plural(removed.version, 'version')}.")
