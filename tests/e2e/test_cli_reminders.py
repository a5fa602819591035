"""``herald schedule --to slack:@U… / discord:@…`` from the terminal: a reminder by
direct message, under the same rules as in chat for the local actor (a member Herald
knows in their tenant; Herald-wide operators and admins: any member Herald knows)."""

from __future__ import annotations

import json

from tests.e2e.test_cli import assert_error, run, url  # noqa: F401 - the url fixture

BOB = "slack:@U0BOB"


def test_a_plain_member_cannot_remind_someone_herald_does_not_know_here(url: str) -> None:  # noqa: F811
    proc = run(url, "schedule", "--to", BOB, "--when", "in 10 minutes", "--text", "hi")
    assert_error(proc, "only if they are a member")
    assert json.loads(run(url, "list", "--json").stdout or "[]") == []


def test_a_member_the_admin_recorded_here_can_be_reminded(url: str) -> None:  # noqa: F811
    recorded = run(url, "member", "role", "slack:U0BOB", "member", user="boss")
    assert recorded.returncode == 0, recorded.stderr
    proc = run(url, "schedule", "--to", BOB, "--when", "in 10 minutes", "--text", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "to:   slack:@U0BOB" in proc.stdout
    assert "(a direct message; it says local:alice asked)" in proc.stdout


def test_the_herald_wide_admin_reminds_a_member_of_any_tenant(url: str) -> None:  # noqa: F811
    recorded = run(
        url, "member", "role", "slack:U0BOB", "member", "--tenant", "slack:T1", user="boss"
    )
    assert recorded.returncode == 0, recorded.stderr
    proc = run(
        url, "schedule", "--to", BOB, "--when", "in 1 hour", "--text", "hi", "--json", user="boss"
    )
    assert proc.returncode == 0, proc.stderr
    made = json.loads(proc.stdout)
    assert made["destination"] == BOB and made["owner"] == "local:boss"
    # a plain member of local does not reach into slack:T1
    assert_error(run(url, "schedule", "--to", BOB, "--when", "in 1 hour", "--text", "x"), "only if")


def test_a_malformed_user_is_refused(url: str) -> None:  # noqa: F811
    assert_error(
        run(url, "schedule", "--to", "slack:@bob", "--when", "in 1 hour", "--text", "x"),
        "is not a Slack user",
    )
    assert_error(
        run(url, "schedule", "--to", "discord:@bob", "--when", "in 1 hour", "--text", "x"),
        "is not a Discord user",
    )
