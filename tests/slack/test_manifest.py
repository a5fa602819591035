"""The manifest creates the app Herald's Slack adapter expects, in one step."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from bot.slack.adapter import COMMAND

MANIFEST = Path(__file__).parents[2] / "bot" / "slack_manifest.yml"


def manifest() -> dict[str, Any]:
    data = yaml.safe_load(MANIFEST.read_text())
    assert isinstance(data, dict)
    return data


def test_the_command_escapes_channels_so_the_grammar_sees_their_ids() -> None:
    [command] = manifest()["features"]["slash_commands"]
    assert command["command"] == COMMAND == "/schedule"
    assert command["should_escape"] is True
    assert len(command["description"]) <= 100 and len(command["usage_hint"]) <= 100


def test_scopes_cover_every_web_api_method_the_adapter_calls() -> None:
    scopes = set(manifest()["oauth_config"]["scopes"]["bot"])
    needed = {
        "chat:write",  # chat.postMessage, chat.postEphemeral
        "chat:write.customize",  # username / icon options
        "commands",  # /schedule
        "users:read",  # users.info
        "channels:read",  # conversations.info / members on public channels
        "groups:read",  # ... on private channels
        "im:write",  # conversations.open for a reminder's direct message
    }
    assert needed <= scopes
    assert "chat:write.public" not in scopes  # Herald posts only where it was invited


def test_interactivity_app_home_and_socket_mode_are_on() -> None:
    data = manifest()
    settings = data["settings"]
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    assert "app_home_opened" in settings["event_subscriptions"]["bot_events"]
    assert data["features"]["app_home"]["home_tab_enabled"] is True
    assert data["features"]["bot_user"]["display_name"] == "Herald"


def test_the_manifest_holds_no_secret() -> None:
    text = MANIFEST.read_text()
    assert not re.search(r"xox[abp]-\d|xapp-\d|[0-9a-f]{32}", text)
