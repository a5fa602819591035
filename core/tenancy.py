"""What a member may make the bot do in their tenant: whom a message may notify, and the
quotas that keep one member from flooding a channel or the queue.

The bot posts with more rights than its members have (it can ping ``@everyone`` where
a member could not), so a delivered message may notify only whom its author could:

- **Discord**: every message carries ``allowed_mentions`` (https://discord.com/developers/
  docs/resources/message#allowed-mentions-object). Users only, unless the author had
  Mention Everyone in the channel when scheduling (then ``@everyone``/``@here`` and every
  role), plus the roles the author could mention themselves (mentionable roles).
- **Slack** has no such field: ``<!channel>``, ``<!here>``, ``<!everyone>`` and user-group
  mentions (``<!subteam^…>``, https://api.slack.com/reference/surfaces/formatting#special-
  mentions), in the text or anywhere in its blocks, and Block Kit's rich-text
  ``broadcast`` and ``usergroup`` elements at any depth
  (https://docs.slack.dev/reference/block-kit/block-elements/broadcast-element,
  .../usergroup-element) are refused at schedule time unless the author is an admin or
  their tenant is in ``HERALD_BROADCAST_TENANTS``.

Nor may a message claim another sender: in Slack a member may not set ``username``,
``icon_url`` or ``icon_emoji`` (the bot's ``chat:write.customize`` would post as "Ada
Lovelace (CEO)") unless they are an admin or their tenant is in
``HERALD_CUSTOM_SENDER_TENANTS``; the "scheduled by" line says who wrote it either way.

Quotas (each a setting; Herald-wide admins and operators and the tenants in
``HERALD_QUOTA_EXEMPT_TENANTS``, by default the terminal's ``local``, are exempt, but
through an API token only the tokens in ``HERALD_QUOTA_EXEMPT_TOKENS`` are): live
(active or paused) schedules per member and per tenant, the shortest interval of a
recurring schedule into a shared chat channel for members, chat commands per member
per minute, and lines imported per API token per minute (:class:`ImportMeter`).
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from core import timeexpr
from core.actors import Actor
from core.destinations import Destination
from core.errors import HeraldError
from core.settings import Settings

#: Slack's broadcast and user-group mentions, in message text or in block text.
_SLACK_BROADCAST = re.compile(r"<!(channel|here|everyone|subteam\^[A-Z0-9]+)(\|[^>]*)?>")
#: A Discord role mention, ``<@&id>``.
_DISCORD_ROLE = re.compile(r"<@&(\d{1,20})>")
#: Destination kinds that post into a chat channel many people read.
SHARED_CHANNELS = frozenset({"slack", "discord", "discord-webhook"})
DISCORD_KINDS = frozenset({"discord", "discord-webhook"})
#: How many occurrences are looked at for the shortest interval of a rule.
_SAMPLE = 48


class QuotaExceeded(HeraldError):
    """A member or tenant reached one of its limits; nothing was changed."""


class MentionRefused(HeraldError):
    """A message would notify people its author may not notify; nothing was changed."""


class SenderRefused(MentionRefused):
    """A message would show a sender (a name or icon) other than the bot's, which its
    author may not set; nothing was changed. A MentionRefused, so every surface answers
    and audits it as it does a refused mention (it too claims more than the author may)."""


#: The options that make a Slack message show another sender (chat.postMessage with
#: ``chat:write.customize``, https://docs.slack.dev/reference/methods/chat.postMessage).
SLACK_SENDER_OPTIONS = ("username", "icon_url", "icon_emoji")


def exempt(actor: Actor, settings: Settings) -> bool:
    """Whether no quota applies to ``actor``: through an API token, only when that token
    is listed in ``HERALD_QUOTA_EXEMPT_TOKENS`` (never because of its member's tenant or
    role); otherwise a Herald-wide actor, or one of an exempt tenant."""
    if actor.via is not None:
        return actor.via in settings.quota_exempt_tokens
    return actor.herald_wide or actor.tenant in settings.quota_exempt_tenants


# --- mentions ------------------------------------------------------------------------


def slack_broadcasts(body: str, options: Mapping[str, Any] | None) -> list[str]:
    """The broadcast and user-group mentions in a Slack message: in its text, in any
    text of its blocks, and its blocks' rich-text ``broadcast`` and ``usergroup``
    elements wherever they sit (a rich_text_section, list, quote or preformatted, nested
    or not), each written as its text mention (``<!channel>``, ``<!subteam^S123>``)."""
    found = [m.group(0) for m in _SLACK_BROADCAST.finditer(body)]
    blocks = (options or {}).get("blocks")
    if blocks:
        found += [m.group(0) for m in _SLACK_BROADCAST.finditer(json.dumps(blocks))]
        found += _rich_text_broadcasts(blocks)
    return found


def _rich_text_broadcasts(node: Any) -> list[str]:
    """The ``broadcast`` and ``usergroup`` elements anywhere inside ``node`` (walked
    without recursion: a deep nesting cannot exhaust the stack)."""
    found: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            kind = item.get("type")
            if kind == "broadcast":
                found.append(f"<!{item.get('range')}>")
            elif kind == "usergroup":
                found.append(f"<!subteam^{item.get('usergroup_id')}>")
            stack.extend(reversed(list(item.values())))
    return found


def check_mentions(
    actor: Actor,
    destination: Destination,
    body: str,
    options: dict[str, Any],
    settings: Settings,
) -> dict[str, Any]:
    """``options`` with the mentions the author may make (Discord ``allowed_mentions``,
    which no request may set itself). Raises MentionRefused when a Slack message would
    notify more people than its author may, SenderRefused when it would show a sender
    they may not set (:func:`check_sender`)."""
    options.pop("allowed_mentions", None)
    check_sender(actor, destination, options, settings)
    if destination.kind == "slack":
        broadcasts = slack_broadcasts(body, options)
        allowed = actor.is_admin or actor.tenant in settings.broadcast_tenants
        if broadcasts and not allowed and not holds_broadcasts(actor.tenant, settings):
            raise MentionRefused(
                f"Only admins can notify a whole channel or a user group ({broadcasts[0]}): "
                "Herald posts as the bot, which could reach people you cannot. Remove it, "
                "or ask an admin to schedule this message."
            )
    elif destination.kind in DISCORD_KINDS:
        options["allowed_mentions"] = discord_allowed_mentions(actor, body)
    return options


def holds_broadcasts(tenant: str, settings: Settings) -> bool:
    """Whether ``tenant`` holds its members' broadcast mentions for an approver
    (core.approvals) instead of refusing them (``HERALD_APPROVE_BROADCASTS``: its
    name, or ``all``)."""
    held = settings.approve_broadcasts
    return "all" in held or tenant in held


def check_sender(
    actor: Actor, destination: Destination, options: Mapping[str, Any], settings: Settings
) -> None:
    """Refuse (SenderRefused) a Slack message with its own sender name or icon from a
    member: the bot posts it, so "Ada Lovelace (CEO)" would read as Ada's own. Admins,
    Herald-wide actors and the tenants in ``HERALD_CUSTOM_SENDER_TENANTS`` (by default
    the terminal's ``local``) may. (A Discord webhook's username is not refused: whoever
    has the webhook's URL can post under any name without Herald.)"""
    if destination.kind != "slack":
        return
    named = [name for name in SLACK_SENDER_OPTIONS if options.get(name) is not None]
    if not named:
        return
    if actor.is_admin or actor.herald_wide or actor.tenant in settings.custom_sender_tenants:
        return
    raise SenderRefused(
        f"Only admins can post under another name or icon ({named[0]}): Herald posts as "
        "the bot, and people would read it as that name's message. Leave it out (the "
        "message says who scheduled it), or ask an admin."
    )


def discord_allowed_mentions(actor: Actor, body: str) -> dict[str, Any]:
    """The ``allowed_mentions`` of a Discord message written by ``actor``."""
    if actor.herald_wide or actor.mentions.everyone:
        return {"parse": ["users", "roles", "everyone"]}
    roles = sorted({m.group(1) for m in _DISCORD_ROLE.finditer(body)} & actor.mentions.roles)
    allowed: dict[str, Any] = {"parse": ["users"]}
    if roles:
        allowed["roles"] = roles
    return allowed


# --- quotas ----------------------------------------------------------------------------


def check_interval(
    actor: Actor, destination: Destination, rule: str | None, settings: Settings
) -> None:
    """Refuse a recurring rule into a shared channel that repeats faster than the
    members' minimum (admins and exempt tenants may)."""
    limit = settings.quota_min_interval
    if rule is None or destination.kind not in SHARED_CHANNELS or limit <= 0:
        return
    if destination.recipient == actor.id:  # a reminder to oneself: nobody else reads it
        return
    if actor.is_admin or exempt(actor, settings):
        return
    times = timeexpr.occurrences(rule, count=_SAMPLE)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    if gaps and min(gaps) < timedelta(seconds=limit):
        raise QuotaExceeded(
            f"This rule repeats every {_span(min(gaps))}; into a shared channel, members "
            f"may repeat a message at most every {_span(timedelta(seconds=limit))}. "
            "Choose a longer interval, or ask an admin."
        )


def check_live_count(
    actor: Actor, *, mine: int, tenant_total: int, adding: int, settings: Settings
) -> None:
    """Refuse ``adding`` more live schedules when the member or the tenant would pass
    its quota (a schedule counts once per recipient)."""
    if exempt(actor, settings):
        return
    per_member, per_tenant = settings.quota_schedules_per_member, settings.quota_schedules
    if mine + adding > per_member:
        raise QuotaExceeded(
            f"You have {mine:,} active or paused schedules here and may have at most "
            f"{per_member:,} (a schedule counts once per recipient)"
            + (f"; this one would add {adding:,}" if adding > 1 else "")
            + "; cancel some first."
        )
    if tenant_total + adding > per_tenant:
        raise QuotaExceeded(
            f"This workspace has {tenant_total:,} active or paused schedules and may have "
            f"at most {per_tenant:,} (a schedule counts once per recipient); ask an admin to "
            "cancel some first."
        )


class CommandMeter:
    """Chat commands per member per minute, counted in this process (a sliding
    window over the injected clock)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[tuple[str, str], deque[datetime]] = {}
        self._refused: dict[tuple[str, str], datetime] = {}

    def admit(self, actor: Actor, now: datetime) -> bool:
        """Count one command; False when the member already used their minute."""
        if self.per_minute <= 0:
            return True
        key = (actor.tenant, actor.id)
        seen = self._seen.setdefault(key, deque())
        while seen and now - seen[0] >= timedelta(minutes=1):
            seen.popleft()
        if len(seen) >= self.per_minute:
            return False
        seen.append(now)
        if len(self._seen) > 10_000:  # forget members idle for a minute
            for k in [k for k, v in self._seen.items() if not v or now - v[-1] >= _MINUTE]:
                del self._seen[k]
                self._refused.pop(k, None)
        return True

    def first_refusal(self, actor: Actor, now: datetime) -> bool:
        """Whether this is the member's first refusal this minute (audited; later ones
        in the same minute are not, so a flood cannot flood the audit log too)."""
        key = (actor.tenant, actor.id)
        last = self._refused.get(key)
        if last is not None and now - last < _MINUTE:
            return False
        self._refused[key] = now
        return True


_MINUTE = timedelta(minutes=1)


class ImportMeter:
    """Lines imported per API token per minute, counted in this process (a sliding
    window over the injected clock). Lines are counted when an import is asked for,
    before they are checked: checking is the work this bounds."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[tuple[datetime, int]]] = {}

    def used(self, who: str, now: datetime) -> int:
        """Lines ``who`` imported in the minute before ``now``."""
        seen = self._seen.get(who)
        if seen is None:
            return 0
        while seen and now - seen[0][0] >= _MINUTE:
            seen.popleft()
        return sum(lines for _, lines in seen)

    def admit(self, who: str, lines: int, now: datetime) -> int:
        """Count ``lines`` for ``who`` and return 0; or, when they would pass the
        minute's limit, count nothing and return the whole seconds until they fit."""
        if self.per_minute <= 0:
            return 0
        used = self.used(who, now)
        if used + lines > self.per_minute:
            for at, amount in self._seen.get(who, ()):
                used -= amount
                if used + lines <= self.per_minute:
                    return max(1, math.ceil((at + _MINUTE - now).total_seconds()))
            return 60
        self._seen.setdefault(who, deque()).append((now, lines))
        if len(self._seen) > 10_000:  # forget those idle for a minute
            for k in [k for k, v in self._seen.items() if not v or now - v[-1][0] >= _MINUTE]:
                del self._seen[k]
        return 0


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 3600 == 0 and seconds >= 3600:
        hours = seconds // 3600
        return f"{hours} hour" + ("s" if hours != 1 else "")
    if seconds % 60 == 0 and seconds >= 60:
        minutes = seconds // 60
        return f"{minutes} minute" + ("s" if minutes != 1 else "")
    return f"{seconds} second" + ("s" if seconds != 1 else "")


#: Discord's broadcast mentions, and a role's.
_DISCORD_BROADCAST = re.compile(r"@(everyone|here)\b")


def neutralize_mentions(text: str | None) -> str | None:
    """``text`` (from a calendar, say: nobody's to vouch for) with its broadcast, group
    and role mentions shown as text rather than sent: Slack's ``<!channel>``-style
    tokens are escaped (``&lt;!channel&gt;``), Discord's ``@everyone``/``@here`` get a
    zero-width space after the ``@`` and role mentions lose their ``<@&`` form."""
    if not text:
        return text
    text = _SLACK_BROADCAST.sub(lambda m: "&lt;" + m.group(0)[1:-1] + "&gt;", text)
    text = _DISCORD_BROADCAST.sub(lambda m: "@\u200b" + m.group(1), text)
    return _DISCORD_ROLE.sub(lambda m: "@&\u200b" + m.group(1), text)
