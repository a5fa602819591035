"""The shared HTTP client (core.http_client): one set of pools per process, reused by
every HTTP channel, and the network guard on every request that goes through it.
Loopback only: a receiver that records which client connection each request came on,
and the guard kit's stand-in public server (127.0.0.2) beside an inside one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from core import http_client
from core.channels import build_channels
from core.channels.base import Outcome
from core.channels.discord import DiscordWebhookChannel
from core.channels.slack import SlackChannel
from core.channels.webhook import WebhookChannel
from core.http_client import HTTPClient, Timeout, Unreachable
from core.netguard import Guard
from core.settings import load_settings
from tests.fakes import unused_port
from tests.fakes.deliveries import make_delivery
from tests.support.guard import INSIDE, Pair, Rebinding, pair

__all__ = ["pair"]  # the fixture

HTTP_KINDS = ("webhook", "discord-webhook", "discord", "slack")


class Receiver:
    """Answers 200 to every POST and records the client port of each request's
    connection (one port per TCP connection)."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        self.hosts: list[str] = []
        self.url = ""

    async def hook(self, request: web.Request) -> web.Response:
        assert request.transport is not None
        self.ports.append(request.transport.get_extra_info("peername")[1])
        self.hosts.append(request.host)
        await request.read()
        if request.path == "/big":  # an answer past the client's cap
            return web.Response(body=b"x" * 2000)
        if request.path.startswith("/api/webhooks/"):  # Discord's answer to ?wait=true
            return web.json_response({"id": str(len(self.ports)), "type": 0})
        return web.Response(text="ok")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    fake = Receiver()
    app = web.Application()
    app.router.add_post("/{tail:.*}", fake.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.url = f"http://127.0.0.1:{port}"
    yield fake
    await runner.cleanup()


async def test_every_http_channel_shares_one_pool_sized_to_the_concurrency(
    receiver: Receiver,
) -> None:
    settings = load_settings(
        _env_file=None, HERALD_CONCURRENCY="8", HERALD_WEBHOOK_ALLOW_PRIVATE="true"
    )
    channels = build_channels(settings)
    [http] = {getattr(channels[kind], "http", None) for kind in HTTP_KINDS}
    assert isinstance(http, HTTPClient)
    assert http.connections == 8
    try:
        # 200 webhooks at once over 40 URLs, and Discord webhooks beside them
        sends = [
            channels["webhook"].send(make_delivery(f"webhook:{receiver.url}/h/{i % 40}", job_id=i))
            for i in range(200)
        ]
        sends += [
            channels["discord-webhook"].send(
                make_delivery(f"discord-webhook:{receiver.url}/api/webhooks/{i}/t", job_id=i)
            )
            for i in range(20)
        ]
        results = await asyncio.gather(*sends)
        again = await channels["webhook"].send(make_delivery(f"webhook:{receiver.url}/h/0"))
    finally:
        for channel in channels.values():
            await channel.close()
    assert {r.outcome for r in [*results, again]} == {Outcome.OK}
    assert len(receiver.ports) == 221
    # one pool for all of them, opened once; at most 8 connections, each kept alive
    assert http.opened == 1
    assert 1 <= len(set(receiver.ports)) <= 8
    assert receiver.ports[-1] in receiver.ports[:-1]


async def test_a_channel_without_a_shared_client_has_its_own(receiver: Receiver) -> None:
    one, two = WebhookChannel(allow_private=True), WebhookChannel(allow_private=True)
    try:
        for _ in range(3):
            for channel in (one, two):
                result = await channel.send(make_delivery(f"webhook:{receiver.url}/h"))
                assert result.outcome is Outcome.OK
    finally:
        await one.close()
        await two.close()
    assert len(set(receiver.ports)) == 2  # one kept-alive connection each


async def test_an_answer_is_read_only_up_to_its_cap(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_client, "MAX_ANSWER_BYTES", 1000)
    client = HTTPClient(guard=Guard(allow_private=True))
    try:
        small = await client.request(
            "POST", f"{receiver.url}/h", guarded=True, timeouts=Timeout(2.0, 2.0)
        )
        with pytest.raises(
            Unreachable, match=r"the answer from 127\.0\.0\.1:\d+ was over 1,000 bytes"
        ):
            await client.request(
                "POST", f"{receiver.url}/big", guarded=True, timeouts=Timeout(2.0, 2.0)
            )
    finally:
        await client.close()
    assert small.content == b"ok"


@pytest.mark.parametrize(
    "url",
    [
        "http://{inside}:{port}/hook",
        "http://[::ffff:{inside}]:{port}/hook",
        "http://localhost:{port}/hook",
        "http://intranet.test:{port}/hook",
    ],
)
async def test_the_shared_pool_refuses_inside_addresses_unless_allowed(
    pair: Pair, url: str
) -> None:
    """aiohttp connects to a host written as an address without asking the resolver:
    the client checks those itself; names go through the guard's resolver."""
    to = url.format(inside=INSIDE, port=pair.port)
    guarded = HTTPClient(guard=Rebinding().guard())
    # the admin's choice: every name answers inside, and inside is allowed
    allowing = HTTPClient(guard=Guard(allow_private=True, lookup=Rebinding(first=INSIDE)))
    webhooks, discord = WebhookChannel(http=guarded), DiscordWebhookChannel(http=guarded)
    try:
        refused = [
            await webhooks.send(make_delivery(f"webhook:{to}")),
            await discord.send(
                make_delivery(f"discord-webhook:{to.replace('/hook', '/api/webhooks/1/t')}")
            ),
        ]
        assert pair.inside.requests == []
        if "::ffff" not in to:  # (IPv6 may be off where the tests run)
            allowed = await WebhookChannel(http=allowing).send(make_delivery(f"webhook:{to}"))
            assert allowed.outcome is Outcome.OK, allowed.error
            assert pair.inside.paths == ["/hook"]
    finally:
        await guarded.close()
        await allowing.close()
    for result in refused:
        assert result.outcome is Outcome.PERMANENT, result.error
        assert "is an internal address" in (result.error or "")


async def test_every_request_is_guarded_though_connections_are_kept_alive(pair: Pair) -> None:
    """A kept-alive connection to an outside address never carries a request for a name
    that answers inside (on the same port); a name is checked again when its DNS answer
    expires."""
    dns = Rebinding(times=3)  # the first three look-ups answer outside, then inside
    http = HTTPClient(guard=dns.guard(), dns_ttl=0)  # no DNS cache: each connection asks
    channel = WebhookChannel(http=http)
    outside = f"webhook:http://hooks.test:{pair.port}/hook"
    try:
        first = await channel.send(make_delivery(outside))
        other = await channel.send(make_delivery(f"webhook:http://intranet.test:{pair.port}/x"))
        # a second connection while the first is busy: looked up again, still outside
        both = await asyncio.gather(
            channel.send(make_delivery(outside, job_id=2)),
            channel.send(make_delivery(outside, job_id=3)),
        )
        await http.close()  # the kept-alive connections go: the next one looks up again
        rebound = await channel.send(make_delivery(outside, job_id=4))
    finally:
        await channel.close()
    assert first.outcome is Outcome.OK and all(r.outcome is Outcome.OK for r in both)
    assert other.outcome is Outcome.PERMANENT and "intranet.test is an internal" in (
        other.error or ""
    )
    assert rebound.outcome is Outcome.PERMANENT, rebound.error
    assert pair.inside.requests == []
    assert len(pair.outside.requests) == 3
    assert dns.calls == ["hooks.test", "intranet.test", "hooks.test", "hooks.test"]


async def test_provider_apis_take_the_environments_proxy_and_member_urls_never_do(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with httpx before: Slack's and Discord's APIs (the admin's) go through
    HTTP(S)_PROXY; a member's webhook connects itself, through the guard."""
    monkeypatch.setenv("HTTP_PROXY", receiver.url)  # the receiver plays the proxy
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    slack = SlackChannel("xoxb-token", base_url="http://slack.test/api/")  # no such host
    try:
        await slack.send(make_delivery("slack:C0123"))
    finally:
        await slack.close()
    assert receiver.hosts == ["slack.test"]

    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{unused_port()}")  # nothing there
    webhook = WebhookChannel(allow_private=True)
    try:
        result = await webhook.send(make_delivery(f"webhook:{receiver.url}/h"))
    finally:
        await webhook.close()
    assert result.outcome is Outcome.OK, result.error
