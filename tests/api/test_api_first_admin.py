"""A role given while ``herald run`` is running takes effect at its next request (issue
33): a fresh install without HERALD_ADMINS, a token for a member, ``herald admin init``
at the terminal, and the very next API request of that token can approve a dead letter.
Before it, the refusal says the role (403), never "not found". On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock, SystemClock
from core.settings import load_settings
from core.store import AuditFilter, Store
from tests.api.conftest import Service, serving, wait_for
from tests.api.test_api import problem

#: A fresh install: nobody is an admin, in no process's environment.
FRESH = {"HERALD_ADMINS": ""}
DANA = "local:dana"  # becomes the first admin while herald run is running
ERIN = "local:erin"  # whose message died


def _herald_run(service: Service, coro_fn: Any, clock: Any = None) -> Any:
    """``coro_fn(herald)`` in this process, over the service's database, with the
    service's settings (no HERALD_ADMINS)."""

    async def go() -> Any:
        store = await Store.open(service.url)
        try:
            settings = load_settings(
                HERALD_DATABASE_URL=service.url,
                HERALD_DEFAULT_TZ="UTC",
                HERALD_WEBHOOK_ALLOW_PRIVATE="true",
                _env_file=None,
                **FRESH,
            )
            return await coro_fn(Herald(store, settings, clock or SystemClock()))
        finally:
            await store.close()

    return asyncio.run(go())


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fresh_service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """``herald run`` on a fresh database, with no HERALD_ADMINS."""
    with serving(request, tmp_path_factory, "first-admin", **FRESH) as svc:
        yield svc


def test_a_first_admin_made_at_the_terminal_acts_at_the_running_services_next_request(
    fresh_service: Service, gone_url: str
) -> None:
    svc = fresh_service

    async def setup(herald: Herald) -> tuple[str, str, str]:
        # made on a clock a minute behind: "in 2 seconds" is due for the running
        # dispatcher at once, so nothing waits for a schedule's time
        await herald.create_schedule(ERIN, to=gone_url, when="in 2 seconds", text="lost")
        # each member makes their own token (nobody is an admin yet); an admin scope
        # carries the member's whole role, whatever it is at each request
        dana = await herald.create_token(DANA, DANA, scope="admin")
        frank = await herald.create_token("local:frank", "local:frank", scope="admin")
        stranger = Principal("slack:UOTHER", "slack:TOTHER")
        other = await herald.create_token(stranger, "slack:UOTHER", scope="admin")
        return dana.secret, frank.secret, other.secret

    dana, frank, other = _herald_run(
        svc, setup, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=1))
    )

    async def dead(herald: Herald) -> list[int]:
        return [d.job_id for d in await herald.dead_letters(ERIN)]

    [job] = wait_for(lambda: _herald_run(svc, dead), what="the delivery to a 410 receiver dies")

    with svc.client(dana) as d, svc.client(frank) as f, svc.client(other) as o:
        # before: refused for the role, and the refusal says so (it said 404 before)
        refused = problem(d.post(f"/v1/dead-letters/{job}/approve"), 403)
        assert refused["detail"].startswith("Only Herald admins can retry or discard")
        seen = problem(f.get(f"/v1/dead-letters/{job}"), 403)["detail"]
        assert seen == (
            f"Dead letter {job} is another member's: only operators and admins can see or "
            "act on other members' dead letters."
        )
        # another tenant's member learns nothing of it
        assert "that you can see" in problem(o.get(f"/v1/dead-letters/{job}"), 404)["detail"]
        assert d.get("/v1/me").json()["role"] == "member"

        # at the terminal, in one documented step (the running service is not restarted)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
            "HERALD_DATABASE_URL": svc.url,
            "USER": "dana",
            **FRESH,
        }
        made = subprocess.run(
            [sys.executable, "-m", "bot.cli", "admin", "init"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        assert made.stdout.startswith("local:dana is now an admin of this database")

        # the very next request of the same token acts as an admin
        assert d.get("/v1/me").json()["role"] == "admin"
        approved = d.post(f"/v1/dead-letters/{job}/approve")
        assert approved.status_code == 200, approved.text
        assert approved.json() == {"job_id": job, "result": "retried", "count": 1}

        again = subprocess.run(
            [sys.executable, "-m", "bot.cli", "admin", "init"],
            env={**env, "USER": "frank"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 2
        assert "This database has an admin already (local:dana)" in again.stderr

    async def audit(herald: Herald) -> list[Any]:
        return await herald.audit_log(DANA, AuditFilter(action="member.first_admin"))

    rows = _herald_run(svc, audit)
    assert [(r.action, r.actor, r.surface) for r in reversed(rows)] == [
        ("member.first_admin", DANA, "cli"),
        ("member.first_admin.denied", "local:frank", "cli"),
    ]
