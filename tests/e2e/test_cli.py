"""The real `herald` command against a real database: each command a process of its own
with its arguments, environment, standard input and exit status, forked from an
interpreter that imported Herald once (tests/support/herald_cli.py, which
tests/e2e/test_herald_cli_helper.py holds to the same answers as `python -m bot.cli`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import db
from tests.support.herald_cli import herald


def run(url: str, *args: str, stdin: str | None = None, user: str = "alice", **env: str):
    full_env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HERALD_", "SLACK_", "DISCORD_"))
        },
        "HERALD_DATABASE_URL": url,
        "USER": user,
        "HERALD_ADMINS": "local:boss",
        **env,
    }
    return herald(*args, env=full_env, input=stdin)


@pytest.fixture
def url(db_url: str) -> str:
    if db.backend(db_url) == "postgresql":
        proc = herald("db", "upgrade", env={**os.environ, "HERALD_DATABASE_URL": db_url})
        assert proc.returncode == 0, proc.stderr
    return db_url


def assert_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("herald: error: "), proc.stderr
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr


def test_schedule_list_show_edit_cancel_round_trip(url: str) -> None:
    made = run(
        url,
        "schedule",
        "--to",
        "log:",
        "--when",
        "2099-04-01 08:00",
        "--tz",
        "Europe/Berlin",
        "--text",
        "Quarterly review",
        "--quiet",
    )
    assert made.returncode == 0, made.stderr
    sid = made.stdout.strip()
    assert sid.isdigit()

    listed = run(url, "list")
    assert "Quarterly review" in listed.stdout
    assert "2099-04-01 08:00 Europe/Berlin" in listed.stdout  # the row names its zone

    shown = json.loads(run(url, "show", sid, "--json").stdout)
    assert shown["starts_at"] == "2099-04-01T06:00:00Z"  # CEST is UTC+2
    assert shown["jobs"][0]["state"] == "pending"

    edited = run(
        url, "edit", sid, "--text", "Quarterly review (moved)", "--when", "2099-04-02 09:00"
    )
    assert edited.returncode == 0, edited.stderr
    assert json.loads(run(url, "show", sid, "--json").stdout)["starts_at"] == "2099-04-02T07:00:00Z"
    assert_error(run(url, "edit", sid, "--text", "x", "--version", "1"), "version 2, not 1")

    assert run(url, "pause", sid).returncode == 0
    assert run(url, "resume", sid).returncode == 0
    assert run(url, "cancel", sid).returncode == 0
    final = json.loads(run(url, "list", "--json", "--state", "cancelled").stdout)
    assert [s["id"] for s in final] == [int(sid)]


def test_schedule_json_and_idempotency_key(url: str) -> None:
    args = (
        "schedule",
        "--to",
        "discord:123456789012345678",
        "--when",
        "2099-01-01T00:00:00Z",
        "--text",
        "Happy new year",
        "--key",
        "ny-2099",
        "--json",
    )
    first = json.loads(run(url, *args).stdout)
    second = run(url, *args)
    assert second.returncode == 0
    again = json.loads(second.stdout)
    assert first["created"] is True and again["created"] is False
    assert again["id"] == first["id"]
    assert len(json.loads(run(url, "list", "--json").stdout)) == 1
    # another member's key space is separate
    other = json.loads(run(url, *args, user="bob").stdout)
    assert other["created"] is True and other["id"] != first["id"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ("schedule", "--to", "pigeon:home", "--when", "2099-01-01 08:00", "--text", "x"),
            "Unknown destination kind 'pigeon'",
        ),
        (("schedule", "--to", "log:", "--when", "2001-01-01 08:00", "--text", "x"), "in the past"),
        (("schedule", "--to", "log:", "--when", "2099-01-01 08:00", "--text", ""), "empty"),
        (
            (
                "schedule",
                "--to",
                "log:",
                "--when",
                "2099-01-01 08:00",
                "--text",
                "x",
                "--tz",
                "Nowhere/City",
            ),
            "Unknown time zone",
        ),
        (("show", "4242"), "no schedule 4242"),
        (("cancel", "4242"), "no schedule 4242"),
        (("list", "--all"), "Only operators and admins"),
        (("list", "--state", "zombie"), "Unknown state"),
        (("schedule", "--to", "log:"), "the following arguments are required"),
        (("frobnicate",), "invalid choice"),
    ],
)
def test_errors_are_one_line_exit_2_and_change_nothing(url: str, args, fragment) -> None:
    assert_error(run(url, *args), fragment)
    assert json.loads(run(url, "list", "--json").stdout) == []


def test_admin_acts_on_others_and_member_cannot(url: str) -> None:
    sid = run(
        url, "schedule", "--to", "log:", "--when", "2099-01-01 08:00", "--text", "x", "--quiet"
    ).stdout.strip()
    assert_error(
        run(url, "cancel", sid, user="bob"),
        f"Schedule {sid} is another member's: only its owner or an admin can change it.",
    )
    assert run(url, "cancel", sid, user="boss").returncode == 0
    assert json.loads(run(url, "show", sid, "--json").stdout)["state"] == "cancelled"


def test_import_validates_everything_first_then_is_safe_to_rerun(url: str, tmp_path: Path) -> None:
    good = [
        {"to": "log:", "when": "2099-01-01 08:00", "text": f"m{i}", "key": f"k{i}"}
        for i in range(50)
    ]
    bad_file = tmp_path / "bad.jsonl"
    lines = [json.dumps(x) for x in good]
    lines[9] = '{"to": "log:", "when": "2001-01-01 08:00", "text": "old", "key": "k9"}'
    lines[19] = "not json"
    lines[29] = '{"to": "log:", "when": "2099-01-01 08:00", "txt": "typo"}'
    bad_file.write_text("\n".join(lines) + "\n")
    proc = run(url, "import", str(bad_file))
    assert proc.returncode == 2
    err = proc.stderr.splitlines()
    assert err[0].startswith("herald: error: Nothing imported: 3 bad line(s)")
    assert err[1].startswith("line 10: ") and "in the past" in err[1]
    assert err[2].startswith("line 20: not valid JSON")
    assert err[3].startswith("line 30: unknown field txt")
    assert json.loads(run(url, "list", "--json").stdout) == []

    skipped = run(url, "import", str(bad_file), "--skip-invalid", "--json")
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout)["imported"] == 47
    assert "line 10: skipped" in skipped.stderr

    good_file = tmp_path / "good.jsonl"
    good_file.write_text("\n".join(json.dumps(x) for x in good) + "\n")
    rerun = json.loads(run(url, "import", str(good_file), "--json").stdout)
    assert (rerun["imported"], rerun["skipped_existing"]) == (3, 47)
    again = json.loads(run(url, "import", "-", "--json", stdin=good_file.read_text()).stdout)
    assert (again["imported"], again["skipped_existing"]) == (0, 50)
    assert len(json.loads(run(url, "list", "--json", "--limit", "1000").stdout)) == 50


def test_import_of_a_missing_file(url: str, tmp_path: Path) -> None:
    assert_error(run(url, "import", str(tmp_path / "nope.jsonl")), "Cannot read")


def test_bad_database_url_is_one_line(tmp_path: Path) -> None:
    assert_error(run("mysql://x@localhost/db", "list"), "SQLite or PostgreSQL")
    proc = run("postgresql://nobody:s3cret-pw@127.0.0.1:1/none", "list")
    assert_error(proc, "Cannot reach the database")
    assert "s3cret-pw" not in proc.stderr


def test_fresh_sqlite_file_is_created_and_migrated(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new.db"
    assert run(url, "list").stdout.strip() == f"No schedules in {db.location(url)}."
    assert db.current_revision(url) == db.head_revision()
    assert "is at" in run(url, "db", "current").stdout


def test_an_unreadable_skip_calendar_schedules_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/skip.db"
    proc = run(
        url,
        "schedule",
        "--to",
        "log:",
        "--when",
        "every day at 9am",
        "--text",
        "x",
        "--skip-calendar",
        str(tmp_path / "missing.ics"),
    )
    assert_error(proc, "Cannot read the calendar")
    assert run(url, "list").stdout.strip() == f"No schedules in {db.location(url)}."


async def _slack_schedule(url: str) -> int:
    """A schedule made in a Slack workspace's tenant (as the Slack adapter would)."""
    from core.actors import Principal
    from core.cases import Herald
    from core.clock import SystemClock
    from core.settings import load_settings
    from core.store import Store

    store = await Store.open(url)
    try:
        herald = Herald(
            store, load_settings(HERALD_DATABASE_URL=url, _env_file=None), SystemClock()
        )
        made, _ = await herald.create_schedule(
            Principal("slack:U1", "slack:T0WORK"), to="log:", when="in 1 hour", text="Workspace's"
        )
    finally:
        await store.close()
    assert made.id is not None
    return made.id


