"""Junk to ``POST /slack/events``: unsigned, malformed, oversized or slow requests get a
4xx and exactly one log line (no traceback, no 500), and change nothing."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time

import aiohttp
import pytest

from tests.slack.conftest import SlackEnv
from tests.slack.support import SECRET
from tests.slack.test_signatures import untouched

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
SMALL = {"HERALD_HTTP_MAX_BODY": 4096, "HERALD_HTTP_BODY_TIMEOUT": 0.5}


def signed_headers(body: bytes, content_type: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": "v0=" + mac.hexdigest(),
    }


async def post(env: SlackEnv, body: bytes, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session:
        async with session.post(env.send.url, data=body, headers=headers) as answer:
            await answer.read()
            return answer.status


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the request left in the log, once no record may carry a traceback."""
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    return [r for r in caplog.records if r.name.startswith(("bot.", "aiohttp"))]


JUNK = [
    ("unsigned JSON garbage", b"{not json", JSON, False, 401),
    ("unsigned bytes", b"\xff\xfe\x00", JSON, False, 401),
    ("unsigned form", b"command=%2Fschedule&text=x", FORM, False, 401),
    ("signature not ascii", b"payload=%7B%7D", FORM, "v0=\u00e9", 401),
    ("signed JSON garbage", b"{not json", JSON, True, 400),
    ("signed bytes that are not UTF-8", b"\xff\xfepayload=%7B", FORM, True, 400),
    ("signed payload that is not JSON", b"payload=%7Bnope", FORM, True, 400),
    ("signed payload that is a list", b"payload=%5B1%5D", FORM, True, 400),
    ("signed JSON list", b"[1, 2]", JSON, True, 400),
]


@pytest.mark.parametrize(
    ("body", "kind", "signed", "status"), [j[1:] for j in JUNK], ids=[j[0] for j in JUNK]
)
async def test_junk_gets_a_4xx_and_one_log_line(
    env: SlackEnv,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    kind: str,
    signed: bool | str,
    status: int,
) -> None:
    headers = signed_headers(body, kind)
    if signed is False:
        headers["X-Slack-Signature"] = "v0=" + "0" * 64
    elif isinstance(signed, str):
        headers["X-Slack-Signature"] = signed
    caplog.set_level(logging.INFO)
    caplog.clear()
    assert await post(env, body, headers) == status
    [line] = refusals(caplog)
    assert line.getMessage().startswith("slack request refused:")
    assert line.levelno == logging.WARNING and line.status == status  # type: ignore[attr-defined]
    assert SECRET not in caplog.text
    assert await env.schedules() == []
    untouched(env)


@pytest.mark.parametrize("slack_extra", [SMALL], indirect=True)
async def test_an_oversized_body_gets_413_unread(
    env: SlackEnv, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"payload=" + b"x" * 5000  # signed right: the size alone refuses it
    caplog.clear()
    assert await post(env, body, signed_headers(body, FORM)) == 413
    [line] = refusals(caplog)  # refused on its Content-Length, before any of it is read
    assert "body over its limit" in line.getMessage()
    untouched(env)


@pytest.mark.parametrize("slack_extra", [SMALL], indirect=True)
async def test_an_oversized_chunked_body_is_cut_at_the_limit(
    env: SlackEnv, caplog: pytest.LogCaptureFixture
) -> None:
    async def chunks():  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b"x" * 1000

    caplog.clear()
    async with aiohttp.ClientSession() as session:
        headers = signed_headers(b"", FORM)
        async with session.post(env.send.url, data=chunks(), headers=headers) as answer:
            assert answer.status == 413
    [line] = refusals(caplog)
    assert "over its limit" in line.getMessage()
    untouched(env)


@pytest.mark.parametrize("slack_extra", [SMALL], indirect=True)
async def test_a_body_that_trickles_gets_408(
    env: SlackEnv, caplog: pytest.LogCaptureFixture
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", env.adapter.port)
    caplog.clear()
    try:
        writer.write(
            b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n\r\npayload="
        )  # and then nothing: 92 bytes are never sent
        async with asyncio.timeout(10):
            status = await reader.readuntil(b"\r\n")
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 408")
    [line] = refusals(caplog)
    assert "too slow" in line.getMessage()
    untouched(env)


async def test_a_timestamp_of_thousands_of_digits_gets_401_not_500(
    env: SlackEnv, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"command=%2Fschedule&text=in+1+hour%3A+x"
    stamp = "1" * 5000  # signed with the secret, even: no int() reads it (Python's digit cap)
    mac = hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    headers = {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": "v0=" + mac.hexdigest(),
    }
    caplog.set_level(logging.INFO)
    caplog.clear()
    assert await post(env, body, headers) == 401
    [line] = refusals(caplog)  # one warning, no ERROR, no traceback
    assert line.getMessage().startswith("slack request refused:")
    assert await env.schedules() == []
    untouched(env)
