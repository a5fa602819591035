"""Read queries of the operator console (overview, queue, delivery log, timelines)."""

from __future__ import annotations

from core.store.base import Gateway


class ConsoleQueries(Gateway):
    """What the operator console reads. All cheap, indexed, paged queries."""
