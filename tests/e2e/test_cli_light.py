"""`herald when` and `herald --version` load no database code (issue 33: "a CLI that
answers at once"): checked on the modules a real process imported (`python -X
importtime`), not on its timing, which bench/cli_speed.py measures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Packages and modules that mean the database code was loaded.
DATABASE_CODE = ("sqlalchemy", "sqlmodel", "aiosqlite", "psycopg", "alembic", "core.store",
                 "core.models", "core.db", "core.cases")  # fmt: skip


def imported(
    *args: str, cwd: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `herald ARGS` and return it with the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
            "XDG_DATA_HOME": str(cwd / "data"),
            **env,
        },
        timeout=60,
    )
    modules = {
        line.rpartition("|")[2].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    return proc, modules


def database_code(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(DATABASE_CODE)}


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("when", "every weekday at 9am", "--tz", "Europe/Berlin"),
        ("when", "tomorrow at 5pm", "--tz", "Tokyo", "--json"),
        # no --tz, no database yet: no member can have a zone, nothing is opened
        ("when", "in 20 minutes"),
    ],
)
def test_no_database_code_is_loaded(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc, modules = imported(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bot.cli" in modules or "bot.cli.parser" in modules  # the check reads the list
    assert database_code(modules) == set()
    assert not (tmp_path / "data").exists() and not list(tmp_path.glob("*.db"))


def test_when_opens_the_database_for_the_members_own_zone(tmp_path: Path) -> None:
    """Without --tz, once the database exists, `herald when` reads the member's zone
    from it: the database code loads then (and only then)."""
    url = f"sqlite:///{tmp_path / 'herald.db'}"
    subprocess.run(
        [sys.executable, "-m", "bot.cli", "timezone", "Tokyo"],
        env={**os.environ, "HERALD_DATABASE_URL": url, "USER": "alice"},
        check=True,
        capture_output=True,
    )
    proc, modules = imported(
        "when", "tomorrow at 9am", cwd=tmp_path, HERALD_DATABASE_URL=url, USER="alice"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Asia/Tokyo" in proc.stdout
    assert "sqlalchemy" in database_code(modules)
