"""The gateway: every query Herald runs lives in this package.

The use cases, the dispatcher, the chat adapters and the console call named methods of
:class:`Store`; none of them builds a query or holds a session. The same API runs on
SQLite and PostgreSQL.
"""

from core.store.base import AuditEntry, new_idempotency_key
from core.store.calendars import CalendarQueries
from core.store.console import ConsoleQueries
from core.store.dead_letters import DeadLetterQueries
from core.store.dispatch_store import DispatchStore
from core.store.leases import LeaseQueries
from core.store.queue import QueueQueries
from core.store.schedules import ScheduleQueries, ScheduleQuery
from core.store.tokens import TokenQueries


class Store(
    ScheduleQueries,
    QueueQueries,
    DeadLetterQueries,
    LeaseQueries,
    ConsoleQueries,
    CalendarQueries,
    TokenQueries,
):
    """Every named query, over one engine."""


def _dispatches(store: Store) -> DispatchStore:
    """Never called: mypy checks here that a Store is a :class:`DispatchStore`."""
    return store


__all__ = ["AuditEntry", "DispatchStore", "ScheduleQuery", "Store", "new_idempotency_key"]
