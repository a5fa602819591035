"""The dispatcher: delivers every due job, retries what fails, parks what keeps failing.

This module is the package's face: everything outside the package imports from here.
Its rooms: ``loop`` (the :class:`Dispatcher`: claim, send, record; drain and serve),
``config`` (its configuration and backoff), ``verdicts`` (what a provider's answer
means for a job, as pure functions), ``rates`` (shared rate slots and provider
pauses), ``feeder`` (starting claimed jobs a part at a time), ``liveness``
(heartbeat, leases, reclaim, sweep), ``alarms`` (the service's scheduler),
``housekeeping``, ``reporting`` (metrics and log events) and ``drain`` (drain mode's
arithmetic and summary).
"""

from core.dispatcher.config import (
    DispatcherConfig,
    backoff_delay,
    default_worker_id,
    shared_channel,
)
from core.dispatcher.drain import DrainSummary
from core.dispatcher.feeder import PART_WINDOW
from core.dispatcher.loop import FLUSH_GATHER_SECONDS, Dispatcher, Observer

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
