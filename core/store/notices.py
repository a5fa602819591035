"""Authors' notices (core.events.NoticeKind): taken by the chat adapters, told, gone."""

from __future__ import annotations

from core.store.base import Gateway


class NoticeQueries(Gateway):
    """Authors' notices (core.events.NoticeKind): taken by the chat adapters, told, gone."""
