"""Event hooks and the event log (core.events): hooks registered, listened to, pushed from their cursors; events read after a cursor."""

from __future__ import annotations

from core.store.base import Gateway


class EventQueries(Gateway):
    """Event hooks and the event log (core.events): hooks registered, listened to, pushed from their cursors; events read after a cursor."""
