"""How late sends started, per dispatcher and minute (the console's percentiles)."""

from __future__ import annotations

from core.store.base import Gateway


class LatenessQueries(Gateway):
    """How late sends started, per dispatcher and minute (the console's percentiles)."""
