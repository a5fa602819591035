"""Delivery channels, one module each, all behind :class:`core.channels.base.Channel`.

:func:`build_channels` makes the set a dispatcher (and schedule-time validation) uses
from the settings. A channel whose credentials are missing still exists and answers
every delivery with a permanent "not configured: set ..." result, so the dead letter
says what to fix.

Adding a channel is one small module: subclass ``Channel``, give it a ``kind`` (the
destination URI scheme), register it here and teach ``core.destinations`` its syntax.
"""

from __future__ import annotations

from typing import TextIO

from core.channels.apprise_channel import AppriseChannel
from core.channels.base import Channel
from core.channels.discord import DiscordChannel, DiscordWebhookChannel
from core.channels.email import EmailChannel
from core.channels.local import LogChannel, NullChannel
from core.channels.slack import SlackChannel
from core.channels.webhook import WebhookChannel
from core.settings import Settings


def build_channels(settings: Settings, *, log_stream: TextIO | None = None) -> dict[str, Channel]:
    """The channels, keyed by destination kind."""
    timeout = settings.http_timeout
    guard = settings.network_guard()  # one for every URL a member gives
    channels: list[Channel] = [
        LogChannel(log_stream),
        NullChannel(),
        SlackChannel(settings.slack_bot_token, base_url=settings.slack_api_url, timeout=timeout),
        DiscordChannel(
            settings.discord_bot_token, base_url=settings.discord_api_url, timeout=timeout
        ),
        DiscordWebhookChannel(timeout=timeout, guard=guard),
        WebhookChannel(
            settings.webhook_secret_for,
            timeout=timeout,
            guard=guard,
        ),
        EmailChannel(
            host=settings.smtp_host,
            port=settings.smtp_port,
            user=settings.smtp_user,
            password=settings.smtp_password,
            from_address=settings.smtp_from,
            tls=settings.smtp_tls,
            timeout=timeout,
        ),
        AppriseChannel(guard=guard),
    ]
    return {channel.kind: channel for channel in channels}
