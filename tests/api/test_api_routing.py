"""Routing (issue 35) through the HTTP API and the import: one schedule to several
recipients and chains (``"to": [..., {"first_of": [...]}]``), each person's own hour
(``"time_of": "recipient"``), an edit's ``add``/``remove``, how the recipients fared,
and every bad shape refused with a sentence, changing nothing. The API runs as
``herald run`` on SQLite and PostgreSQL; the import through its use case on both."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from core.actors import Principal
from core.cases import Herald, ImportRejected, import_schedules
from core.channels.base import Destination
from core.clock import ManualClock
from core.errors import InvalidInput
from core.settings import Settings, load_settings
from core.store import ScheduleQuery, Store
from core.tenancy import QuotaExceeded
from tests.api.conftest import Service, wait_for
from tests.api.test_api import problem
from tests.conftest import START
from tests.support.channels import RecordingChannel

CHAIN = {"first_of": ["email:alice@example.com", "slack:C0ALICEDESK"]}


def _create(c: httpx.Client, **fields: Any) -> httpx.Response:
    body = {"when": "tomorrow at 9am", "text": "Stand-up", **fields}
    return c.post("/v1/schedules", json=body)


def _mine(c: httpx.Client) -> list[dict[str, Any]]:
    return list(c.get("/v1/schedules").json()["items"])


# --- the API ------------------------------------------------------------------------


def test_several_recipients_make_one_schedule_listed_and_shown_with_them(
    service: Service,
) -> None:
    with service.client(service.token("local:route-a")) as c:
        made = _create(c, to=["slack:C0OPS", "slack:C0DEV", CHAIN])
        assert made.status_code == 201, made.text
        s = made.json()
        assert s["destination"] == "slack:C0OPS"
        assert s["recipients"] == [
            {"id": 0, "to": ["slack:C0OPS"]},
            {"id": 1, "to": ["slack:C0DEV"]},
            {"id": 2, "to": ["email:alice@example.com", "slack:C0ALICEDESK"]},
        ]
        assert [x["id"] for x in _mine(c)] == [s["id"]]  # one schedule, not three
        shown = c.get(f"/v1/schedules/{s['id']}").json()
        assert shown["recipients"] == s["recipients"] and shown["fared"] is None
        # the list's filter by destination matches any recipient, a chain's step too
        for where in ("slack:C0OPS", "slack:C0DEV", "slack:C0ALICEDESK", "email:alice@example.com"):
            found = c.get("/v1/schedules", params={"to": where}).json()["items"]
            assert [x["id"] for x in found] == [s["id"]], where
        assert c.get("/v1/schedules", params={"to": "slack:C0ELSEWHERE"}).json()["items"] == []
        jobs = c.get(f"/v1/schedules/{s['id']}/jobs").json()["jobs"]
        assert sorted(j["recipient"] for j in jobs) == [0, 1, 2]
        assert {j["due_at"] for j in jobs} == {s["next_run_at"]}
        assert {j["step"] for j in jobs} == {0}
        by = {j["recipient"]: j["destination"] for j in jobs}
        assert by[1] == "slack:C0DEV" and by[2] == "email:alice@example.com"


def test_an_edit_replaces_adds_and_removes_recipients_keeping_the_rest(
    service: Service,
) -> None:
    with service.client(service.token("local:route-b")) as c:
        s = _create(c, to=["slack:C0ONE", "slack:C0TWO"]).json()
        changed = c.patch(
            f"/v1/schedules/{s['id']}",
            json={"add": ["slack:C0THREE", CHAIN], "remove": ["slack:C0ONE"]},
            headers={"If-Match": '"1"'},
        )
        assert changed.status_code == 200, changed.text
        got = changed.json()["recipients"]
        assert [r["to"] for r in got] == [
            ["slack:C0TWO"],
            ["slack:C0THREE"],
            ["email:alice@example.com", "slack:C0ALICEDESK"],
        ]
        assert got[0]["id"] == 1  # kept: its number (and its jobs) stay
        assert changed.json()["destination"] == "slack:C0TWO"
        jobs = c.get(f"/v1/schedules/{s['id']}/jobs").json()["jobs"]
        waiting = {j["recipient"] for j in jobs if j["state"] == "pending"}
        assert waiting == {r["id"] for r in got}

        replaced = c.patch(f"/v1/schedules/{s['id']}", json={"to": "slack:C0ONLY"})
        assert replaced.status_code == 200, replaced.text
        assert [r["to"] for r in replaced.json()["recipients"]] == [["slack:C0ONLY"]]
        gone = c.patch(f"/v1/schedules/{s['id']}", json={"remove": ["slack:C0TWO"]})
        assert "slack:C0TWO is not a recipient" in problem(gone, 422)["detail"]
        empty = c.patch(f"/v1/schedules/{s['id']}", json={"remove": ["slack:C0ONLY"]})
        assert "leave no recipient" in problem(empty, 422)["detail"]
        assert c.get(f"/v1/schedules/{s['id']}").json()["version"] == 3


def test_bad_recipients_are_refused_with_a_sentence_and_change_nothing(
    service: Service,
) -> None:
    with service.client(service.token("local:route-c")) as c:
        refusals = {
            "must be a destination": {"to": {"first_of": ["slack:C0A"]}},
            "must name at least one recipient": {"to": []},
            "a chain (first_of) has 1 to 5 destinations, not 6": {
                "to": [{"first_of": [f"slack:C0{i}" for i in range(6)]}]
            },
            "a chain (first_of) has 1 to 5 destinations, not 0": {"to": [{"first_of": []}]},
            "each recipient must be a destination": {"to": ["slack:C0A", {"to": ["slack:C0B"]}]},
            "slack:C0A is named twice": {
                "to": ["slack:C0A", {"first_of": ["slack:C0B", "slack:C0A"]}]
            },
            "time_of": {"to": "slack:C0A", "time_of": "nobody"},
            "step_timeout": {"to": [CHAIN], "step_timeout": 5},
        }
        for sentence, fields in refusals.items():
            detail = problem(_create(c, **fields), 422)["detail"]
            assert sentence in detail, (fields, detail)
        assert _mine(c) == []
        s = _create(c, to=["slack:C0A", "slack:C0B"]).json()
        for body in ({"to": 7}, {"add": [{"first_of": "slack:C0C"}]}, {"add": ["slack:C0A"]}):
            refused = c.patch(f"/v1/schedules/{s['id']}", json=body)
            assert refused.status_code == 422, (body, refused.text)
        after = c.get(f"/v1/schedules/{s['id']}").json()
        assert after["version"] == 1 and after["recipients"] == s["recipients"]


def test_a_repeated_create_with_its_key_compares_every_recipient(service: Service) -> None:
    with service.client(service.token("local:route-d")) as c:
        key = {"Idempotency-Key": "fan-out-1"}
        body = {"to": ["slack:C0X", CHAIN], "when": "in 3 hours", "text": "go"}
        first = c.post("/v1/schedules", json=body, headers=key)
        again = c.post("/v1/schedules", json=body, headers=key)
        assert (first.status_code, again.status_code) == (201, 200)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["id"] == first.json()["id"]
        other = c.post("/v1/schedules", json={**body, "to": ["slack:C0X"]}, headers=key)
        assert "different schedule" in problem(other, 422)["detail"]
        assert len(_mine(c)) == 1


def test_each_person_gets_the_hour_in_their_own_zone(service: Service) -> None:
    async def zones(herald: Herald) -> None:
        now = herald.clock.now()
        await herald.store.save_member(
            "local", "email:berlin@example.com", now=now, timezone="Europe/Berlin"
        )
        await herald.store.save_member(
            "local", "email:ny@example.com", now=now, timezone="America/New_York"
        )

    service.run(zones)
    with service.client(service.token("local:route-e")) as c:
        made = _create(
            c,
            to=["slack:C0ROOM", "email:berlin@example.com", "email:ny@example.com"],
            when="every day at 9am",
            timezone="UTC",
            time_of="recipient",
        )
        assert made.status_code == 201, made.text
        s = made.json()
        assert [r.get("zone") for r in s["recipients"]] == [
            None,  # a room keeps the author's hour
            "Europe/Berlin",
            "America/New_York",
        ]
        occurrence = datetime.fromisoformat(s["next_run_at"])
        wall = occurrence.astimezone(UTC).replace(tzinfo=None)
        jobs = c.get(f"/v1/schedules/{s['id']}/jobs").json()["jobs"]
        due = {j["recipient"]: datetime.fromisoformat(j["due_at"]) for j in jobs}
        assert due[0] == occurrence
        for rid, zone in ((1, "Europe/Berlin"), (2, "America/New_York")):
            local = due[rid].astimezone(ZoneInfo(zone))
            assert (local.hour, local.minute) == (9, 0), (zone, local)
            assert local.replace(tzinfo=None).date() == wall.date()
        # the answer says each person's hour in words, as the other surfaces do
        said = f"{due[1]:%H:%MZ}"
        assert "email:berlin@example.com 09:00 Europe/Berlin = " + said in s["recipient_times"]
        assert "America/New_York" in s["recipient_times"]
        assert c.get(f"/v1/schedules/{s['id']}").json()["recipient_times"] == s["recipient_times"]


def test_how_the_recipients_fared_and_where_each_try_went(service: Service, gone_url: str) -> None:
    async def already_due(herald: Herald) -> list[int]:
        # made on a clock a minute behind: due at once for the running dispatcher
        made = [
            await herald.create_schedule(
                "local:route-f", to=["log:", gone_url], when="in 2 seconds", text="a"
            ),
            await herald.create_schedule(
                "local:route-f",
                to=[{"first_of": [gone_url, "log:"]}],
                when="in 2 seconds",
                text="b",
            ),
        ]
        return [s.id for s, _ in made if s.id is not None]

    fan, chain = service.run(
        already_due, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=1))
    )
    with service.client(service.token("local:route-f")) as c:

        def fared() -> str | None:
            said = c.get(f"/v1/schedules/{fan}").json()["fared"]
            return said if said and "waiting" not in said and "retrying" not in said else None

        said = wait_for(fared, what="one recipient delivered, the other dead")
        assert said.startswith("delivered to 1 of 2; ") and said.endswith(" failed")
        assert "127.0.0.1" in said  # the webhook, as its owner sees it
        assert c.get(f"/v1/schedules/{fan}/jobs").json()["fared"] == said

        def rescued() -> dict[str, Any] | None:
            got = c.get(f"/v1/schedules/{chain}/jobs").json()
            done = [j for j in got["jobs"] if j["state"] == "delivered"]
            return got if done else None

        got = wait_for(rescued, what="the chain's second step delivers")
        (job,) = got["jobs"]
        assert (job["step"], job["destination"]) == (1, "log:")
        tried = sorted(got["attempts"], key=lambda a: a["id"])
        assert [a["destination"] for a in tried] == [gone_url, "log:"]
        assert [a["outcome"] for a in tried][-1] == "ok"
        assert c.get(f"/v1/schedules/{chain}").json()["fared"] is None  # one recipient
        letters = c.get("/v1/dead-letters").json()["items"]
        assert chain not in {d["schedule_id"] for d in letters}  # only the last step dies


# --- the import ---------------------------------------------------------------------

ALICE = "local:alice"


class _Refusing(RecordingChannel):
    """A Slack channel that says it cannot deliver to ``slack:C0NOWHERE``."""

    async def validate(self, destination: Destination) -> None:
        if str(destination) == "slack:C0NOWHERE":
            raise InvalidInput("slack:C0NOWHERE does not exist")


def _settings(db_url: str, **extra: Any) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url, HERALD_DEFAULT_TZ="UTC", _env_file=None, **extra
    )


def _line(**fields: Any) -> str:
    return json.dumps({"when": "every day at 9am", "text": "hi", **fields})


async def test_import_lines_with_lists_chains_and_each_persons_hour(
    db_url: str, store: Store
) -> None:
    herald = Herald(
        store, _settings(db_url), ManualClock(START), channels={"slack": _Refusing(kind="slack")}
    )
    await store.save_member("local", "email:kim@example.com", now=START, timezone="Asia/Tokyo")
    lines = [
        _line(to="slack:C0PLAIN"),
        _line(to=["slack:C0A", "slack:C0B", {"first_of": ["email:lee@example.com", "slack:C0C"]}]),
        _line(to=["slack:C0ROOM", "email:kim@example.com"], time_of="recipient"),
        _line(to=[{"first_of": ["slack:C0D", "slack:C0E"]}], step_timeout=600, key="chain"),
    ]
    report = await import_schedules(herald, ALICE, "\n".join(lines))
    assert report.imported == 4
    made = [await store.get_schedule(i) for i in report.ids]
    assert all(s is not None for s in made)
    plain, fan, zoned, chain = [s for s in made if s is not None]
    assert plain.recipients == [{"id": 0, "to": ["slack:C0PLAIN"]}]
    assert [r["to"] for r in fan.recipients] == [
        ["slack:C0A"],
        ["slack:C0B"],
        ["email:lee@example.com", "slack:C0C"],
    ]
    assert [r.get("zone") for r in zoned.recipients] == [None, "Asia/Tokyo"]
    assert chain.recipients == [{"id": 0, "to": ["slack:C0D", "slack:C0E"], "timeout": 600}]
    jobs = await store.schedule_jobs(zoned.id or 0)
    due = {j.recipient: j.due_at for j in jobs}
    assert due[0] == zoned.next_run_at
    tokyo = due[1].astimezone(ZoneInfo("Asia/Tokyo"))
    assert (tokyo.hour, tokyo.minute) == (9, 0)
    found = await store.list_schedules(ScheduleQuery(destination="slack:C0C", limit=10))
    assert [s.id for s in found] == [fan.id]


async def test_a_bad_line_of_recipients_imports_nothing(db_url: str, store: Store) -> None:
    herald = Herald(
        store, _settings(db_url), ManualClock(START), channels={"slack": _Refusing(kind="slack")}
    )
    good = _line(to=["slack:C0A", "slack:C0B"])
    bad = {
        2: _line(to={"first_of": ["slack:C0A"]}),
        3: _line(to=[{"first_of": [f"slack:C0{i}" for i in range(6)]}]),
        4: _line(to=["slack:C0A", "slack:C0A"]),
        5: _line(to="slack:C0A", time_of="their"),
        6: _line(to=[{"first_of": ["slack:C0A", "slack:C0B"]}], step_timeout="10m"),
        7: _line(to=[]),
        8: _line(
            to=["slack:C0OK", {"first_of": ["slack:C0ALSO", "slack:C0NOWHERE"]}]
        ),  # unreachable
    }
    with pytest.raises(ImportRejected) as refused:
        await import_schedules(herald, ALICE, [good, *bad.values()])
    reasons = dict(refused.value.invalid)
    assert sorted(reasons) == sorted(bad)
    assert "to must be a destination or a list" in reasons[2]
    assert "at most 5 destinations" in reasons[3]
    assert "named twice" in reasons[4]
    assert 'time_of must be "author" or "recipient"' in reasons[5]
    assert "step_timeout must be a number of seconds" in reasons[6]
    assert "at least one destination" in reasons[7]
    assert reasons[8] == "slack:C0NOWHERE does not exist"
    assert await store.list_schedules(ScheduleQuery(limit=10)) == []
    report = await import_schedules(herald, ALICE, [good, *bad.values()], skip_invalid=True)
    assert (report.imported, report.invalid_count) == (1, 7)


async def test_an_imports_recipient_cap_counts_every_destination(db_url: str, store: Store) -> None:
    herald = Herald(
        store,
        _settings(db_url, HERALD_RECIPIENT_HOURLY_CAP=2),
        ManualClock(START),
    )
    anna = Principal("slack:UANNA", "slack:TA")
    # the second step of a chain is a destination too: three sends to C0B in one hour
    lines = [
        _line(to=["slack:C0A", "slack:C0B"], when="in 2 hours"),
        _line(to=[{"first_of": ["slack:C0C", "slack:C0B"]}], when="in 2 hours"),
        _line(to="slack:C0B", when="in 2 hours"),
    ]
    with pytest.raises(QuotaExceeded, match="slack:C0B"):
        await import_schedules(herald, anna, "\n".join(lines))
    assert await store.list_schedules(ScheduleQuery(limit=10)) == []
    assert (await import_schedules(herald, anna, "\n".join(lines[:2]))).imported == 2