async def test_a_terminal_member_cannot_reach_a_workspaces_schedule(sqlite_url: str) -> None:
    """The CLI acts in the terminal's tenant: a workspace's schedule is not there for a
    plain member; Herald-wide admins see it with its tenant and filter by it. (The
    queries behind it run on both databases in tests/integration/test_tenancy.py.)"""
    url = sqlite_url
    sid = await _slack_schedule(url)
    assert_error(run(url, "cancel", str(sid)), f"There is no schedule {sid} of yours.")
    assert run(url, "list").stdout.strip() == f"No schedules in {db.location(url)}."
    listed = run(url, "list", "--all", user="boss")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("TENANT")
    assert "slack:T0WORK" in listed.stdout and "Workspace's" in listed.stdout
    shown = run(url, "show", str(sid), user="boss")
    assert "tenant:  slack:T0WORK" in shown.stdout
    data = json.loads(
        run(url, "list", "--all", "--tenant", "slack:T0WORK", "--json", user="boss").stdout
    )
    assert [row["tenant"] for row in data] == ["slack:T0WORK"]


def test_a_message_its_destination_would_refuse_is_one_line_and_stores_nothing(
    url: str, tmp_path: Path
) -> None:
    to = ("--to", "discord:123456789012345678", "--when", "2099-01-01 08:00")
    proc = run(url, "schedule", *to, "--text", "x" * 3508)
    assert_error(proc, "Discord allows 2,000 characters in a message; this message has 3,508.")
    blocks = tmp_path / "blocks.json"
    blocks.write_text(
        json.dumps([{"type": "section", "text": {"type": "mrkdwn", "text": "b"}}] * 51)
    )
    proc = run(
        url,
        "schedule",
        "--to",
        "slack:C0123",
        "--when",
        "2099-01-01 08:00",
        "--text",
        "x",
        "--blocks",
        f"@{blocks}",
    )
    assert_error(proc, "Slack allows 50 blocks in a message; this message has 51.")
    assert json.loads(run(url, "list", "--json").stdout) == []


