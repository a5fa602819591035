"""``herald approvals list|approve|reject``: requests a second person decides (a
member's message held before it is sent, a dead letter's retry), one mechanism for
both (core.approvals, the verbs ``approve`` and ``reject`` of core/verbs.py).

The grammar (:func:`add_parser`, argparse only), the local handler (:func:`cmd_approvals`,
over the use cases, which check who may decide and audit) and the remote one
(:func:`remote_approvals`, over ``/v1/approvals``) print the same words from the same
JSON (:func:`approval_json`, what the API answers).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from core import verbs
from core.instants import iso

if TYPE_CHECKING:
    from bot.cli.commands import Cli
    from bot.cli.prefs import Output
    from core.cases import Herald
    from core.store import ApprovalRow

#: The help of a decision's option (core/verbs.py's ``options``).
OPTION_HELP = {"reason": "why, in a sentence: the author reads it"}


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """``approvals`` (``sub``: herald's subparsers)."""
    help_text = (
        "Requests a second person decides: members' messages held before they are sent "
        "(announcement channels, broadcast mentions) and dead-letter retries."
    )
    p = sub.add_parser("approvals", help=help_text, description=help_text)
    asub = p.add_subparsers(dest="approvals_command", required=True, parser_class=parser_class)
    c = asub.add_parser(
        "list",
        help="the requests waiting for a decision (approvers see the workspace's, members "
        "their own)",
    )
    c.add_argument("--all", action="store_true", help="decided, expired and withdrawn ones too")
    c.add_argument("--kind", choices=("send", "retry"), help="only held messages, or only retries")
    c.add_argument("--limit", type=int, default=200)
    c.add_argument("--json", action="store_true")
    for v in verbs.offered(verbs.CLI, verbs.APPROVAL_VERBS):  # approve, reject
        c = asub.add_parser(v.name, help=v.help, description=v.help[0].upper() + v.help[1:] + ".")
        c.add_argument("ids", type=int, nargs="+", metavar="ID", help="request id (approvals list)")
        for option in v.options:
            c.add_argument(f"--{option}", help=OPTION_HELP.get(option))


def approval_json(row: ApprovalRow) -> dict[str, Any]:
    """A request as the API answers it (``GET /v1/approvals``)."""
    return {
        "id": row.id,
        "tenant": row.tenant,
        "kind": row.kind,
        "state": row.state,
        "requested_by": row.requested_by,
        "requested_at": iso(row.requested_at),
        "why": row.why,
        "decided_by": row.decided_by,
        "decided_at": iso(row.decided_at),
        "reason": row.reason,
        "expires_at": iso(row.expires_at),
        "schedule_id": row.schedule_id,
        "schedule_version": row.schedule_version,
        "job_id": row.job_id,
        "text": row.body,
        "destination": row.destination,
        "expression": row.expression,
        "owner": row.owner,
        "schedule_state": row.schedule_state,
    }


def show_list(out: Output, items: list[dict[str, Any]], a: argparse.Namespace) -> None:
    if a.json:
        out.emit_json(items)
        return
    if not items:
        out.emit("No requests waiting." if not a.all else "No requests.")
        return
    from bot.cli.options import one_line, table_lines
    from bot.cli.until_done import utc_minute
    from core import views

    header = ["ID", "KIND", *(["STATE"] if a.all else []), "ASKED BY", "ASKED (UTC)", "TO"]
    header += ["WHY", "TEXT"]
    rows = [
        [
            str(r["id"]),
            r["kind"] if r["job_id"] is None else f"{r['kind']} job {r['job_id']}",
            *([r["state"]] if a.all else []),
            r["requested_by"],
            utc_minute(r["requested_at"]).removesuffix(" UTC"),
            "-" if r["destination"] is None else views.destination(r["destination"], full=True),
            one_line(r["why"] or "-", 80),
            one_line(r["text"] or "", 200),
        ]
        for r in items
    ]
    least = [99, 99, *([99] if a.all else []), 12, 99, 14, 16, 8]
    for line in table_lines(header, rows, width=100, least=least):
        out.emit(line)


def _decision_options(chosen: verbs.Verb, a: argparse.Namespace) -> dict[str, Any]:
    return {option: getattr(a, option) for option in chosen.options}


async def cmd_approvals(cli: Cli, herald: Herald) -> None:
    a = cli.args
    if a.approvals_command == "list":
        rows = await herald.approvals(
            cli.actor, state=None if a.all else "pending", kind=a.kind, limit=a.limit
        )
        show_list(cli, [approval_json(r) for r in rows], a)
        return
    chosen = verbs.verb(a.approvals_command)
    decided = await verbs.perform(herald, chosen, cli.actor, a.ids, **_decision_options(chosen, a))
    cli.emit(chosen.told.format(count=decided.count))


def remote_approvals(remote: Any, a: argparse.Namespace) -> None:
    """The same through a running service (bot/cli/remote.py): one request a decision."""
    if a.approvals_command == "list":
        query: dict[str, Any] = {"state": "all" if a.all else "pending", "limit": a.limit}
        if a.kind is not None:
            query["kind"] = a.kind
        _, _, answer = remote.call("GET", "/approvals", query=query)
        show_list(remote, answer["items"], a)
        return
    chosen = verbs.verb(a.approvals_command)
    body = {k: v for k, v in _decision_options(chosen, a).items() if v is not None} or None
    count = 0
    try:
        for approval_id in dict.fromkeys(a.ids):
            _, _, decided = remote.call("POST", f"/approvals/{approval_id}/{chosen.name}", body)
            count += decided["count"]
    except Exception:
        if count:  # those decided before a refusal stay decided: say so
            remote.emit(chosen.told.format(count=count))
        raise
    remote.emit(chosen.told.format(count=count))
