from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import load_settings


def test_defaults(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HERALD_DATABASE_URL", "HERALD_ADMINS", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # platformdirs' Linux rule
    monkeypatch.chdir(tmp_path)
    s = load_settings(_env_file=None)
    # one file per user, in the platform's data folder: not the current folder's
    assert s.database_url == f"sqlite:///{tmp_path}/data/herald/herald.db"
    assert s.database_is_default
    assert s.admins == frozenset()
    assert s.slack_bot_token is None


def test_environment_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERALD_ADMINS", " slack:U1, discord:2 ,,local:alice ")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("USER", "carol")
    s = load_settings(_env_file=None)
    assert s.admins == {"slack:U1", "discord:2", "local:alice"}
    assert s.local_actor == "local:carol"
    assert "xoxb-very-secret" not in repr(s) and "xoxb-very-secret" not in str(s.model_dump())
    assert s.slack_bot_token is not None
    assert s.slack_bot_token.get_secret_value() == "xoxb-very-secret"


def test_dotenv_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERALD_DATABASE_URL", raising=False)
    env = tmp_path / ".env"
    env.write_text("HERALD_DATABASE_URL=sqlite:///from-dotenv.db\n")
    assert load_settings(_env_file=env).database_url == "sqlite:///from-dotenv.db"


def test_bad_value_names_the_variable_not_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERALD_HTTP_PORT", "eighty")
    with pytest.raises(ConfigError, match="HERALD_HTTP_PORT") as info:
        load_settings(_env_file=None)
    assert "eighty" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HERALD_HTTP_MAX_CONNECTIONS", "0"),
        ("HERALD_HTTP_HEADER_TIMEOUT", "0"),
        ("HERALD_HTTP_IDLE_TIMEOUT", "-1"),
        ("HERALD_HTTP_BODY_TIMEOUT", "soon"),
        ("HERALD_HTTP_MAX_BODY", "0"),
    ],
)
def test_the_http_port_limits_must_be_positive(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings(_env_file=None, **{name: value})


def test_the_default_time_of_day_and_per_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import time

    monkeypatch.delenv("HERALD_DEFAULT_TIME", raising=False)
    monkeypatch.delenv("HERALD_TENANT_DEFAULT_TIMES", raising=False)
    s = load_settings(_env_file=None)
    assert s.default_time == time(9, 0) and s.default_time_for("slack:T1") == time(9, 0)
    monkeypatch.setenv("HERALD_DEFAULT_TIME", "8am")
    monkeypatch.setenv("HERALD_TENANT_DEFAULT_TIMES", "slack:T1=08:30, discord:42=noon,")
    s = load_settings(_env_file=None)
    assert s.default_time_for("local") == time(8, 0)
    assert s.default_time_for("slack:T1") == time(8, 30)
    assert s.default_time_for("discord:42") == time(12, 0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HERALD_DEFAULT_TIME", "teatime"),
        ("HERALD_DEFAULT_TIME", "25:00"),
        ("HERALD_TENANT_DEFAULT_TIMES", "slack:T1"),
        ("HERALD_TENANT_DEFAULT_TIMES", "slack:T1=soonish"),
    ],
)
def test_a_bad_default_time_names_the_variable_not_the_value(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name) as info:
        load_settings(_env_file=None, **{name: value})
    assert value not in str(info.value)


def test_reading_the_settings_loads_no_channel_code() -> None:
    """Each platform's settings are declared in ``core/channel_settings/``, light modules:
    every command reads the settings (``herald when`` too), none should load a channel,
    its HTTP or SMTP client or a chat SDK for it."""
    import subprocess
    import sys

    code = (
        "import sys; from core.settings import load_settings; load_settings(_env_file=None);"
        "print('\\n'.join(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = ("core.channels", "aiohttp", "httpx", "aiosmtplib", "slack_sdk", "discord", "apprise")
    assert [m for m in loaded if m.startswith(heavy)] == []
    assert "core.channel_settings.slack" in loaded


def test_an_empty_token_variable_is_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # .env.example lists `SLACK_BOT_TOKEN=`: copied as it is, it must not start the
    # Slack adapter with an empty token (it logged "adapter is down" forever)
    env = tmp_path / ".env"
    env.write_text("SLACK_BOT_TOKEN=\nDISCORD_BOT_TOKEN=\nHERALD_PUBLIC_URL=\n")
    for name in ("SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN", "HERALD_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(_env_file=env)
    assert settings.slack_bot_token is None
    assert settings.discord_bot_token is None
    assert settings.public_url is None
    monkeypatch.setenv("SLACK_BOT_TOKEN", "")
    assert load_settings(_env_file=None).slack_bot_token is None