def test_schedule_reads_back_what_it_understood_and_warns(url: str) -> None:
    made = run(
        url,
        "schedule",
        "--to",
        "email:ops@example.com",
        "--when",
        "every monday at 9am",
        "--tz",
        "America/New_York",
        "--text",
        "Weekly report",
    )
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[0].startswith("Schedule ") and lines[0].endswith(", in America/New_York.")
    assert lines[1] == "  to:   email:ops@example.com"
    assert len(lines) == 5  # the reading, the destination, then the next three sends
    assert lines[2].startswith("  next: Mon ")
    assert all(line.startswith(" " * 8 + "Mon ") for line in lines[3:])
    assert "America/New_York   (" in lines[2] and lines[2].endswith(":00:00Z)")
    warnings = made.stderr.splitlines()
    assert warnings == [
        "warning: No SMTP server is configured (HERALD_SMTP_HOST): email cannot be sent.",
        "warning: No dispatcher has reported in the last minute: nothing sends it until "
        "`herald run` runs.",
    ]
    quiet = run(
        url, "schedule", "--to", "log:", "--when", "2099-01-01 08:00", "--text", "x", "--quiet"
    )
    assert quiet.stdout.strip().isdigit() and quiet.stderr == ""


def test_list_accepts_the_states_people_read(url: str) -> None:
    run(url, "schedule", "--to", "log:", "--when", "2099-01-01 08:00", "--text", "x")
    assert run(url, "list", "--state", "failed").stdout.strip() == (
        f"No schedules in {db.location(url)}."
    )
    [pending] = json.loads(run(url, "list", "--state", "pending", "--json").stdout)
    assert (pending["state"], pending["lifecycle"], pending["last_outcome"]) == (
        "pending",
        "active",
        None,
    )
    assert_error(run(url, "list", "--state", "dead"), "use one of pending, retrying, delivered")


def test_output_to_a_closed_pipe_ends_quietly(url: str) -> None:
    """`herald list | head -0`: the reader is gone before Herald writes a line."""
    made = run(url, "schedule", "--to", "log:", "--when", "in 1 hour", "--text", "x", "-q")
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "HERALD_DATABASE_URL": url, "USER": "alice"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the child can write: its write meets a closed pipe
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141  # 128 + SIGPIPE, as `yes | head` reports
    assert stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" line


def test_when_and_schedule_read_back_the_default_time_and_take_cities(url: str) -> None:
    now = ("--now", "2026-03-06T15:00:00Z")
    shown = run(url, "when", "every weekday", "--tz", "berlin", "--count", "1", *now)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "every weekday at 09:00 (Europe/Berlin) — add 'at …' to change it",
        "  Mon 09 Mar 2026 09:00 Europe/Berlin   (2026-03-09T08:00:00Z)",
    ]
    later = run(url, "when", "every weekday", "--json", *now, HERALD_DEFAULT_TIME="07:30")
    assert json.loads(later.stdout)["default_time"] == "07:30"
    assert_error(run(url, "when", "in 5 minutes", "--tz", "EST"), "EST is ambiguous")
    assert_error(run(url, "when", "evry monday at 9am"), "Did you mean 'every monday at 9am'?")
    zone = run(url, "timezone", "new", "york")
    assert zone.stdout == "Your time zone is now America/New_York.\n", zone.stderr
    made = run(url, "schedule", "--to", "log:", "--when", "every monday", "--text", "x")
    assert made.returncode == 0, made.stderr
    first = made.stdout.splitlines()[0]
    assert first.endswith(
        ": every Monday at 09:00 (America/New_York) — add 'at …' to change it, in America/New_York."
    )


def test_delete_and_remove_cancel_as_chat_bots_say_it(url: str) -> None:
    ids = []
    for _ in range(2):
        made = run(url, "schedule", "--to", "log:", "--when", "in 1 hour", "--text", "x", "-q")
        assert made.returncode == 0, made.stderr
        ids.append(made.stdout.strip())
    for verb, sid in zip(("delete", "remove"), ids, strict=True):
        done = run(url, verb, sid)
        assert done.stdout == f"Schedule {sid} cancelled.\n", done.stderr
    listed = json.loads(run(url, "list", "--state", "cancelled", "--json").stdout)
    assert sorted(str(s["id"]) for s in listed) == sorted(ids)
