"""``herald info`` (which database, data folder, settings file and version this
``herald`` uses) and the check every command that opens the database makes first: an
older Herald's database in the current folder is never silently left behind.

Herald's default database used to be ``herald.db`` in whatever folder a command
ran in; it is now one file per user in the platform's data folder
(:func:`core.settings.data_dir`). A ``herald.db`` found in the current folder while that
file does not exist yet is an older Herald's data: the command is refused, creating
nothing, with the two ways on (keep using it, or move it), until the person chooses.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from bot.cli.parser import herald_version
from core import db
from core.errors import ConfigError
from core.settings import DATABASE_FILE, ENV_FILE, Settings, data_dir

#: The settings file every command reads when it is there.
SETTINGS_FILE = ENV_FILE


def _old_database(settings: Settings) -> Path | None:
    """This folder's ``herald.db``, when it is an older Herald's default database that
    the default would now leave behind; else None."""
    if not settings.database_is_default:
        return None
    old = Path(DATABASE_FILE).absolute()
    new = db.sqlite_path(settings.database_url)  # the default's file
    if not old.is_file() or new is None or new.exists() or old == new:
        return None
    return old


def check_old_database(settings: Settings) -> None:
    """ConfigError, before anything is opened or created, when this folder holds an
    older Herald's ``herald.db`` and the per-user default database does not exist yet:
    the sentence says how to keep using it or move it."""
    old = _old_database(settings)
    if old is None:
        return
    new = db.sqlite_path(settings.database_url)  # the default's (_old_database)
    assert new is not None
    raise ConfigError(
        f"This folder has {DATABASE_FILE}, where an older Herald kept its data; Herald's "
        f"database is now {new}, one per user wherever you run it. Keep using this file "
        f"with HERALD_DATABASE_URL=sqlite:///{old.as_posix()} (in the environment or "
        f'{SETTINGS_FILE}), or move it there: mkdir -p "{new.parent}" && '
        f'mv {DATABASE_FILE} "{new}"'
    )


def info(settings: Settings) -> dict[str, Any]:
    """What ``herald info`` says, as data (no database is opened)."""
    url = settings.database_url
    path = db.sqlite_path(url)
    settings_file = Path(SETTINGS_FILE).absolute()
    old = _old_database(settings)
    return {
        "version": herald_version(),
        "database_url": db.redacted(url),
        "database": db.location(url),
        "database_is_default": settings.database_is_default,
        "database_exists": None if path is None else path.exists(),
        "data_dir": str(data_dir()),
        "settings_file": str(settings_file) if settings_file.is_file() else None,
        "old_database": None if old is None else str(old),
    }


def cmd_info(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    data = info(settings)
    if args.json:
        import json

        out.write(json.dumps(data, indent=2) + "\n")
        return
    kind = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[db.backend(settings.database_url)]
    origin = (
        "the default; HERALD_DATABASE_URL sets another"
        if data["database_is_default"]
        else "HERALD_DATABASE_URL"
    )
    state = " (not created yet: the first command that needs it does)" * (
        data["database_exists"] is False
    )
    lines = [
        f"herald {data['version']}",
        f"database:      {data['database_url']}{state}",
        f"               {kind}, {origin}",
        f"data folder:   {data['data_dir']}",
        "settings file: "
        + (
            f"{data['settings_file']} (the environment overrides it)"
            if data["settings_file"]
            else f"none ({SETTINGS_FILE} in the folder a command runs in, when there is one)"
        ),
    ]
    if data["old_database"]:
        lines.append(
            f"note:          {data['old_database']} is an older Herald's database, not in "
            "use: commands here say how to keep or move it"
        )
    out.write("\n".join(lines) + "\n")
