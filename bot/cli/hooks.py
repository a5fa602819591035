"""``herald hooks add|list|remove|enable`` and ``herald events``: event hooks, and the
events applications hear (issue 38), over the use cases as the terminal's actor.

The grammar (:func:`add_parser`, called by bot/cli/parser.py; argparse only, so
``herald --help`` stays light) and the handlers (:func:`cmd_hooks`, :func:`cmd_events`,
called by bot/cli/commands.py). A hook's secret is printed once, when it is added; its
URL is shown with its path and query hidden.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.cli.commands import Cli
    from core.cases import Herald
    from core.models import EventHook

#: core.events.EVENT_TYPES, written again here: the grammar imports no core, so that
#: ``herald --help`` stays fast (tests/integration/test_cli_hooks.py keeps them equal).
TYPES = (
    "job.delivered",
    "job.retrying",
    "job.dead",
    "job.expired",
    "job.receipt",
    "schedule.paused",
    "schedule.ended",
)


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """``hooks`` and ``events`` (``sub``: herald's subparsers)."""
    h = sub.add_parser(
        "hooks",
        help="event hooks: URLs Herald posts delivery events to, signed",
        description="Event hooks: Herald POSTs the events a hook hears (Standard Webhooks, "
        "signed with the secret shown when it is added). An admin's hook hears the "
        "workspace's events, a member's those of their own schedules.",
    )
    hsub = h.add_subparsers(dest="hooks_command", required=True, parser_class=parser_class)
    a = hsub.add_parser("add", help="register a hook (its secret is shown this once)")
    a.add_argument("url", help="https://... (never an internal address)")
    a.add_argument(
        "--type",
        dest="types",
        action="append",
        choices=TYPES,
        required=True,
        help="an event type it hears (repeat for more)",
    )
    a.add_argument("--schedule", type=int, help="only this schedule's events")
    a.add_argument("--key-prefix", help="only jobs whose idempotency key starts with this")
    a.add_argument("--description", default="", help="what it is for (at most 200)")
    a.add_argument("--json", action="store_true")
    ls = hsub.add_parser("list", help="the hooks you manage, and how their pushes go")
    ls.add_argument("--json", action="store_true")
    r = hsub.add_parser("remove", help="remove a hook")
    r.add_argument("id", type=int, help="its id, from herald hooks list")
    e = hsub.add_parser("enable", help="enable a disabled hook again, its failures forgotten")
    e.add_argument("id", type=int, help="its id, from herald hooks list")

    ev = sub.add_parser(
        "events",
        help="the events hooks hear, after a cursor (the pull feed)",
        description="The events you see, oldest first, from --after (the cursor the "
        "previous page printed) on: one JSON object a line, as hooks are posted them, "
        'then {"next_cursor": ...}.',
    )
    ev.add_argument("--after", help="the cursor a previous page printed")
    ev.add_argument("--limit", type=int, default=100, help="at most this many (1 to 500)")


def _shown(hook: EventHook) -> dict[str, Any]:
    from core.cases import shown_url

    return {
        "id": hook.id,
        "url": shown_url(hook.url),
        "types": list(hook.types),
        "owner": hook.owner,
        "tenant_wide": hook.tenant_wide,
        "schedule_id": hook.schedule_id,
        "key_prefix": hook.key_prefix,
        "state": hook.state,
        "tries": hook.tries,
        "last_error": hook.last_error,
        "delivered": hook.delivered,
    }


def _status(hook: EventHook) -> str:
    if hook.state != "active":
        return "disabled"
    if hook.tries:
        return f"failing ({hook.tries} tries): {hook.last_error or ''}".strip()
    return "ok"


async def cmd_hooks(cli: Cli, herald: Herald) -> None:
    a = cli.args
    if a.hooks_command == "add":
        made = await herald.register_hook(
            cli.actor,
            a.url,
            a.types,
            schedule_id=a.schedule,
            key_prefix=a.key_prefix,
            description=a.description,
        )
        if a.json:
            cli.emit_json({**_shown(made.hook), "secret": made.secret})
            return
        cli.emit(f"Event hook {made.hook.id} hears {', '.join(made.hook.types)}.")
        cli.emit(f"Its signing secret (shown this once): {made.secret}")
    elif a.hooks_command == "list":
        hooks = await herald.list_hooks(cli.actor)
        if a.json:
            cli.emit_json([_shown(h) for h in hooks])
        elif not hooks:
            cli.emit("No event hook yet: herald hooks add URL --type job.dead.")
        else:
            rows = [
                [str(h.id), _shown(h)["url"], ",".join(h.types), str(h.delivered), _status(h)]
                for h in hooks
            ]
            cli.table(["ID", "URL", "TYPES", "DELIVERED", "STATUS"], rows)
    elif a.hooks_command == "remove":
        await herald.remove_hook(cli.actor, a.id)
        cli.emit(f"Event hook {a.id} is removed: nothing more is posted to it.")
    else:
        hook = await herald.enable_hook(cli.actor, a.id)
        cli.emit(
            f"Event hook {hook.id} is enabled: it is posted from the event it stopped at "
            "(of its time disabled, failures and what other active hooks heard)."
        )


async def cmd_events(cli: Cli, herald: Herald) -> None:
    from core.events import body_of, message_id

    page = await herald.events_after(cli.actor, cli.args.after, cli.args.limit)
    for event in page.events:
        body = json.loads(body_of(event.type, event.at, event.data))
        cli.emit(json.dumps({"id": message_id(event.id or 0), **body}, separators=(",", ":")))
    cli.emit(json.dumps({"next_cursor": page.next_cursor}))
