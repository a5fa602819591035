"""Whom a ``/schedule`` goes to: the targets written before WHEN (issue 35).

::

    /schedule #ops #dev @alice every weekday at 9am: Stand-up     three recipients
    /schedule @alice or alice@example.com tomorrow at 9: Deck     one recipient, a chain
    /schedule #ops @alice at 9am their time: Stand-up             each person's own 9am

A target is a channel link (``<#C0123|ops>``), a channel typed as plain text
(``#ops``, found by name), a member's mention (``<@U0123|alice>``), ``me``, or an email
address: bare, written ``email:alice@example.com``, or as Slack links it
(``<mailto:alice@example.com|alice@example.com>``). Targets are separated by spaces or
commas; ``or`` between two makes a chain, tried in order (core.routing).

Each target is read into one string the Slack layer turns into a destination:
``slack:C0123`` (a channel by id), ``#ops`` (a channel by name), ``slack:@U0123`` (a
member, by direct message), :data:`ME` (the person typing), ``email:alice@example.com``.
Pure: no Slack, no database.
"""

from __future__ import annotations

import re

from bot.slack.words import Refusal, escape

#: The target (and :attr:`bot.slack.grammar.Create.person`) of the person typing.
ME = "me"
#: The most targets one command may name: core caps recipients (core.routing); this
#: only keeps a pasted wall of text from being read target by target.
MAX_TARGETS = 600

_CHANNEL = re.compile(r"<#([CG][A-Z0-9]+)(?:\|[^>]*)?>")
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_MAILTO = re.compile(r"<mailto:([^|>\s]+@[^|>\s]+)(?:\|[^>]*)?>", re.I)
_EMAIL = re.compile(r"(?:email:)?([\w.+'-]+@[\w-]+(?:\.[\w-]+)+)(?=[\s,]|$)", re.I)
_TYPED = re.compile(r"#[^\s,]+")
_ME = re.compile(r"me(?=[\s,]|$)", re.I)
#: A mention Herald does not expand (``<!channel>``, ``<!subteam^S1|devs>``).
_GROUP = re.compile(r"<![^>]*>")
_RAW_PERSON = re.compile(r"@[\w.-]+")
_OR = re.compile(r"[\s,]+or\s+", re.I)
_BETWEEN = re.compile(r"[\s,]*")
#: A Slack channel name: at most 80 letters (any script), digits, hyphens, underscores
#: and periods, no spaces (https://api.slack.com/methods/conversations.create, ``name``).
_NAME = re.compile(r"[\w.\-]{1,80}")
#: "their time" in WHEN: read the time in each recipient's own zone.
_THEIR_TIME = re.compile(r"\s*\btheir\s+time\b", re.I)

Chain = tuple[str, ...]


def channel_name(typed: str) -> str:
    """The channel name in a plain ``#name``; Refusal when Slack allows no such name."""
    name = typed.removeprefix("#").lower()
    if not _NAME.fullmatch(name):
        raise Refusal(
            f"`{escape(typed)}` is not a Slack channel name: pick the channel from Slack's "
            "suggestions as you type, or use `/schedule` alone to open the form."
        )
    return name


def not_a_mention(word: str) -> Refusal:
    """The refusal for ``@name`` typed as text (Slack did not make it a mention)."""
    return Refusal(
        f"Slack did not turn `{escape(word)}` into a mention: pick the person "
        "from Slack's suggestions as you type, or use `me` for yourself."
    )


def not_a_group(example: str) -> Refusal:
    return Refusal(
        "Herald posts into channels, or reminds a person (`/schedule @someone …`), not "
        f"a group: name channels or people, e.g. `{example}`."
    )


def one(raw: str, at: int) -> tuple[str, int] | None:
    """The target starting at ``at`` and where it ends, or None when none does.
    Refusal for ``@name`` as plain text, and for a typed ``#name`` Slack allows not."""
    if match := _CHANNEL.match(raw, at):
        return f"slack:{match.group(1)}", match.end()
    if match := _USER.match(raw, at):
        return f"slack:@{match.group(1)}", match.end()
    if match := _MAILTO.match(raw, at) or _EMAIL.match(raw, at):
        return f"email:{match.group(1)}", match.end()
    if match := _ME.match(raw, at):
        return ME, match.end()
    if match := _TYPED.match(raw, at):
        return f"#{channel_name(match.group(0))}", match.end()
    if match := _RAW_PERSON.match(raw, at):
        raise not_a_mention(match.group(0))
    return None


def scan(raw: str, example: str) -> tuple[tuple[Chain, ...], str]:
    """The targets ``raw`` starts with, each a chain (one target, or several joined by
    ``or``), and the text after them. ``example`` is shown in a refusal (a group
    mention after a target, too many targets)."""
    chains: list[Chain] = []
    at = 0
    while (found := one(raw, at)) is not None:
        chain, end = [found[0]], found[1]
        while (joined := _OR.match(raw, end)) and (more := one(raw, joined.end())):
            chain.append(more[0])
            end = more[1]
        chains.append(tuple(chain))
        if len(chains) > MAX_TARGETS:
            raise Refusal(f"That names more than {MAX_TARGETS} targets: split it up.")
        gap = _BETWEEN.match(raw, end)
        at = gap.end() if gap is not None else end
        if chains and _GROUP.match(raw, at):
            raise not_a_group(example)
    return tuple(chains), raw[at:].strip()


def their_time(when: str) -> tuple[str, bool]:
    """``when`` without "their time" (``at 9am their time`` → ``at 9am``), and whether
    it said so."""
    stripped, count = _THEIR_TIME.subn("", when, count=1)
    return (stripped.strip(), True) if count else (when, False)
