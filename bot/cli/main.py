"""``herald``: the entry point of the command line, and the table of its commands.

It parses the arguments and only then imports the module of the command's handler
(:data:`COMMANDS`): bot/cli/commands.py and, through it, the store, the use cases and the
channels for most commands, so ``herald --help``, ``herald --version`` and a usage error
answer at once, and ``herald when`` (bot/cli/when.py) loads no database code unless it
reads the member's zone. Output to a closed pipe (``herald list | head``) ends quietly.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, NamedTuple, NoReturn, cast

from bot.cli.parser import build_parser
from core.verbs import CLI, STATE_VERBS, offered

if TYPE_CHECKING:
    import argparse

    from core.settings import Settings

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports
#: Set by :func:`entry` (the console script, not tests calling :func:`main`): the cyclic
#: garbage collector is off while the command's modules load (see :func:`_loaded`).
_COLLECTOR_HELD = False

#: A command's handler: the parsed arguments and the settings (None: read them) in, the
#: exit status out.
Handler = Callable[["argparse.Namespace", "Settings | None"], int]


class Command(NamedTuple):
    """Where one command is carried out."""

    #: ``module:function``, the :data:`Handler`; the module is imported only once the
    #: arguments are parsed.
    handler: str
    #: Carried out through a running service's HTTP API instead when HERALD_API_URL and
    #: HERALD_API_TOKEN are set (bot/cli/remote.py), as the token's member.
    remote: bool = False
    #: Short and bounded (a phrase's rule has its budget): the collector stays off.
    brief: bool = False


def _local(function: str, *, remote: bool = False) -> Command:
    return Command(f"bot.cli.commands:{function}", remote=remote)


#: Every ``herald`` command (bot/cli/parser.py's, from core/verbs.py's table) and its handler.
COMMANDS: dict[str, Command] = {
    "schedule": _local("schedule", remote=True),
    "list": _local("list_schedules", remote=True),
    "show": _local("show", remote=True),
    "edit": _local("edit", remote=True),
    **{v.name: _local("change", remote=True) for v in offered(CLI, STATE_VERBS)},
    "import": _local("import_file"),
    "timezone": _local("timezone"),
    "member": _local("member"),
    "prefs": _local("prefs", remote=True),
    "done": _local("done", remote=True),
    "awaiting": _local("awaiting", remote=True),
    "approvals": _local("approvals", remote=True),
    "hooks": _local("hooks"),
    "events": _local("events"),
    "template": _local("template"),
    "admin": _local("admin"),
    "dead": _local("dead"),
    "token": _local("token"),
    "feeds": _local("feeds"),
    "export": _local("export"),
    "db": _local("database"),
    "housekeeping": _local("housekeeping"),
    "run": _local("run_service"),
    "console": _local("console"),
    "discord": _local("discord_invite"),
    "bench": _local("bench"),
    "info": _local("info"),
    "demo": _local("demo"),
    "when": Command("bot.cli.when:run", brief=True),
}


def handler(command: Command) -> Handler:
    """The command's handler, its module imported."""
    module, _, name = command.handler.partition(":")
    return cast("Handler", getattr(import_module(module), name))


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Entry point of the ``herald`` console script. Returns the exit status."""
    args = build_parser().parse_args(argv)
    command = COMMANDS[args.command]
    try:
        if (
            command.remote
            and settings is None
            and (os.environ.get("HERALD_API_URL") or os.path.exists(".env"))
        ):
            from bot.cli.remote import endpoint, run_remote

            found = endpoint()
            if found is not None:  # a running service answers: no database here
                _loaded()
                return run_remote(args, *found)
        run = handler(command)
        if not command.brief:
            _loaded()
        return run(args, settings)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away: point stdout at /dev/null so the interpreter's final
        # flush does not raise again (the recipe of Python's `signal` documentation).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _loaded() -> None:
    """The command's modules are imported: the collector goes back on for the command
    itself (`herald run` runs for months), without those modules' objects (gc.freeze).
    Imports make some hundred thousand objects and free almost none, so the collector's
    passes over them while they load are wasted: ~10 % of a short command's CPU."""
    global _COLLECTOR_HELD
    if _COLLECTOR_HELD:
        _COLLECTOR_HELD = False
        gc.freeze()
        gc.enable()


def entry() -> NoReturn:
    """The console script: :func:`main`, then exit without the interpreter's teardown.

    Once the command has finished (its database closed, its event loop and threads
    done) nothing is left to clean up, yet tearing down the modules SQLAlchemy and
    pydantic load costs a short command a fifth of its time (~0.1 s). Output is
    flushed and the log handlers shut down first; Herald registers no atexit hook.
    """
    global _COLLECTOR_HELD
    _COLLECTOR_HELD = True
    gc.disable()
    # Herald uses no pydantic plugin: looking for them reads every installed package's
    # entry points (~10 ms a start). Set the variable to load them anyway.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    logging = sys.modules.get("logging")  # not imported here: --version and when skip it
    if logging is not None:
        logging.shutdown()
    os._exit(code)
