"""The ``until done`` clause of ``/schedule`` (issue 40): a message that nags in its
thread and escalates to other people until someone presses its Done button.

It ends WHEN, before the ": " that starts the message::

    /schedule #oncall every weekday at 9am until done, nag every 15m,
        escalate to @lead after 1h, then escalate to @cto, #ops after 2h: Check the backups

``nag every D`` and up to two ``escalate to WHO after D`` clauses (``then`` and ``and``
may start a clause), each optional; WHO is one or more mentions (``<@U0123|lead>``,
``me``) or channel links (``<#C0123|ops>``). Durations are left to core
(:func:`core.until_done.parse`), which refuses them in its own words.

Pure: no Slack, no database, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.slack import targets
from bot.slack.targets import ME
from bot.slack.words import Refusal, escape

EXAMPLE = (
    "/schedule #oncall every weekday at 9am until done, nag every 15m, "
    "escalate to @lead after 1h: Check the backups"
)
#: Where the clause starts: "until done" as words of their own.
_START = re.compile(r"(?:^|(?<=[\s,]))until\s+done\b", re.I)
#: A clause's first words.
_CLAUSE = re.compile(r"(?:(?:and\s+)?(?:then\s+)?)(nag\s+every|escalate\s+to)\b", re.I)
_SEPARATORS = re.compile(r"[\s,]*(?:\band\b)?[\s,]*", re.I)
_AFTER = re.compile(r"\s+after\s+", re.I)
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL = re.compile(r"<#([CG][A-Z0-9]+)(?:\|[^>]*)?>")
#: One recipient's word: a mention or link (whose label may have spaces), else a word.
_WHO_WORD = re.compile(r"<[^>]*>|[^\s,]+")


@dataclass(frozen=True)
class Ladder:
    """What ``until done …`` asked: the nag interval as typed (None: no nags) and each
    escalation level's destinations (``slack:@U…``, ``slack:C…``, or :data:`ME`) and
    delay as typed."""

    nag: str | None = None
    levels: tuple[tuple[tuple[str, ...], str], ...] = ()

    def request(self, user_id: str) -> dict[str, Any]:
        """The ladder as :meth:`core.cases.Herald.create_schedule` takes it, ``me``
        being ``user_id``."""
        return {
            "nag": self.nag,
            "escalate": [
                {"to": [f"slack:@{user_id}" if d == ME else d for d in to], "after": after}
                for to, after in self.levels
            ],
        }


def create_args(ladder: Ladder | None, user_id: str) -> dict[str, Any]:
    """The ``until_done`` argument of :meth:`core.cases.Herald.create_schedule` for a
    command by ``user_id`` (nothing when it asked for no ladder)."""
    return {} if ladder is None else {"until_done": ladder.request(user_id)}


def split(when: str) -> tuple[str, Ladder | None]:
    """WHEN without its ``until done`` clause, and the ladder it asks for (None: no
    such clause). Raises Refusal, with an example, for a clause it cannot read."""
    found = _START.search(when)
    if found is None:
        return when, None
    before = when[: found.start()].rstrip(" ,")
    if not before.strip():
        raise Refusal(f"Say when before “until done”, e.g. `{EXAMPLE}`.")
    return before, _clauses(when[found.end() :])


def _clauses(tail: str) -> Ladder:
    starts = list(_CLAUSE.finditer(tail))
    lead = tail[: starts[0].start()] if starts else tail
    if _SEPARATORS.fullmatch(lead) is None:
        raise _unread(lead)
    nag: str | None = None
    levels: list[tuple[tuple[str, ...], str]] = []
    for n, start in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(tail)
        words = tail[start.end() : end].strip(" ,")
        words = re.sub(r"\s+and$", "", words, flags=re.I).strip(" ,")
        if start.group(1).lower().startswith("nag"):
            if nag is not None:
                raise Refusal("Say “nag every …” once.")
            if not words:
                raise Refusal(f"Say how often to nag, e.g. `nag every 15m`: `{EXAMPLE}`.")
            nag = words
            continue
        parts = _AFTER.split(words, maxsplit=1)
        if len(parts) != 2 or not parts[1].strip():
            raise Refusal(
                f"Say after how long to escalate, e.g. `escalate to @lead after 1h`: `{EXAMPLE}`."
            )
        levels.append((_whom(parts[0]), parts[1].strip()))
    return Ladder(nag, tuple(levels))


def _whom(text: str) -> tuple[str, ...]:
    """Escalation recipients: mentions, channel links and ``me``."""
    found: list[str] = []
    for word in _WHO_WORD.findall(text):
        if word.lower() == "and":
            continue
        if word.lower() == ME:
            found.append(ME)
        elif user := _USER.fullmatch(word):
            found.append(f"slack:@{user.group(1)}")
        elif channel := _CHANNEL.fullmatch(word):
            found.append(f"slack:{channel.group(1)}")
        elif word.startswith("@"):
            raise targets.not_a_mention(word)
        else:
            raise Refusal(
                f"Escalate to people (`@lead`) or channels (`#ops`) picked from Slack's "
                f"suggestions, not `{escape(word)}`: e.g. `{EXAMPLE}`."
            )
    if not found:
        raise Refusal(f"Say whom to escalate to, e.g. `escalate to @lead after 1h`: `{EXAMPLE}`.")
    return tuple(found)


def _unread(text: str) -> Refusal:
    return Refusal(
        f"Could not read `{escape(text.strip(' ,'))}` after “until done”: write "
        f"`nag every 15m` and `escalate to @lead after 1h`, e.g. `{EXAMPLE}`."
    )
