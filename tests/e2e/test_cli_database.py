"""Which database the `herald` command opens, and that it says so (issue 33: "one
database, said"): without HERALD_DATABASE_URL every folder sees one per-user file in the
platform's data folder; an older Herald's herald.db in the current folder is never
silently left behind; `herald info` and an empty `herald list` name the database; and
after the demo the way to type `herald` is printed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.cli import demo
from tests.support.herald_cli import herald as run_herald


def herald(cwd: Path, *args: str, data: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`herald ARGS` run in ``cwd`` as a person runs it: no HERALD_* variable unless
    given, the platform's data folder at ``data`` (XDG_DATA_HOME, platformdirs' rule on
    Linux)."""
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
        "USER": "alice",
        "XDG_DATA_HOME": str(data),
        **env,
    }
    return run_herald(*args, env=full_env, cwd=cwd)


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two project folders and the data folder."""
    a, b = tmp_path / "project-a", tmp_path / "project-b"
    a.mkdir()
    b.mkdir()
    return a, b, tmp_path / "data"


def test_every_folder_sees_the_same_per_user_database(folders: tuple[Path, Path, Path]) -> None:
    a, b, data = folders
    made = herald(a, "schedule", "--to", "log:", "--when", "in 1 hour", "--text", "tea", data=data)
    assert made.returncode == 0, made.stderr
    listed = herald(b, "list", data=data)
    assert listed.returncode == 0, listed.stderr
    assert "tea" in listed.stdout  # another folder, the same schedules
    assert not list(a.iterdir()) and not list(b.iterdir())  # no herald.db left in either
    assert (data / "herald" / "herald.db").is_file()


def test_an_empty_list_names_the_database_it_read(folders: tuple[Path, Path, Path]) -> None:
    a, _, data = folders
    proc = herald(a, "list", data=data)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"No schedules in {data / 'herald' / 'herald.db'}.\n"
    other = herald(a, "list", data=data, HERALD_DATABASE_URL="sqlite:///elsewhere.db")
    assert other.stdout == f"No schedules in {a / 'elsewhere.db'}.\n"


def test_an_older_folder_database_is_not_silently_left_behind(
    folders: tuple[Path, Path, Path],
) -> None:
    a, b, data = folders
    old_url = "sqlite:///herald.db"  # the old default: the current folder's file
    made = herald(a, "schedule", "--to", "log:", "--when", "in 1 hour", "--text", "old tea",
                  data=data, HERALD_DATABASE_URL=old_url)  # fmt: skip
    assert made.returncode == 0, made.stderr
    new = data / "herald" / "herald.db"

    proc = herald(a, "list", data=data)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()  # one sentence, with both ways on
    assert line.startswith("herald: error: This folder has herald.db")
    assert f"HERALD_DATABASE_URL=sqlite:///{a / 'herald.db'}" in line
    assert f'mv herald.db "{new}"' in line
    assert not data.exists()  # nothing was created meanwhile
    refused = herald(a, "schedule", "--to", "log:", "--when", "in 1 hour", "--text", "x",
                     data=data)  # fmt: skip
    assert refused.returncode == 2 and not data.exists()

    # the first way: keep using it, from any folder
    kept = herald(b, "list", data=data, HERALD_DATABASE_URL=f"sqlite:///{a / 'herald.db'}")
    assert "old tea" in kept.stdout
    # the second: move it where the default is, as the sentence says
    new.parent.mkdir(parents=True)
    (a / "herald.db").rename(new)
    assert "old tea" in herald(b, "list", data=data).stdout
    assert "old tea" in herald(a, "list", data=data).stdout


def test_info_says_which_database_data_folder_settings_file_and_version(
    folders: tuple[Path, Path, Path],
) -> None:
    a, _, data = folders
    proc = herald(a, "info", data=data)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"herald {version('herald')}\n")
    assert f"sqlite:///{data / 'herald' / 'herald.db'} (not created yet" in out
    assert f"data folder:   {data / 'herald'}\n" in out
    assert "settings file: none" in out
    assert not data.exists()  # saying which opens nothing

    (a / ".env").write_text(
        "HERALD_DATABASE_URL=postgresql://herald:s3cret-pw@db.internal:5432/herald\n"
    )
    said = json.loads(herald(a, "info", "--json", data=data).stdout)
    assert said["database_url"] == "postgresql://herald:***@db.internal:5432/herald"
    assert said["database_is_default"] is False
    assert said["settings_file"] == str(a / ".env")
    assert said["version"] == version("herald")
    assert "s3cret-pw" not in herald(a, "info", data=data).stdout


def test_version_is_printed(tmp_path: Path) -> None:
    proc = herald(tmp_path, "--version", data=tmp_path / "data")
    assert (proc.returncode, proc.stdout) == (0, f"herald {version('herald')}\n")


def test_after_the_demo_herald_is_typed_as_it_works_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` installs `herald` in .venv/bin, which is not on PATH: the demo's last
    lines give the full command and how to put it on PATH."""
    script = Path(sys.executable).parent / "herald"
    if not script.is_file():
        pytest.skip("the herald console script is not installed beside this Python")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    command, hint = demo.herald_command()
    assert Path(command) == script.absolute() and hint is not None
    assert f'export PATH="{script.parent.absolute()}:$PATH"' in hint
    said = io.StringIO()
    demo._next_steps(said)
    assert f"sqlite:///{demo.DEMO_DB} {command} list --state delivered" in said.getvalue()
    assert hint in said.getvalue()
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert demo.herald_command() == ("herald", None)  # on PATH: the word alone
