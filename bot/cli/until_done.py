"""Messages sent until done from the terminal: ``herald schedule``/``edit``'s
``--until-done`` options, ``herald done JOB_ID`` and ``herald awaiting``.

An escalation level is written as its destinations then its delay: ``--escalate
slack:@U1 --escalate slack:@U2 --after 1h`` is one level (two people, after an hour);
a second ``--escalate … --after 2h`` adds the next. :func:`ladder_arg` turns the
options into the mapping core and the API take (core.until_done.parse checks it). The
local handlers (:func:`cmd_done`, :func:`cmd_awaiting`) and the remote ones (over
``/v1``, bot/cli/remote.py) print the same words from the same JSON. The grammar part
imports no core beyond its errors, so ``herald --help`` stays light.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from core.errors import InvalidInput
from core.instants import iso

if TYPE_CHECKING:
    from bot.cli.commands import Cli
    from bot.cli.prefs import Output
    from core.cases import Herald
    from core.store import Awaiting, Done

#: Where ``--escalate`` and ``--after`` keep what was given, in order.
LADDER = "ladder"
LADDER_HELP = (
    "Sent until done: the message carries a Done button; until someone presses it (or "
    "runs `herald done JOB_ID`), Herald replies with a nag every --nag and, after "
    "--after, messages each --escalate destination written before it. An escalation "
    "level is its destinations, then its delay: --escalate slack:@U1 --escalate "
    "slack:@U2 --after 1h --escalate slack:@U3 --after 2h is two levels (at most 2, each "
    "up to 5 destinations, each later than the one before)."
)


class _LadderStep(argparse.Action):
    """``--escalate DEST`` and ``--after DURATION``, kept in the order given."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, *_: Any
    ) -> None:
        setattr(namespace, LADDER, [*(getattr(namespace, LADDER, None) or []), (self.const, value)])


def add_options(cmd: argparse.ArgumentParser, *, edit: bool) -> None:
    """``--until-done`` (``--no-until-done`` in an edit), ``--nag``, ``--escalate``, ``--after``."""
    group = cmd.add_argument_group("until done", LADDER_HELP)
    if edit:
        group.add_argument(
            "--until-done",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="send it until done with the ladder given here (replacing its ladder), or "
            "--no-until-done to send it plainly again (default: unchanged)",
        )
    else:
        group.add_argument(
            "--until-done", action="store_true", default=None, help="send it until done"
        )
    group.add_argument(
        "--nag",
        metavar="DURATION",
        help="reply under the message this often until done: 15m, 1h (at least 5m; 1m for "
        "operators and admins; default: no nags)",
    )
    group.add_argument(
        "--escalate",
        action=_LadderStep,
        const="to",
        dest=LADDER,
        metavar="DEST",
        help="a destination of the next escalation level (repeatable), e.g. slack:@U123",
    )
    group.add_argument(
        "--after",
        action=_LadderStep,
        const="after",
        dest=LADDER,
        metavar="DURATION",
        help="how long after the message the --escalate destinations before it are "
        "messaged: 1h, 90m",
    )


def ladder_arg(a: argparse.Namespace) -> dict[str, Any] | Literal[False] | None:
    """The ladder the options give, as core and the API take it (``{"nag": "15m",
    "escalate": [{"to": [...], "after": "1h"}]}``); False for ``--no-until-done``; None
    when not given. Raises InvalidInput, in one sentence, for an ``--escalate`` without
    its ``--after`` (or the reverse), or ladder options without ``--until-done``."""
    given = getattr(a, LADDER, None) or []
    levels: list[dict[str, Any]] = []
    pending: list[str] = []
    for kind, value in given:
        if kind == "to":
            pending.append(value)
        elif not pending:
            raise InvalidInput(
                f"--after {value} is the delay of the --escalate destinations before it: "
                "write them first, e.g. --escalate slack:@U123 --after 1h."
            )
        else:
            levels.append({"to": pending, "after": value})
            pending = []
    if pending:
        raise InvalidInput(
            f"--escalate {pending[-1]} needs its delay after it: add --after DURATION "
            "(e.g. --after 1h)."
        )
    if a.until_done is False:
        if a.nag is not None or levels:
            raise InvalidInput("--no-until-done sends it plainly: drop --nag and --escalate.")
        return False
    if not a.until_done:
        if a.nag is not None or levels:
            raise InvalidInput("--nag and --escalate belong to a message sent --until-done.")
        return None
    spec: dict[str, Any] = {"escalate": levels}
    if a.nag is not None:
        spec["nag"] = a.nag
    return spec


# --- what is printed (local and remote alike, from the API's JSON) -------------------


def utc_minute(text: str | None) -> str:
    """``2026-03-02 09:20 UTC`` of an ISO time; ``-`` for None."""
    if not text:
        return "-"
    return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def say_done(out: Output, done: dict[str, Any], as_json: bool) -> None:
    """``herald done``'s answer: what it stopped, or who did it first."""
    if as_json:
        out.emit_json(done)
    elif done["already"]:
        out.emit(f"Already done by {done['by']} at {utc_minute(done['at'])}.")
    else:
        n = done["stopped"]
        stopped = f"stopped {n} waiting step{'s' if n != 1 else ''}" if n else "none waiting"
        out.emit(f"Marked message {done['job_id']} done ({stopped}).")


