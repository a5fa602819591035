"""Each platform's settings, declared in a module of its own: its fields with their
variables (aliases), defaults and checks, its secrets typed ``SecretStr``, which is all
it takes for the log scrubber to hunt them (:meth:`core.settings.Settings.secret_values`
collects every ``SecretStr`` field; a value holding several secrets says how it splits
with :class:`core.scrub.SecretParts`).

They live here rather than in ``core/channels/`` so that reading the settings (every
command, ``herald when`` too) loads pydantic only, not the channels and their HTTP and
SMTP clients. A channel with settings of its own adds a module here and one base of
:class:`ChannelSettings`; ``core/settings.py`` does not change.
"""

from __future__ import annotations

from core.channel_settings.discord import DiscordSettings
from core.channel_settings.email import EmailSettings
from core.channel_settings.providers import ProviderSettings
from core.channel_settings.slack import SlackSettings
from core.channel_settings.webhook import WebhookSettings

__all__ = [
    "ChannelSettings",
    "DiscordSettings",
    "EmailSettings",
    "ProviderSettings",
    "SlackSettings",
    "WebhookSettings",
]


# pydantic orders the fields of a model's bases from the last base to the first
class ChannelSettings(
    ProviderSettings, WebhookSettings, EmailSettings, DiscordSettings, SlackSettings
):
    """Every platform's settings together: the base of :class:`core.settings.Settings`."""
