"""Starting a chat adapter whose platform may not answer as itself.

A wrong ``SLACK_API_URL`` or ``DISCORD_API_URL`` (a web page, a proxy's error page), a
platform that hangs or cannot be reached: the adapter is *down*, not the service.
:class:`Starter` runs an adapter's ``connect``; when it raises :class:`PlatformDown`
the sentence is logged once, kept as the adapter's ``problem`` (``/readyz`` shows it)
and ``connect`` is tried again in the background, every :data:`RETRY_SECONDS` at first,
then less often (up to :data:`RETRY_MAX`), logging again only when the problem
changes. Meanwhile ``herald run`` delivers to every other channel. A token the platform
refuses stays a :class:`~core.errors.ConfigError` at start-up (Herald stops: nothing
will change without the admin).

:func:`probe` asks one API method directly (aiohttp, within a timeout) and raises
PlatformDown with a sentence for whatever is not a JSON object.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import yarl

from core.channels.answers import no_answer, not_json, unreachable
from core.errors import ConfigError
from core.http_client import failure

log = logging.getLogger(__name__)

#: Seconds before a down adapter first tries again; each failure doubles it.
RETRY_SECONDS = 30.0
#: The longest wait between tries.
RETRY_MAX = 300.0


class PlatformDown(Exception):
    """The platform's API cannot be used now; ``str()`` is the sentence to show."""


async def probe(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    provider: str,
    setting: str,
    within: float,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Ask ``url`` once; its status and JSON object. Raises PlatformDown (a sentence
    with the URL, never the token) when it does not answer within ``within`` seconds,
    cannot be reached, or answers something that is not a JSON object."""
    try:
        async with asyncio.timeout(within):
            async with session.request(
                method, url, headers=headers, allow_redirects=False
            ) as response:
                body = await response.read()
                status, kind = response.status, response.headers.get("Content-Type", "")
    except TimeoutError:
        raise PlatformDown(no_answer(provider, url, within, setting)) from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise PlatformDown(
            unreachable(provider, url, failure(exc, yarl.URL(url)), setting)
        ) from None
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise PlatformDown(not_json(provider, url, status, kind, setting))
    return status, data


class Starter:
    """Start one adapter (``connect``), and keep trying while its platform is down (see
    the module). ``problem`` is the sentence while it is down, else None."""

    def __init__(self, name: str, connect: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self._connect = connect
        self.problem: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect; on PlatformDown say so once and go on trying in the background.
        Anything else (a ConfigError: a refused token) is raised."""
        try:
            await self._connect()
        except PlatformDown as down:
            self._down(str(down))
            self._task = asyncio.create_task(self._retry(), name=f"herald-{self.name}-start")
            return
        self.problem = None

    def _down(self, sentence: str) -> None:
        if sentence != self.problem:
            log.error(
                "The %s adapter is down: %s Deliveries to other channels go on.",
                self.name,
                sentence,
                extra={"adapter": self.name},
            )
        self.problem = sentence

    async def _retry(self) -> None:
        delay = RETRY_SECONDS
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)
            try:
                await self._connect()
            except PlatformDown as down:
                self._down(str(down))
                continue
            except ConfigError as exc:  # e.g. the token was revoked meanwhile
                self._down(str(exc))
                return
            except Exception:
                log.exception("the %s adapter failed to start", self.name)
                self._down(f"The {self.name} adapter failed to start (see the log).")
                continue
            self.problem = None
            log.info("%s adapter running again", self.name, extra={"adapter": self.name})
            return

    async def stop(self) -> None:
        """Stop trying (called before the adapter closes)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
