from __future__ import annotations

import pytest

from core.channels import parse_destination
from core.errors import InvalidInput


@pytest.mark.parametrize(
    ("uri", "kind", "target"),
    [
        ("slack:C0123ABC", "slack", "C0123ABC"),
        ("slack:C0123ABC/1700000000.000100", "slack", "C0123ABC/1700000000.000100"),
        ("SLACK:G01ABC", "slack", "G01ABC"),
        ("discord:123456789012345678", "discord", "123456789012345678"),
        (
            "webhook:https://example.com/hook?token=abc",
            "webhook",
            "https://example.com/hook?token=abc",
        ),
        ("email:ops@example.com", "email", "ops@example.com"),
        ("log:", "log", ""),
        ("null:", "null", ""),
    ],
)
def test_valid_destinations(uri: str, kind: str, target: str) -> None:
    dest = parse_destination(uri)
    assert (dest.kind, dest.target) == (kind, target)


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("C0123", "has no kind"),
        ("slack:#general", "not a Slack channel"),
        ("discord:12", "numeric id"),
        ("webhook:example.com/hook", "not a webhook URL"),
        ("email:nobody", "not an email address"),
        ("log:extra", "takes nothing after the colon"),
        ("fax:+49301234", "Unknown destination kind 'fax'"),
    ],
)
def test_invalid_destinations_say_what_is_wrong(uri: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        parse_destination(uri)


def test_webhook_secrets_are_redacted() -> None:
    dest = parse_destination("webhook:https://hooks.example.com/services/T0/B0/s3cr3t?sig=abc")
    assert dest.redacted() == "webhook:https://hooks.example.com/…"
    assert "s3cr3t" not in dest.redacted()


@pytest.mark.parametrize(
    ("uri", "recipient"),
    [
        ("slack:@U0123ABC", "slack:U0123ABC"),
        ("slack:@W0123ABC", "slack:W0123ABC"),  # an Enterprise Grid org user
        ("discord:@123456789012345678", "discord:123456789012345678"),
    ],
)
def test_a_user_after_at_is_a_direct_message(uri: str, recipient: str) -> None:
    dest = parse_destination(uri)
    assert dest.is_dm and dest.recipient == recipient and str(dest) == uri


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("slack:@C0123ABC", "not a Slack user"),  # a channel is not a person
        ("slack:@u0123abc", "not a Slack user"),
        ("slack:@", "not a Slack user"),
        ("slack:@U0123/1700000000.000100", "not a Slack user"),  # no threads in a reminder
        ("discord:@alice", "not a Discord user"),
        ("discord:@12", "not a Discord user"),
    ],
)
def test_direct_messages_to_no_one_are_refused(uri: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        parse_destination(uri)


def test_channels_are_not_direct_messages() -> None:
    for uri in ("slack:C0123ABC", "discord:123456789012345678", "log:"):
        dest = parse_destination(uri)
        assert not dest.is_dm and dest.recipient is None
