"""Authors told of their failures in Slack (issue 38; the sweeping is
:mod:`bot.notices`'): a direct message per author, each notice with its buttons:
Request retry (a dead letter: the member's request an admin decides on), Resume (a
schedule the system paused) and Edit (the schedule's edit form).

Approvals (issue 40) ride the same sweep: a request (kind ``approval``) is told to
each approver by direct message with Approve and Reject (bot/slack/approvals.py), and
the one whose owner is ``slack:#alert`` is posted to HERALD_SLACK_ALERT_CHANNEL
instead (dropped, logged once, when this adapter has no alert channel for its
workspace); an author reads what was decided (kind ``decided``) as a plain line."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.notices import NoticeSweeper, Unreachable, headline, message
from bot.skip_notices import MAX_LINES
from bot.slack.approvals import approval_buttons
from bot.slack.blocks import Blocks, button, context, section
from bot.slack.skips import MESSAGE_CHARS, owner_here
from bot.slack.words import escape
from core.cases import AuthorNotices, Herald, NoticeLine
from core.events import ALERT_OWNER, NoticeKind

log = logging.getLogger(__name__)

#: The buttons' action ids.
RETRY = "herald_notice_retry"
RESUME = "herald_notice_resume"
EDIT = "herald_notice_edit"
ACTIONS = (RETRY, RESUME, EDIT)
#: Slack's answers that mean the author cannot be sent a direct message.
_UNREACHABLE = {
    "cannot_dm_bot",
    "user_not_found",
    "users_not_found",
    "user_disabled",
    "user_not_visible",
    "channel_not_found",
    "is_archived",
    "messages_tab_disabled",
}


#: The owner whose notices go to the alert channel.
ALERT = f"slack:{ALERT_OWNER}"
#: Kinds whose text core writes whole, in Slack's markup (a member's mention, the
#: message quoted with its broadcast mentions shown as text): shown as they are.
_WHOLE = {NoticeKind.APPROVAL.value, NoticeKind.DECIDED.value}


def _shown(line: NoticeLine) -> str:
    return line.text if line.kind in _WHOLE else escape(line.text)


def _buttons(line: NoticeLine) -> dict[str, Any] | None:
    if line.approval_id is not None:
        return approval_buttons(line.approval_id)
    elements = []
    if line.retryable and line.job_id is not None:
        elements.append(button("Request retry", RETRY, str(line.job_id), style="primary"))
    if line.resumable and line.schedule_id is not None:
        elements.append(button("Resume", RESUME, str(line.schedule_id), style="primary"))
    if line.editable and line.schedule_id is not None:
        elements.append(button("Edit", EDIT, str(line.schedule_id)))
    if not elements:
        return None
    return {"type": "actions", "block_id": f"notice:{line.notice_id}", "elements": elements}


def notice_blocks(group: AuthorNotices) -> Blocks:
    """One author's notices: a headline for a digest, then each notice (the first
    :data:`~bot.skip_notices.MAX_LINES`) with its buttons."""
    blocks: Blocks = []
    many = len(group.lines) > 1
    if many:
        blocks.append(section(f"*{escape(headline(group))}*"))
    for line in group.lines[:MAX_LINES]:
        blocks.append(section(("• " if many else "") + _shown(line)))
        if line.hint:
            blocks.append(context(escape(line.hint)))
        actions = _buttons(line)
        if actions is not None:
            blocks.append(actions)
    if len(group.lines) > MAX_LINES:
        blocks.append(context(f"…and {len(group.lines) - MAX_LINES} more."))
    return blocks


class SlackNotices(NoticeSweeper):
    """Slack's: ``post(user, text, blocks)`` a direct message, ``teams()`` the
    workspaces served, ``alert_tenant()`` the alert channel's workspace (the bot
    token's, when HERALD_SLACK_ALERT_CHANNEL is set)."""

    def __init__(
        self,
        herald: Herald,
        post: Callable[[str, str, Blocks], Awaitable[None]],
        teams: Callable[[], Collection[str]],
        alert_tenant: Callable[[], Awaitable[str | None]],
        *,
        every: float,
        alert: Callable[[str, Blocks], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            herald,
            "slack",
            self._tell,
            every=every,
            alert_tenant=alert_tenant,
        )
        self.post = post
        self.teams = teams
        #: Posts to the alert channel (None: there is none).
        self.alert = alert
        self._said_no_alerts = False

    async def _tell(self, group: AuthorNotices) -> None:
        whole = all(x.kind in _WHOLE for x in group.lines)
        text = message(group, MESSAGE_CHARS, str if whole else escape)
        if group.owner == ALERT:
            await self._to_alerts(group, text)
            return
        user = owner_here(group.owner, group.tenant, self.teams())
        if user is None:
            raise Unreachable("not a member of a workspace this deployment serves")
        try:
            await self.post(user, text, notice_blocks(group))
        except SlackApiError as exc:
            code = exc.response.get("error") if isinstance(exc.response.data, dict) else None
            if code in _UNREACHABLE:
                raise Unreachable(str(code)) from None
            raise

    async def _to_alerts(self, group: AuthorNotices, text: str) -> None:
        """Approval requests for the alert channel: posted there when it is this
        workspace's, else dropped (said once in the log)."""
        here = await self.alert_tenant() if self.alert_tenant is not None else None
        if self.alert is None or here != group.tenant:
            if not self._said_no_alerts:
                self._said_no_alerts = True
                log.warning(
                    "approval requests for Slack's alert channel are dropped: "
                    "HERALD_SLACK_ALERT_CHANNEL is not set for their workspace"
                )
            raise Unreachable("no alert channel for this workspace")
        await self.alert(text, notice_blocks(group))
