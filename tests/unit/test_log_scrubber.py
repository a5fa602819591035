"""What Herald logs carries no secret: not in a message, a field, a traceback or a stack,
in either format (``HERALD_LOG_FORMAT``)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from bot.logs import configure_logging
from core.settings import load_settings

TOKEN = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
PASSWORD = "hunter2-Sm7p-pass"
FOREIGN = "xoxp-5555555555-6666666666-0123456789abcdef"


def provider_failure() -> None:
    said = f"535 Authentication failed for herald/{PASSWORD} with Bearer {TOKEN}"
    raise RuntimeError(said)


@pytest.mark.parametrize("fmt", ["human", "json"])
def test_tracebacks_messages_fields_and_stacks_are_scrubbed(
    fmt: str, quieted_restored: None
) -> None:
    settings = load_settings(
        _env_file=None,
        SLACK_BOT_TOKEN=TOKEN,
        HERALD_SMTP_PASSWORD=PASSWORD,
        HERALD_LOG_FORMAT=fmt,
    )
    out = io.StringIO()
    configure_logging(settings, default_level="INFO", stream=out)
    log = logging.getLogger("herald.test")
    try:
        provider_failure()
    except RuntimeError:
        log.exception("channel raised", extra={"error": f"echo {FOREIGN}", "job_id": 7})
    try:
        provider_failure()
    except RuntimeError as exc:
        log.error("adapter stopped", exc_info=exc)
    log.warning("password was %s", PASSWORD, stack_info=True)
    text = out.getvalue()
    for secret in (TOKEN, PASSWORD, FOREIGN):
        assert secret not in text
    # the traceback is still there to read, with the secrets replaced
    assert text.count("Traceback (most recent call last)") == 2
    assert "in provider_failure" in text
    assert "535 Authentication failed for herald/*** with Bearer ***" in text
    assert "password was ***" in text
    if fmt == "json":
        lines = [json.loads(line) for line in text.splitlines()]
        assert [line["event"] for line in lines] == [
            "channel raised",
            "adapter stopped",
            "password was ***",
        ]
        assert "RuntimeError" in lines[0]["exc_info"] and lines[0]["error"] == "echo xoxp-***"
        assert "stack_info" in lines[2]
