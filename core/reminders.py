"""Reminders: a message from the bot in a member's direct messages (``slack:@U…``,
``discord:@<user id>``), to themselves or to another member of their tenant, with
Snooze and Done buttons under it.

Whom a member may remind: themselves, or a member Herald knows in their own tenant (a
Slack user of the same workspace, a Discord user of the same server, as the members
table records them; the chat surfaces record the person they name after their platform
confirmed it). Herald-wide actors (the operator at the terminal) may remind any member
Herald knows. Anyone else is refused, audited, and nothing is stored.

A reminder for someone else carries who asked (``options["asked_by"]`` and
``["asked_by_name"]``); the channels render it as "@alice asked me to remind you: …".

The buttons (Slack ``action_id``\\ s ``herald_reminder_*``, value the schedule id;
Discord ``custom_id`` ``herald:reminder:<choice>:<schedule id>``) act only for the
person the reminder was sent to: Snooze makes a new one-off reminder with the same text
for them (their quota, audited, through :meth:`Herald.create_schedule`), Done records
that they saw it. The use cases are in :mod:`core.cases.reminders`; this module is what
the channels and the chat surfaces share (no store).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from core import timeexpr
from core.destinations import Destination


def _snooze(choice: str) -> tuple[str, timedelta]:
    """A snooze by a duration: the choice is the duration (``15m``, ``1h``), read and
    worded (``Snooze 15 min``) by the one duration grammar."""
    delay = timeexpr.parse_duration(choice)
    return f"Snooze {timeexpr.describe_duration(delay, short=True)}", delay


#: Snooze choices: (label on the button, how long; None is tomorrow at 09:00).
SNOOZES: dict[str, tuple[str, timedelta | None]] = {
    "15m": _snooze("15m"),
    "1h": _snooze("1h"),
    "tomorrow": ("Tomorrow 9:00", None),
}
DONE = "done"
DONE_LABEL = "Done"
#: Every choice a reminder's button may carry, in the order the buttons show.
CHOICES = (*SNOOZES, DONE)
#: Slack ``action_id`` prefix of the buttons (``herald_reminder_15m``...). User-given
#: blocks may not use ``herald…`` ids (core.cases.schedules.check_options).
SLACK_ACTION_PREFIX = "herald_reminder_"
#: Discord ``custom_id`` prefix (``herald:reminder:15m:42``).
DISCORD_CUSTOM_PREFIX = "herald:reminder:"
#: What the options of a reminder for someone else record about who asked.
ASKED_BY = "asked_by"
#: A message from Herald itself into someone's direct messages (an admin's answer to
#: their retry request): no Snooze or Done, no "asked me to remind you".
NOTICE = "notice"
ASKED_BY_NAME = "asked_by_name"
ASKER_KEYS = (ASKED_BY, ASKED_BY_NAME)


def slack_action_id(choice: str) -> str:
    return SLACK_ACTION_PREFIX + choice


def discord_custom_id(choice: str, schedule_id: int) -> str:
    return f"{DISCORD_CUSTOM_PREFIX}{choice}:{schedule_id}"


def label(choice: str) -> str:
    return DONE_LABEL if choice == DONE else SNOOZES[choice][0]


def asked_prefix(destination: Destination, options: Mapping[str, Any] | None) -> str:
    """``<@U…> asked me to remind you:`` (and a space) before a reminder someone else
    asked for (a mention when the asker is on the same platform, else their name);
    "" for anything else."""
    options = options or {}
    asker = options.get(ASKED_BY)
    if not isinstance(asker, str) or not destination.is_dm:
        return ""
    platform, _, user = asker.partition(":")
    if platform == destination.kind:
        who = f"<@{user}>"
    else:
        who = str(options.get(ASKED_BY_NAME) or asker)
    return f"{who} asked me to remind you: "
