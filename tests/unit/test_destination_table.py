# ruff: noqa: E501  (a golden table: each refusal is one sentence, kept whole)
"""Every destination accepted and refused, in one table, with the exact sentence of
each refusal and how each accepted one is shown (redacted) and read (direct message
or not). Written against the parser before the channels declared their own syntax;
it must keep passing unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from core.channels import URI_SYNTAXES, parse_destination
from core.destinations import Destination, UriSyntax
from core.errors import InvalidInput

TABLE: list[tuple[str, str, Any]] = [
    (
        "slack:C0123ABC",
        "ok",
        ("slack", "C0123ABC", "slack:C0123ABC", "slack:C0123ABC", False, None),
    ),
    (
        "slack:C0123ABC/1700000000.000100",
        "ok",
        (
            "slack",
            "C0123ABC/1700000000.000100",
            "slack:C0123ABC/1700000000.000100",
            "slack:C0123ABC/1700000000.000100",
            False,
            None,
        ),
    ),
    ("SLACK:G01ABC", "ok", ("slack", "G01ABC", "slack:G01ABC", "slack:G01ABC", False, None)),
    ("Slack:D0123", "ok", ("slack", "D0123", "slack:D0123", "slack:D0123", False, None)),
    (
        "  slack:C0123ABC  ",
        "ok",
        ("slack", "C0123ABC", "slack:C0123ABC", "slack:C0123ABC", False, None),
    ),
    (
        "slack:C0",
        "error",
        "'slack:C0' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    ("slack:C01", "ok", ("slack", "C01", "slack:C01", "slack:C01", False, None)),
    (
        "slack:c0123abc",
        "error",
        "'slack:c0123abc' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:#general",
        "error",
        "'slack:#general' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:",
        "error",
        "'slack:' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:C0123ABC/170000000.000100",
        "error",
        "'slack:C0123ABC/170000000.000100' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:C0123ABC/1700000000.00010",
        "error",
        "'slack:C0123ABC/1700000000.00010' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:C0123ABC/",
        "error",
        "'slack:C0123ABC/' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:X0123ABC",
        "error",
        "'slack:X0123ABC' is not a Slack channel: use the channel id, e.g. slack:C0123ABC (thread reply: slack:C0123ABC/1700000000.000100; a direct message: slack:@U0123ABC).",
    ),
    (
        "slack:C0123ABC\n",
        "ok",
        ("slack", "C0123ABC", "slack:C0123ABC", "slack:C0123ABC", False, None),
    ),
    (
        "slack:@U0123ABC",
        "ok",
        ("slack", "@U0123ABC", "slack:@U0123ABC", "slack:@U0123ABC", True, "slack:U0123ABC"),
    ),
    (
        "slack:@W0123ABC",
        "ok",
        ("slack", "@W0123ABC", "slack:@W0123ABC", "slack:@W0123ABC", True, "slack:W0123ABC"),
    ),
    (
        "slack:@C0123ABC",
        "error",
        "'slack:@C0123ABC' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    (
        "slack:@u0123abc",
        "error",
        "'slack:@u0123abc' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    (
        "slack:@",
        "error",
        "'slack:@' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    (
        "slack:@U",
        "error",
        "'slack:@U' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    ("slack:@U0", "ok", ("slack", "@U0", "slack:@U0", "slack:@U0", True, "slack:U0")),
    (
        "slack:@U0123/1700000000.000100",
        "error",
        "'slack:@U0123/1700000000.000100' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    (
        "slack:@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "ok",
        (
            "slack",
            "@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "slack:@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "slack:@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            True,
            "slack:UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ),
    ),
    (
        "slack:@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "error",
        "'slack:@UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' is not a Slack user: use the member id, e.g. slack:@U0123ABC (in Slack: the person's profile, ⋮, Copy member ID).",
    ),
    (
        "discord:123456789012345678",
        "ok",
        (
            "discord",
            "123456789012345678",
            "discord:123456789012345678",
            "discord:123456789012345678",
            False,
            None,
        ),
    ),
    (
        "discord:12345678901234567",
        "ok",
        (
            "discord",
            "12345678901234567",
            "discord:12345678901234567",
            "discord:12345678901234567",
            False,
            None,
        ),
    ),
    (
        "discord:1234567890123456",
        "error",
        "'discord:1234567890123456' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "discord:12345678901234567890",
        "ok",
        (
            "discord",
            "12345678901234567890",
            "discord:12345678901234567890",
            "discord:12345678901234567890",
            False,
            None,
        ),
    ),
    (
        "discord:123456789012345678901",
        "error",
        "'discord:123456789012345678901' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "discord:12",
        "error",
        "'discord:12' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "discord:",
        "error",
        "'discord:' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "discord:abc",
        "error",
        "'discord:abc' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "DISCORD:123456789012345678",
        "ok",
        (
            "discord",
            "123456789012345678",
            "discord:123456789012345678",
            "discord:123456789012345678",
            False,
            None,
        ),
    ),
    (
        "discord:@123456789012345678",
        "ok",
        (
            "discord",
            "@123456789012345678",
            "discord:@123456789012345678",
            "discord:@123456789012345678",
            True,
            "discord:123456789012345678",
        ),
    ),
    (
        "discord:@alice",
        "error",
        "'discord:@alice' is not a Discord user: use their numeric id, e.g. discord:@123456789012345678 (Developer Mode, right-click, Copy User ID).",
    ),
    (
        "discord:@12",
        "error",
        "'discord:@12' is not a Discord user: use their numeric id, e.g. discord:@123456789012345678 (Developer Mode, right-click, Copy User ID).",
    ),
    (
        "discord:@",
        "error",
        "'discord:@' is not a Discord user: use their numeric id, e.g. discord:@123456789012345678 (Developer Mode, right-click, Copy User ID).",
    ),
    (
        "discord: 123456789012345678",
        "error",
        "'discord: 123456789012345678' is not a Discord channel: use its numeric id, e.g. discord:123456789012345678 (a direct message: discord:@<user id>).",
    ),
    (
        "discord-webhook:https://discord.com/api/webhooks/1/TOKEN",
        "ok",
        (
            "discord-webhook",
            "https://discord.com/api/webhooks/1/TOKEN",
            "discord-webhook:https://discord.com/api/webhooks/1/TOKEN",
            "discord-webhook:https://discord.com/…",
            False,
            None,
        ),
    ),
    (
        "discord-webhook:http://discord.com/api/webhooks/1/TOKEN?wait=true",
        "ok",
        (
            "discord-webhook",
            "http://discord.com/api/webhooks/1/TOKEN?wait=true",
            "discord-webhook:http://discord.com/api/webhooks/1/TOKEN?wait=true",
            "discord-webhook:http://discord.com/…",
            False,
            None,
        ),
    ),
    (
        "discord-webhook:https://discord.com/api/hooks/1/TOKEN",
        "error",
        "'discord-webhook:https://discord.com/api/hooks/1/TOKEN' is not a Discord webhook URL: copy it from the channel's Integrations settings (https://discord.com/api/webhooks/ID/TOKEN).",
    ),
    (
        "discord-webhook:ftp://discord.com/api/webhooks/1/T",
        "error",
        "'discord-webhook:ftp://discord.com/api/webhooks/1/T' is not a Discord webhook URL: copy it from the channel's Integrations settings (https://discord.com/api/webhooks/ID/TOKEN).",
    ),
    (
        "discord-webhook:https://[::1/api/webhooks/1/T",
        "error",
        "'discord-webhook:https://[::1/api/webhooks/1/T' is not a valid URL (Invalid IPv6 URL): use discord-webhook:https://discord.com/api/webhooks/ID/TOKEN.",
    ),
    (
        "discord-webhook:",
        "error",
        "'discord-webhook:' is not a Discord webhook URL: copy it from the channel's Integrations settings (https://discord.com/api/webhooks/ID/TOKEN).",
    ),
    (
        "discord-webhook:https://host:99999/webhooks/1",
        "error",
        "'discord-webhook:https://host:99999/webhooks/1' is not a valid URL (Port out of range 0-65535): use discord-webhook:https://discord.com/api/webhooks/ID/TOKEN.",
    ),
    (
        "Discord-Webhook:https://discord.com/api/webhooks/1/TOKEN",
        "ok",
        (
            "discord-webhook",
            "https://discord.com/api/webhooks/1/TOKEN",
            "discord-webhook:https://discord.com/api/webhooks/1/TOKEN",
            "discord-webhook:https://discord.com/…",
            False,
            None,
        ),
    ),
    (
        "discord-webhook:/webhooks/",
        "error",
        "'discord-webhook:/webhooks/' is not a Discord webhook URL: copy it from the channel's Integrations settings (https://discord.com/api/webhooks/ID/TOKEN).",
    ),
    (
        "webhook:https://example.com/hook",
        "ok",
        (
            "webhook",
            "https://example.com/hook",
            "webhook:https://example.com/hook",
            "webhook:https://example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:https://example.com/hook?token=abc",
        "ok",
        (
            "webhook",
            "https://example.com/hook?token=abc",
            "webhook:https://example.com/hook?token=abc",
            "webhook:https://example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:http://example.com",
        "ok",
        (
            "webhook",
            "http://example.com",
            "webhook:http://example.com",
            "webhook:http://example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:example.com/hook",
        "error",
        "'webhook:example.com/hook' is not a webhook URL: use webhook:https://example.com/hook.",
    ),
    (
        "webhook:ftp://example.com/hook",
        "error",
        "'webhook:ftp://example.com/hook' is not a webhook URL: use webhook:https://example.com/hook.",
    ),
    (
        "webhook:https://",
        "error",
        "'webhook:https://' is not a webhook URL: use webhook:https://example.com/hook.",
    ),
    (
        "webhook:https://[::1]:8080/x",
        "ok",
        (
            "webhook",
            "https://[::1]:8080/x",
            "webhook:https://[::1]:8080/x",
            "webhook:https://::1/…",
            False,
            None,
        ),
    ),
    (
        "webhook:https://[::1/x",
        "error",
        "'webhook:https://[::1/x' is not a valid URL (Invalid IPv6 URL): use webhook:https://example.com/hook.",
    ),
    (
        "webhook:https://h:port/x",
        "error",
        "'webhook:https://h:port/x' is not a valid URL (Port could not be cast to integer value as 'port'): use webhook:https://example.com/hook.",
    ),
    ("webhook:", "error", "'webhook:' is not a webhook URL: use webhook:https://example.com/hook."),
    (
        "WEBHOOK:https://example.com/hook",
        "ok",
        (
            "webhook",
            "https://example.com/hook",
            "webhook:https://example.com/hook",
            "webhook:https://example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:https://user:pw@example.com/p?q=s3cr3t#frag",
        "ok",
        (
            "webhook",
            "https://user:pw@example.com/p?q=s3cr3t#frag",
            "webhook:https://user:pw@example.com/p?q=s3cr3t#frag",
            "webhook:https://example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:https://hooks.example.com/services/T0/B0/s3cr3t?sig=abc",
        "ok",
        (
            "webhook",
            "https://hooks.example.com/services/T0/B0/s3cr3t?sig=abc",
            "webhook:https://hooks.example.com/services/T0/B0/s3cr3t?sig=abc",
            "webhook:https://hooks.example.com/…",
            False,
            None,
        ),
    ),
    (
        "webhook:https://h:70000/x",
        "error",
        "'webhook:https://h:70000/x' is not a valid URL (Port out of range 0-65535): use webhook:https://example.com/hook.",
    ),
    (
        "email:ops@example.com",
        "ok",
        ("email", "ops@example.com", "email:ops@example.com", "email:ops@example.com", False, None),
    ),
    ("email:nobody", "error", "'email:nobody' is not an email address: use email:ops@example.com."),
    ("email:a@b", "error", "'email:a@b' is not an email address: use email:ops@example.com."),
    ("email:a@b.c", "ok", ("email", "a@b.c", "email:a@b.c", "email:a@b.c", False, None)),
    (
        "email:a b@c.d",
        "error",
        "'email:a b@c.d' is not an email address: use email:ops@example.com.",
    ),
    (
        "email:a@b@c.d",
        "error",
        "'email:a@b@c.d' is not an email address: use email:ops@example.com.",
    ),
    (
        "email:<a@b.c>",
        "error",
        "'email:<a@b.c>' is not an email address: use email:ops@example.com.",
    ),
    (
        "email:a@b.c,d@e.f",
        "error",
        "'email:a@b.c,d@e.f' is not an email address: use email:ops@example.com.",
    ),
    ("email:", "error", "'email:' is not an email address: use email:ops@example.com."),
    (
        "EMAIL:ops@example.com",
        "ok",
        ("email", "ops@example.com", "email:ops@example.com", "email:ops@example.com", False, None),
    ),
    (
        "email:a;b@c.d",
        "error",
        "'email:a;b@c.d' is not an email address: use email:ops@example.com.",
    ),
    (
        "apprise:tgram://TOKEN/CHAT",
        "ok",
        (
            "apprise",
            "tgram://TOKEN/CHAT",
            "apprise:tgram://TOKEN/CHAT",
            "apprise:tgram://…",
            False,
            None,
        ),
    ),
    (
        "apprise:ntfy://ntfy.sh/topic",
        "ok",
        (
            "apprise",
            "ntfy://ntfy.sh/topic",
            "apprise:ntfy://ntfy.sh/topic",
            "apprise:ntfy://…",
            False,
            None,
        ),
    ),
    (
        "apprise:tgram:",
        "error",
        "'apprise:tgram:' is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID or apprise:ntfy://ntfy.sh/topic.",
    ),
    (
        "apprise:://x",
        "error",
        "'apprise:://x' is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID or apprise:ntfy://ntfy.sh/topic.",
    ),
    (
        "apprise:tgram://",
        "error",
        "'apprise:tgram://' is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID or apprise:ntfy://ntfy.sh/topic.",
    ),
    (
        "apprise:",
        "error",
        "'apprise:' is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID or apprise:ntfy://ntfy.sh/topic.",
    ),
    (
        "apprise:json://user:pass@host/path",
        "ok",
        (
            "apprise",
            "json://user:pass@host/path",
            "apprise:json://user:pass@host/path",
            "apprise:json://…",
            False,
            None,
        ),
    ),
    (
        "APPRISE:mailto://u:p@gmail.com",
        "ok",
        (
            "apprise",
            "mailto://u:p@gmail.com",
            "apprise:mailto://u:p@gmail.com",
            "apprise:mailto://…",
            False,
            None,
        ),
    ),
    ("log:", "ok", ("log", "", "log:", "log:", False, None)),
    ("null:", "ok", ("null", "", "null:", "null:", False, None)),
    ("log:extra", "error", "log: takes nothing after the colon; use log: alone."),
    ("null:x", "error", "null: takes nothing after the colon; use null: alone."),
    ("LOG:", "ok", ("log", "", "log:", "log:", False, None)),
    ("log: ", "ok", ("log", "", "log:", "log:", False, None)),
    (" log:", "ok", ("log", "", "log:", "log:", False, None)),
    (
        "C0123",
        "error",
        "Destination 'C0123' has no kind: use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "",
        "error",
        "Destination '' has no kind: use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "   ",
        "error",
        "Destination '' has no kind: use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        ":C0123",
        "error",
        "Destination ':C0123' has no kind: use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "fax:+49301234",
        "error",
        "Unknown destination kind 'fax' in 'fax:+49301234': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "sms:123",
        "error",
        "'sms:123' is not a phone number: write it in E.164 (+, the country code, the number), e.g. sms:+12025550123.",
    ),
    (
        "http://example.com/hook",
        "error",
        "Unknown destination kind 'http' in 'http://example.com/hook': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "https://example.com/hook",
        "error",
        "Unknown destination kind 'https' in 'https://example.com/hook': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "mailto:a@b.c",
        "error",
        "Unknown destination kind 'mailto' in 'mailto:a@b.c': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "Slack-Webhook:x",
        "error",
        "Unknown destination kind 'slack-webhook' in 'Slack-Webhook:x': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
    (
        "teams:abc",
        "error",
        "Unknown destination kind 'teams' in 'teams:abc': use slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, email:ops@example.com, sms:+12025550123, push:slack:U0123ABC, ntfy:https://ntfy.sh/team, apprise:tgram://TOKEN/CHAT or log:.",
    ),
]
DIRECT: list[tuple[str, str, tuple[str, str, bool, str | None]]] = [
    ("webhook", "https://[::1/x", ("webhook:https://[::1/x", "webhook:…", False, None)),
    (
        "discord-webhook",
        "not a url",
        ("discord-webhook:not a url", "discord-webhook:://None/…", False, None),
    ),
    ("apprise", "tgram://T/C", ("apprise:tgram://T/C", "apprise:tgram://…", False, None)),
    ("apprise", "nothing", ("apprise:nothing", "apprise:nothing://…", False, None)),
    ("log", "@x", ("log:@x", "log:@x", False, None)),
    ("email", "@x", ("email:@x", "email:@x", False, None)),
    ("slack", "@U1", ("slack:@U1", "slack:@U1", True, "slack:U1")),
    ("discord", "@1", ("discord:@1", "discord:@1", True, "discord:1")),
    (
        "webhook",
        "https://h.example/a/b?c",
        ("webhook:https://h.example/a/b?c", "webhook:https://h.example/…", False, None),
    ),
    ("fax", "123", ("fax:123", "fax:123", False, None)),
]


@pytest.mark.parametrize(("uri", "verdict", "expected"), TABLE)
def test_every_destination_parses_or_is_refused_as_before(
    uri: str, verdict: str, expected: Any
) -> None:
    if verdict == "error":
        with pytest.raises(InvalidInput) as refused:
            parse_destination(uri)
        assert str(refused.value) == expected
        return
    d = parse_destination(uri)
    assert (d.kind, d.target, str(d), d.redacted(), d.is_dm, d.recipient) == expected


@pytest.mark.parametrize(("kind", "target", "expected"), DIRECT)
def test_a_destination_built_directly_reads_as_before(
    kind: str, target: str, expected: tuple[str, str, bool, str | None]
) -> None:
    # a kind no channel declares (fax) has a syntax that declares nothing
    syntax = URI_SYNTAXES.get(kind) or UriSyntax(kind, f"{kind}:…", lambda raw, target: None)
    d = Destination(kind, target, syntax)
    assert (str(d), d.redacted(), d.is_dm, d.recipient) == expected
