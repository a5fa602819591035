"""Skipped reminders told to their author in Slack (issue 37; the batching is
:mod:`bot.skip_notices`'): a member of a workspace this deployment serves gets a
direct message, its text escaped (no mention, no link: telling the author must not
ping the recipient), within what Slack takes (:data:`core.limits.SLACK_TEXT`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection

from bot.skip_notices import SkipNotices as _SkipNotices
from bot.slack.words import escape
from core import limits

#: A Slack user id (what an owner ``slack:U…`` must name to be sent a message).
_USER = re.compile(r"[UW][A-Z0-9]{1,30}")
#: One message's characters at most: far within Slack's, readable in a DM.
MESSAGE_CHARS = min(limits.SLACK_TEXT.size, 4000)


def owner_here(owner: str, tenant: str, teams: Collection[str]) -> str | None:
    """The Slack user id of a schedule's ``owner`` when they are a member of a workspace
    this deployment serves (``teams``: team or org ids), else None."""
    user = owner.removeprefix("slack:")
    if user == owner or not _USER.fullmatch(user) or not tenant.startswith("slack:"):
        return None
    org, _, team = tenant.removeprefix("slack:").rpartition("/")
    return user if team in teams or (org and org in teams) else None


class SkipNotices(_SkipNotices[str]):
    """Slack's: ``post(user_id, text)``; ``teams()`` the workspaces served now (known
    once the adapter has connected)."""

    def __init__(
        self,
        post: Callable[[str, str], Awaitable[None]],
        teams: Callable[[], Collection[str]],
        window: float,
    ) -> None:
        super().__init__(
            post,
            lambda owner, tenant: owner_here(owner, tenant, teams()),
            window=window,
            most=MESSAGE_CHARS,
            escape=escape,
            name="herald-slack-skips",
        )
