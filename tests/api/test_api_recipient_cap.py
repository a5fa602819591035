"""Issue 32 through the HTTP API: a token's member cannot flood one destination past
``HERALD_RECIPIENT_HOURLY_CAP`` (a 403 quota-exceeded problem with the sentence), nor
take a key of the shape Herald keeps for feed reminders (422)."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import start_service, stop_service
from tests.api.test_api import problem


def test_a_flood_to_one_destination_is_refused_and_a_feed_key_too(tmp_path: Any) -> None:
    svc = start_service(f"sqlite:///{tmp_path}/herald.db", HERALD_RECIPIENT_HOURLY_CAP="2")
    try:
        token = svc.token("slack:U0CAP", tenant="slack:T0CAP")
        with svc.client(token) as c:
            body = {"to": "slack:C0ALERTS", "when": "in 2 hours", "text": "deploy"}
            for _ in range(2):
                assert c.post("/v1/schedules", json=body).status_code == 201
            refused = problem(c.post("/v1/schedules", json=body), 403)
            assert refused["type"].endswith("quota-exceeded")
            assert refused["detail"].startswith(
                "You already have 2 messages to slack:C0ALERTS due within that hour ("
            )
            assert "the limit is 2 per hour per recipient" in refused["detail"]
            assert len(c.get("/v1/schedules").json()["items"]) == 2
            # another destination is another count
            other = {**body, "to": "slack:C0OTHER"}
            assert c.post("/v1/schedules", json=other).status_code == 201

            keyed = c.post(
                "/v1/schedules",
                json={**other, "when": "in 5 hours"},
                headers={"Idempotency-Key": "feed:1:0123456789abcdef0123456789abcdef"},
            )
            assert "are Herald's own" in problem(keyed, 422)["detail"]
            assert len(c.get("/v1/schedules").json()["items"]) == 3
    finally:
        stop_service(svc)
