"""The network guard where connections are opened: DNS rebinding, redirects, Apprise,
aiohttp, TLS. Loopback only: 127.0.0.2 stands in for a public server (the test's guard
treats it as outside), 127.0.0.1 for the inside of the network, on the same port.
A resolver the test controls answers the names."""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import Iterator

import aiohttp
import pytest
import trustme

from core.channels import parse_destination
from core.channels.apprise_channel import AppriseChannel, _apprise
from core.channels.base import Outcome
from core.channels.discord import DiscordWebhookChannel
from core.channels.webhook import WebhookChannel
from core.errors import InvalidInput
from core.http_client import HTTPClient, Timeout
from core.netguard import Guard, Refused, is_internal
from tests.fakes.deliveries import make_delivery
from tests.support.guard import INSIDE, OUTSIDE, Pair, Rebinding, pair

__all__ = ["pair"]  # the fixture

# --- DNS rebinding ------------------------------------------------------------------


async def test_a_name_that_rebinds_after_the_check_never_reaches_inside(pair: Pair) -> None:
    dns = Rebinding()
    channel = WebhookChannel(guard=dns.guard())
    to = f"webhook:http://hooks.test:{pair.port}/hook"
    try:
        await channel.validate(parse_destination(to))  # first answer: outside, accepted
        result = await channel.send(make_delivery(to))  # now the name points inside
    finally:
        await channel.close()
    assert result.outcome is Outcome.PERMANENT
    assert result.error == (
        "hooks.test is an internal address; Herald connects only to public addresses "
        "(an admin can allow internal ones with HERALD_WEBHOOK_ALLOW_PRIVATE=true)."
    )
    assert pair.inside.requests == [] and pair.outside.requests == []
    assert INSIDE not in result.error


async def test_the_connection_goes_to_the_address_that_was_checked(pair: Pair) -> None:
    # a check-then-connect client would look the name up twice and connect inside
    dns = Rebinding()
    channel = WebhookChannel(guard=dns.guard())
    to = f"webhook:http://hooks.test:{pair.port}/hook"
    try:
        first = await channel.send(make_delivery(to))
        again = await channel.send(make_delivery(to, job_id=2))  # kept-alive connection
    finally:
        await channel.close()
    assert first.outcome is Outcome.OK and again.outcome is Outcome.OK, first.error
    assert dns.calls == ["hooks.test"]
    assert pair.outside.requests == [("/hook", f"hooks.test:{pair.port}")] * 2
    assert pair.inside.requests == []


async def test_discord_webhooks_are_guarded_at_the_connection(pair: Pair) -> None:
    dns = Rebinding(times=0)  # always inside
    channel = DiscordWebhookChannel(guard=dns.guard())
    to = f"discord-webhook:http://discord.test:{pair.port}/api/webhooks/1/token"
    try:
        result = await channel.send(make_delivery(to))
    finally:
        await channel.close()
    assert result.outcome is Outcome.PERMANENT
    assert "discord.test is an internal address" in (result.error or "")
    assert pair.inside.requests == []


async def test_aiohttp_connects_only_to_checked_addresses(pair: Pair) -> None:
    dns = Rebinding()
    connector = aiohttp.TCPConnector(resolver=dns.guard().aiohttp_resolver(), use_dns_cache=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(f"http://hooks.test:{pair.port}/hook") as response:
            assert response.status == 200
        with pytest.raises(aiohttp.ClientConnectorError) as refused:
            await session.post(f"http://other.test:{pair.port}/hook")
    assert isinstance(refused.value.os_error, Refused)
    assert "other.test is an internal address" in str(refused.value.os_error)
    assert pair.outside.requests == [("/hook", f"hooks.test:{pair.port}")]
    assert pair.inside.requests == []


# --- TLS keeps the name -------------------------------------------------------------


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusting(ca: trustme.CA) -> Iterator[ssl.SSLContext]:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ca.configure_trust(context)
    yield context


@pytest.mark.parametrize("client", ["httpx", "shared"])
async def test_tls_still_sends_and_checks_the_url_host(
    ca: trustme.CA, trusting: ssl.SSLContext, client: str
) -> None:
    """For httpx (calendars) and the shared aiohttp client (core.http_client)."""
    from aiohttp import web

    seen: list[str | None] = []
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("hooks.test").configure_cert(server_tls)
    server_tls.sni_callback = lambda sock, name, ctx: seen.append(name)  # type: ignore[assignment,return-value]

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=request.headers["Host"])

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, OUTSIDE, 0, ssl_context=server_tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        dns = Rebinding()
        if client == "httpx":
            async with dns.guard().client(verify=trusting) as httpx_client:
                text = (await httpx_client.get(f"https://hooks.test:{port}/")).text
        else:
            shared = HTTPClient(guard=dns.guard(), tls=trusting)
            try:
                answer = await shared.request(
                    "GET", f"https://hooks.test:{port}/", guarded=True, timeouts=Timeout(5, 5)
                )
            finally:
                await shared.close()
            text = answer.text
    finally:
        await runner.cleanup()
    assert text == f"hooks.test:{port}"
    assert seen == ["hooks.test"]


