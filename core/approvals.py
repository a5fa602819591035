"""Approvals (issue 40): what a second person decides, one mechanism for every kind.

Two kinds share the ``approval`` table and the verbs ``approve`` and ``reject``
(core/verbs.py): a dead letter's retry, asked by a member or an operator and decided by
an admin (core/cases/dead_letters.py), and a member's message held before it is sent
(core/cases/approvals.py). A member's message is held when it goes into an announcement
channel (``HERALD_ANNOUNCEMENT_CHANNELS``) or carries broadcast mentions in a tenant that
holds them for approval (``HERALD_APPROVE_BROADCASTS``) instead of refusing them: Slack's
``<!channel>``, ``<!here>``, ``<!everyone>`` and user groups, Discord's ``@everyone``,
``@here`` and roles the member may not mention. Operators and admins are not held.

The tenant's approvers are its admins and the members listed in ``HERALD_APPROVERS``;
nobody decides their own request.

Pure: no store, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from core.actors import Actor
from core.destinations import Destination
from core.models import Role
from core.settings import Settings
from core.tenancy import DISCORD_KINDS, holds_broadcasts, slack_broadcasts

_DISCORD_EVERYONE = re.compile(r"@(everyone|here)\b")
_DISCORD_ROLE = re.compile(r"<@&(\d+)>")


def is_approver(actor: Actor, settings: Settings) -> bool:
    """Whether ``actor`` decides their tenant's held messages."""
    return actor.role is Role.ADMIN or actor.id in settings.approvers


def _broadcasts(
    actor: Actor, destination: Destination, body: str, options: Mapping[str, Any]
) -> str | None:
    """The first broadcast mention in the message that ``actor`` may not make."""
    if destination.kind == "slack":
        found = slack_broadcasts(body, dict(options))
        return found[0] if found else None
    if destination.kind in DISCORD_KINDS:
        if not actor.mentions.everyone:
            everyone = _DISCORD_EVERYONE.search(body)
            if everyone:
                return everyone.group(0)
            for role in _DISCORD_ROLE.finditer(body):
                if role.group(1) not in actor.mentions.roles:
                    return role.group(0)
    return None


def why_held(
    actor: Actor,
    destinations: Iterable[Destination],
    body: str,
    options: Mapping[str, Any],
    settings: Settings,
) -> str | None:
    """Why a message by ``actor`` waits for an approver, in words ("it goes to
    slack:C0123, an announcement channel", "it mentions <!channel>, …"), or None when it does
    not: operators and admins are never held, nor a tenant that holds nothing."""
    if actor.role is not Role.MEMBER or actor.herald_wide:
        return None
    places = list(destinations)
    for destination in places:
        if str(destination) in settings.announcement_channels:
            return f"it goes to {destination}, an announcement channel"
    if not holds_broadcasts(actor.tenant, settings):
        return None
    for destination in places:
        found = _broadcasts(actor, destination, body, options)
        if found is not None:
            return f"it mentions {found}, which notifies many people"
    return None


def approved_mentions(destination: Destination) -> dict[str, Any] | None:
    """A held Discord message's ``allowed_mentions`` once approved: what the approver
    vouched for (everyone, roles and users); None for other channels."""
    if destination.kind in DISCORD_KINDS:
        return {"parse": ["users", "roles", "everyone"]}
    return None
