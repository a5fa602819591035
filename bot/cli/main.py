"""``herald``: the entry point of the command line.

It parses the arguments and only then imports what the command needs (bot/cli/commands.py
and, through it, the store, the use cases and the channels), so ``herald --help``,
``herald --version`` and a usage error answer at once, and ``herald when`` (bot/cli/when.py)
loads no database code unless it reads the member's zone. Output to a closed pipe
(``herald list | head``) ends quietly.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from bot.cli.parser import build_parser
from core.verbs import CLI, STATE_VERBS, offered

if TYPE_CHECKING:
    from core.settings import Settings

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports
#: Set by :func:`entry` (the console script, not tests calling :func:`main`): the cyclic
#: garbage collector is off while the command's modules load (see :func:`_loaded`).
_COLLECTOR_HELD = False
#: Commands that go through a running service's HTTP API when HERALD_API_URL and
#: HERALD_API_TOKEN are set (bot/cli/remote.py), as the token's member.
_REMOTE = frozenset(
    {"schedule", "list", "show", "edit", *(v.name for v in offered(CLI, STATE_VERBS))}
)


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Entry point of the ``herald`` console script. Returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "when":  # no database code unless the member's zone is needed
            from bot.cli.when import run as run_when

            # short and bounded (a phrase's rule has its budget): the collector stays off
            return run_when(args, settings)
        if (
            settings is None
            and args.command in _REMOTE
            and (os.environ.get("HERALD_API_URL") or os.path.exists(".env"))
        ):
            from bot.cli.remote import endpoint, run_remote

            found = endpoint()
            if found is not None:  # a running service answers: no database here
                _loaded()
                return run_remote(args, *found)
        from bot.cli.commands import run

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
