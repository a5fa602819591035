"""What each ``herald`` command does, and the composition root of the whole program.

It builds the settings, the store and the use cases once, acts as ``local:$USER``,
prints results (``--json`` for scripts) and turns every HeraldError into one line on
stderr with exit status 2. The handlers at the end are those bot/cli/main.py's
``COMMANDS`` names; it imports this module only once the arguments are parsed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.cli import approvals as cli_approvals
from bot.cli import calendars as cli_calendars
from bot.cli import devices as cli_devices
from bot.cli import hooks as cli_hooks
from bot.cli import info as cli_info
from bot.cli import prefs as cli_prefs
from bot.cli import schedules as cli_schedules
from bot.cli import templates as cli_templates
from bot.cli import until_done as cli_until_done
from bot.cli.options import TABLE_WIDTH, one_line, open_text, table_lines
from bot.cli.parser import EXIT_ERROR
from bot.logs import configure_logging
from core import db, verbs, views
from core.actors import Principal, Surface
from core.cases import Herald, ImportRejected, import_schedules, more_invalid
from core.channels import build_channels
from core.clock import Clock, SystemClock
from core.errors import HeraldError, InvalidInput
from core.http_client import HTTPClient
from core.models import ApiToken, Schedule
from core.settings import Settings, load_settings
from core.store import Store

log = logging.getLogger("herald.cli")


@asynccontextmanager
async def open_herald(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Herald]:
    """The use cases over the configured database (SQLite is upgraded on first use)."""
    store = await Store.open(settings.database_url)
    # the TLS trust is read only if a command sends (most list, show or change things)
    channels = build_channels(settings, http=HTTPClient.from_settings(settings, lazy_tls=True))
    try:
        yield Herald(store, settings, clock or SystemClock(), channels=channels)
    finally:
        for channel in channels.values():
            await channel.close()
        await store.close()


class Cli:
    """One invocation: parsed arguments, settings and where output goes."""

    def __init__(self, args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
        self.args = args
        self.settings = settings
        self.out = out
        #: Who acts: the terminal's member, through the CLI (the audit log says so).
        self.actor = Principal(settings.local_actor, surface=Surface.CLI)

    def emit(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def emit_json(self, data: Any) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")

    def table(
        self,
        header: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        least: Sequence[int] | None = None,
    ) -> None:
        """Columns as wide as their widest cell; the last (free text) is not padded. With
        ``least`` (each column's least width), lines fit 100 columns: cells are cut
        with "…" (:func:`bot.cli.options.table_lines`)."""
        width = None if least is None else TABLE_WIDTH
        for line in table_lines(header, rows, width=width, least=least):
            self.emit(line)

    # --- commands (herald schedule, list, show and edit: bot/cli/schedules.py) ----------

    async def cmd_change(self, herald: Herald) -> None:
        """pause, resume, skip, send-now or cancel (core/verbs.py): one use case each."""
        chosen = verbs.verb(self.args.command)
        s = await verbs.perform(
            herald, chosen, self.actor, self.args.id, expected_version=self.args.version
        )
        if notes := views.save_notes(s):  # send-now: which occurrence goes now, as the API says
            if self.args.json:
                self.emit_json({**views.schedule_dict(s), "notes": notes})
            else:
                self.emit(f"Schedule {s.id}: {'; '.join(notes)}.")
            return
        self.changed(s, chosen.past)

    def changed(self, schedule: Schedule, what: str) -> None:
        """A change's confirmation (its record with --json)."""
        if self.args.json:
            self.emit_json(views.schedule_dict(schedule))
        elif schedule.next_run_at is None:
            self.emit(f"Schedule {schedule.id} {what}.")
        else:
            nxt = views.local(schedule.next_run_at, schedule.timezone)
            self.emit(f"Schedule {schedule.id} {what}; next: {nxt} {schedule.timezone}.")

    async def cmd_import(self, herald: Herald) -> None:
        a = self.args
        stream = sys.stdin if a.file == "-" else open_text(a.file)
        tty = sys.stderr.isatty()

        def progress(done: int, total: int) -> None:
            if tty and total:
                sys.stderr.write(f"\rimporting {done:,}/{total:,} ({100 * done // total}%)")
                sys.stderr.flush()

        limit = self.settings.import_max_bytes
        try:
            with stream:
                # characters: more than the limit is more bytes, which import_schedules
                # refuses (core.cases.importer.read_lines), so no more is read
                text = stream.read(limit + 1)
        except UnicodeDecodeError:
            raise InvalidInput(f"{a.file} is not UTF-8 text.") from None
        try:
            report = await import_schedules(
                herald,
                self.actor,
                text,
                skip_invalid=a.skip_invalid,
                progress=progress,
                priority=a.priority,  # None: bulk, unless a line says its own
            )
        finally:
            if tty:
                sys.stderr.write("\n")
        for number, why in report.invalid:
            print(f"line {number}: skipped: {why}", file=sys.stderr)  # noqa: T201
        if more := more_invalid(report.invalid_count, len(report.invalid)):
            print(f"… {more} bad lines skipped", file=sys.stderr)  # noqa: T201
        for _, said, _ in report.duplicates:  # imported all the same
            print(f"warning: {said}", file=sys.stderr)  # noqa: T201
        if more := more_invalid(report.duplicate_count, len(report.duplicates)):
            print(f"warning: … {more} lines with a duplicate", file=sys.stderr)  # noqa: T201
        summary = {
            "imported": report.imported,
            "skipped_existing": report.skipped_existing,
            "skipped_duplicate": report.skipped_duplicate,
            "invalid": report.invalid_count,
            "duplicates": report.duplicate_count,
        }
        if a.json:
            listed = [
                {"line": n, "message": said, "schedule_id": sid}
                for n, said, sid in report.duplicates
            ]
            self.emit_json({**summary, "ids": report.ids, "duplicate_lines": listed})
        else:
            self.emit(
                f"Imported {report.imported:,}; skipped {report.skipped_existing:,} already "
                f"imported, {report.skipped_duplicate:,} repeated keys, "
                f"{report.invalid_count:,} invalid."
                + (
                    f" {report.duplicate_count:,} imported with a duplicate (see the warnings)."
                    if report.duplicate_count
                    else ""
                )
            )

    async def cmd_timezone(self, herald: Herald) -> None:
        if self.args.zone:
            name = await herald.set_timezone(self.actor, " ".join(self.args.zone))
            self.emit(f"Your time zone is now {name}.")
        else:
            actor = await herald.actor(self.actor)
            zone = actor.timezone or f"{self.settings.default_tz} (the default)"
            self.emit(f"Your time zone is {zone}.")

    async def cmd_member(self, herald: Herald) -> None:
        a = self.args
        if a.member_command == "device":
            await cli_devices.cmd_device(self, herald)
            return
        if a.member_command == "zone":
            zone = await herald.set_member_timezone(self.actor, a.member, " ".join(a.zone))
            self.emit(
                f"{a.member}'s time zone is now {zone}: schedules read in their time "
                "(--their-time) send to them at its hours."
            )
            return
        await herald.set_role(self.actor, a.member, a.role, tenant=a.tenant)
        where = f" in {a.tenant}" if a.tenant else ""
        self.emit(f"{a.member} is now {a.role}{where}.")

    async def cmd_admin_init(self, herald: Herald) -> None:
        made = await herald.init_admin(self.actor, self.args.member)
        self.emit(
            f"{made} is now an admin of this database (across every tenant); running "
            "services take it at their next request. Give others roles with "
            "`herald member role MEMBER ROLE`."
        )

    async def cmd_token(self, herald: Herald) -> None:
        a = self.args
        if a.token_command == "create":
            minted = await herald.create_token(
                self.actor,
                a.member,
                tenant=a.tenant,
                scope=a.scope,
                name=a.name,
                expires=a.expires,
            )
            t = minted.token
            if a.json:
                self.emit_json({**_token_dict(t), "token": minted.secret})
                return
            self.emit(minted.secret)
            until = views.iso(t.expires_at) or "never"
            print(  # noqa: T201 - CLI output, kept off stdout so scripts read the token alone
                f"Token {t.id} acts as {t.member_id} in {t.tenant} with the {t.scope} scope, "
                f"until {until}. It is shown only now: keep it in a secret store.",
                file=sys.stderr,
            )
        elif a.token_command == "list":
            tokens = await herald.list_tokens(self.actor, tenant=a.tenant)
            if a.json:
                self.emit_json([_token_dict(t) for t in tokens])
                return
            if not tokens:
                self.emit("No tokens.")
                return
            now = herald.clock.now()
            rows = [
                [
                    t.id,
                    t.tenant,
                    t.member_id,
                    t.scope,
                    _token_state(t, now),
                    _utc_minute(t.last_used_at) if t.last_used_at else "never",
                    t.name,
                ]
                for t in tokens
            ]
            self.table(["ID", "TENANT", "MEMBER", "SCOPE", "STATE", "LAST USED", "NAME"], rows)
        else:
            t = await herald.revoke_token(self.actor, a.id)
            self.emit(f"Token {t.id} is revoked; requests with it are refused from now on.")

    async def cmd_dead(self, herald: Herald) -> None:
        a = self.args
        if a.dead_command == "list":
            letters = await herald.dead_letters(self.actor, limit=a.limit, tenant=a.tenant)
            if a.json:
                self.emit_json([views.dead_letter_dict(d) for d in letters])
            elif not letters:
                self.emit("No dead letters.")
            else:
                viewer = await herald.actor(self.actor)
                tenants = {d.tenant for d in letters} != {"local"}
                header = ["JOB", "SCHEDULE", "DIED (UTC)", "TO", "RETRY", "ERROR"]
                least = [99, 99, 99, 18, 10, 24]  # a cut keeps the ids and the times
                table = [
                    [
                        str(d.job_id),
                        str(d.schedule_id),
                        _utc_minute(d.finished_at),
                        views.destination(
                            d.destination, full=views.sees_destination(viewer, d.owner)
                        ),
                        one_line(d.retry_note or "-", 100),
                        one_line(views.error_text(d.last_error) or "-", 200),
                    ]
                    for d in letters
                ]
                if tenants:
                    header, least = ["TENANT", *header], [10, 99, 99, 99, 14, 8, 16]
                    table = [[d.tenant, *row] for d, row in zip(letters, table, strict=True)]
                self.table(header, table, least=least)
            return
        ids = a.ids
        if a.dead_command == "show":
            [letter] = await herald.dead_letter(self.actor, ids[0])
            detail = await herald.show_schedule(self.actor, letter.schedule_id)
            data = {
                **views.dead_letter_dict(letter),
                "attempts": [
                    views.attempt_dict(x, detail.schedule.timezone)
                    for x in detail.attempts
                    if x.job_id == letter.job_id
                ],
            }
            if a.json:
                self.emit_json(data)
                return
            for key, value in data.items():
                if key == "retry_requested_by":  # the request and its answer, in words
                    key, value = "retry", letter.retry_note
                elif key in ("retry_rejected_by", "retry_reject_reason", "attempts"):
                    continue
                shown = "-" if value is None else str(value).replace("\n", " ")
                self.emit(f"{key.replace('_', ' ') + ':':<20}{shown}")
            for x in data["attempts"]:
                code = f" {x['status_code']}" if x["status_code"] is not None else ""
                error = f": {x['error']}" if x["error"] else ""
                how = f" · {x['handoff']}" if x["handoff"] else ""  # a bounce, say
                self.emit(f"  try at {x['started_at']}: {x['outcome']}{code}{error}{how}")
        else:  # retry, reject, discard (core/verbs.py): one use case each
            chosen = verbs.verb(a.dead_command)
            if getattr(a, "all_matching", None) is not None:
                letters = await herald.dead_letters(self.actor, limit=100_000)
                ids = [d.job_id for d in letters if views.matches(d, a.all_matching)]
                if not ids:
                    self.emit("No dead letter matches.")
                    return
            options = {option: getattr(a, option) for option in chosen.options}
            done = await herald.on_dead_letters(chosen, self.actor, ids, **options)
            what, count = done if isinstance(done, tuple) else (chosen.past, done)
            if what == "requested":
                self.emit(f"Asked an admin to approve retrying {count} dead letter(s).")
                if count and not await herald.admins_for(self.actor):
                    self.emit(
                        "No admin is recorded in this database to answer it (and "
                        "HERALD_ADMINS is unset here): `herald admin init` makes the first."
                    )
            else:
                self.emit(chosen.told.format(count=count))

    # --- commands that need no use case ------------------------------------------------

    def cmd_run(self) -> int:
        from bot import service

        a = self.args
        if a.drain:
            if a.drain_timeout < 0:
                raise InvalidInput("--drain-timeout must be 0 or more seconds.")
            drained = service.run(
                service.drain(self.settings, retry_window=a.drain_timeout, out=self.out),
                self.settings,
            )
            summary = drained.as_dict()
            if a.json:
                self.emit_json({**summary, "left": drained.left})
            else:
                self.emit(
                    "Drained: "
                    + ", ".join(f"{count} {state}" for state, count in summary.items())
                    + "."
                )
                for reason in drained.left:
                    self.emit(f"  left: {reason}")
            return 0
        service.run(service.serve(self.settings, out=self.out), self.settings)
        return 0

    def cmd_housekeeping(self) -> None:
        from bot import service

        self.emit_json(asyncio.run(service.housekeeping(self.settings)))

    def cmd_bench(self) -> None:
        from bot.cli.bench import run_bench_dispatch

        a = self.args
        if a.jobs < 1 or a.dispatchers < 1 or a.spread < 0 or a.pending < 0:
            raise InvalidInput("--jobs and --dispatchers must be at least 1.")
        self.emit_json(run_bench_dispatch(self.settings, a))

    def cmd_info(self) -> None:
        cli_info.cmd_info(self.args, self.settings, self.out)

    def cmd_demo(self) -> int:
        from bot.cli.demo import run_demo

        console = not self.args.no_console and sys.stdin.isatty() and sys.stdout.isatty()
        return run_demo(self.settings, sys.stdout, console=console)

    def cmd_discord_invite(self) -> None:
        from bot.discord_bot import invite_url

        app_id = self.args.application_id or _application_id(self.settings)
        self.emit(invite_url(app_id))

    def cmd_console(self) -> int:
        from tui.app import run_console, run_console_served

        if self.args.serve:
            a = self.args
            return run_console_served(
                self.settings, port=a.port, host=a.host, public_url=a.public_url, out=self.out
            )

        async def go() -> int:
            channels = build_channels(self.settings)
            try:
                return await run_console(self.settings, channels=channels)
            finally:
                for channel in channels.values():
                    await channel.close()

        return asyncio.run(go())

    def cmd_db(self) -> None:
        url = self.settings.database_url
        if self.args.db_command == "upgrade":
            db.upgrade(url)
            self.emit(f"Database {db.redacted(url)} is at {db.current_revision(url)}.")
        elif self.args.db_command == "downgrade":
            db.downgrade(url, self.args.revision)
            self.emit(f"Database {db.redacted(url)} is at {db.current_revision(url) or 'base'}.")
        else:
            current = db.current_revision(url) or "none"
            self.emit(
                f"Database {db.redacted(url)} is at {current}; code head is {db.head_revision()}."
            )


def _token_dict(t: ApiToken) -> dict[str, Any]:
    return {
        "id": t.id,
        "tenant": t.tenant,
        "member": t.member_id,
        "scope": t.scope,
        "name": t.name,
        "created_by": t.created_by,
        "created_at": views.iso(t.created_at),
        "expires_at": views.iso(t.expires_at),
        "revoked_at": views.iso(t.revoked_at),
        "last_used_at": views.iso(t.last_used_at),
    }


def _token_state(t: ApiToken, now: datetime) -> str:
    if t.revoked_at is not None:
        return f"revoked {_utc_minute(t.revoked_at)}"
    if t.expires_at is not None and t.expires_at <= now:
        return f"expired {_utc_minute(t.expires_at)}"
    return "active" if t.expires_at is None else f"active until {_utc_minute(t.expires_at)}"


def _utc_minute(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else "-"


def _application_id(settings: Settings) -> int:
    """A Discord bot token's first segment is its application id in base64."""
    import base64
    import binascii

    token = settings.discord_bot_token
    if token is None:
        raise InvalidInput("Give --application-id, or set DISCORD_BOT_TOKEN to read it from.")
    first = token.get_secret_value().split(".")[0]
    try:
        decoded = base64.b64decode(first + "=" * (-len(first) % 4)).decode()
        return int(decoded)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(
            "DISCORD_BOT_TOKEN does not start with an application id: give --application-id."
        ) from exc


# --- the handlers bot/cli/main.py's COMMANDS names -------------------------------------

Action = Callable[[Cli], int | None]
HeraldAction = Callable[[Cli, Herald], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True)
class Handler:
    """A command's handler (:data:`bot.cli.main.Handler`): it reads the settings, sets
    up logging at ``log_level`` (HERALD_LOG_LEVEL overrides it), checks first that no
    older Herald's database is left behind when the command opens the ``database``,
    carries out ``action`` and turns every HeraldError into one line on stderr with exit
    status 2."""

    action: Action
    database: bool = False
    log_level: str = "WARNING"

    def __call__(self, args: argparse.Namespace, settings: Settings | None = None) -> int:
        try:
            cfg = settings or load_settings()
            configure_logging(cfg, default_level=self.log_level)
            cli = Cli(args, cfg, sys.stdout)
            if self.database:
                cli_info.check_old_database(cfg)
            return self.action(cli) or 0
        except ImportRejected as exc:
            print(f"herald: error: {exc}", file=sys.stderr)  # noqa: T201
            for number, why in exc.invalid:
                print(f"line {number}: {why}", file=sys.stderr)  # noqa: T201
            if more := more_invalid(exc.count, len(exc.invalid)):
                print(f"… {more} bad lines", file=sys.stderr)  # noqa: T201
            return EXIT_ERROR
        except HeraldError as exc:
            log.debug("command failed", exc_info=True)
            print(f"herald: error: {exc}", file=sys.stderr)  # noqa: T201
            return EXIT_ERROR


@dataclass(frozen=True, slots=True)
class OverHerald:
    """An action of the use cases: ``with_herald`` run with Herald opened over the
    configured database (tests call ``with_herald`` with their own Herald)."""

    with_herald: HeraldAction

    def __call__(self, cli: Cli) -> None:
        asyncio.run(self._run(cli))

    async def _run(self, cli: Cli) -> None:
        async with open_herald(cli.settings) as herald:
            await self.with_herald(cli, herald)


def over_herald(action: HeraldAction) -> Handler:
    """The handler of a command of the use cases (:class:`OverHerald`)."""
    return Handler(OverHerald(action), database=True)


schedule = over_herald(cli_schedules.cmd_schedule)
list_schedules = over_herald(cli_schedules.cmd_list)
show = over_herald(cli_schedules.cmd_show)
edit = over_herald(cli_schedules.cmd_edit)
change = over_herald(Cli.cmd_change)  # pause, resume, skip, cancel
import_file = over_herald(Cli.cmd_import)
timezone = over_herald(Cli.cmd_timezone)
member = over_herald(Cli.cmd_member)
admin = over_herald(Cli.cmd_admin_init)
dead = over_herald(Cli.cmd_dead)
token = over_herald(Cli.cmd_token)
feeds = over_herald(cli_calendars.cmd_feeds)
export = over_herald(cli_calendars.cmd_export)
prefs = over_herald(cli_prefs.cmd_prefs)
hooks = over_herald(cli_hooks.cmd_hooks)
events = over_herald(cli_hooks.cmd_events)
template = over_herald(cli_templates.cmd_template)
done = over_herald(cli_until_done.cmd_done)
awaiting = over_herald(cli_until_done.cmd_awaiting)
approvals = over_herald(cli_approvals.cmd_approvals)
database = Handler(Cli.cmd_db, database=True)
housekeeping = Handler(Cli.cmd_housekeeping, database=True)
run_service = Handler(Cli.cmd_run, database=True, log_level="INFO")
console = Handler(Cli.cmd_console, database=True)
discord_invite = Handler(Cli.cmd_discord_invite)
bench = Handler(Cli.cmd_bench)
info = Handler(Cli.cmd_info)
demo = Handler(Cli.cmd_demo)
