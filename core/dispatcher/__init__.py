"""The dispatcher: delivers every due job, retries what fails, parks what keeps failing.

This module is the package's face: everything outside it imports from here.
"""

from core.dispatcher.loop import (
    FLUSH_GATHER_SECONDS,
    PART_WINDOW,
    Dispatcher,
    DispatcherConfig,
    DrainSummary,
    Observer,
    backoff_delay,
    default_worker_id,
    shared_channel,
)

__all__ = [
    "FLUSH_GATHER_SECONDS",
    "PART_WINDOW",
    "Dispatcher",
    "DispatcherConfig",
    "DrainSummary",
    "Observer",
    "backoff_delay",
    "default_worker_id",
    "shared_channel",
]
