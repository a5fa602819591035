"""``herald schedule --until-done``, ``herald done``, ``herald awaiting`` and ``herald
approvals`` (issue 40), run as a user runs them against a real database (SQLite and
PostgreSQL). A message is delivered by ``herald run --drain``: it is made in-process on
a clock a minute behind, so "in 2 seconds" is already due and nothing sleeps."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.settings import load_settings
from core.store import Store
from tests.e2e.test_cli import assert_error, run, url  # noqa: F401 - the url fixture

#: Each command is a process of its own (a second, and many more on a loaded machine):
#: a test runs a dozen, more than the default bound of a test.
pytestmark = pytest.mark.timeout(600)
NEWS = "webhook:https://hooks.example.com/news"
HELD = {"HERALD_ANNOUNCEMENT_CHANNELS": NEWS, "HERALD_APPROVERS": "local:carol"}


def _until_done_due(db_url: str, owner: str, tenant: str = "local") -> int:
    """A schedule of ``owner`` sent until done whose message is due already."""

    async def go() -> int:
        store = await Store.open(db_url)
        try:
            settings = load_settings(
                HERALD_DATABASE_URL=db_url, HERALD_ADMINS="local:boss", _env_file=None
            )
            herald = Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
            if tenant != "local":
                await herald.set_role("local:boss", owner, "member", tenant=tenant)
            s, _ = await herald.create_schedule(
                Principal(owner, tenant=tenant),
                to="log:",
                when="in 2 seconds",
                text="Check the backups",
                until_done={"nag": "15m"},
            )
            assert s.id is not None
            return s.id
        finally:
            await store.close()

    return asyncio.run(go())


def test_a_schedule_sent_until_done_read_back_shown_listed_and_made_plain(url: str) -> None:  # noqa: F811
    made = run(
        url,
        "schedule",
        "--to",
        "log:",
        "--when",
        "every weekday at 9am",
        "--text",
        "Check the backups",
        "--until-done",
        "--nag",
        "15m",
        "--escalate",
        "log:",
        "--escalate",
        "email:lead@example.com",
        "--after",
        "1h",
    )
    assert made.returncode == 0, made.stderr
    assert (
        "  sent until done, nag every 15 minutes, escalate to log:, email:lead@example.com "
        "after 1 hour"
    ) in made.stdout
    schedule_id = made.stdout.split()[1].rstrip(":")
    assert "sent:    until done, nag every 15 minutes" in run(url, "show", schedule_id).stdout
    assert "; until done" in run(url, "list").stdout
    plain = run(url, "edit", schedule_id, "--no-until-done", "--json")
    assert plain.returncode == 0, plain.stderr
    assert "until_done" not in json.loads(plain.stdout)["options"]

    base = ["schedule", "--to", "log:", "--when", "tomorrow", "--text", "x", "--until-done"]
    assert_error(run(url, *base, "--nag", "1m"), "at most every 5 minutes")
    assert_error(run(url, *base, "--escalate", "log:"), "--after DURATION")


@pytest.mark.full(
    "the CLI's done on PostgreSQL; the default run marks it on SQLite (and "
    "tests/integration/test_until_done.py on both)",
    backend="postgres",
)
def test_done_awaiting_and_who_may_mark_it(url: str) -> None:  # noqa: F811
    schedule_id = _until_done_due(url, "local:alice")
    other = _until_done_due(url, "slack:U0OTHER", tenant="slack:T0OTHER")
    drained = run(url, "run", "--drain")
    assert drained.returncode == 0 and "2 delivered" in drained.stdout, drained.stderr
    table = run(url, "awaiting").stdout  # alice's own
    [line] = [row for row in table.splitlines()[1:-1]]
    job_id = int(line.split()[0])
    assert line.split()[1] == str(schedule_id) and "Check the backups" in line
    assert "No message was marked done in the last 7 days." in table
    assert "(nag 1)" in run(url, "show", str(schedule_id)).stdout

    assert_error(run(url, "done", str(job_id), user="bob"), "its author, operators and admins")
    theirs = json.loads(run(url, "awaiting", "--json", user="boss").stdout)["items"]
    their_job = next(w["job_id"] for w in theirs if w["schedule_id"] == other)
    assert_error(run(url, "done", str(their_job)), f"There is no message {their_job}")

    done = run(url, "done", str(job_id))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Marked message {job_id} done (stopped ")
    again = run(url, "done", str(job_id), user="boss")
    assert again.stdout.startswith("Already done by local:alice at "), again.stderr
    shown = run(url, "show", str(schedule_id)).stdout
    assert "acknowledged" in shown and "done by local:alice" in shown
    after = run(url, "awaiting").stdout
    assert after.startswith("No message awaits Done.") and "p50" in after


@pytest.mark.full(
    "the CLI's approvals on PostgreSQL; the default run decides them on SQLite (and "
    "tests/integration/test_approvals.py on both)",
    backend="postgres",
)
def test_approvals_listed_approved_and_rejected(url: str) -> None:  # noqa: F811
    held = run(url, "schedule", "--to", NEWS, "--when", "tomorrow at 9am", "--text", "News", **HELD)
    assert held.returncode == 0, held.stderr
    assert "awaiting approval: nothing is sent until an approver approves it" in held.stdout
    schedule_id = held.stdout.split()[1].rstrip(":")
    own = run(
        url, "schedule", "--to", NEWS, "--when", "tomorrow", "--text", "Mine", user="carol", **HELD
    )
    own_id = own.stdout.split()[1].rstrip(":")

    listed = json.loads(run(url, "approvals", "list", "--json", user="carol", **HELD).stdout)
    by_schedule = {r["schedule_id"]: r["id"] for r in listed}
    request, own_request = by_schedule[int(schedule_id)], by_schedule[int(own_id)]
    assert_error(run(url, "approvals", "approve", str(request), user="bob", **HELD), "approvers")
    assert_error(
        run(url, "approvals", "approve", str(own_request), user="carol", **HELD), "your own"
    )

    approved = run(url, "approvals", "approve", str(request), user="carol", **HELD)
    assert approved.stdout.strip() == "Approved 1 request(s).", approved.stderr
    shown = run(url, "show", schedule_id, "--json", **HELD)
    data = json.loads(shown.stdout)
    assert data["lifecycle"] == "active" and [j["state"] for j in data["jobs"]] == ["pending"]
    assert "awaiting approval" in run(url, "list", user="carol", **HELD).stdout  # still held

    rejected = run(
        url, "approvals", "reject", str(own_request), "--reason", "Not now.", user="boss", **HELD
    )
    assert rejected.stdout.strip() == "Rejected 1 request(s).", rejected.stderr
    everything = run(url, "approvals", "list", "--all", user="boss", **HELD).stdout
    states = {line.split()[0]: line.split()[2] for line in everything.splitlines()[1:]}
    assert states == {str(request): "approved", str(own_request): "rejected"}


class _Printed:
    """What a command prints, kept (the CLI's Output)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, text: str = "") -> None:
        self.lines.append(text)

    def emit_json(self, data: object) -> None:
        self.lines.append(json.dumps(data))


def test_the_tables_hide_a_webhooks_token() -> None:
    """``herald awaiting`` and ``herald approvals list`` show a webhook as the rest of
    the CLI does: its host and path, never the token in it."""
    import argparse

    from bot.cli.approvals import show_list
    from bot.cli.until_done import show_awaiting

    token = "XXXXXXXXXXXXXXXXXXXXXXXX1234"
    hook = f"webhook:https://hooks.slack.com/services/T0000/B0000/{token}"
    printed = _Printed()
    waiting = {
        "job_id": 1,
        "schedule_id": 2,
        "delivered_at": "2026-03-02T08:00:00+00:00",
        "nags_sent": 0,
        "steps_waiting": 3,
        "destination": hook,
        "text": "Check the backups",
    }
    show_awaiting(printed, {"items": [waiting], "ack": {"count": 0}}, False)
    request = {
        "id": 5,
        "kind": "send",
        "job_id": None,
        "requested_by": "local:ada",
        "requested_at": "2026-03-02T08:00:00+00:00",
        "destination": hook,
        "why": "it goes to an announcement channel",
        "text": "Hello",
    }
    show_list(printed, [request], argparse.Namespace(json=False, all=False))
    shown = "\n".join(printed.lines)
    assert "hooks.slack.com" in shown and token not in shown
