"""The CLI and the HTTP API together: ``herald token`` makes, lists and revokes the
tokens the API takes, and with ``HERALD_API_URL`` and ``HERALD_API_TOKEN`` set the CLI's
schedule commands go through the running service instead of the database."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import ROOT, Service, start_service, stop_service
from tests.support.herald_cli import herald as run_herald


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """On SQLite only: what the CLI does here is the same whatever the service's
    database (tests/api/test_api.py runs the routes on both)."""
    svc = start_service(f"sqlite:///{tmp_path_factory.mktemp('cli-api') / 'herald.db'}")
    try:
        yield svc
    finally:
        stop_service(svc)


def herald(service: Service, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**service.env, "USER": ROOT.removeprefix("local:"), **env}
    full.pop("HERALD_HTTP_PORT", None)
    return run_herald(*args, env=full, timeout=120)


def test_a_token_made_listed_used_and_revoked_from_the_cli(service: Service) -> None:
    made = herald(service, "token", "create", "--member", "local:cli-a", "--name", "nightly job")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("hk_") and "\n" not in token  # stdout: the token alone
    assert "shown only now" in made.stderr and token not in made.stderr
    token_id = token.split("_")[1]

    listed = herald(service, "token", "list", "--json")
    row = next(t for t in json.loads(listed.stdout) if t["id"] == token_id)
    assert row["member"] == "local:cli-a" and row["scope"] == "write"
    assert row["name"] == "nightly job" and row["revoked_at"] is None
    assert token.split("_", 2)[2] not in listed.stdout  # never the secret

    with service.client(token) as c:
        assert c.get("/v1/me").json()["member"] == "local:cli-a"
    revoked = herald(service, "token", "revoke", token_id)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    with service.client(token) as c:
        assert c.get("/v1/me").status_code == 401
    table = herald(service, "token", "list").stdout
    assert any(line.startswith(token_id) and "revoked" in line for line in table.splitlines())

    refused = herald(service, "token", "create", "--member", "local:x", "--expires", "soon")
    assert refused.returncode == 2 and "not a token lifetime" in refused.stderr


def test_the_cli_schedules_through_a_running_service(service: Service) -> None:
    token = service.token("local:cli-b")
    api = {"HERALD_API_URL": service.base, "HERALD_API_TOKEN": token}
    # the database URL is wrong on purpose: these commands must not open it
    nowhere = {**api, "HERALD_DATABASE_URL": "sqlite:////nonexistent/dir/herald.db"}

    made = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "tomorrow at 9am",
        "--text",
        "through the API",
        "--tz",
        "Europe/Paris",
        **nowhere,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("Schedule ") and ", in Europe/Paris." in made.stdout
    assert "next: " in made.stdout
    schedule_id = made.stdout.split()[1].rstrip(":")

    quiet = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "in 2 hours",
        "--text",
        "q",
        "--key",
        "k-1",
        "--quiet",
        **nowhere,
    )
    again = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "in 2 hours",
        "--text",
        "q",
        "--key",
        "k-1",
        "--json",
        **nowhere,
    )
    assert (
        json.loads(again.stdout)["id"] == int(quiet.stdout)
        and not json.loads(again.stdout)["created"]
    )

    listed = herald(service, "list", "--json", **nowhere)
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    assert {r["text"] for r in rows} == {"through the API", "q"}
    assert all(r["owner"] == "local:cli-b" for r in rows)
    shown = herald(service, "show", schedule_id, **nowhere)
    assert "through the API" in shown.stdout and "jobs:" in shown.stdout

    stale = herald(service, "pause", schedule_id, "--version", "9", **nowhere)
    assert stale.returncode == 2 and "not 9" in stale.stderr
    paused = herald(service, "pause", schedule_id, "--version", "1", **nowhere)
    assert paused.stdout.strip() == f"Schedule {schedule_id} paused."
    edited = herald(service, "edit", schedule_id, "--text", "edited", **nowhere)
    assert edited.returncode == 0 and "updated" in edited.stdout
    cancelled = herald(service, "cancel", schedule_id, **nowhere)
    assert cancelled.stdout.strip() == f"Schedule {schedule_id} cancelled."

    bad = herald(
        service, "schedule", "--to", "pigeon", "--when", "tomorrow", "--text", "x", **nowhere
    )
    assert bad.returncode == 2 and "has no kind" in bad.stderr

    # a command the API does not serve still reads the database, so it fails here
    assert herald(service, "dead", "list", **nowhere).returncode != 0

    down = {**nowhere, "HERALD_API_URL": "http://127.0.0.1:9"}
    unreachable = herald(service, "list", **down)
    assert unreachable.returncode == 2 and "Cannot reach Herald" in unreachable.stderr


def test_a_calendar_file_to_skip_goes_with_the_request(service: Service, tmp_path: Any) -> None:
    api = {"HERALD_API_URL": service.base, "HERALD_API_TOKEN": service.token("local:cli-c")}
    holidays = tmp_path / "holidays.ics"
    holidays.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        "UID:h1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;VALUE=DATE:20991225\r\n"
        "SUMMARY:Far away\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    made = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "every day at 9am",
        "--text",
        "daily",
        "--skip-calendar",
        str(holidays),
        "--json",
        **api,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["created"]
    missing = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "every day at 9am",
        "--text",
        "x",
        "--skip-calendar",
        str(tmp_path / "nope.ics"),
        **api,
    )
    assert missing.returncode == 2 and "Cannot read" in missing.stderr


def test_the_cli_schedules_a_template_with_data_through_a_running_service(
    service: Service,
) -> None:
    added = herald(
        service,
        "template",
        "add",
        "hello",
        "--text",
        "Hello {{ who }}, v{{ version }}",
        "--var",
        "who",
        "--var",
        "version:number",
    )
    assert added.returncode == 0, added.stderr
    api = {"HERALD_API_URL": service.base, "HERALD_API_TOKEN": service.token("local:cli-t")}
    nowhere = {**api, "HERALD_DATABASE_URL": "sqlite:////nonexistent/dir/herald.db"}
    made = herald(
        service,
        "schedule",
        "--to",
        "log:",
        "--when",
        "tomorrow at 9am",
        "--template",
        "hello",
        "--data",
        "who=team",
        "--data",
        "version=2",
        "--json",
        **nowhere,
    )
    assert made.returncode == 0, made.stderr
    record = json.loads(made.stdout)
    assert record["template"]["name"] == "hello"
    assert record["template"]["data"] == {"who": "team", "version": 2}
    edited = herald(
        service, "edit", str(record["id"]), "--data", "who=all", "--data", "version=3", **nowhere
    )
    assert edited.returncode == 0, edited.stderr
    missing = herald(service, "edit", str(record["id"]), "--data", "who=all", **nowhere)
    assert missing.returncode == 2 and "needs a value for 'version'" in missing.stderr
