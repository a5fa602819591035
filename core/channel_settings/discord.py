"""Discord's settings: the bot's token (the ``discord:`` channel and the adapter), the
servers its commands are registered in, and where its alerts and admins come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class DiscordSettings(BaseModel):
    """The ``DISCORD_*`` and ``HERALD_DISCORD_*`` settings (a base of
    :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    #: The bot token: turns on the Discord adapter and ``discord:`` deliveries.
    discord_bot_token: SecretStr | None = Field(default=None, alias="DISCORD_BOT_TOKEN")
    #: The base URL of Discord's REST API, for the adapter and ``discord:`` deliveries
    #: (a proxy, a local fake in tests).
    discord_api_url: str = Field(default="https://discord.com/api/v10", alias="DISCORD_API_URL")
    #: Server ids, comma-separated: ``/schedule`` is registered in each (at once, not
    #: globally) and notices go only to authors there; empty: global, every server.
    discord_guild_ids: str = Field(default="", alias="DISCORD_GUILD_IDS")
    #: The channel (its id) where dead-letter alerts, with Retry and Discard buttons,
    #: and requests for approval are posted; unset: no alert channel.
    discord_alert_channel: str | None = Field(default=None, alias="HERALD_DISCORD_ALERT_CHANNEL")
    #: Whether members with Manage Server are Herald admins of that server's tenant
    #: (only of it).
    discord_admins_from_permission: bool = Field(
        default=False, alias="HERALD_DISCORD_ADMINS_FROM_PERMISSION"
    )
