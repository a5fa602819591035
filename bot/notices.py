"""Authors told of their failures (issue 38), the part Slack and Discord share: every
``HERALD_SWEEP_SECONDS`` the adapter's sweeper takes its platform's notices from the
database (:meth:`core.cases.notices.NoticeCases.take_notices`: leased, grouped per
author, a digest window kept), tells each author in one direct message, and deletes
what was told. When the platform fails the notices are released for the next sweep;
when the author cannot be reached (their direct messages closed) it is logged at INFO
and the notices dropped, not retried forever. A process that dies after taking
notices leaves them leased: the next sweep past the lease tells them (at least once).

Unlike :mod:`bot.skip_notices` (reminders skipped in this process, told from memory),
these are written by whichever process recorded the outcome, so only the database
knows them. Each platform says who an owner is there and how a message looks
(bot/slack/notices.py, bot/discord_bot/notices.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from bot.skip_notices import MAX_LINES, cut
from core.cases import AuthorNotices, Herald
from core.events import NoticeKind

log = logging.getLogger(__name__)

#: Dead letters remembered as given to this process's alert channel (the oldest
#: forgotten first): enough for any sweep's, a few kilobytes.
MOST_ALERTED = 10_000

#: What a platform does with one author's notices: post them as a direct message.
Tell = Callable[[AuthorNotices], Awaitable[None]]


class Unreachable(Exception):
    """The author cannot be told on this platform (not one of its members here, or
    their direct messages are closed): their notices are dropped."""


def headline(group: AuthorNotices) -> str:
    """A digest's first line: ``3 of your messages were not sent:``."""
    n = len(group.lines)
    failed = {NoticeKind.DEAD.value, NoticeKind.EXPIRED.value}
    if all(x.kind in failed for x in group.lines):
        return f"{n} of your messages were not sent:"
    return f"Herald has {n} notices for you:"


def message(group: AuthorNotices, most: int, escape: Callable[[str], str] = str) -> str:
    """One author's notices as one message's text, at most ``most`` characters: the
    line itself, or a headline and a bullet per line (the first :data:`MAX_LINES`)."""
    lines = [escape(x.text) for x in group.lines]
    if len(lines) == 1:
        return cut(lines[0], most)
    shown = [f"• {x}" for x in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        shown.append(f"…and {len(lines) - MAX_LINES} more.")
    return cut(headline(group) + "\n" + "\n".join(shown), most)


class NoticeSweeper:
    """Tells ``platform``'s authors of their notices every ``every`` seconds with
    ``tell``; ``quiet`` are the platform's errors that only mean the author cannot be
    reached; ``alert_tenant()`` the tenant whose alert channel this adapter posts to
    (None: none, or not known: then admins are told here too). Only the dead letters
    the adapter gave its alert channel (:meth:`alerting`) are not told to its admins
    again: one the channel never heard of is told here."""

    def __init__(
        self,
        herald: Herald,
        platform: str,
        tell: Tell,
        *,
        every: float,
        quiet: tuple[type[Exception], ...] = (),
        alert_tenant: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self.herald = herald
        self.platform = platform
        self.tell = tell
        self.every = every
        self.quiet: tuple[type[Exception], ...] = (Unreachable, *quiet)
        self.alert_tenant = alert_tenant
        #: Owner -> when this process last messaged them (the digest window's start).
        self.told: dict[str, datetime] = {}
        #: Job ids of the dead letters this process gave its alert channel.
        self.alerted: dict[int, None] = {}
        self._task: asyncio.Task[None] | None = None

    def alerting(self, job_id: int) -> None:
        """This dead letter is posted to the alert channel: its admin author is not
        told of it again."""
        self.alerted[job_id] = None
        if len(self.alerted) > MOST_ALERTED:
            del self.alerted[next(iter(self.alerted))]

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"herald-{self.platform}-notices"
            )

    async def close(self) -> None:
        """Stop sweeping (notices taken and not yet told are told after their lease)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # a sweep must never end the sweeper
                log.exception("could not tell authors of their failures")
            await asyncio.sleep(self.every)

    async def sweep(self) -> int:
        """One pass: tell every author whose notices are due; how many were told."""
        now = self.herald.clock.now()
        window = timedelta(seconds=self.herald.settings.notice_digest_seconds)
        self.told = {k: v for k, v in self.told.items() if now < v + window}
        alerts = await self.alert_tenant() if self.alert_tenant is not None else None
        groups = await self.herald.take_notices(
            self.platform, now, told=self.told, alert_tenant=alerts, alerted=self.alerted
        )
        told = 0
        for group in groups:
            try:
                await self.tell(group)
            except self.quiet as exc:  # e.g. closed direct messages: never reachable
                log.info(
                    "could not tell an author of a failure (%s); the notice is dropped",
                    type(exc).__name__,
                )
            except Exception:  # the platform failed: the next sweep tries again
                log.warning("could not tell an author of a failure", exc_info=True)
                await self.herald.notices_untold(group.ids)
                continue
            else:
                told += 1
                self.told[group.owner] = now
            await self.herald.notices_told(group.ids)
        return told