def figures_words(ack: dict[str, Any]) -> str:
    """The time to acknowledge over the last week, in words."""
    from core.timeexpr import describe_duration

    if not ack["count"]:
        return "No message was marked done in the last 7 days."
    p50, p95 = (describe_duration(ack[k], rough=True) for k in ("p50_s", "p95_s"))
    return f"Time to Done over the last 7 days: p50 {p50}, p95 {p95} ({ack['count']} done)."


def show_awaiting(out: Output, answer: dict[str, Any], as_json: bool) -> None:
    """``herald awaiting``: the messages nobody marked done yet, oldest first."""
    if as_json:
        out.emit_json(answer)
        return
    from bot.cli.options import one_line, table_lines
    from core import views

    items = answer["items"]
    if not items:
        out.emit("No message awaits Done.")
    else:
        rows = [
            [
                str(w["job_id"]),
                str(w["schedule_id"]),
                utc_minute(w["delivered_at"]).removesuffix(" UTC"),
                str(w["nags_sent"]),
                str(w["steps_waiting"]),
                views.destination(w["destination"], full=True),  # a webhook's token hidden
                one_line(w["text"], 200),
            ]
            for w in items
        ]
        header = ["JOB", "SCHEDULE", "SENT (UTC)", "NAGS", "WAITING", "TO", "TEXT"]
        for line in table_lines(header, rows, width=100, least=[99, 99, 99, 99, 99, 16, 8]):
            out.emit(line)
    out.emit(figures_words(answer["ack"]))


def done_json(done: Done) -> dict[str, Any]:
    """A Done as the API answers it (``POST /v1/jobs/{id}/done``)."""
    return {
        "job_id": done.job_id,
        "schedule_id": done.schedule_id,
        "by": done.by,
        "at": iso(done.at),
        "already": done.already,
        "stopped": done.stopped,
        "destination": done.destination,
        "waited_s": done.waited,
    }


def awaiting_json(w: Awaiting) -> dict[str, Any]:
    """A message awaiting Done as the API answers it (``GET /v1/awaiting-done``)."""
    return {
        "job_id": w.job_id,
        "schedule_id": w.schedule_id,
        "tenant": w.tenant,
        "owner": w.owner,
        "destination": w.destination,
        "text": w.body,
        "delivered_at": iso(w.delivered_at),
        "nags_sent": w.nags_sent,
        "steps_waiting": w.steps_waiting,
    }


# --- the local handlers (bot/cli/commands.py runs them over the use cases) ----------


async def cmd_done(cli: Cli, herald: Herald) -> None:
    done = await herald.mark_done(cli.actor, cli.args.job_id)
    say_done(cli, done_json(done), cli.args.json)


async def cmd_awaiting(cli: Cli, herald: Herald) -> None:
    rows = await herald.awaiting_done(cli.actor, limit=cli.args.limit)
    figures = await herald.ack_figures(cli.actor)
    answer = {
        "items": [awaiting_json(w) for w in rows],
        "ack": {"count": figures.count, "p50_s": figures.p50, "p95_s": figures.p95},
    }
    show_awaiting(cli, answer, cli.args.json)


# --- the same through a running service (bot/cli/remote.py) -------------------------


def remote_done(remote: Any, a: argparse.Namespace) -> None:
    _, _, done = remote.call("POST", f"/jobs/{a.job_id}/done")
    say_done(remote, done, a.json)


def remote_awaiting(remote: Any, a: argparse.Namespace) -> None:
    _, _, answer = remote.call("GET", "/awaiting-done", query={"limit": a.limit})
    show_awaiting(remote, answer, a.json)


def add_parsers(add: Any) -> None:
    """``done`` and ``awaiting`` (``add``: bot/cli/parser.py's command adder)."""
    c = add(
        "done",
        "Mark a message sent until done as done: its nags and escalations stop and the "
        "message says who did it (its author, operators and admins; in chat, anyone who "
        "sees it presses Done).",
    )
    c.add_argument("job_id", type=int, metavar="JOB_ID", help="the message's job (herald awaiting)")
    c.add_argument("--json", action="store_true")
    c = add(
        "awaiting",
        "Messages sent until done that nobody marked done yet, oldest first, and how long "
        "people took to press Done over the last 7 days (p50, p95).",
    )
    c.add_argument("--limit", type=int, default=200)
    c.add_argument("--json", action="store_true")


def ladder_words(options: dict[str, Any] | None) -> str | None:
    """A schedule's ladder in words (core.until_done.describe), None when it is not
    sent until done."""
    from core import until_done

    rule = until_done.of_options(options)
    return None if rule is None else until_done.describe(rule)
