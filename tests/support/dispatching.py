"""Helpers for tests that drive a Dispatcher step by step (pump, then wait)."""

from __future__ import annotations

import asyncio

from core.dispatcher import Dispatcher


async def settle(d: Dispatcher) -> None:
    """Wait until every delivery ``d`` started so far has finished and been recorded,
    and every provider pause it heard is shared."""
    flusher = d._flusher
    sharing = d._rates.sharing
    flushing = flusher is not None and not flusher.done()
    while d._tasks or d._done or sharing or flushing:
        if d._tasks or sharing:
            await asyncio.gather(*d._tasks, *sharing, return_exceptions=True)
        flusher = d._flusher
        if flusher is not None:
            await asyncio.gather(flusher, return_exceptions=True)
        flushing = flusher is not None and not flusher.done()
