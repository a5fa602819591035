"""Routing from the terminal (issue 35): ``herald schedule --to A --to B`` makes one
schedule that says every destination, ``--then`` gives a recipient a fallback that
delivers when the first step fails for good, ``herald edit --add-to/--remove-to``
changes some recipients, ``herald member zone`` sets a person's zone that
``--their-time`` reads, and bad input is one line that changes nothing. The real
``herald`` command on SQLite and PostgreSQL; deliveries through the fake webhook and
SMTP servers, drained with an injected clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.service import drain
from core.clock import ManualClock
from core.settings import load_settings
from core.store import Store
from tests.api.conftest import Service, start_service, stop_service
from tests.e2e.test_cli import assert_error, run
from tests.e2e.test_cli import url as url  # noqa: F401 - the database fixture, migrated
from tests.fakes import FakeSMTP, WebhookReceiver
from tests.fakes.http import Scripted
from tests.support.store import audit_trail

C1, C2 = "slack:C0123ABC", "slack:C0456DEF"
ALICE = "email:alice@example.com"
BOB = "discord:@123456789012345678"  # a Discord member, by direct message
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def made(proc: Any) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def schedules(url: str, user: str = "alice") -> list[dict[str, Any]]:  # noqa: F811
    return list(made(run(url, "list", "--json", user=user)))


async def _audit(url: str, member: str) -> list[Any]:  # noqa: F811
    store = await Store.open(url)
    try:
        return await audit_trail(store, "member", member)
    finally:
        await store.close()


def test_several_to_make_one_schedule_that_lists_each(url: str) -> None:  # noqa: F811
    proc = run(url, "schedule", "--to", C1, "--to", C2, "--to", ALICE,
               "--when", "every weekday at 9am", "--text", "Stand-up")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == f"  to:   {C1}, {C2}, {ALICE}"

    [s] = schedules(url)  # one schedule, not three
    assert [r["to"] for r in s["recipients"]] == [[C1], [C2], [ALICE]]
    assert s["destination"] == C1
    row = run(url, "list").stdout.splitlines()[1]
    assert f"{C1} +2" in row  # the row says there are more
    for where in (C2, ALICE):  # the filter matches any recipient
        assert [x["id"] for x in made(run(url, "list", "--json", "--to", where))] == [s["id"]]
    assert made(run(url, "list", "--json", "--to", "slack:C0789GHI")) == []

    shown = run(url, "show", str(s["id"])).stdout
    assert "  to:      3 recipients\n" in shown
    for i, to in enumerate((C1, C2, ALICE), 1):
        assert f"    {i}. {to}\n" in shown
    jobs = made(run(url, "show", str(s["id"]), "--json"))["jobs"]
    assert sorted(j["recipient"] for j in jobs) == [0, 1, 2]  # one job each
    assert {j["due_at"] for j in jobs} == {s["next_run_at"]}

    # a long first recipient is cut, never the count of the others
    long = "email:the-quarterly-planning-committee-mailbox@example.com"
    made(run(url, "schedule", "--to", long, "--to", C1, "--to", C2, "--when", "in 1 hour",
             "--text", "Planning " * 20, "--json"))  # fmt: skip
    lines = run(url, "list").stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    [row] = [line for line in lines if "Planning" in line]
    assert "email:the-quarterly-planni… +2  Planning" in row


async def test_a_fallback_delivers_when_the_first_step_fails_for_good(url: str) -> None:  # noqa: F811
    async with FakeSMTP() as smtp, WebhookReceiver(secret=SECRET) as hook:
        hook.script(Scripted(status=410, body="gone"), on="/gone")
        env = {
            "HERALD_SMTP_HOST": "127.0.0.1",
            "HERALD_SMTP_PORT": str(smtp.port),
            "HERALD_SMTP_TLS": "none",
            "HERALD_SMTP_FROM": "Herald <herald@example.com>",
            "HERALD_WEBHOOK_SECRETS": f"{hook.url}/={SECRET}",
            "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the fakes listen on 127.0.0.1
        }
        ok, gone = f"webhook:{hook.url}/ok", f"webhook:{hook.url}/gone"

        def herald(*args: str) -> Any:
            return asyncio.to_thread(run, url, *args, **env)

        proc = await herald(
            "schedule", "--to", ok, "--to", gone, "--then", ALICE,
            "--when", "in 2 minutes", "--text", "Deploy at noon", "--json",
        )  # fmt: skip
        s = made(proc)
        assert [r["to"] for r in s["recipients"]] == [[ok], [gone, ALICE]]

        settings = load_settings(_env_file=None, HERALD_DATABASE_URL=url, **env)
        later = ManualClock(datetime.now(UTC) + timedelta(minutes=3))
        await drain(settings, retry_window=0, clock=later)

        # the first step was tried once and refused for good; the email delivered
        assert [r.path for r in hook.requests] == ["/ok", "/gone"]
        [mail] = smtp.messages
        assert mail.message["To"] == "alice@example.com"
        assert "Deploy at noon" in mail.message.get_body().get_content()  # type: ignore[union-attr]

        shown = (await herald("show", str(s["id"]))).stdout
        assert "  fared:   delivered to 2 of 2" in shown
        assert f"    2. {gone} or {ALICE}\n" in shown
        attempts = [line for line in shown.splitlines() if " job " in line]
        assert len(attempts) == 3
        assert any("permanent 410" in a and f"to {gone}" in a for a in attempts)
        assert any(" ok 250  " in a and f"to {ALICE}" in a for a in attempts)
        assert any(" ok 200  " in a and f"to {ok}" in a for a in attempts)
        detail = made(await herald("show", str(s["id"]), "--json"))
        assert sorted(j["state"] for j in detail["jobs"]) == ["delivered", "delivered"]
        [fell_back] = [j for j in detail["jobs"] if j["recipient"] == 1]
        assert (fell_back["step"], fell_back["destination"]) == (1, ALICE)
        assert (await herald("dead", "list")).stdout == "No dead letters.\n"


def test_edit_adds_removes_and_replaces_recipients(url: str) -> None:  # noqa: F811
    sid = made(run(url, "schedule", "--to", C1, "--to", C2, "--when", "every day at 8am",
                   "--text", "Coffee", "--json"))["id"]  # fmt: skip
    proc = run(url, "edit", str(sid), "--add-to", ALICE,
               "--then", "email:alice.home@example.com", "--remove-to", C1)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == f"  to: {C2}, {ALICE} or email:alice.home@example.com"
    shown = made(run(url, "show", str(sid), "--json"))
    assert [r["to"] for r in shown["recipients"]] == [
        [C2],
        [ALICE, "email:alice.home@example.com"],
    ]
    assert {j["recipient"] for j in shown["jobs"] if j["state"] == "pending"} == {
        r["id"] for r in shown["recipients"]
    }

    # --to replaces them all
    proc = run(url, "edit", str(sid), "--to", C1, "--to", "email:ops@example.com")
    assert proc.returncode == 0, proc.stderr
    assert [r["to"] for r in made(run(url, "show", str(sid), "--json"))["recipients"]] == [
        [C1],
        ["email:ops@example.com"],
    ]
    # a removal that would leave none, or of one it does not have, changes nothing
    before = made(run(url, "show", str(sid), "--json"))
    assert_error(
        run(url, "edit", str(sid), "--remove-to", C1, "--remove-to", "email:ops@example.com"),
        "no recipient",
    )
    assert_error(run(url, "edit", str(sid), "--remove-to", C2), "is not a recipient")
    after = made(run(url, "show", str(sid), "--json"))
    assert (after["recipients"], after["version"]) == (before["recipients"], before["version"])


@pytest.mark.full(
    "the CLI's recipients' zones on PostgreSQL; the default run reads them on SQLite",
    backend="postgres",
)
def test_member_zone_is_what_their_time_reads(url: str) -> None:  # noqa: F811
    # an admin sets two people's zones; the members need not exist yet
    for member, zone in ((ALICE, ["Berlin"]), ("discord:123456789012345678", ["new", "york"])):
        proc = run(url, "member", "zone", member, *zone, user="boss")
        assert proc.returncode == 0, proc.stderr
    assert run(url, "member", "zone", ALICE, "Berlin", user="boss").stdout.startswith(
        f"{ALICE}'s time zone is now Europe/Berlin"
    )
    # a member may not, and an unknown zone is refused: neither changes Alice's
    assert_error(run(url, "member", "zone", ALICE, "Asia/Tokyo"), "Only an admin")
    assert_error(run(url, "member", "zone", ALICE, "Mars/Olympus", user="boss"), "Mars/Olympus")
    trail = asyncio.run(_audit(url, ALICE))
    assert [(a.actor, a.action, a.details) for a in trail] == [
        ("local:boss", "member.timezone", {"timezone": "Europe/Berlin"}),
        ("local:boss", "member.timezone", {"timezone": "Europe/Berlin"}),
        ("local:alice", "member.timezone.denied", {"reason": trail[-1].details["reason"]}),
    ]

    proc = run(url, "schedule", "--to", C1, "--to", ALICE, "--to", BOB, "--their-time",
               "--when", "2099-04-01 09:00", "--tz", "UTC", "--text", "Planning")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == (
        f"  to:   {C1}, {ALICE} (Europe/Berlin time), {BOB} (America/New_York time)"
    )
    assert lines[2] == (  # CEST is UTC+2, EDT UTC-4; the channel keeps the author's
        f"  their time: {ALICE} 09:00 Europe/Berlin = 07:00Z, {BOB} 09:00 America/New_York = 13:00Z"
    )
    [s] = schedules(url)
    shown = made(run(url, "show", str(s["id"]), "--json"))
    due = {j["recipient"]: j["due_at"] for j in shown["jobs"]}
    assert due == {0: "2099-04-01T09:00:00Z", 1: "2099-04-01T07:00:00Z", 2: "2099-04-01T13:00:00Z"}
    text = run(url, "show", str(s["id"])).stdout
    assert f"    2. {ALICE} (Europe/Berlin time)\n" in text
    assert f"  their time: {ALICE} 09:00 Europe/Berlin = 07:00Z" in text


def test_bad_recipients_are_one_line_and_change_nothing(url: str) -> None:  # noqa: F811
    common = ("--when", "in 1 hour", "--text", "x")
    proc = run(url, "schedule", "--then", ALICE, "--to", C1, *common)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--then DEST is the fallback of the --to before it" in proc.stderr
    assert_error(run(url, "schedule", "--to", C1, "--to", C1, *common), "named twice")
    assert_error(
        run(url, "schedule", "--to", C1, "--then", ALICE, "--step-timeout", "10s", *common),
        "time limit",
    )
    many = [arg for i in range(51) for arg in ("--to", f"email:u{i}@example.com")]
    assert_error(run(url, "schedule", *many, *common), "at most 50 recipients")
    assert schedules(url) == []
    # an admin's cap is higher
    assert run(url, "schedule", *many, *common, "--quiet", user="boss").returncode == 0
    assert schedules(url) == []  # the admin's, not Alice's


# --- the same through a running service (HERALD_API_URL): the remote CLI ------------


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """``herald run`` on SQLite: the remote CLI sends what the local one passes to core
    (tests/api/test_api_routing.py runs the API's routing on both databases)."""
    svc = start_service(f"sqlite:///{tmp_path / 'herald.db'}")
    try:
        yield svc
    finally:
        stop_service(svc)


def test_the_remote_cli_sends_every_recipient(service: Service) -> None:
    api = {
        "HERALD_API_URL": service.base,
        "HERALD_API_TOKEN": service.token("local:remote-a"),
        # wrong on purpose: these commands must not open the database
        "HERALD_DATABASE_URL": "sqlite:////nonexistent/dir/herald.db",
    }
    b, c = "email:b@example.com", "email:c@example.com"

    def remote(*args: str) -> Any:
        return run(service.url, *args, **api)

    proc = remote("schedule", "--to", ALICE, "--to", b, "--then", c, "--step-timeout", "10m",
                  "--when", "tomorrow at 9am", "--text", "Stand-up")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == f"  to:   {ALICE}, {b} or {c}"
    sid = proc.stdout.split()[1].rstrip(":")
    s = made(remote("show", sid, "--json"))
    assert s["recipients"] == [
        {"id": 0, "to": [ALICE]},  # one destination: no next step to time out to
        {"id": 1, "to": [b, c], "timeout": 600},
    ]
    assert f"{ALICE} +1" in remote("list").stdout
    shown = remote("show", sid).stdout
    chain = f"{b} or {c} (each step at most 10 minutes)"
    assert f"  to:      2 recipients\n    1. {ALICE}\n    2. {chain}\n" in shown

    proc = remote("edit", sid, "--add-to", "email:d@example.com", "--remove-to", ALICE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == f"  to: {b} or {c}, email:d@example.com"
    assert_error(remote("edit", sid, "--remove-to", "email:zed@example.com"), "not a recipient")
