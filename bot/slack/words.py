"""Slack's command-text escaping, and the refusal every reader of command text raises
(:mod:`bot.slack.grammar`, :mod:`bot.slack.targets`)."""

from __future__ import annotations

import re

from core.errors import InvalidInput

_LINK = re.compile(r"<((?:https?|webcal)://[^\s|>]+)(?:\|[^>]*)?>")


class Refusal(InvalidInput):
    """Bad input, said in Slack mrkdwn: any user text in it is already escaped, so it is
    shown as is (other errors are escaped before they are shown)."""

    mrkdwn = True


def unescape(text: str) -> str:
    """Slack's command-text escaping undone (``&lt;`` to ``<``...)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def plain(text: str) -> str:
    """Command text as typed: Slack's links (``<https://…|label>``) turned back into
    their URL, then unescaped."""
    return unescape(_LINK.sub(r"\1", text))


def escape(text: str) -> str:
    """Text made safe to show in a Slack message (no accidental mention or link)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
