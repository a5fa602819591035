"""Waiting for something another task or process does (never for a time)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], within: float = 15.0, every: float = 0.02) -> None:
    """Wait until ``condition()`` is true (set by another task's or process's progress
    that signals no event), checking every ``every`` seconds; TimeoutError after
    ``within``."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - nothing to wait on but the condition
            await asyncio.sleep(every)
