"""A secret setting is scrubbed from the logs because of its type: every ``SecretStr``
field of :class:`core.settings.Settings` (each platform's too, ``core/channel_settings/``)
is collected by ``secret_values()`` without being listed anywhere, and a setting named
like a secret must be typed ``SecretStr``, so a new channel cannot add a plain ``str``
token that the scrubber would not know."""

from __future__ import annotations

import io
import logging
import re
import types
import typing

from pydantic import BaseModel, SecretStr

from bot.logs import configure_logging
from core.scrub import Scrubber, SecretParts
from core.settings import Settings, load_settings

#: How a value of a setting holding several secrets (a :class:`SecretParts` field) is
#: written around one secret.
SEVERAL = {"webhook_secrets": "https://hooks.example.org/={secret}"}
#: Settings named like secrets that are not: what they hold, and why it may be shown.
NOT_SECRET = {
    "quota_exempt_tokens": "API token ids, as `herald token list` shows them",
    "sendgrid_webhook_public_key": "a public key: it verifies SendGrid's signatures",
    "fcm_token_url": "the URL of Google's OAuth2 token endpoint, not a token",
    "vonage_api_key": "Vonage's API key is the account's public id (the secret is apart)",
}
LOOKS_SECRET = re.compile(r"token|secret|passw|pwd|key|credential", re.IGNORECASE)


def holds_secret(annotation: object) -> bool:
    """Whether a field of this type holds a ``SecretStr`` (as it is, optional, in a
    mapping or a sequence, or in a nested model)."""
    if annotation is SecretStr:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(holds_secret(f.annotation) for f in annotation.model_fields.values())
    return any(holds_secret(arg) for arg in typing.get_args(annotation))


def secret_fields() -> list[str]:
    return [name for name, f in Settings.model_fields.items() if holds_secret(f.annotation)]


def written(name: str, secret: str) -> str:
    """The variable's value that carries ``secret``."""
    return SEVERAL.get(name, "{secret}").format(secret=secret)


def sample(index: int) -> str:
    """A distinctive value nothing but the configured secrets would scrub (no token
    prefix, no ``key=`` pair, no dotted base64)."""
    return f"Quillwort{index}Marsh{index * 7}Fen"


def test_the_secret_settings_are_found_by_their_type() -> None:
    found = set(secret_fields())
    # today's, so that the search itself cannot quietly find nothing
    assert {
        "slack_bot_token",
        "slack_app_token",
        "slack_signing_secret",
        "discord_bot_token",
        "smtp_password",
        "webhook_secrets",
        "api_token",
    } <= found


def test_a_setting_holding_several_secrets_says_how_one_is_written() -> None:
    for name, field in Settings.model_fields.items():
        if any(isinstance(m, SecretParts) for m in field.metadata):
            assert name in SEVERAL, f"say in SEVERAL how a value of {name} carries a secret"


def test_every_secret_setting_is_scrubbed_from_the_logs(quieted_restored: None) -> None:
    names = secret_fields()
    secrets = {name: sample(i) for i, name in enumerate(names)}
    variables = {Settings.model_fields[n].alias or n: written(n, s) for n, s in secrets.items()}
    settings = load_settings(_env_file=None, HERALD_LOG_FORMAT="json", **variables)
    collected = settings.secret_values()
    for name, secret in secrets.items():
        assert secret in collected, f"{name} is a secret but secret_values() misses it"
        # only because it is configured: the scrubber that knows no secret keeps it
        assert Scrubber()(f"said {secret}") == f"said {secret}"

    out = io.StringIO()
    configure_logging(settings, default_level="INFO", stream=out)
    log = logging.getLogger("herald.test")
    for name, secret in secrets.items():
        log.warning("provider said %s about %s", secret, name, extra={"body": f"echo {secret}"})
    text = out.getvalue()
    assert all(name in text for name in names)  # the lines were written
    for name, secret in secrets.items():
        assert secret not in text, f"{name} escaped the log scrubber"


def test_settings_named_like_secrets_are_secret_str() -> None:
    for name, field in Settings.model_fields.items():
        words = f"{name} {field.alias or ''}"
        if LOOKS_SECRET.search(words) and name not in NOT_SECRET:
            assert holds_secret(field.annotation), (
                f"{name} looks like a secret: type it SecretStr (or say in NOT_SECRET why "
                "it is not one)"
            )


def test_the_type_search_sees_through_optional_mappings_and_models() -> None:
    class Nested(BaseModel):
        inner: dict[str, SecretStr] = {}

    assert holds_secret(SecretStr | None)
    assert holds_secret(types.GenericAlias(dict, (str, SecretStr)))
    assert holds_secret(Nested | None)
    assert not holds_secret(str | None) and not holds_secret(frozenset[str])
