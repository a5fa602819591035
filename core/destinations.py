"""Destination URIs: where a message goes.

``slack:C0123`` (optionally ``slack:C0123/1700000000.000100`` for a thread reply),
``slack:@U0123ABC`` (a direct message from the bot to that Slack user),
``discord:123456789012345678``, ``discord:@123456789012345678`` (a direct message to
that Discord user), ``discord-webhook:https://discord.com/api/webhooks/…``
(embeds, custom name and avatar), ``webhook:https://...``, ``email:ops@example.com``,
``log:`` (the service log) and ``null:`` (discards; for benchmarks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from core.errors import InvalidInput

EXAMPLES = (
    "slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, "
    "email:ops@example.com, apprise:tgram://TOKEN/CHAT or log:"
)

_SLACK = re.compile(r"^[CGD][A-Z0-9]{2,}(/\d{10}\.\d{6})?$")
_DISCORD = re.compile(r"^\d{17,20}$")
#: A Slack user id (``U…``, or ``W…`` for an Enterprise Grid org user).
_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{1,30}$")
#: The destination kinds whose target may be ``@<user id>``: a direct message.
DM_KINDS = frozenset({"slack", "discord"})
_EMAIL = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")


@dataclass(frozen=True)
class Destination:
    """A parsed destination: its kind (the URI scheme) and the rest."""

    kind: str
    target: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"

    @property
    def is_dm(self) -> bool:
        """Whether this is a direct message from the bot to one person."""
        return self.kind in DM_KINDS and self.target.startswith("@")

    @property
    def recipient(self) -> str | None:
        """The member id (``slack:U…``, ``discord:<id>``) a direct message goes to."""
        return f"{self.kind}:{self.target[1:]}" if self.is_dm else None

    def redacted(self) -> str:
        """The URI fit for logs and audit rows: a webhook's path and query (which often
        carry a secret token) are hidden."""
        if self.kind == "apprise":  # the whole URL may be credentials
            return f"apprise:{self.target.partition('://')[0]}://…"
        if self.kind in ("webhook", "discord-webhook"):
            try:
                parts = urlsplit(self.target)
                host = parts.hostname
            except ValueError:
                return f"{self.kind}:…"
            return f"{self.kind}:{parts.scheme}://{host}/…"
        return str(self)


def _url_parts(raw: str, target: str, example: str) -> SplitResult:
    """``urlsplit`` that turns malformed URLs (bad IPv6 brackets, ports) into InvalidInput."""
    try:
        parts = urlsplit(target)
        _ = parts.hostname, parts.port
    except ValueError as exc:
        raise InvalidInput(f"{raw!r} is not a valid URL ({exc}): use {example}.") from exc
    return parts


def parse_destination(uri: str) -> Destination:
    """Parse and check a destination URI; InvalidInput says what is wrong."""
    raw = uri.strip()
    kind, sep, target = raw.partition(":")
    kind = kind.lower()
    if not sep or not kind:
        raise InvalidInput(f"Destination {raw!r} has no kind: use {EXAMPLES}.")
    if kind == "slack" and target.startswith("@"):
        if not _SLACK_USER.match(target[1:]):
            raise InvalidInput(
                f"{raw!r} is not a Slack user: use the member id, e.g. slack:@U0123ABC "
                "(in Slack: the person's profile, ⋮, Copy member ID)."
            )
    elif kind == "discord" and target.startswith("@"):
        if not _DISCORD.match(target[1:]):
            raise InvalidInput(
                f"{raw!r} is not a Discord user: use their numeric id, e.g. "
                "discord:@123456789012345678 (Developer Mode, right-click, Copy User ID)."
            )
    elif kind == "slack":
        if not _SLACK.match(target):
            raise InvalidInput(
                f"{raw!r} is not a Slack channel: use the channel id, e.g. slack:C0123ABC "
                "(thread reply: slack:C0123ABC/1700000000.000100; a direct message: "
                "slack:@U0123ABC)."
            )
    elif kind == "discord":
        if not _DISCORD.match(target):
            raise InvalidInput(
                f"{raw!r} is not a Discord channel: use its numeric id, "
                "e.g. discord:123456789012345678 (a direct message: discord:@<user id>)."
            )
    elif kind == "webhook":
        parts = _url_parts(raw, target, "webhook:https://example.com/hook")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(
                f"{raw!r} is not a webhook URL: use webhook:https://example.com/hook."
            )
    elif kind == "discord-webhook":
        parts = _url_parts(raw, target, "discord-webhook:https://discord.com/api/webhooks/ID/TOKEN")
        if parts.scheme not in ("http", "https") or "/webhooks/" not in parts.path:
            raise InvalidInput(
                f"{raw!r} is not a Discord webhook URL: copy it from the channel's "
                "Integrations settings (https://discord.com/api/webhooks/ID/TOKEN)."
            )
    elif kind == "email":
        if not _EMAIL.match(target):
            raise InvalidInput(f"{raw!r} is not an email address: use email:ops@example.com.")
    elif kind == "apprise":
        scheme, sep, rest = target.partition("://")
        if not sep or not scheme or not rest:
            raise InvalidInput(
                f"{raw!r} is not an Apprise URL: use e.g. apprise:tgram://BOT_TOKEN/CHAT_ID "
                "or apprise:ntfy://ntfy.sh/topic."
            )
    elif kind in ("log", "null"):
        if target:
            raise InvalidInput(f"{kind}: takes nothing after the colon; use {kind}: alone.")
    else:
        raise InvalidInput(f"Unknown destination kind {kind!r} in {raw!r}: use {EXAMPLES}.")
    return Destination(kind, target)
