"""The HTTP API against hostile or unlucky requests, in process (the real app, its real
limits, a real database, an injected clock for the rates): odd cursors, bodies nested a
thousand deep and dates at the end of the calendar get a 4xx problem and no ERROR
record; a database failure does not say where the database is; requests without a
valid token are limited per client address, and a member's tokens share one allowance."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.api.requests import MAX_JSON_DEPTH, _Buckets
from bot.http_guard import HttpLimits, guarded_app
from core.cases import Herald
from core.clock import ManualClock, SystemClock
from core.settings import load_settings
from core.store import Store
from tests.fakes.http import unused_port
from tests.support.store import aiosqlite_threads_done

ADMIN = "local:root-admin"  # HERALD_ADMINS of the conftest's settings


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def served(
    herald: Herald, clock: Callable[[], float] | None = None
) -> AsyncIterator[TestClient[Any, Any]]:
    app = guarded_app()
    limits = HttpLimits.from_settings(herald.settings)
    add_api(app, herald, limits, **({} if clock is None else {"clock": clock}))
    async with TestClient(TestServer(app)) as client:
        yield client


async def token(herald: Herald, member: str, scope: str = "write") -> dict[str, str]:
    minted = await herald.create_token(ADMIN, member, tenant="local", scope=scope, expires="90d")
    return {"Authorization": f"Bearer {minted.secret}"}


async def problem(response: ClientResponse, status: int | None = None) -> dict[str, Any]:
    """The RFC 9457 problem of a refusal: a 4xx (``status`` if given), checked for shape."""
    body = await response.json(content_type=None)
    assert 400 <= response.status < 500, body
    if status is not None:
        assert response.status == status, body
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert body["status"] == response.status and body["detail"]
    return dict(body)


def no_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- odd input: a 4xx problem, never a 500 ------------------------------------------


@pytest.mark.parametrize(
    "raw", [b'{"before":true}', b'{"before":false}', b'{"before":1.5}', b'{"before":"7"}']
)
async def test_a_cursor_that_is_not_a_number_is_a_400(
    herald: Herald, caplog: pytest.LogCaptureFixture, raw: bytes
) -> None:
    caplog.set_level(logging.WARNING)
    async with served(herald) as client:
        answer = await client.get(
            "/v1/schedules", params={"cursor": _cursor(raw)}, headers=await token(herald, ADMIN)
        )
        assert "cursor" in (await problem(answer, 400))["detail"]
    no_error_logged(caplog)


@pytest.mark.parametrize("opening", ['{"a":', "["])
async def test_a_body_nested_a_thousand_deep_is_a_400(
    herald: Herald, caplog: pytest.LogCaptureFixture, opening: str
) -> None:
    closing = "}" if opening.startswith("{") else "]"
    deep = opening * 1000 + "1" + closing * 1000
    body = '{"to":"log:","when":"in 1 hour","text":"x","options":' + deep + "}"
    caplog.set_level(logging.WARNING)
    async with served(herald) as client:
        headers = {**await token(herald, ADMIN), "Content-Type": "application/json"}
        for data in (body, deep):
            answer = await client.post("/v1/schedules", data=data, headers=headers)
            detail = (await problem(answer, 400))["detail"]
            assert (
                detail == f"The body nests objects and arrays deeper than {MAX_JSON_DEPTH} levels."
            )
        assert await herald.list_schedules(ADMIN, everyone=True) == []
    no_error_logged(caplog)


async def test_a_body_nested_within_the_limit_is_read(herald: Herald) -> None:
    nested: Any = 1
    for _ in range(MAX_JSON_DEPTH - 2):  # within the body and its options: the limit
        nested = [nested]
    async with served(herald) as client:
        body = {"to": "log:", "when": "in 1 hour", "text": "x", "options": {"a": nested}}
        answer = await client.post("/v1/schedules", json=body, headers=await token(herald, ADMIN))
        assert "nests" not in await answer.text()  # read (whatever log: makes of option a)


async def test_a_body_one_level_past_the_limit_is_a_400(herald: Herald) -> None:
    """The depth walk itself (a thousand deep stops in the JSON parser already)."""
    nested: Any = 1
    for _ in range(MAX_JSON_DEPTH - 1):  # one list more than the test above
        nested = [nested]
    async with served(herald) as client:
        body = {"to": "log:", "when": "in 1 hour", "text": "x", "options": {"a": nested}}
        answer = await client.post("/v1/schedules", json=body, headers=await token(herald, ADMIN))
        detail = (await problem(answer, 400))["detail"]
        assert detail == f"The body nests objects and arrays deeper than {MAX_JSON_DEPTH} levels."
        assert await herald.list_schedules(ADMIN, everyone=True) == []


@pytest.mark.parametrize(
    "when",
    [
        "every day at 9am until 9999-12-31",
        "every year on Dec 31 until 9999-12-31",
        "every day until 3000-01-01",
    ],
)
async def test_until_the_end_of_the_calendar_is_a_422(
    herald: Herald, caplog: pytest.LogCaptureFixture, when: str
) -> None:
    caplog.set_level(logging.WARNING)
    async with served(herald) as client:
        headers = await token(herald, ADMIN)
        preview = await client.get("/v1/when", params={"when": when}, headers=headers)
        assert "up to the year 2999" in (await problem(preview, 422))["detail"]
        body = {"to": "log:", "when": when, "text": "x"}
        create = await client.post("/v1/schedules", json=body, headers=headers)
        assert "up to the year 2999" in (await problem(create, 422))["detail"]
    no_error_logged(caplog)


# --- a database failure: unavailable, not where ------------------------------------


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
async def test_a_database_failure_does_not_say_where_the_database_is(
    backend: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    port = unused_port()  # nothing listens there
    url = {
        "postgres": f"postgresql://herald_ops:pw-Sekrit-42@127.0.0.1:{port}/heralddb",
        "sqlite": f"sqlite:///{tmp_path}/no-such-dir/herald-secret-place.db",
    }[backend]
    where = {
        "postgres": ["127.0.0.1", str(port), "herald_ops", "heralddb"],
        "sqlite": [str(tmp_path), "herald-secret-place"],
    }[backend]
    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_ADMINS=ADMIN, _env_file=None)
    store = await Store.open(url, migrate=False)  # it cannot be reached: opens lazily
    try:
        herald = Herald(store, settings, SystemClock())
        caplog.set_level(logging.WARNING)
        async with served(herald) as client:
            headers = {"Authorization": "Bearer hk_0123456789ab_" + "A" * 43}
            answer = await client.get("/v1/me", headers=headers)
            text = await answer.text()
            assert answer.status == 503, text
            assert answer.headers["Retry-After"]
            body = await answer.json(content_type=None)
            assert body["detail"] == "The database is unavailable; try again in a few seconds."
            for part in [*where, "pw-Sekrit-42"]:
                assert part not in text
        # the operator's log keeps the cause (where), and no password
        [line] = [r for r in caplog.records if "database unavailable" in r.getMessage()]
        assert line.levelno == logging.WARNING
        assert where[0] in line.error  # type: ignore[attr-defined]
        assert "pw-Sekrit-42" not in caplog.text
        no_error_logged(caplog)
    finally:
        await store.close()
        await aiosqlite_threads_done()


# --- rates: per client address without a token, per member with one ---------------


@pytest.fixture
def limited(db_url: str) -> Any:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS=ADMIN,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_API_BURST="3",
        HERALD_API_RATE="0.5",
        _env_file=None,
    )


async def test_requests_without_a_valid_token_are_limited_per_address(
    store: Store, limited: Any, clock: ManualClock
) -> None:
    herald = Herald(store, limited, clock)
    ticks = Ticks()
    forged = {"Authorization": "Bearer hk_0123456789ab_" + "A" * 43}
    async with served(herald, ticks) as client:
        firsts = [await client.get("/v1/me", headers=forged) for _ in range(3)]
        assert [a.status for a in firsts] == [401, 401, 401]
        for headers in (forged, {}, {"Authorization": "Bearer nonsense"}):
            refused = await client.get("/v1/me", headers=headers)
            body = await problem(refused, 429)
            assert "without a valid API token" in body["detail"]
            assert refused.headers["Retry-After"] == "2"  # one more at 0.5 a second
        # a valid token from the same address is not held back by the strangers
        good = await token(herald, "local:alice")
        assert (await client.get("/v1/me", headers=good)).status == 200
        ticks.now += 2.0  # one more bad request may come
        assert (await client.get("/v1/me", headers=forged)).status == 401
        assert (await client.get("/v1/me", headers=forged)).status == 429


async def test_a_members_tokens_share_one_allowance(
    store: Store, limited: Any, clock: ManualClock
) -> None:
    herald = Herald(store, limited, clock)
    ticks = Ticks()
    async with served(herald, ticks) as client:
        first, second = await token(herald, "local:alice"), await token(herald, "local:alice")
        answers = [await client.get("/v1/me", headers=first) for _ in range(3)]
        assert [a.status for a in answers] == [200, 200, 200]
        refused = await client.get("/v1/me", headers=second)  # another token: the same member
        assert (
            "local:alice sent more than 3 requests at once"
            in (await problem(refused, 429))["detail"]
        )
        other = await token(herald, "local:bob")
        assert (await client.get("/v1/me", headers=other)).status == 200
        ticks.now += 2.0
        assert (await client.get("/v1/me", headers=second)).status == 200


def test_the_buckets_stay_bounded_and_forget_full_ones_first() -> None:
    ticks = Ticks()
    buckets = _Buckets(1.0, 2, ticks)
    buckets.MAX_KEYS = 100
    for n in range(99):
        buckets.take(f"address-{n}")
    buckets.take("busy")
    buckets.take("busy")
    ticks.now += 1.5  # the others are full again; "busy" is not
    buckets.take("new")
    assert set(buckets._state) == {"busy", "new"}
    for n in range(1000):
        buckets.take(f"flood-{n}")
    assert len(buckets._state) <= 100


@pytest.mark.parametrize(
    "line", ['{"to":' + '{"a":' * 1000 + "1" + "}" * 1001, "[" * 1000 + "]" * 1000]
)
async def test_an_import_line_nested_a_thousand_deep_is_an_invalid_line(
    herald: Herald, caplog: pytest.LogCaptureFixture, line: str
) -> None:
    caplog.set_level(logging.WARNING)
    async with served(herald) as client:
        headers = {**await token(herald, ADMIN), "Content-Type": "application/jsonl"}
        good = '{"to":"log:","when":"in 1 hour","text":"x"}'
        answer = await client.post("/v1/imports", data=f"{good}\n{line}\n", headers=headers)
        body = await problem(answer, 422)
        assert body["invalid"] == [
            {"line": 2, "reason": "nested far deeper than any schedule needs"}
        ]
        assert await herald.list_schedules(ADMIN, everyone=True) == []  # all or nothing
    no_error_logged(caplog)
