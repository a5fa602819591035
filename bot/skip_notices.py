"""Skipped reminders told to their author (issue 37), the part Slack and Discord share:
when a recipient's preferences changed after a reminder was scheduled and now refuse
it, the dispatcher skips it (:func:`core.preferences.refused_reason`) and its author
gets a direct message saying so. Skips of one author within a short window make one
message. Each platform says who an owner is there, how its text is escaped (telling
the author must not ping anyone) and how long a message may be
(bot/slack/skips.py, bot/discord_bot/skips.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from core.preferences import refused_reason, refused_whom
from core.store import Settled

log = logging.getLogger(__name__)

#: Lines one message lists at most (the rest are counted).
MAX_LINES = 10
#: Characters of one line at most (a name or a reason is the member's own text).
LINE_CHARS = 400

User = TypeVar("User", bound=Hashable)


def cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def line(schedule_id: int, reason: str, escape: Callable[[str], str] = str) -> str:
    """``Your reminder to Bob (schedule 41) was not sent: Bob accepts …``."""
    whom = refused_whom(reason)
    to = f" to {whom}" if whom else ""
    return cut(
        escape(f"Your reminder{to} (schedule {schedule_id}) was not sent: {reason}"), LINE_CHARS
    )


def message(lines: list[str], most: int) -> str:
    """One direct message for an author's skips, at most ``most`` characters."""
    if len(lines) == 1:
        text = lines[0]
    else:
        shown = [f"• {x}" for x in lines[:MAX_LINES]]
        if len(lines) > MAX_LINES:
            shown.append(f"…and {len(lines) - MAX_LINES} more.")
        text = f"{len(lines)} of your reminders were not sent:\n" + "\n".join(shown)
    return cut(text, most)


class SkipNotices(Generic[User]):
    """Collects refused skips for ``window`` seconds, then sends each author one direct
    message with ``post(user, text)``. ``add`` never blocks and never raises (it is
    called from the dispatcher's outcome observer). ``owner(owner, tenant)`` is the
    platform's user to tell (None: not one of this adapter's), ``escape`` makes a line
    safe to send, ``most`` is a message's characters at most, and ``quiet`` the
    platform's errors that only mean the author cannot be reached (logged at INFO)."""

    def __init__(
        self,
        post: Callable[[User, str], Awaitable[None]],
        owner: Callable[[str, str], User | None],
        *,
        window: float,
        most: int,
        escape: Callable[[str], str] = str,
        quiet: tuple[type[Exception], ...] = (),
        name: str = "herald-skips",
    ) -> None:
        self.post = post
        self.owner = owner
        self.window = window
        self.most = most
        self.escape = escape
        self.quiet = quiet
        self.name = name
        #: user -> job id -> its line (a job told once).
        self._pending: dict[User, dict[int, str]] = {}
        self._task: asyncio.Task[None] | None = None
        #: Whether the task is past its wait, sending (then closing waits for it).
        self._sending = False

    def add(self, item: Settled) -> bool:
        """Queue the author's notice when ``item`` is a refused skip of one of this
        adapter's members; whether it was queued."""
        try:
            reason = refused_reason(item.state, item.error)
            if reason is None:
                return False
            job = item.job
            user = self.owner(job.owner, job.tenant)
            if user is None:
                return False
            self._pending.setdefault(user, {})[job.id] = line(job.schedule_id, reason, self.escape)
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(self._later(), name=self.name)
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
                await self.post(user, message(list(jobs.values()), self.most))
            except self.quiet as exc:  # e.g. closed direct messages
                log.info("could not tell an author of a skipped reminder (%s)", type(exc).__name__)
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