# --- redirects ----------------------------------------------------------------------


async def test_webhook_redirects_are_not_followed(pair: Pair) -> None:
    dns = Rebinding(times=99)
    channel = WebhookChannel(guard=dns.guard())
    inside = f"http://{INSIDE}:{pair.port}/ok"
    to = f"webhook:http://hooks.test:{pair.port}/to?url={inside}"
    try:
        result = await channel.send(make_delivery(to))
    finally:
        await channel.close()
    assert result.outcome is Outcome.PERMANENT
    assert "does not follow redirects" in (result.error or "")
    assert pair.inside.requests == []


# --- Apprise ------------------------------------------------------------------------

needs_apprise = pytest.mark.skipif(_apprise() is None, reason="the apprise extra is not installed")


@needs_apprise
async def test_apprise_to_loopback_is_refused_for_any_http_scheme(pair: Pair) -> None:
    channel = AppriseChannel()
    # json:// names any host: refused when scheduling, too
    generic = parse_destination(f"apprise:json://{INSIDE}:{pair.port}/notify")
    with pytest.raises(InvalidInput, match="internal address"):
        await channel.validate(generic)
    # ntfy:// to a self-hosted server: refused where Apprise's connection opens
    for to in (str(generic), f"apprise:ntfy://{INSIDE}:{pair.port}/alerts"):
        result = await channel.send(make_delivery(to))
        assert result.outcome is Outcome.PERMANENT, (to, result.error)
        assert f"{INSIDE} is an internal address" in (result.error or "")
    assert pair.inside.requests == []


@needs_apprise
async def test_apprise_connects_to_the_address_that_was_checked(pair: Pair) -> None:
    dns = Rebinding()
    channel = AppriseChannel(guard=dns.guard())
    result = await channel.send(make_delivery(f"apprise:ntfy://ntfy.test:{pair.port}/alerts"))
    assert result.outcome is Outcome.OK, result.error
    assert dns.calls == ["ntfy.test"]
    assert [host for _, host in pair.outside.requests] == [f"ntfy.test:{pair.port}"]
    assert pair.inside.requests == []
    # the same name now answers inside: refused, nothing sent there
    again = await channel.send(make_delivery(f"apprise:ntfy://ntfy.test:{pair.port}/alerts"))
    assert again.outcome is Outcome.PERMANENT
    assert pair.inside.requests == []


@needs_apprise
async def test_apprise_redirects_inside_are_refused(pair: Pair) -> None:
    # requests follows redirects; each hop opens its connection through the guard
    channel = AppriseChannel(guard=Rebinding(times=99).guard())
    inside = f"http://{INSIDE}:{pair.port}/ok"
    result = await channel.send(
        make_delivery(f"apprise:json://hooks.test:{pair.port}/to?-url={inside}")
    )
    assert result.outcome is Outcome.PERMANENT
    assert f"{INSIDE} is an internal address" in (result.error or "")
    assert len(pair.outside.requests) == 1  # the redirect itself
    assert pair.inside.requests == []


@needs_apprise
async def test_apprise_outside_the_guard_is_untouched(pair: Pair) -> None:
    """The urllib3 hook only acts inside a guarded delivery."""
    import requests

    await AppriseChannel().send(make_delivery(f"apprise:ntfy://{INSIDE}:{pair.port}/x"))
    answer = await asyncio.to_thread(requests.post, f"http://{INSIDE}:{pair.port}/plain", timeout=5)
    assert answer.status_code == 200
    assert pair.inside.paths == ["/plain"]


# --- what counts as inside ----------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "169.254.169.254",
        "100.100.100.200",
        "::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "0.0.0.0",
    ],
)
def test_internal_addresses(address: str) -> None:
    assert is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111"])
def test_public_addresses(address: str) -> None:
    assert not is_internal(ipaddress.ip_address(address))


async def test_allow_private_lets_inside_through(pair: Pair) -> None:
    guard = Guard(allow_private=True, lookup=Rebinding(times=0))
    async with guard.client() as client:
        response = await client.get(f"http://hooks.test:{pair.port}/ok")
    assert response.status_code == 200 and pair.inside.paths == ["/ok"]
