"""Slack's settings: the bot's token (the ``slack:`` channel and the adapter), the
adapter's Socket Mode token or HTTP signing secret, and where its alerts and admins
come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class SlackSettings(BaseModel):
    """The ``SLACK_*`` and ``HERALD_SLACK_*`` settings (a base of
    :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    slack_bot_token: SecretStr | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_URL")
    slack_alert_channel: str | None = Field(default=None, alias="HERALD_SLACK_ALERT_CHANNEL")
    slack_admins_from_workspace: bool = Field(
        default=False, alias="HERALD_SLACK_ADMINS_FROM_WORKSPACE"
    )
