"""Discord's settings: the bot's token (the ``discord:`` channel and the adapter), the
servers its commands are registered in, and where its alerts and admins come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class DiscordSettings(BaseModel):
    """The ``DISCORD_*`` and ``HERALD_DISCORD_*`` settings (a base of
    :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    discord_bot_token: SecretStr | None = Field(default=None, alias="DISCORD_BOT_TOKEN")
    discord_api_url: str = Field(default="https://discord.com/api/v10", alias="DISCORD_API_URL")
    discord_guild_ids: str = Field(default="", alias="DISCORD_GUILD_IDS")
    discord_alert_channel: str | None = Field(default=None, alias="HERALD_DISCORD_ALERT_CHANNEL")
    discord_admins_from_permission: bool = Field(
        default=False, alias="HERALD_DISCORD_ADMINS_FROM_PERMISSION"
    )
