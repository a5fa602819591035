"""Until done and approvals through the HTTP API (issue 40), and the CLI through it
(HERALD_API_URL): a schedule made and edited with a ladder, Done on its delivered
message, the messages awaiting Done, and requests listed, approved and rejected, with
the refusals each route answers (another workspace's 404, a member who is not the
author 403, one's own request 403, a non-approver 403), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.cases import Herald
from core.clock import ManualClock
from tests.api.conftest import ROOT, Service, serving, wait_for
from tests.api.test_api import problem
from tests.support.herald_cli import herald as run_herald

NEWS = "webhook:https://hooks.example.com/news"  # an announcement channel here
CAROL = "local:carol"  # a member who approves (HERALD_APPROVERS)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """``herald run`` with an announcement channel and a member approver."""
    with serving(
        request,
        tmp_path_factory,
        "until-done",
        HERALD_ANNOUNCEMENT_CHANNELS=NEWS,
        HERALD_APPROVERS=CAROL,
    ) as svc:
        yield svc


def _delivered_until_done(service: Service, owner: str) -> int:
    """The job of a message sent until done, once the running dispatcher delivered it
    (made on a clock a minute behind: "in 2 seconds" is already due)."""

    async def made(herald: Herald) -> int:
        s, _ = await herald.create_schedule(
            owner,
            to="log:",
            when="in 2 seconds",
            text="Check the backups",
            until_done={"nag": "15m"},
        )
        assert s.id is not None
        return s.id

    schedule_id = service.run(made, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
    with service.client(service.token(owner)) as c:

        def awaiting() -> list[dict[str, Any]]:
            items = c.get("/v1/awaiting-done").json()["items"]
            return [w for w in items if w["schedule_id"] == schedule_id]

        [waiting] = wait_for(awaiting, what="the message sent until done is delivered")
    assert waiting["owner"] == owner and waiting["steps_waiting"] > 0
    return int(waiting["job_id"])


def test_a_schedule_is_made_and_edited_with_its_ladder(service: Service) -> None:
    with service.client(service.token("local:ud-a")) as c:
        made = c.post(
            "/v1/schedules",
            json={
                "to": "log:",
                "when": "every weekday at 9am",
                "text": "Check the backups",
                "until_done": {"nag": "15m", "escalate": [{"to": "log:", "after": "1h"}]},
            },
        )
        assert made.status_code == 201, made.text
        s = made.json()
        assert s["until_done"]["nag"] == 900
        assert s["until_done"]["levels"] == [{"to": ["log:"], "after": 3600}]
        assert s["until_done"]["words"] == (
            "until done, nag every 15 minutes, escalate to log: after 1 hour"
        )
        too_often = c.post(
            "/v1/schedules",
            json={"to": "log:", "when": "tomorrow", "text": "x", "until_done": {"nag": "1m"}},
        )
        assert "Nags come at most every 5 minutes" in problem(too_often, 422)["detail"]
        backwards = {"to": "log:", "when": "tomorrow", "text": "x"}
        backwards["until_done"] = {  # type: ignore[assignment]
            "escalate": [{"to": "log:", "after": "2h"}, {"to": "log:", "after": "1h"}]
        }
        refused = problem(c.post("/v1/schedules", json=backwards), 422)["detail"]
        assert refused == "Each escalation level comes later than the one before."

        path = f"/v1/schedules/{s['id']}"
        changed = c.patch(path, json={"until_done": {"nag": "30m"}})
        assert changed.json()["until_done"]["words"] == "until done, nag every 30 minutes"
        assert problem(c.patch(path, json={"until_done": 0}), 422)
        assert problem(c.patch(path, json={"until_done": True}), 422)
        plain = c.patch(path, json={"until_done": False})
        assert plain.status_code == 200 and plain.json()["until_done"] is None
        assert "until_done" not in plain.json()["options"]


def test_done_through_the_api_and_who_may_press_it(service: Service) -> None:
    job_id = _delivered_until_done(service, "local:ud-b")
    other_tenant = service.token("slack:U0OTHER", tenant="slack:T0OTHER")
    with (
        service.client(service.token("local:ud-b")) as author,
        service.client(service.token("local:ud-c")) as stranger,
        service.client(other_tenant) as outsider,
    ):
        assert "no message" in problem(outsider.post(f"/v1/jobs/{job_id}/done"), 404)["detail"]
        denied = problem(stranger.post(f"/v1/jobs/{job_id}/done"), 403)["detail"]
        assert "its author, operators and admins" in denied
        # where a click was seen is a chat platform's to say, never an API caller's
        claimed = stranger.post(f"/v1/jobs/{job_id}/done", json={"seen_in": "log:"})
        assert "its author, operators and admins" in problem(claimed, 403)["detail"]
        jobs = author.get(f"/v1/schedules/{_schedule_of(author, job_id)}/jobs").json()["jobs"]
        nag = next(j for j in jobs if j["ladder"] == "nag 1")
        assert (
            "not sent until done"
            in problem(author.post(f"/v1/jobs/{nag['id']}/done"), 422)["detail"]
        )

        done = author.post(f"/v1/jobs/{job_id}/done")
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["job_id"] == job_id and body["by"] == "local:ud-b"
        assert body["already"] is False and body["stopped"] >= 1 and body["waited_s"] >= 0
        again = author.post(f"/v1/jobs/{job_id}/done").json()
        assert again["already"] is True and again["at"] == body["at"]
        assert all(w["job_id"] != job_id for w in author.get("/v1/awaiting-done").json()["items"])
        shown = author.get(f"/v1/schedules/{body['schedule_id']}/jobs").json()["jobs"]
        message = next(j for j in shown if j["id"] == job_id)
        assert message["state"] == "acknowledged" and message["done_by"] == "local:ud-b"
        assert all(j["state"] != "pending" for j in shown if j["ladder"].startswith("nag"))
        ack = author.get("/v1/awaiting-done").json()["ack"]
        assert ack["count"] >= 1 and ack["p50_s"] is not None


def _schedule_of(client: Any, job_id: int) -> int:
    items = client.get("/v1/awaiting-done").json()["items"]
    return int(next(w["schedule_id"] for w in items if w["job_id"] == job_id))


def test_approvals_listed_approved_and_rejected(service: Service) -> None:
    admin = service.token(ROOT, scope="admin")
    with (
        service.client(service.token("local:ud-d")) as author,
        service.client(service.token(CAROL)) as carol,
        service.client(service.token("local:ud-e")) as bob,
        service.client(admin) as root,
        service.client(service.token("slack:U0OTHER", tenant="slack:T0OTHER")) as outsider,
    ):
        made = author.post(
            "/v1/schedules", json={"to": NEWS, "when": "tomorrow at 9am", "text": "Closed Friday"}
        )
        assert made.status_code == 201, made.text
        held = made.json()
        assert held["lifecycle"] == "awaiting" and held["state"] == "awaiting approval"
        jobs = author.get(f"/v1/schedules/{held['id']}/jobs").json()["jobs"]
        assert jobs == []  # nothing waits to be sent until approved

        mine = author.get("/v1/approvals").json()["items"]
        [request] = [r for r in mine if r["schedule_id"] == held["id"]]
        assert request["kind"] == "send" and request["state"] == "pending"
        assert "announcement channel" in request["why"] and request["text"] == "Closed Friday"
        assert request["id"] in {r["id"] for r in carol.get("/v1/approvals").json()["items"]}
        assert carol.get("/v1/approvals", params={"kind": "retry"}).json()["items"] == []
        assert problem(carol.get("/v1/approvals", params={"state": "maybe"}), 422)

        own = carol.post(
            "/v1/schedules", json={"to": NEWS, "when": "tomorrow at 9am", "text": "Carol's news"}
        ).json()
        own_request = next(
            r["id"]
            for r in carol.get("/v1/approvals").json()["items"]
            if r["schedule_id"] == own["id"]
        )
        path = f"/v1/approvals/{request['id']}"
        assert "approvers" in problem(bob.post(f"{path}/approve"), 403)["detail"]
        assert problem(outsider.post(f"{path}/approve"), 404)
        assert problem(carol.post(f"/v1/approvals/{2**31}/approve"), 404)
        self_approved = problem(carol.post(f"/v1/approvals/{own_request}/approve"), 403)
        assert "your own" in self_approved["detail"]

        approved = carol.post(f"{path}/approve")
        assert approved.status_code == 200, approved.text
        assert approved.json() == {
            "approval_id": request["id"],
            "result": "approved",
            "count": 1,
            "sends": 1,
            "retries": 0,
        }
        assert author.get(f"/v1/schedules/{held['id']}").json()["lifecycle"] == "active"
        armed = author.get(f"/v1/schedules/{held['id']}/jobs").json()["jobs"]
        assert [j["state"] for j in armed] == ["pending"]
        assert "already" in problem(carol.post(f"{path}/approve"), 422)["detail"]

        rejected = root.post(
            f"/v1/approvals/{own_request}/reject", json={"reason": "Not this week."}
        )
        assert rejected.json()["result"] == "rejected", rejected.text
        assert carol.get(f"/v1/schedules/{own['id']}").json()["lifecycle"] == "cancelled"
        decided = carol.get("/v1/approvals", params={"state": "all"}).json()["items"]
        row = next(r for r in decided if r["id"] == own_request)
        assert (row["state"], row["reason"], row["decided_by"]) == (
            "rejected",
            "Not this week.",
            ROOT,
        )


# --- the CLI through the running service ---------------------------------------------


def herald(service: Service, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **service.env,
        "HERALD_API_URL": service.base,
        "HERALD_API_TOKEN": token,
        # these commands must not open the database: a wrong URL proves it
        "HERALD_DATABASE_URL": "sqlite:////nonexistent/dir/herald.db",
    }
    env.pop("HERALD_HTTP_PORT", None)
    return run_herald(*args, env=env, timeout=120)


def test_the_cli_sends_until_done_and_decides_through_the_api(service: Service) -> None:
    author = service.token("local:ud-f")
    made = herald(
        service,
        author,
        "schedule",
        "--to",
        "log:",
        "--when",
        "tomorrow at 9am",
        "--text",
        "Rotate the keys",
        "--until-done",
        "--nag",
        "15m",
        "--escalate",
        "log:",
        "--after",
        "1h",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["until_done"]["nag"] == 900
    schedule_id = str(json.loads(made.stdout)["id"])
    shown = herald(service, author, "show", schedule_id)
    assert "sent:    until done, nag every 15 minutes, escalate to log: after 1 hour" in (
        shown.stdout
    )
    too_often = herald(service, author, "edit", schedule_id, "--until-done", "--nag", "1m")
    assert too_often.returncode == 2 and "at most every 5 minutes" in too_often.stderr
    plain = herald(service, author, "edit", schedule_id, "--no-until-done")
    assert plain.returncode == 0 and "until done" not in plain.stdout

    job_id = _delivered_until_done(service, "local:ud-f")
    waiting = herald(service, author, "awaiting")
    assert any(line.split()[:1] == [str(job_id)] for line in waiting.stdout.splitlines())
    stranger = herald(service, service.token("local:ud-g"), "done", str(job_id))
    assert stranger.returncode == 2 and "its author" in stranger.stderr
    done = herald(service, author, "done", str(job_id))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Marked message {job_id} done (stopped ")
    again = herald(service, author, "done", str(job_id))
    assert again.stdout.startswith("Already done by local:ud-f at ")

    held = herald(
        service, author, "schedule", "--to", NEWS, "--when", "tomorrow at 9am", "--text", "News"
    )
    assert "awaiting approval" in held.stdout, held.stderr
    carol = service.token(CAROL)
    listed = json.loads(herald(service, carol, "approvals", "list", "--json").stdout)
    request = next(r["id"] for r in listed if r["text"] == "News")
    table = herald(service, carol, "approvals", "list").stdout
    assert any(line.split()[:2] == [str(request), "send"] for line in table.splitlines())
    refused = herald(service, service.token("local:ud-g"), "approvals", "approve", str(request))
    assert refused.returncode == 2 and "approvers" in refused.stderr
    approved = herald(service, carol, "approvals", "approve", str(request))
    assert approved.stdout.strip() == "Approved 1 request(s).", approved.stderr
    twice = herald(service, carol, "approvals", "reject", str(request), "--reason", "late")
    assert twice.returncode == 2 and "already" in twice.stderr
