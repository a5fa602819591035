"""Delivery channels, one module each, all behind :class:`core.channels.base.Channel`:
the registry of every channel, which reads destinations by their declarations.

:func:`parse_destination` reads a destination URI by the syntax its kind's channel
declares (:data:`URI_SYNTAXES`). :func:`build_channels` makes the set a dispatcher (and
schedule-time validation) uses from the settings. A channel whose credentials are
missing still exists and answers every delivery with a permanent "not configured: set
..." result, so the dead letter says what to fix.

Adding a channel is one small module: subclass ``Channel``, give it a ``kind`` (the
destination URI scheme) and a ``uri`` (its :class:`~core.destinations.UriSyntax`: the
check of a target, an example, redaction, settings), and list it here.
"""

from __future__ import annotations

from typing import TextIO

from core.channels.apprise_channel import AppriseChannel
from core.channels.base import Channel
from core.channels.discord import DiscordChannel, DiscordWebhookChannel
from core.channels.email import EmailChannel
from core.channels.failover import FailoverChannel, ProviderHealth
from core.channels.local import LogChannel, NullChannel
from core.channels.ntfy import NtfyChannel
from core.channels.push import PushChannel
from core.channels.slack import SlackChannel
from core.channels.sms import SmsChannel
from core.channels.webhook import WebhookChannel
from core.destinations import Destination, UriSyntax
from core.errors import InvalidInput
from core.http_client import HTTPClient
from core.settings import Settings

#: Every channel, in the order :func:`build_channels` makes them.
CHANNEL_TYPES: tuple[type[Channel], ...] = (
    LogChannel,
    NullChannel,
    SlackChannel,
    DiscordChannel,
    DiscordWebhookChannel,
    WebhookChannel,
    EmailChannel,
    SmsChannel,
    PushChannel,
    NtfyChannel,
    AppriseChannel,
)
#: Each kind's URI syntax, as its channel declares it (read by :func:`parse_destination`).
URI_SYNTAXES: dict[str, UriSyntax] = {c.uri.kind: c.uri for c in CHANNEL_TYPES}
#: What a refused kind is told to use instead.
EXAMPLES = (
    "slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, "
    "email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, "
    "ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:"
)


def parse_destination(uri: str) -> Destination:
    """Parse and check a destination URI by its kind's declared syntax, which the
    :class:`~core.destinations.Destination` carries; InvalidInput says what is wrong."""
    raw = uri.strip()
    kind, sep, target = raw.partition(":")
    kind = kind.lower()
    if not sep or not kind:
        raise InvalidInput(f"Destination {raw!r} has no kind: use {EXAMPLES}.")
    syntax = URI_SYNTAXES.get(kind)
    if syntax is None:
        raise InvalidInput(f"Unknown destination kind {kind!r} in {raw!r}: use {EXAMPLES}.")
    syntax.check(raw, target)
    return Destination(kind, target, syntax)


def build_channels(
    settings: Settings, *, log_stream: TextIO | None = None, http: HTTPClient | None = None
) -> dict[str, Channel]:
    """The channels, keyed by destination kind. The HTTP channels share one client
    (``http``, else one built from the settings): one set of keep-alive pools per
    process, its guarded pool checking every URL a member gives. The kinds served by
    several providers (email, SMS) share one :class:`ProviderHealth`."""
    timeout = settings.http_timeout
    http = http or HTTPClient.from_settings(settings)
    # one reading of the providers' shared health per process (email's and SMS's
    # providers have distinct names)
    health = ProviderHealth(settings.provider_cooldown)
    channels: list[Channel] = [
        LogChannel(log_stream),
        NullChannel(),
        SlackChannel(
            settings.slack_bot_token, base_url=settings.slack_api_url, timeout=timeout, http=http
        ),
        DiscordChannel(
            settings.discord_bot_token,
            base_url=settings.discord_api_url,
            timeout=timeout,
            http=http,
        ),
        DiscordWebhookChannel(timeout=timeout, http=http),
        WebhookChannel(settings.webhook_secret_for, timeout=timeout, http=http),
        EmailChannel.from_settings(settings, http=http, health=health),
        SmsChannel.from_settings(settings, http=http, health=health),
        PushChannel.from_settings(settings, http=http),
        NtfyChannel.from_settings(settings, http=http),
        AppriseChannel(guard=http.guard),  # requests, in threads: its own connections
    ]
    for channel in channels:
        if isinstance(channel, FailoverChannel):
            channel.max_rate_wait = settings.claim_horizon
    return {channel.kind: channel for channel in channels}
