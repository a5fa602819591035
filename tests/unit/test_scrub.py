"""URLs in text operators see keep their scheme and host only: no credentials, path,
query or fragment (where calendar and webhook URLs keep their secrets)."""

from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

import pytest

from core.scrub import Scrubber, calendar_source, redact_url, scrub, scrub_credentials
from core.settings import load_settings


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pa55@cal.example.com/private-0a1b2c/basic.ics", "https://cal.example.com/…"),
        ("https://cal.example.com/team.ics?token=abc#x", "https://cal.example.com/…"),
        ("http://127.0.0.1:8080/calendar/Zx9-token.ics", "http://127.0.0.1:8080/…"),
        ("https://[::1]:8443/a", "https://[::1]:8443/…"),
        ("https://cal.example.com/", "https://cal.example.com"),
        ("webcal://cal.example.com", "webcal://cal.example.com"),
        ("https://:99999/x", "https://…"),
        ("not a url", "…"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_redacts_every_url_and_keeps_the_sentence() -> None:
    text = (
        "Could not fetch https://u:p@cal.example.com/x.ics?key=K1: ConnectError; "
        "redirected to (https://cdn.example.net/y?sig=K2)."
    )
    assert scrub(text) == (
        "Could not fetch https://cal.example.com/…: ConnectError; "
        "redirected to (https://cdn.example.net/…)."
    )
    assert scrub("Fetching answered HTTP 500.") == "Fetching answered HTTP 500."


def test_calendar_source() -> None:
    assert calendar_source("file:holidays.ics") == "file:holidays.ics"
    assert calendar_source("https://cal.example.com/x.ics?token=K") == "https://cal.example.com/…"


# --- provider texts: configured secrets and credential-shaped strings -------------------

DISCORD = "MTE5ODc2NTQzMjEwOTg3NjU0.GAbcde.abcdefghijklmnopqrstuvwxyz0123"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLWJ5dGVzLWhlcmU"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("invalid_auth for xoxb-123-456-AbCdEf", "invalid_auth for xoxb-***"),
        ("user token xoxp-1-2-3-abcdef012345 leaked", "user token xoxp-*** leaked"),
        ("app token xapp-1-A01-123-abcdef", "app token xapp-***"),
        ("refresh xoxe.xoxp-1-Mi0yLTE", "refresh xoxe.xoxp-***"),
        ("secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "secret whsec_***"),
        (f"Authorization: Bot {DISCORD}", "Authorization: Bot ***"),
        (f"token {DISCORD} is invalid", "token *** is invalid"),
        (f"got {DISCORD}", "got ***"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer ***"),
        (f"jwt={JWT}", "jwt=***"),
        ("Authorization: Basic aGVyYWxkOmh1bnRlcjI=", "Authorization: Basic ***"),
        ("501 Syntax: AUTH PLAIN AGhlcmFsZABodW50ZXIy", "501 Syntax: AUTH PLAIN ***"),
        ("form password=p4ss&user=x", "form password=***&user=x"),
        ('{"api_key": "k-123", "ok": false}', '{"api_key": "***", "ok": false}'),
        (
            "posted to https://herald:pa55@hooks.example.com/T1/B2/x",
            "posted to https://hooks.example.com/…",
        ),
        # English stays English
        ("Basic authentication failed; the Bot answered slowly", None),
        ("Slack refused the message (token_revoked): reinstall the app.", None),
        ("The mail server refused Herald's login: 535 5.7.8 invalid", None),
    ],
)
def test_scrub_credentials(text: str, shown: str | None) -> None:
    assert scrub_credentials(text) == (text if shown is None else shown)
    assert Scrubber()(text) == scrub_credentials(text)


def test_scrubber_hides_configured_secrets_in_every_echoed_form() -> None:
    password = "hunter2 & Sm7p/pass"
    scrub_it = Scrubber(["short", password])  # "short": under MIN_SECRET, not hunted
    plain, encoded = base64.b64encode(password.encode()).decode(), quote(password, safe="")
    for form in (password, encoded, quote_plus(password), plain, plain.rstrip("=")):
        assert scrub_it(f"550 denied ({form}) for alice") == "550 denied (***) for alice"
    assert scrub_it("a short reply") == "a short reply"


def test_scrubber_from_settings_knows_every_secret() -> None:
    settings = load_settings(
        _env_file=None,
        SLACK_BOT_TOKEN="plain-bot-token-1",
        SLACK_APP_TOKEN="plain-app-token-2",
        SLACK_SIGNING_SECRET="signing-secret-3",
        DISCORD_BOT_TOKEN="discord-token-4",
        HERALD_SMTP_USER="herald",
        HERALD_SMTP_PASSWORD="smtp-password-5",
        HERALD_WEBHOOK_SECRETS="https://a.example/=webhook-secret-6",
    )
    scrub_it = Scrubber.from_settings(settings)
    blob = base64.b64encode(b"\0herald\0smtp-password-5").decode()
    for secret in (
        "plain-bot-token-1",
        "plain-app-token-2",
        "signing-secret-3",
        "discord-token-4",
        "smtp-password-5",
        "webhook-secret-6",
        blob,
    ):
        assert scrub_it(f"said: {secret}.") == "said: ***."
