"""Skipped reminders told to their author in Slack (issue 37): when a recipient's
preferences changed after a reminder was scheduled and now refuse it, the dispatcher
skips it (:func:`core.preferences.refused_reason`) and its author gets a direct message
saying so. Skips of one author within a short window make one message.

The recipient is named as text (no mention: telling the author must not ping them),
and the message stays within what Slack takes (:data:`core.limits.SLACK_TEXT`)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Collection

from bot.slack.words import escape
from core import limits
from core.preferences import refused_reason, refused_whom
from core.store import Settled

log = logging.getLogger(__name__)

#: A Slack user id (what an owner ``slack:U…`` must name to be sent a message).
_USER = re.compile(r"[UW][A-Z0-9]{1,30}")
#: Lines one message lists at most (the rest are counted).
MAX_LINES = 10
#: Characters of one line at most (a name or a reason is the member's own text).
LINE_CHARS = 400
#: One message's characters at most: far within Slack's, readable in a DM.
MESSAGE_CHARS = min(limits.SLACK_TEXT.size, 4000)

Post = Callable[[str, str], Awaitable[None]]


def owner_here(owner: str, tenant: str, teams: Collection[str]) -> str | None:
    """The Slack user id of a schedule's ``owner`` when they are a member of a workspace
    this deployment serves (``teams``: team or org ids), else None."""
    user = owner.removeprefix("slack:")
    if user == owner or not _USER.fullmatch(user) or not tenant.startswith("slack:"):
        return None
    org, _, team = tenant.removeprefix("slack:").rpartition("/")
    return user if team in teams or (org and org in teams) else None


def line(schedule_id: int, reason: str) -> str:
    """``Your reminder to Bob (schedule 41) was not sent: Bob accepts …``."""
    whom = refused_whom(reason)
    to = f" to {whom}" if whom else ""
    text = f"Your reminder{to} (schedule {schedule_id}) was not sent: {reason}"
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def message(lines: list[str]) -> str:
    """One direct message for an author's skips (escaped: no mention, no link)."""
    if len(lines) == 1:
        text = escape(lines[0])
    else:
        shown = [f"• {escape(x)}" for x in lines[:MAX_LINES]]
        if len(lines) > MAX_LINES:
            shown.append(f"…and {len(lines) - MAX_LINES} more.")
        text = f"{len(lines)} of your reminders were not sent:\n" + "\n".join(shown)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


class SkipNotices:
    """Collects refused skips for ``window`` seconds, then sends each author one direct
    message with ``post(user_id, text)``. ``add`` never blocks and never raises (it is
    called from the dispatcher's outcome observer)."""

    def __init__(self, post: Post, teams: Callable[[], Collection[str]], window: float) -> None:
        self.post = post
        #: The workspaces served now (known once the adapter has connected).
        self.teams = teams
        self.window = window
        #: user id -> job id -> its line (a job told once).
        self._pending: dict[str, dict[int, str]] = {}
        self._task: asyncio.Task[None] | None = None
        #: Whether the task is past its wait, sending (then closing waits for it).
        self._sending = False

    def add(self, item: Settled) -> bool:
        """Queue the author's notice when ``item`` is a refused skip of a member of a
        served workspace; whether it was queued."""
        try:
            reason = refused_reason(item.state, item.error)
            if reason is None:
                return False
            job = item.job
            user = owner_here(job.owner, job.tenant, self.teams())
            if user is None:
                return False
            self._pending.setdefault(user, {})[job.id] = line(job.schedule_id, reason)
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(
                    self._later(), name="herald-slack-skips"
                )
            return True
        except Exception:  # the dispatcher's observer must never fail
            log.exception("could not queue a skipped reminder's notice")
            return False

    async def _later(self) -> None:
        await asyncio.sleep(self.window)
        self._sending = True
        try:
            await self.flush()
        finally:
            self._sending = False

    async def flush(self) -> None:
        """Send what is pending now: one message per author."""
        pending, self._pending = self._pending, {}
        for user, jobs in pending.items():
            try:
                await self.post(user, message(list(jobs.values())))
            except Exception:  # a notice must never take the adapter down
                log.warning("could not tell an author of a skipped reminder", exc_info=True)

    async def close(self) -> None:
        """Send what is pending and stop."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            if not self._sending:  # still waiting: what it would send is sent below
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.flush()
