"""Slack's settings: the bot's token (the ``slack:`` channel and the adapter), the
adapter's Socket Mode token or HTTP signing secret, and where its alerts and admins
come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class SlackSettings(BaseModel):
    """The ``SLACK_*`` and ``HERALD_SLACK_*`` settings (a base of
    :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    #: The bot token (``xoxb-…``): turns on the Slack adapter and ``slack:`` deliveries.
    slack_bot_token: SecretStr | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    #: An app-level token (``xapp-…``): the adapter uses Socket Mode (no public URL);
    #: unset, HTTP mode (``POST /slack/events`` on HERALD_HTTP_PORT).
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    #: The app's signing secret, which verifies every request of HTTP mode; the adapter
    #: does not start in HTTP mode without it.
    slack_signing_secret: SecretStr | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    #: The base URL of Slack's Web API, for the adapter and ``slack:`` deliveries (a
    #: proxy, a local fake in tests).
    slack_api_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_URL")
    #: The channel (its id, ``C0123``) where dead-letter alerts, with Retry and Discard
    #: buttons, and requests for approval are posted; unset: no alert channel.
    slack_alert_channel: str | None = Field(default=None, alias="HERALD_SLACK_ALERT_CHANNEL")
    #: Whether Slack workspace admins and owners are Herald admins of that workspace's
    #: tenant (only of it).
    slack_admins_from_workspace: bool = Field(
        default=False, alias="HERALD_SLACK_ADMINS_FROM_WORKSPACE"
    )
