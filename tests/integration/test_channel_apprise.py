"""The Apprise channel (optional extra) against a local HTTP receiver, through Apprise's
own ``json://`` notifier: delivered, refused when internal, retried on failure."""

from __future__ import annotations

import pytest

from core.channels import parse_destination
from core.channels.apprise_channel import AppriseChannel, _apprise
from core.channels.base import Outcome
from core.errors import InvalidInput
from tests.fakes import Scripted, WebhookReceiver
from tests.fakes.deliveries import make_delivery

pytestmark = pytest.mark.skipif(_apprise() is None, reason="the apprise extra is not installed")


async def test_a_message_goes_through_apprise() -> None:
    async with WebhookReceiver() as hook:
        channel = AppriseChannel(allow_private=True)
        to = f"apprise:json://127.0.0.1:{hook.port}/notify"
        await channel.validate(parse_destination(to))
        result = await channel.send(make_delivery(to, body="Standup in 5 minutes"))
        assert result.outcome is Outcome.OK, result.error
        [received] = hook.received
        assert received.payload["message"] == "Standup in 5 minutes"


async def test_a_failing_service_is_retried() -> None:
    async with WebhookReceiver() as hook:
        hook.script(Scripted(status=500))
        channel = AppriseChannel(allow_private=True)
        result = await channel.send(make_delivery(f"apprise:json://127.0.0.1:{hook.port}/n"))
        assert result.outcome is Outcome.RETRY
        assert "apprise:json://…" in (result.error or "")


async def test_internal_addresses_and_unknown_urls_are_refused() -> None:
    channel = AppriseChannel()
    internal = parse_destination("apprise:json://127.0.0.1:9/notify")
    with pytest.raises(InvalidInput, match="internal address"):
        await channel.validate(internal)
    result = await channel.send(make_delivery(str(internal)))
    assert result.outcome is Outcome.PERMANENT
    with pytest.raises(InvalidInput, match="does not understand"):
        await channel.validate(parse_destination("apprise:nosuchservice://x/y"))


def test_apprise_urls_are_redacted() -> None:
    dest = parse_destination("apprise:tgram://123456:SECRET-TOKEN/987")
    assert dest.redacted() == "apprise:tgram://…"
    with pytest.raises(InvalidInput, match="not an Apprise URL"):
        parse_destination("apprise:tgram")
