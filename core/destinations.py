"""Destination URIs: where a message goes, written ``kind:target``.

Each channel declares its kind's syntax (a :class:`UriSyntax`: the check of a target,
an example, the redaction of secrets, its direct messages and settings) as its
class's ``uri``, in its module in ``core/channels/``; :func:`parse_destination`
dispatches to the declarations (``core.channels.URI_SYNTAXES``). Today's kinds:
``slack:C0123`` (optionally ``slack:C0123/1700000000.000100`` for a thread reply),
``slack:@U0123ABC`` (a direct message from the bot to that Slack user),
``discord:123456789012345678``, ``discord:@123456789012345678`` (a direct message to
that Discord user), ``discord-webhook:https://discord.com/api/webhooks/…``
(embeds, custom name and avatar), ``webhook:https://...``, ``email:ops@example.com``,
``apprise:tgram://…``, ``log:`` (the service log) and ``null:`` (discards; for
benchmarks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from core.errors import InvalidInput

#: What a refused kind is told to use instead.
EXAMPLES = (
    "slack:C0123ABC, discord:123456789012345678, webhook:https://example.com/hook, "
    "email:ops@example.com, apprise:tgram://TOKEN/CHAT or log:"
)


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
        if not self.target.startswith("@"):
            return False
        syntax = syntaxes().get(self.kind)
        return syntax is not None and syntax.direct_messages

    @property
    def recipient(self) -> str | None:
        """The member id (``slack:U…``, ``discord:<id>``) a direct message goes to."""
        return f"{self.kind}:{self.target[1:]}" if self.is_dm else None

    def redacted(self) -> str:
        """The URI fit for logs and audit rows: what may carry a secret (a webhook's
        path and query, an Apprise URL) is hidden, as its channel declares."""
        syntax = syntaxes().get(self.kind)
        if syntax is None or syntax.redact is None:
            return str(self)
        return syntax.redact(self)


@dataclass(frozen=True)
class UriSyntax:
    """How one kind of destination is written: declared by its channel (the class's
    ``uri``), read by :func:`parse_destination` and :meth:`Destination.redacted`."""

    #: The URI scheme, the channel's ``kind``.
    kind: str
    #: A destination as people write it, e.g. ``slack:C0123ABC``.
    example: str
    #: Checks a target (what follows ``kind:``); raises InvalidInput in one sentence
    #: that quotes ``raw``, the whole URI as given: ``check(raw, target)``.
    check: Callable[[str, str], None]
    #: The URI fit for logs and audit rows (None: it carries no secret).
    redact: Callable[[Destination], str] | None = None
    #: ``kind:@<user id>`` is a direct message from the bot to that person.
    direct_messages: bool = False
    #: The settings the channel reads (fields of :class:`core.settings.Settings`).
    settings: tuple[str, ...] = ()


_SYNTAXES: dict[str, UriSyntax] = {}


def syntaxes() -> Mapping[str, UriSyntax]:
    """Every kind's syntax, by kind, as the channels declare them. Read on first use:
    the channel modules import this one."""
    if not _SYNTAXES:
        from core.channels import URI_SYNTAXES

        _SYNTAXES.update(URI_SYNTAXES)
    return _SYNTAXES


def parse_destination(uri: str) -> Destination:
    """Parse and check a destination URI; InvalidInput says what is wrong."""
    raw = uri.strip()
    kind, sep, target = raw.partition(":")
    kind = kind.lower()
    if not sep or not kind:
        raise InvalidInput(f"Destination {raw!r} has no kind: use {EXAMPLES}.")
    syntax = (_SYNTAXES or syntaxes()).get(kind)
    if syntax is None:
        raise InvalidInput(f"Unknown destination kind {kind!r} in {raw!r}: use {EXAMPLES}.")
    syntax.check(raw, target)
    return Destination(kind, target)


# --- what several syntaxes share ---------------------------------------------------


def url_parts(raw: str, target: str, example: str) -> SplitResult:
    """``urlsplit`` that turns malformed URLs (bad IPv6 brackets, ports) into InvalidInput."""
    try:
        parts = urlsplit(target)
        _ = parts.hostname, parts.port
    except ValueError as exc:
        raise InvalidInput(f"{raw!r} is not a valid URL ({exc}): use {example}.") from exc
    return parts


def redact_url_path(destination: Destination) -> str:
    """A URL destination with its path and query (which often carry a secret token)
    hidden: ``webhook:https://example.com/…``."""
    try:
        parts = urlsplit(destination.target)
        host = parts.hostname
    except ValueError:
        return f"{destination.kind}:…"
    return f"{destination.kind}:{parts.scheme}://{host}/…"


def nothing_after(kind: str) -> Callable[[str, str], None]:
    """The check of a kind that takes no target (``log:``)."""

    def check(raw: str, target: str) -> None:
        if target:
            raise InvalidInput(f"{kind}: takes nothing after the colon; use {kind}: alone.")

    return check
