"""Delivery channels, one module each, all behind :class:`core.channels.base.Channel`.

:func:`build_channels` makes the set a dispatcher uses from the settings: a channel
whose credentials are missing is simply absent (its jobs retry with a clear error).
"""

from __future__ import annotations

from typing import TextIO

from core.channels.base import Channel
from core.channels.local import LogChannel, NullChannel
from core.settings import Settings


def build_channels(settings: Settings, *, log_stream: TextIO | None = None) -> dict[str, Channel]:
    """The configured channels, keyed by destination kind."""
    channels: list[Channel] = [LogChannel(log_stream), NullChannel()]
    return {channel.kind: channel for channel in channels}
