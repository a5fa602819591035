"""``herald``'s commands reach their handlers one way: bot/cli/main.py's ``COMMANDS``
names each command's handler (issue 34). The table, the parser and the remote client
agree."""

from __future__ import annotations

import argparse

from bot.cli import commands, when
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from bot.cli.remote import SERVED


def parser_commands() -> set[str]:
    """The parser's commands (an alias, such as ``delete`` for ``cancel``, is its verb)."""
    [sub] = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return {parser.get_default("command") or name for name, parser in sub.choices.items()}


def test_every_command_of_the_parser_has_a_handler() -> None:
    assert set(COMMANDS) == parser_commands()


def test_every_handler_is_found() -> None:
    for name, command in COMMANDS.items():
        found = handler(command)
        assert isinstance(found, commands.Handler) or found is when.run, name


def test_the_commands_sent_to_a_service_are_those_it_serves() -> None:
    assert {name for name, command in COMMANDS.items() if command.remote} == set(SERVED)


def test_the_use_cases_commands_open_the_database() -> None:
    for name, command in COMMANDS.items():
        found = handler(command)
        if isinstance(found, commands.Handler) and isinstance(found.action, commands.OverHerald):
            assert found.database, name
