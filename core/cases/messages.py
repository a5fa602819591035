"""A message's own parts as a request gives them, checked before anything is stored:
its text and its channel options (a schedule's, and a named template's parts)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core import limits
from core.errors import InvalidInput

MAX_TEXT = limits.HERALD_TEXT.size
#: Herald's own action and block ids: user-supplied blocks may not carry them.
_HERALD_IDS = re.compile(r'"(action_id|block_id)"\s*:\s*"(herald|schedule:|dead:)')


def check_text(text: str) -> str:
    """The message body, refused when empty or over the limit."""
    if not text.strip():
        raise InvalidInput("The message is empty: say what to send.")
    if len(text) > MAX_TEXT:
        raise limits.HERALD_TEXT.refuse(len(text))
    return text


#: Presentation options a schedule may carry, and the JSON type each must have.
OPTIONS: dict[str, type] = {
    "username": str,  # Slack (chat:write.customize) and Discord webhooks
    "icon_url": str,
    "icon_emoji": str,
    "avatar_url": str,
    "subject": str,  # email
    "blocks": list,  # Slack Block Kit
    "embeds": list,  # Discord webhooks
}


def check_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per-schedule channel options, refused when unknown or of the wrong type."""
    if not options:
        return {}
    checked: dict[str, Any] = {}
    for name, value in options.items():
        expected = OPTIONS.get(name)
        if expected is None:
            known = ", ".join(sorted(OPTIONS))
            raise InvalidInput(f"Unknown option {name!r}: use {known}.")
        if not isinstance(value, expected):
            kind = "a list (JSON array)" if expected is list else "text"
            raise InvalidInput(f"Option {name!r} must be {kind}.")
        if isinstance(value, list) and not all(isinstance(item, dict) for item in value):
            raise InvalidInput(f"Option {name!r} must be a JSON array of objects.")
        if name == "blocks" and _HERALD_IDS.search(json.dumps(value)):
            raise InvalidInput(
                "Blocks may not use Herald's own action or block ids (herald_…, schedule:…, "
                "dead:…): a click on them would act on Herald's objects."
            )
        checked[name] = value
    return checked
