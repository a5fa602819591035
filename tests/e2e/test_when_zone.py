"""Issue 33: ``herald when`` previews a time exactly as ``herald schedule`` saves it for
the same member: after ``herald timezone Europe/Berlin`` it reads in Berlin (it read in
UTC, so the tool people check a time with was off by their offset), and says so."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.test_cli import run
from tests.e2e.test_cli import url as url  # noqa: F401 - the database fixture, migrated

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.full(
    "the CLI on PostgreSQL; the default run reads every phrase through it on SQLite",
    backend="postgres",
)
def test_when_reads_in_the_members_zone_as_schedule_saves(url: str) -> None:
    assert run(url, "timezone", "Europe/Berlin").returncode == 0

    # a fixed date: the preview and the save must be the same instant
    shown = json.loads(run(url, "when", "2099-04-01 08:00", "--json").stdout)
    made = run(
        url, "schedule", "--to", "log:", "--when", "2099-04-01 08:00", "--text", "x", "--json"
    )
    assert made.returncode == 0, made.stderr
    saved = json.loads(made.stdout)
    assert shown["timezone"] == saved["timezone"] == "Europe/Berlin"
    assert shown["zone_source"] == "member"
    assert shown["occurrences"] == [saved["next_run_at"]] == ["2099-04-01T06:00:00Z"]

    # a rule without a time of day: 09:00 in Berlin for both, the same rule
    text = run(url, "when", "every weekday", "--count", "1")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "every weekday at 09:00 (Europe/Berlin) — add 'at …' to change it"
    assert " 09:00 Europe/Berlin   (" in lines[1]
    assert lines[-1] == "Read in Europe/Berlin, your zone (herald timezone changes it)."
    rule = json.loads(run(url, "when", "every weekday", "--json").stdout)
    made = run(url, "schedule", "--to", "log:", "--when", "every weekday", "--text", "x", "--json")
    saved = json.loads(made.stdout)
    assert rule["timezone"] == saved["timezone"] == "Europe/Berlin"
    assert rule["rule"].split("\n")[1] == saved["rule"].split("\n")[1]  # the RRULE line
    for at in (rule["occurrences"][0], saved["next_run_at"]):
        local = datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(BERLIN)
        assert (local.hour, local.minute) == (9, 0) and local.weekday() < 5

    # a zone given for one preview wins, as it does for a save
    given = json.loads(run(url, "when", "2099-04-01 08:00", "--tz", "Tokyo", "--json").stdout)
    assert (given["timezone"], given["zone_source"]) == ("Asia/Tokyo", "given")
    assert given["occurrences"] == ["2099-03-31T23:00:00Z"]


def test_without_a_database_when_reads_in_the_default_zone_and_creates_none(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "not-yet.db"
    nowhere = f"sqlite:///{missing}"
    shown = run(nowhere, "when", "2099-04-01 08:00", HERALD_DEFAULT_TZ="America/New_York")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-1] == (
        "Read in America/New_York, Herald's default zone (set yours with herald timezone)."
    )
    assert "(2099-04-01T12:00:00Z)" in shown.stdout
    assert run(nowhere, "when", "in 5 minutes", "--tz", "Berlin").returncode == 0
    assert not missing.exists()  # a preview opened (and so created) no database
