"""The e2e tests run ``herald`` through tests/support/herald_cli.py (a process forked from
an interpreter that imported Herald once): each command here runs both ways, as
``python -m bot.cli`` and through the helper, and the two must answer the same (exit
status, standard output and error, byte for byte), reading the same environment,
working directory and standard input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.herald_cli import herald

CASES = {
    "version": (("--version",), None),
    "a phrase": (("when", "every weekday at 9am", "--tz", "Europe/Berlin"), None),
    "the database": (("list",), None),
    "a usage error": (("nonsense",), None),
    "a bad value": (("schedule", "--to", "log:", "--when", "whenever", "--text", "x"), None),
    "standard input": (("import", "-"), '{"to": "log:", "when": "tomorrow 9am", "text": 1}\n'),
    # which settings file: the working directory's .env
    "the working directory": (("info",), None),
}


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working directory with a .env, a data folder and a migrated database."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("HERALD_DEFAULT_TZ=Asia/Tokyo\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
        "HERALD_DATABASE_URL": f"sqlite:///{tmp_path / 'herald.db'}",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "USER": "alice",
    }
    made = real("db", "upgrade", env=env, cwd=work)
    assert made.returncode == 0, made.stderr
    return work, env


def real(
    *args: str,
    env: dict[str, str],
    cwd: Path,
    input: str | None = None,  # noqa: A002
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        env=env,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("case", CASES)
def test_a_forked_command_answers_as_the_real_one(
    place: tuple[Path, dict[str, str]], case: str
) -> None:
    args, stdin = CASES[case]
    work, env = place
    first = real(*args, env=env, cwd=work, input=stdin)
    forked = herald(*args, env=env, cwd=work, input=stdin)
    assert forked.stdout == first.stdout
    assert (forked.returncode, forked.stderr) == (first.returncode, first.stderr)
    assert first.returncode == (
        2 if case in ("a usage error", "a bad value", "standard input") else 0
    )


def test_the_environment_is_the_commands_own(place: tuple[Path, dict[str, str]]) -> None:
    """A variable of one command is not seen by the next (each is a new process)."""
    work, env = place
    berlin = herald(
        "when", "tomorrow at 9am", env={**env, "HERALD_DEFAULT_TZ": "Europe/Berlin"}, cwd=work
    )
    tokyo = herald("when", "tomorrow at 9am", env=env, cwd=work)  # the .env's zone
    assert "Europe/Berlin" in berlin.stdout and "Asia/Tokyo" in tokyo.stdout, (berlin, tokyo)
