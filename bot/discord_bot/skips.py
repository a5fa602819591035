"""Skipped reminders told to their author on Discord (issue 37): when a recipient's
preferences changed after a reminder was scheduled and now refuse it, the dispatcher
skips it (:func:`core.preferences.refused_reason`) and its author gets a direct message
saying so. Skips of one author within a short window make one message.

The recipient is named as text and the message is sent with no allowed mention (telling
the author must not ping anyone); it fits one Discord message
(:data:`core.limits.DISCORD_CONTENT`)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Collection

import discord.utils

from core import limits
from core.preferences import refused_reason, refused_whom
from core.store import Settled

log = logging.getLogger(__name__)

#: A Discord user id (a snowflake): what an owner ``discord:…`` must name.
_USER = re.compile(r"[0-9]{1,20}")
#: Lines one message lists at most (the rest are counted).
MAX_LINES = 10
#: Characters of one line at most (a name or a reason is the member's own text).
LINE_CHARS = 400
MESSAGE_CHARS = limits.DISCORD_CONTENT.size

Post = Callable[[int, str], Awaitable[None]]


def owner_here(owner: str, tenant: str, guilds: Collection[int]) -> int | None:
    """The Discord user id of a schedule's ``owner`` when the schedule is of a server
    this bot serves (``guilds``: DISCORD_GUILD_IDS; empty: any server) or of the
    owner's own direct messages with the bot, else None."""
    user = owner.removeprefix("discord:")
    if user == owner or not _USER.fullmatch(user) or not tenant.startswith("discord:"):
        return None
    place = tenant.removeprefix("discord:")
    if place.startswith("@"):
        return int(user) if place[1:] == user else None
    if not _USER.fullmatch(place):
        return None
    return int(user) if not guilds or int(place) in guilds else None


def line(schedule_id: int, reason: str) -> str:
    """``Your reminder to Bob (schedule 41) was not sent: Bob accepts …``."""
    whom = refused_whom(reason)
    to = f" to {whom}" if whom else ""
    text = discord.utils.escape_mentions(
        f"Your reminder{to} (schedule {schedule_id}) was not sent: {reason}"
    )
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def message(lines: list[str]) -> str:
    """One direct message for an author's skips."""
    if len(lines) == 1:
        text = lines[0]
    else:
        shown = [f"• {x}" for x in lines[:MAX_LINES]]
        if len(lines) > MAX_LINES:
            shown.append(f"…and {len(lines) - MAX_LINES} more.")
        text = f"{len(lines)} of your reminders were not sent:\n" + "\n".join(shown)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


class SkipNotices:
    """Collects refused skips for ``window`` seconds, then sends each author one direct
    message with ``post(user_id, text)``. ``add`` never blocks and never raises (it is
    called from the dispatcher's outcome observer)."""

    def __init__(self, post: Post, guilds: Collection[int], window: float) -> None:
        self.post = post
        self.guilds = guilds
        self.window = window
        #: user id -> job id -> its line (a job told once).
        self._pending: dict[int, dict[int, str]] = {}
        self._task: asyncio.Task[None] | None = None
        #: Whether the task is past its wait, sending (then closing waits for it).
        self._sending = False

    def add(self, item: Settled) -> bool:
        """Queue the author's notice when ``item`` is a refused skip of a schedule of a
        server this bot serves; whether it was queued."""
        try:
            reason = refused_reason(item.state, item.error)
            if reason is None:
                return False
            job = item.job
            user = owner_here(job.owner, job.tenant, self.guilds)
            if user is None:
                return False
            self._pending.setdefault(user, {})[job.id] = line(job.schedule_id, reason)
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(
                    self._later(), name="herald-discord-skips"
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
            except discord.HTTPException as exc:  # closed DMs: 403, code 50007
                log.info("could not tell an author of a skipped reminder", extra={"code": exc.code})
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
