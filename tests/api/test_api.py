"""The HTTP API as a program sees it: every route through a real HTTP client against a
running ``herald run``, on SQLite and PostgreSQL, and every refusal."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from core.cases import Herald
from core.clock import ManualClock
from core.store import AuditFilter
from tests.api.conftest import ROOT, Service, start_service, stop_service, wait_for


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The RFC 9457 problem of a refusal, checked for shape."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["request_id"] == response.headers["X-Request-Id"]
    assert body["detail"] and body["title"] and body["type"].startswith("/v1/docs#problem-")
    return dict(body)


def new(client: httpx.Client, **fields: Any) -> httpx.Response:
    body = {"to": "log:", "when": "tomorrow at 9am", "text": "standup", **fields}
    return client.post("/v1/schedules", json=body)


def test_a_schedule_made_read_changed_and_cancelled(service: Service) -> None:
    with service.client(service.token("local:api-a")) as c:
        made = new(c, when="every weekday at 9am", tz="Europe/Berlin")
        assert made.status_code == 201, made.text
        s = made.json()
        assert made.headers["Location"] == f"/v1/schedules/{s['id']}"
        assert made.headers["ETag"] == '"1"'
        assert s["owner"] == "local:api-a" and s["recurring"] and s["state"] == "active"
        assert s["next_run_at"].endswith("Z") and s["timezone"] == "Europe/Berlin"
        assert made.headers["X-Request-Id"]

        got = c.get(f"/v1/schedules/{s['id']}")
        assert got.status_code == 200 and got.json() == s and got.headers["ETag"] == '"1"'

        edited = c.patch(
            f"/v1/schedules/{s['id']}",
            json={"text": "stand-up, 10 min"},
            headers={"If-Match": '"1"'},
        )
        assert edited.status_code == 200, edited.text
        assert edited.json()["text"] == "stand-up, 10 min" and edited.headers["ETag"] == '"2"'
        stale = c.patch(f"/v1/schedules/{s['id']}", json={"text": "x"}, headers={"If-Match": '"1"'})
        assert "version 2" in problem(stale, 412)["detail"]
        assert c.get(f"/v1/schedules/{s['id']}").json()["text"] == "stand-up, 10 min"

        skipped = c.post(f"/v1/schedules/{s['id']}/skip")
        assert skipped.status_code == 200 and skipped.json()["next_run_at"] > s["next_run_at"]
        paused = c.post(
            f"/v1/schedules/{s['id']}/pause", headers={"If-Match": skipped.headers["ETag"]}
        )
        assert paused.json()["state"] == "paused"
        again = c.post(f"/v1/schedules/{s['id']}/pause")
        assert "already paused" in problem(again, 409)["detail"]
        assert c.post(f"/v1/schedules/{s['id']}/resume").json()["state"] == "active"
        cancelled = c.post(f"/v1/schedules/{s['id']}/cancel")
        assert cancelled.json()["state"] == "cancelled"

        jobs = c.get(f"/v1/schedules/{s['id']}/jobs")
        assert jobs.status_code == 200
        assert {j["state"] for j in jobs.json()["jobs"]} <= {"cancelled", "skipped"}


def test_a_create_repeated_with_its_idempotency_key_answers_the_first(service: Service) -> None:
    with service.client(service.token("local:api-b")) as c:
        key = {"Idempotency-Key": "deploy-4711"}
        first = c.post(
            "/v1/schedules", json={"to": "log:", "when": "in 2 hours", "text": "go"}, headers=key
        )
        again = c.post(
            "/v1/schedules", json={"to": "log:", "when": "in 2 hours", "text": "go"}, headers=key
        )
        assert first.status_code == 201 and again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["id"] == first.json()["id"]
        other = c.post(
            "/v1/schedules", json={"to": "log:", "when": "in 2 hours", "text": "other"}, headers=key
        )
        assert "different schedule" in problem(other, 422)["detail"]
        mine = c.get("/v1/schedules").json()["items"]
        assert [s["id"] for s in mine] == [first.json()["id"]]


def test_lists_come_in_pages_newest_first_with_the_clis_filters(service: Service) -> None:
    with service.client(service.token("local:api-c")) as c:
        ids = [new(c, text=f"note {i}").json()["id"] for i in range(5)]
        new(c, to="log:other", text="elsewhere")
        seen: list[int] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 2, "to": "log:"}
            if cursor:
                params["cursor"] = cursor
            page = c.get("/v1/schedules", params=params).json()
            seen += [s["id"] for s in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == sorted(ids, reverse=True)
        found = c.get("/v1/schedules", params={"search": "NOTE 3"}).json()["items"]
        assert [s["text"] for s in found] == ["note 3"]
        assert c.get("/v1/schedules", params={"state": "pending"}).json()["items"]
        bad = c.get("/v1/schedules", params={"state": "sleeping"})
        assert "Unknown state 'sleeping'" in problem(bad, 422)["detail"]
        assert "cursor" in problem(c.get("/v1/schedules", params={"cursor": "xyz"}), 400)["detail"]
        assert "limit" in problem(c.get("/v1/schedules", params={"limit": 0}), 422)["detail"]
        everyone = c.get("/v1/schedules", params={"all": "true"})
        assert "Only operators and admins" in problem(everyone, 403)["detail"]


def test_a_time_expression_previewed(service: Service) -> None:
    with service.client(service.token("local:api-d", scope="read")) as c:
        r = c.get(
            "/v1/when", params={"when": "every monday at 9am", "tz": "Asia/Tokyo", "count": 3}
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["recurring"] and body["timezone"] == "Asia/Tokyo"
        assert len(body["occurrences"]) == 3
        first = datetime.fromisoformat(body["occurrences"][0])
        assert first.utcoffset() == timedelta(0) and first.astimezone(UTC).hour == 0  # 09:00 JST
        bad = c.get("/v1/when", params={"when": "whenever you like"})
        assert problem(bad, 422)["detail"]


def test_an_import_is_all_or_nothing_unless_asked(service: Service) -> None:
    with service.client(service.token("local:api-e")) as c:
        good = "\n".join(
            json.dumps({"to": "log:", "when": f"in {i + 2} hours", "text": f"imported {i}"})
            for i in range(3)
        )
        bad = good + '\n{"to": "log:", "when": "never ever", "text": "x"}\nnot json\n'
        jsonl = {"Content-Type": "application/jsonl"}
        refused = c.post("/v1/imports", content=bad, headers=jsonl)
        body = problem(refused, 422)
        assert [line["line"] for line in body["invalid"]] == [4, 5]
        assert c.get("/v1/schedules").json()["items"] == []  # nothing imported
        partial = c.post("/v1/imports", content=bad, headers=jsonl, params={"skip_invalid": "true"})
        assert partial.status_code == 201, partial.text
        assert partial.json()["imported"] == 3 and len(partial.json()["invalid"]) == 2
        assert len(c.get("/v1/schedules").json()["items"]) == 3
        wrong_type = c.post("/v1/imports", content=good, headers={"Content-Type": "image/png"})
        problem(wrong_type, 415)


def test_dead_letters_requested_approved_rejected_discarded(
    service: Service, gone_url: str
) -> None:
    member = service.token("local:api-f")
    admin = service.token(ROOT, scope="admin")

    async def already_due(herald: Herald) -> list[int]:
        # made on a clock a minute behind: "in 2 seconds" is already due for the
        # running dispatcher, so nothing waits for a schedule's time
        made = [
            await herald.create_schedule(
                "local:api-f", to=gone_url, when="in 2 seconds", text=f"lost {i}"
            )
            for i in range(3)
        ]
        return [s.id for s, _ in made]

    ids = service.run(already_due, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
    with service.client(member) as c, service.client(admin) as a:

        def all_dead() -> list[dict[str, Any]]:
            items = c.get("/v1/dead-letters").json()["items"]
            return items if {d["schedule_id"] for d in items} >= set(ids) else []

        letters = wait_for(all_dead, what="the three deliveries to a 410 receiver die")
        assert all("410" in (d["last_error"] or "") for d in letters)
        assert c.get(f"/v1/schedules/{ids[0]}").json()["state"] == "failed"
        jobs = [d["job_id"] for d in sorted(letters, key=lambda d: d["schedule_id"])]

        asked = c.post(f"/v1/dead-letters/{jobs[0]}/retry")
        assert asked.json() == {"job_id": jobs[0], "result": "requested", "count": 1}
        c.post(f"/v1/dead-letters/{jobs[1]}/retry")
        assert (
            "needs admin" in problem(c.post(f"/v1/dead-letters/{jobs[0]}/approve"), 403)["detail"]
        )
        shown = c.get(f"/v1/dead-letters/{jobs[0]}").json()
        assert shown["retry_requested_by"] == "local:api-f"

        approved = a.post(f"/v1/dead-letters/{jobs[0]}/approve")
        assert approved.json()["result"] == "retried" and approved.json()["count"] == 1
        rejected = a.post(f"/v1/dead-letters/{jobs[1]}/reject", json={"reason": "the hook is gone"})
        assert rejected.json()["result"] == "rejected"
        assert (
            c.get(f"/v1/dead-letters/{jobs[1]}").json()["retry_reject_reason"] == "the hook is gone"
        )
        no_request = a.post(f"/v1/dead-letters/{jobs[2]}/reject")
        assert "no retry request" in problem(no_request, 409)["detail"]
        assert a.post(f"/v1/dead-letters/{jobs[2]}/discard").json()["result"] == "discarded"
        problem(c.get(f"/v1/dead-letters/{jobs[2]}"), 404)
        requested = a.get("/v1/dead-letters", params={"requested": "true"}).json()["items"]
        assert jobs[0] not in [d["job_id"] for d in requested]


def test_who_a_token_acts_as_and_what_the_audit_log_says(service: Service) -> None:
    token = service.token("local:api-g", scope="read")
    token_id = token.split("_")[1]
    with service.client(token) as c:
        me = c.get("/v1/me").json()
        assert me == {
            "member": "local:api-g",
            "tenant": "local",
            "role": "member",
            "scope": "read",
            "token": token_id,
            "expires_at": me["expires_at"],
        }
        assert datetime.fromisoformat(me["expires_at"]) > datetime.now(UTC) + timedelta(days=89)
    with service.client(service.token("local:api-g")) as c:
        made = new(c).json()
        writer_id = c.get("/v1/me").json()["token"]

    async def audit(herald: Herald) -> list[Any]:
        return await herald.audit_log(
            ROOT, AuditFilter(surface="api", object_type="schedule", object_id=str(made["id"]))
        )

    rows = service.run(audit)
    assert [(r.action, r.actor, r.surface, r.details["token"]) for r in rows] == [
        ("schedule.create", "local:api-g", "api", writer_id)
    ]


def test_refusals(service: Service) -> None:
    with service.client(None) as anonymous:
        r = anonymous.get("/v1/schedules")
        assert problem(r, 401)["detail"].startswith("Send an API token")
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        r = anonymous.get("/v1/schedules", headers={"Authorization": "Basic dXNlcjpwYXNz"})
        assert "bearer" in problem(r, 401)["detail"]
        forged = "hk_0123456789ab_" + "A" * 43
        r = anonymous.get("/v1/me", headers={"Authorization": f"Bearer {forged}"})
        assert problem(r, 401)["detail"] == "Unknown API token."
        assert forged not in r.text

    revoked = service.token("local:api-h")

    async def revoke(herald: Herald) -> None:
        await herald.revoke_token(ROOT, revoked)

    service.run(revoke)
    with service.client(revoked) as c:
        assert "revoked" in problem(c.get("/v1/me"), 401)["detail"]

    expired = service.token(
        "local:api-h", expires="1h", made_at=datetime.now(UTC) - timedelta(hours=2)
    )
    with service.client(expired) as c:
        assert "expired" in problem(c.get("/v1/me"), 401)["detail"]

    with service.client(service.token("local:api-h", scope="read")) as c:
        r = new(c)
        assert "read scope" in problem(r, 403)["detail"]

    with service.client(service.token("local:api-h")) as c:
        theirs = new(c).json()["id"]
        problem(
            c.post(
                "/v1/schedules", content=b"{not json", headers={"Content-Type": "application/json"}
            ),
            400,
        )
        assert (
            "text: required"
            in problem(c.post("/v1/schedules", json={"to": "log:", "when": "in 1 hour"}), 422)[
                "detail"
            ]
        )
        assert (
            "unknown"
            in problem(
                c.post(
                    "/v1/schedules",
                    json={"to": "log:", "when": "in 1 hour", "text": "x", "colour": "red"},
                ),
                422,
            )["detail"].lower()
        )
        assert "no kind" in problem(new(c, to="carrier-pigeon"), 422)["detail"]
        problem(c.get("/v1/schedules/not-a-number"), 404)
        problem(c.get("/v1/schedules/2182406332587194"), 404)  # past PostgreSQL's INTEGER
        problem(c.delete("/v1/schedules"), 405)
        big = c.post(
            "/v1/schedules", json={"to": "log:", "when": "in 1 hour", "text": "x" * 70_000}
        )
        problem(big, 413)

    # another tenant's member sees nothing of it, and cannot change it
    with service.client(service.token("slack:U0OTHER", tenant="slack:T0OTHER")) as other:
        assert "no schedule" in problem(other.get(f"/v1/schedules/{theirs}"), 404)["detail"]
        problem(other.post(f"/v1/schedules/{theirs}/cancel"), 404)
        assert other.get("/v1/schedules").json()["items"] == []
        # and its quota (6 live schedules a member)
        for i in range(6):
            assert new(other, text=f"q{i}").status_code == 201
        quota = new(other, text="one too many")
        assert problem(quota, 403)["type"].endswith("quota-exceeded")


def test_a_token_past_its_rate_is_told_when_to_come_back(tmp_path: Any) -> None:
    svc = start_service(
        f"sqlite:///{tmp_path}/herald.db", HERALD_API_BURST="3", HERALD_API_RATE="0.2"
    )
    try:
        with svc.client(svc.token("local:api-i")) as c:
            answers = [c.get("/v1/me") for _ in range(4)]
            assert [a.status_code for a in answers[:3]] == [200, 200, 200]
            body = problem(answers[3], 429)
            assert 1 <= int(answers[3].headers["Retry-After"]) <= 5
            assert "at once" in body["detail"]
        with svc.client(svc.token("local:api-j")) as other:  # a bucket per token
            assert other.get("/v1/me").status_code == 200
    finally:
        stop_service(svc)


def test_a_calendar_given_as_text_skips_its_event_days(service: Service) -> None:
    with service.client(service.token("local:api-k")) as c:
        when = c.get("/v1/when", params={"when": "every day at 9am", "tz": "UTC", "count": 2})
        first, second = when.json()["occurrences"]
        day = datetime.fromisoformat(first).strftime("%Y%m%d")
        ics = (
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:holiday-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;VALUE=DATE:{day}\r\n"
            "SUMMARY:Company holiday\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        )
        made = new(c, when="every day at 9am", tz="UTC", skip_files={"holidays.ics": ics})
        assert made.status_code == 201, made.text
        assert made.json()["next_run_at"] == second  # the holiday's 09:00 is skipped
        bad = new(c, when="every day at 9am", skip_files={"x.ics": "not a calendar"})
        assert problem(bad, 422)["detail"]
        assert len(c.get("/v1/schedules").json()["items"]) == 1  # the refused one made nothing
