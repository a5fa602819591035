"""The ``herald`` command line's grammar (argparse)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from bot.cli import approvals as cli_approvals
from bot.cli import devices as cli_devices
from bot.cli import hooks as cli_hooks
from bot.cli import prefs as cli_prefs
from bot.cli import templates as cli_templates
from bot.cli import until_done as cli_until_done
from core import verbs
from core.verbs import offered, verb

EXIT_ERROR = 2
#: The help of a dead-letter verb's option (core/verbs.py's ``options``).
DEAD_OPTIONS = {"reason": "why: whoever asked reads it in `herald dead list` and `show`"}
WHEN_MEANINGS = (
    'A rule without a time of day fires at 09:00 (HERALD_DEFAULT_TIME): "every weekday", '
    '"every month on the 1st"; the reading says so. "tonight" is 20:00 today, "eod" 17:00 '
    '(tomorrow once it has passed), "end of month" the last day of the month. "in an hour '
    'and a half", "at 9am on weekdays" and "every hour between 9 and 17 on weekdays" '
    "(09:00 to 17:00) are read too. A near miss is answered with what it almost said."
)


def herald_version() -> str:
    """The installed Herald's version (read from its package metadata on demand)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("herald")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


class _Version(argparse.Action):
    """``herald --version``: prints and exits during parsing, before any command's
    imports (argparse's own "version" action would read the metadata on every start)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(f"herald {herald_version()}\n")
        parser.exit()


class _Route(argparse.Action):
    """``--to DEST`` starts a recipient, ``--then DEST`` adds a fallback step to the
    recipient the option before it started: ``dest`` holds the chains, in order
    (bot/cli/options.py's ``recipients_arg`` turns them into core's recipients). In
    ``herald edit``, ``--add-to`` starts one too."""

    #: The attribute that remembers which list the last recipient went to.
    LAST = "_route_last"

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, *_: Any
    ) -> None:
        if self.const == "then":
            last = getattr(namespace, self.LAST, None)
            chains = getattr(namespace, last, None) if last else None
            if not chains:
                parser.error(
                    "--then DEST is the fallback of the --to before it: write --to first, "
                    "e.g. --to slack:@U123 --then email:alice@example.com"
                )
            chains[-1] = [*chains[-1], value]
            return
        chains = [*(getattr(namespace, self.dest, None) or []), [value]]
        setattr(namespace, self.dest, chains)
        setattr(namespace, self.LAST, self.dest)


def _add_routes(cmd: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--to`` (repeatable) and ``--then`` (its fallback)."""
    cmd.add_argument(
        "--to",
        action=_Route,
        required=required,
        metavar="DEST",
        help="a recipient (repeatable: one message to each), e.g. slack:C0123 or "
        "slack:#deploys (a name is looked up once), discord:#general@<server id>, log:, "
        "email:alice@example.com, or a direct message: slack:@U0123, discord:@<user id>"
        + ("" if required else "; replaces every recipient"),
    )
    cmd.add_argument(
        "--then",
        action=_Route,
        const="then",
        dest="then",
        metavar="DEST",
        help=(
            "tried when the destination before it failed for good (or past --step-timeout)"
            if required
            else "a fallback of the --to or --add-to before it, tried when that failed for good"
        )
        + ": --to slack:@U123 --then email:alice@example.com",
    )


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line, exit status 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"herald: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="herald", description="Scheduled messages for teams.")
    p.add_argument("--version", action=_Version, help="print Herald's version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text)

    def versioned(cmd: argparse.ArgumentParser) -> None:
        cmd.add_argument("id", type=int, help="schedule id")
        cmd.add_argument(
            "--version", type=int, help="refuse if the schedule is not at this version"
        )
        cmd.add_argument("--json", action="store_true", help="print the record as JSON")

    c = add("schedule", "Schedule a message.")
    _add_routes(c, required=True)
    c.add_argument(
        "--their-time",
        action="store_true",
        help="read --when in each person's own zone (their profile's, or as set with "
        "herald timezone / herald member zone; else yours); rooms keep yours",
    )
    c.add_argument(
        "--step-timeout",
        metavar="DURATION",
        help="try a chain's step at most this long before the next (10m, 1h; default: "
        "until it fails for good)",
    )
    c.add_argument("--when", required=True, help='when, e.g. "2026-04-01 08:00"')
    c.add_argument("--text", help="the message (or --template NAME)")
    _add_template_use(c, edit=False)
    c.add_argument(
        "--tz", help="zone to read --when in: a city (Berlin) or Europe/Berlin (default: yours)"
    )
    c.add_argument("--key", help="idempotency key: a repeat with the same key creates nothing")
    c.add_argument("--username", help="sender name (Slack: needs chat:write.customize)")
    c.add_argument("--icon-url", help="sender icon (Slack) or avatar (Discord webhooks)")
    c.add_argument("--subject", help="email subject (default: the first line)")
    c.add_argument("--blocks", help="Slack Block Kit blocks: JSON, or @FILE")
    c.add_argument("--embeds", help="Discord embeds (discord-webhook:): JSON, or @FILE")
    c.add_argument(
        "--max-lateness",
        type=float,
        metavar="SECONDS",
        help="if Herald was down, skip a send more than this late (default HERALD_MAX_LATENESS)",
    )
    c.add_argument("--json", action="store_true", help="print the whole record as JSON")
    c.add_argument("-q", "--quiet", action="store_true", help="print only the schedule's id")
    _add_private(c, edit=False)
    c.add_argument(
        "--strict",
        action="store_true",
        help="refuse (nothing created) when the same text is already scheduled there within "
        "ten minutes of one of its sends; default: create it and warn on stderr",
    )
    _add_priority(c, "normal")
    _add_auto_pause(c, True)
    _add_skip_option(c)
    cli_until_done.add_options(c, edit=False)

    c = add("list", verb("list").help)
    c.add_argument("--all", action="store_true", help="everyone's (operators and admins)")
    c.add_argument(
        "--state",
        help="pending, retrying, delivered, failed, skipped, active, paused, awaiting "
        "(approval), ended or cancelled",
    )
    c.add_argument(
        "--tenant", help="one tenant's (slack:T…, discord:<server>, local; Herald-wide only)"
    )
    c.add_argument(
        "--to",
        help="only schedules with this destination among their recipients; for operators "
        "and admins (and a Slack or Discord member who can see it) a Slack or Discord channel, "
        "without --state, --search or --tenant, is its agenda: everyone's active schedules "
        "into it not marked --private, with their authors",
    )
    c.add_argument("--search", help="only messages containing this text")
    c.add_argument("--limit", type=int, default=200)
    c.add_argument("--json", action="store_true")

    c = add("show", verb("show").help)
    c.add_argument("id", type=int)
    c.add_argument(
        "--archived",
        action="store_true",
        help="also its archived history (jobs finished before HERALD_RETENTION_DAYS)",
    )
    c.add_argument("--json", action="store_true")

    c = add("edit", verb("edit").help)
    versioned(c)
    c.add_argument("--when")
    c.add_argument("--text")
    _add_template_use(c, edit=True)
    _add_routes(c)
    c.add_argument(
        "--add-to",
        action=_Route,
        metavar="DEST",
        help="add a recipient (repeatable; --then after it adds its fallback)",
    )
    c.add_argument(
        "--remove-to",
        action="append",
        default=[],
        metavar="DEST",
        help="remove the recipient with this destination (repeatable)",
    )
    c.add_argument("--tz", help="a city (Berlin) or an IANA zone (Europe/Berlin)")
    _add_private(c, edit=True)
    _add_priority(c, None)
    _add_auto_pause(c, None)
    cli_until_done.add_options(c, edit=True)

    for v in offered(verbs.CLI, verbs.STATE_VERBS):  # pause, resume, skip, cancel
        also = f" (also: {', '.join(v.aliases)})" if v.aliases else ""
        # aliases as /remind and chat bots say them; the parsed command is the verb's name
        cmd = sub.add_parser(
            v.name, aliases=list(v.aliases), help=v.help[:-1] + also + ".", description=v.help
        )
        cmd.set_defaults(command=v.name)
        versioned(cmd)

    c = add("import", "Import schedules from JSON Lines (to, when, text, tz, key).")
    c.add_argument("file", help="path, or - for standard input")
    c.add_argument("--skip-invalid", action="store_true", help="import the good lines anyway")
    c.add_argument("--json", action="store_true")
    _add_priority(c, "bulk")

    c = sub.add_parser(
        "when",
        help="Preview how a time expression is read, as herald schedule would save it.",
        description=(
            "Preview how a time expression is read, exactly as herald schedule would save "
            "it for you: in --tz, else your zone (herald timezone), else the default."
        ),
        epilog=WHEN_MEANINGS,
    )
    c.add_argument("expression")
    c.add_argument(
        "--tz",
        help="a city (Berlin, new york) or an IANA zone (Europe/Berlin) (default: yours)",
    )
    c.add_argument("--now", help="ISO-8601 instant to read from (default: now)")
    c.add_argument("--count", type=int, default=5)
    c.add_argument("--json", action="store_true")

    c = add("timezone", "Show or set your time zone.")
    c.add_argument(
        "zone", nargs="*", help="a city (Berlin, new york), an IANA zone (Europe/Berlin) or UTC+2"
    )

    c = add("member", "Manage members (admins).")
    msub = c.add_subparsers(dest="member_command", required=True, parser_class=_Parser)
    r = msub.add_parser("role", help="give a member a role")
    r.add_argument("member", help="member id, e.g. slack:U123")
    r.add_argument("role", choices=["member", "operator", "admin"])
    r.add_argument(
        "--tenant", help="the tenant the role is held in (default local), e.g. slack:T0123"
    )
    r = msub.add_parser(
        "zone",
        help="set a member's time zone (what --their-time reads for them)",
        description="Set a member's time zone in your tenant, as they would with "
        "`herald timezone`: schedules read in each recipient's time (--their-time) use it "
        "when the member's chat profile gives none.",
    )
    r.add_argument(
        "member", help="member id, e.g. slack:U123, discord:<user id>, email:alice@example.com"
    )
    r.add_argument(
        "zone", nargs="+", help="a city (Berlin, new york), an IANA zone (Europe/Berlin) or UTC+2"
    )
    cli_devices.add_parser(msub, _Parser)
    cli_prefs.add_parser(sub, _Parser)
    cli_hooks.add_parser(sub, _Parser)
    cli_templates.add_parser(sub, _Parser)
    cli_until_done.add_parsers(add)
    cli_approvals.add_parser(sub, _Parser)

    c = add("admin", "Herald's first admin, on a database that has none.")
    asub = c.add_subparsers(dest="admin_command", required=True, parser_class=_Parser)
    r = asub.add_parser(
        "init",
        help="become the first admin (refused once the database has one)",
        description="Make the first admin of a fresh database: you (local:$USER), or "
        "--member. An admin at the terminal acts across every tenant and gives roles with "
        "`herald member role`; running services take it at their next request. Refused "
        "once an admin exists.",
    )
    r.add_argument("--member", help="who becomes admin (default: you), e.g. local:alice")

    c = add("token", "API tokens for the HTTP API (/v1).")
    tsub = c.add_subparsers(dest="token_command", required=True, parser_class=_Parser)
    t = tsub.add_parser("create", help="make a token (printed once)")
    t.add_argument(
        "--member", required=True, help="the member it acts as, e.g. local:ci or slack:U123"
    )
    t.add_argument("--tenant", help="the member's tenant (default local), e.g. slack:T0123")
    t.add_argument(
        "--scope",
        choices=["read", "write", "admin"],
        default="write",
        help="read: look only; write: also schedule and change (at most an operator's "
        "powers); admin: the member's whole role (default write)",
    )
    t.add_argument("--expires", default="90d", help="lifetime: 90d, 12h, 2w or never (90d)")
    t.add_argument("--name", default="", help="what it is for, e.g. 'deploy pipeline'")
    t.add_argument("--json", action="store_true")
    t = tsub.add_parser("list", help="tokens (never their secrets)")
    t.add_argument("--tenant", help="one tenant's (Herald-wide admins)")
    t.add_argument("--json", action="store_true")
    t = tsub.add_parser("revoke", help="revoke a token at once")
    t.add_argument("id", help="the token's id (hk_… or the 12 characters after it)")

    c = add("db", "Database schema.")
    dsub = c.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    dsub.add_parser("upgrade", help="apply migrations")
    d = dsub.add_parser("downgrade", help="revert migrations")
    d.add_argument("revision", help="target revision, or base")
    dsub.add_parser("current", help="show the schema revision")

    c = add("dead", "Dead letters: jobs that kept failing.")
    dsub = c.add_subparsers(dest="dead_command", required=True, parser_class=_Parser)
    d = dsub.add_parser("list", help="newest first")
    d.add_argument("--limit", type=int, default=200)
    d.add_argument("--tenant", help="one tenant's (Herald-wide operators and admins)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("show", help="one dead letter with its attempts")
    d.add_argument("ids", type=int, nargs=1, metavar="ID")
    d.add_argument("--json", action="store_true")
    for v in offered(verbs.CLI, verbs.DEAD_VERBS):  # retry, reject, discard
        d = dsub.add_parser(v.name, aliases=list(v.aliases), help=v.help)
        d.set_defaults(dead_command=v.name)
        if v.name == "retry":  # a retry may name its letters by a filter instead
            d.add_argument("ids", type=int, nargs="*", metavar="ID")
            d.add_argument(
                "--all-matching",
                metavar="FILTER",
                help="every dead letter whose destination or error contains FILTER",
            )
        else:
            d.add_argument("ids", type=int, nargs="+", metavar="ID")
        for option in v.options:
            d.add_argument(f"--{option}", help=DEAD_OPTIONS.get(option))

    c = add("run", "Run the dispatcher (and configured chat adapters).")
    c.add_argument("--drain", action="store_true", help="deliver what is due, then exit")
    c.add_argument(
        "--drain-timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --drain: also wait for retries due within this many seconds",
    )
    c.add_argument("--json", action="store_true", help="with --drain: print the summary as JSON")

    c = add("discord", "Discord helpers.")
    dsub = c.add_subparsers(dest="discord_command", required=True, parser_class=_Parser)
    d = dsub.add_parser("invite-url", help="the OAuth2 link that adds the bot to a server")
    d.add_argument(
        "--application-id",
        type=int,
        help="the bot's application id (default: read from DISCORD_BOT_TOKEN)",
    )

    add(
        "housekeeping",
        "Archive old history, prune the archive and cap dead letters now (the service "
        "does it hourly).",
    )

    c = add("bench", "Benchmarks.")
    bsub = c.add_subparsers(dest="bench_command", required=True, parser_class=_Parser)
    b = bsub.add_parser("dispatch", help="deliver N jobs and measure throughput and lateness")
    b.add_argument("--jobs", type=int, default=10_000)
    b.add_argument("--spread", type=float, default=0.0, metavar="SECONDS")
    b.add_argument("--channel", choices=["null", "log"], default="null")
    b.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    b.add_argument("--dispatchers", type=int, default=1)
    b.add_argument("--pending", type=int, default=0, help="extra jobs due far in the future")
    b.add_argument(
        "--service",
        action="store_true",
        help="run one dispatcher as a `herald run` process (default: in this process, "
        "with the service's logging)",
    )
    b.add_argument("--json", action="store_true", help="(the output is always JSON)")

    c = add("console", "The operator console (Textual): queues, deliveries, dead letters.")
    c.add_argument("--serve", action="store_true", help="serve it in a browser instead")
    c.add_argument(
        "--host", default="127.0.0.1", help="with --serve: address to listen on (default 127.0.0.1)"
    )
    c.add_argument(
        "--public-url",
        default=None,
        help="with --serve: the URL browsers use (needed with another --host; https behind TLS)",
    )
    c.add_argument("--port", type=int, default=8000, help="with --serve (default 8000)")

    c = add("info", "Which database, data folder, settings file and version herald uses.")
    c.add_argument("--json", action="store_true")

    c = add("demo", "Run the local demo on a fresh SQLite file.")
    c.add_argument(
        "--no-console",
        action="store_true",
        help="print deliveries instead of opening the console (the default without a terminal)",
    )
    _add_calendar_commands(add)
    return p


AddParser = Callable[[str, str], argparse.ArgumentParser]


def _add_calendar_commands(add: AddParser) -> None:
    """Register ``feeds add|list|remove`` and ``export ics``."""
    c = add("feeds", "Post a reminder before every event of an iCalendar feed (admins).")
    fs = c.add_subparsers(dest="feeds_command", required=True)
    f = fs.add_parser("add", help="subscribe a destination to a calendar")
    f.add_argument("--calendar", required=True, help="https:// URL or a .ics file")
    f.add_argument("--to", required=True, help="destination, e.g. slack:C0123")
    f.add_argument("--before", default="10m", help="lead time: 10m, 1h, 1d (default 10m)")
    f.add_argument("--template", help="e.g. '{event.summary} at {event.start:%%H:%%M}'")
    f.add_argument("--tz", help="zone for times in the text and all-day events")
    f.add_argument("--json", action="store_true")
    f = fs.add_parser("list", help="list feeds")
    f.add_argument("--json", action="store_true")
    f = fs.add_parser("remove", help="unsubscribe (waiting reminders are cancelled)")
    f.add_argument("id", type=int)
    fs.add_parser("refresh", help="refresh every calendar now")

    c = add("export", "Export schedules.")
    es = c.add_subparsers(dest="export_command", required=True)
    e = es.add_parser(
        "ics", help="a member's schedules, or a channel's agenda (--to), as an iCalendar file"
    )
    e.add_argument("--owner", help="whose (operators and admins; default: yours)")
    e.add_argument(
        "--to",
        metavar="DEST",
        help="a channel's agenda instead (slack:C0123, discord:<channel id>): everyone's "
        "schedules into it not marked private, if you can see it; another destination: "
        "yours into it",
    )
    e.add_argument("--output", "-o", help="file to write (default: standard output)")
    e.add_argument(
        "--feed-url",
        action="store_true",
        help="print your calendar's subscription URL (served by herald run) instead",
    )
    e.add_argument("--rotate", action="store_true", help="with --feed-url: a new secret URL")


def _add_template_use(cmd: argparse.ArgumentParser, *, edit: bool) -> None:
    """``--template NAME``, ``--data NAME=VALUE`` and ``--data-for DEST NAME=VALUE``
    (bot/cli/options.py's ``template_data`` reads them)."""
    cmd.add_argument(
        "--template",
        metavar="NAME",
        help=(
            "send this template instead (its current version), or none to give it its own "
            "text again (with --text)"
            if edit
            else "send this named template (herald template list) instead of --text"
        ),
    )
    cmd.add_argument(
        "--data",
        action="append",
        metavar="NAME=VALUE",
        help="a value of the template's variables (repeatable)"
        + ("; given, they replace its data" if edit else ""),
    )
    cmd.add_argument(
        "--data-for",
        action="append",
        nargs=2,
        metavar=("DEST", "NAME=VALUE"),
        help="a value for one recipient only, named by its first destination (repeatable)",
    )


def _add_priority(cmd: argparse.ArgumentParser, default: str | None) -> None:
    """``--priority`` (None given: the use case's default, said in the help)."""
    said = {
        "normal": "default normal",
        "bulk": "default bulk; a line's own priority wins",
        None: "default: unchanged",
    }[default]
    cmd.add_argument(
        "--priority",
        choices=("urgent", "normal", "bulk"),
        help=f"urgent is served first and not held by quiet hours, bulk last ({said})",
    )


def _add_private(cmd: argparse.ArgumentParser, *, edit: bool) -> None:
    """``--private`` (``herald edit``: ``--private``/``--no-private``, None: unchanged)."""
    said = "keep it out of its channel's agenda: only you, operators and admins see it listed"
    if edit:
        cmd.add_argument(
            "--private",
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"{said} (--no-private: show it there again; default: unchanged)",
        )
    else:
        cmd.add_argument("--private", action="store_true", help=said)


def _add_auto_pause(cmd: argparse.ArgumentParser, default: bool | None) -> None:
    """``--auto-pause``/``--no-auto-pause`` (None given: unchanged)."""
    said = "default: unchanged" if default is None else "default on"
    cmd.add_argument(
        "--auto-pause",
        action=argparse.BooleanOptionalAction,
        default=default,
        help="whether Herald pauses a recurring schedule whose last "
        f"HERALD_AUTO_PAUSE_AFTER occurrences all failed ({said})",
    )


def _add_skip_option(schedule_parser: argparse.ArgumentParser) -> None:
    schedule_parser.add_argument(
        "--skip-calendar",
        action="append",
        default=[],
        metavar="URL|FILE",
        help="skip occurrences on this calendar's event dates (repeatable)",
    )
