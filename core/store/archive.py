"""Finished history moved to the archive tables past the retention, read back when asked, pruned after HERALD_ARCHIVE_DAYS."""

from __future__ import annotations

from core.store.base import Gateway


class ArchiveQueries(Gateway):
    """Finished history moved to the archive tables past the retention, read back when asked, pruned after HERALD_ARCHIVE_DAYS."""
