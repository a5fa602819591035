"""``herald``, the command line: :func:`entry` is the console script.

- :mod:`bot.cli.main`: the entry point; parses, then imports only what the command needs;
- :mod:`bot.cli.parser`: the argument parser (from :mod:`core.verbs`' table);
- :mod:`bot.cli.options`: options and tables shared by the commands;
- :mod:`bot.cli.commands`: the commands over the local database;
- :mod:`bot.cli.remote`: the same commands through a running service's HTTP API;
- :mod:`bot.cli.when`, :mod:`bot.cli.calendars`, :mod:`bot.cli.info`: ``herald when``,
  skip-calendar previews, ``herald info``;
- :mod:`bot.cli.bench`, :mod:`bot.cli.demo`: ``herald bench-dispatch`` and ``herald demo``.
"""

from bot.cli.main import entry, main

__all__ = ["entry", "main"]
