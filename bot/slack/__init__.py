"""Herald in Slack: ``/schedule`` with a predictable grammar, a modal, the App Home tab,
buttons and dead-letter approvals, over Socket Mode or HTTP (slack-bolt ``AsyncApp``).

The adapter only translates: every action is one call of :class:`core.cases.Herald`.
``herald run`` builds it with :func:`create_adapter` when ``SLACK_BOT_TOKEN`` is set.
"""

from __future__ import annotations

from bot.slack.adapter import EVENTS_PATH, SlackAdapter
from core.cases import Herald
from core.settings import Settings

__all__ = ["EVENTS_PATH", "SlackAdapter", "create_adapter"]


def create_adapter(settings: Settings, herald: Herald) -> SlackAdapter:
    """The Slack adapter for ``settings`` (Socket Mode when ``SLACK_APP_TOKEN`` is set,
    else HTTP mode). Raises ConfigError when a needed token or secret is missing."""
    return SlackAdapter(settings, herald)
