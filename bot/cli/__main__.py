"""``python -m bot.cli``: the ``herald`` command."""

from bot.cli.main import entry

entry()
