"""URLs in text operators see keep their scheme and host only: no credentials, path,
query or fragment (where calendar and webhook URLs keep their secrets)."""

from __future__ import annotations

import pytest

from core.scrub import calendar_source, redact_url, scrub


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
