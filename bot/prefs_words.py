"""What the chat surfaces say about a member's preferences, and which places they offer.

Slack's modal and Discord's ``/schedule prefs`` both show a member's effective
preferences in words (which field comes from the tenant's defaults, too) and offer the
places for reminders that this deployment can send to. The use cases live in
:mod:`core.cases` (``preferences``/``set_preferences``); this is only their words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.preferences import Preferences

#: How each "who may remind" choice reads, for the member themselves.
ACCEPT_WORDS = {
    "anyone": "anyone here",
    "admins": "only admins",
    "self": "only you",
}
#: The person kinds a preferred place may be, besides the platform's own DM.
PERSON_KINDS = ("email", "sms", "push")
#: Quiet days as the surfaces offer them (core.preferences.DAY_NAMES), with labels.
DAYS = (
    ("mon", "Monday"),
    ("tue", "Tuesday"),
    ("wed", "Wednesday"),
    ("thu", "Thursday"),
    ("fri", "Friday"),
    ("sat", "Saturday"),
    ("sun", "Sunday"),
)


def offered_kinds(herald: Any) -> tuple[str, ...]:
    """The person kinds (email, sms, push) this deployment can send to: an email or
    SMS channel with a configured provider (a failover channel keeps only those), push
    with Firebase's service account. A reminder to a place that cannot be sent would
    only fail later."""
    found: list[str] = []
    for kind in PERSON_KINDS:
        channel = herald.channels.get(kind)
        if channel is None:
            continue
        if kind == "push":
            if getattr(herald.settings, "fcm_service_account_file", None):
                found.append(kind)
        elif getattr(channel, "providers", None):
            found.append(kind)
    return tuple(found)


def place_words(place: str | None, dm: str, *, mention: Callable[[str], str]) -> str:
    """``slack:@U1`` → "your direct messages" (``dm``: the member's own DM
    destination), ``email:a@b`` → "email to a@b", None → "where they were sent"."""
    if not place:
        return "where they were sent"
    if place == dm:
        return "your direct messages"
    kind, _, target = place.partition(":")
    if kind == "email":
        return f"email to {target}"
    if kind == "sms":
        return f"SMS to {target}"
    if kind == "push":
        return "push notifications on your devices"
    return mention(place)


def lines(
    own: Preferences,
    tenant: Preferences,
    effective: Preferences,
    *,
    zone: str,
    dm: str,
    mention: Callable[[str], str],
    default_of: str = "the workspace",
) -> list[str]:
    """The member's effective preferences, one line each, saying which come from the
    tenant's defaults (``default_of``: "the workspace", "the server")."""

    def source(mine: object, theirs: object) -> str:
        inherited = mine in (None, ()) and theirs not in (None, ())
        return f" ({default_of}'s default)" if inherited else ""

    accept = effective.accept_from or "anyone"
    blocked = ", ".join(mention(m) for m in effective.blocked[:20]) or "nobody"
    if len(effective.blocked) > 20:
        blocked += f" and {len(effective.blocked) - 20} more"
    quiet = effective.quiet.describe() if effective.quiet is not None else "none"
    quiet_line = f"{quiet} ({zone})" if quiet != "none" else "none"
    return [
        f"Reminders to you go to: {place_words(effective.place, dm, mention=mention)}"
        + source(own.place, tenant.place),
        f"Who may remind you: {ACCEPT_WORDS.get(accept, accept)}"
        + source(own.accept_from, tenant.accept_from),
        f"Blocked: {blocked}",
        f"Quiet hours: {quiet_line}" + source(own.quiet, tenant.quiet),
        "Told of your failed messages by direct message: "
        + ("no" if effective.notices is False else "yes")
        + source(own.notices, tenant.notices),
    ]


def tenant_lines(tenant: Preferences, *, mention: Callable[[str], str]) -> list[str]:
    """A tenant's defaults, one line each."""
    accept = tenant.accept_from or "anyone"
    quiet = tenant.quiet.describe() if tenant.quiet is not None else "none"
    blocked = ", ".join(mention(m) for m in tenant.blocked[:20]) or "nobody"
    held = "held too" if tenant.hold_channels else "not held"
    who = ACCEPT_WORDS.get(accept, accept).replace("only you", "only themselves")
    return [
        f"Who may remind members: {who}",
        f"Blocked for everyone: {blocked}",
        f"Quiet hours: {quiet} (each member's own zone)",
        f"Messages to channels in quiet hours: {held}",
    ]
