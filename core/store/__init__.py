"""The gateway: every query Herald runs lives in this package.

The use cases, the dispatcher, the chat adapters and the console call named methods of
:class:`Store`; none of them builds a query or holds a session. The same API runs on
SQLite and PostgreSQL.

This module is the package's face: the read models, filters and records the dispatcher
and the surfaces use are imported from here, never from a sub-module (an import-linter
contract in ``pyproject.toml`` keeps the sub-modules private).
"""

from core.store.approvals import ApprovalRow, Held, Tell
from core.store.archive import ArchiveQueries
from core.store.base import AuditEntry, new_idempotency_key
from core.store.calendars import (
    CalendarHealth,
    CalendarPage,
    CalendarQueries,
    CalendarRow,
    FetchRecord,
)
from core.store.channel_view import ChannelViewQueries, SentNow
from core.store.console import (
    RESPONSE_CHARS,
    TEXT_CHARS,
    AttemptFilter,
    AttemptRow,
    AuditFilter,
    ConsoleQueries,
    Figures,
    QueueRow,
    ScheduleFilter,
)
from core.store.dead_letters import DeadFilter, DeadGroup, DeadLetter, DeadLetterQueries
from core.store.devices import DeviceQueries
from core.store.dispatch_store import DispatchStore
from core.store.events import (
    EventQueries,
    EventScope,
    Position,
    decode_cursor,
    encode_cursor,
    last_position,
)
from core.store.ladders import Awaiting, Done, DoneJob, LadderQueries
from core.store.lateness import LatenessQueries
from core.store.notices import NoticeQueries, TakenNotice
from core.store.preferences import PersonNow, PreferenceQueries
from core.store.providers import FAILED_RECEIPTS, ProviderQueries, ReceiptTaken
from core.store.queue import (
    CAPPED_ERROR,
    CLAIM_COLUMNS,
    AttemptRecord,
    ClaimedJob,
    HandBack,
    QueueQueries,
    QueueStats,
    Settled,
    Verdict,
)
from core.store.rate_buckets import RateBucketQueries, Slots
from core.store.schedules import ScheduleQueries, ScheduleQuery
from core.store.templates import Moved, TemplateQueries
from core.store.tokens import TokenQueries
from core.store.workers import Backlog, KeptAlive, WorkerQueries


class Store(
    ScheduleQueries,
    QueueQueries,
    DeadLetterQueries,
    WorkerQueries,
    RateBucketQueries,
    ConsoleQueries,
    CalendarQueries,
    TokenQueries,
    ProviderQueries,
    DeviceQueries,
    PreferenceQueries,
    EventQueries,
    NoticeQueries,
    LatenessQueries,
    ArchiveQueries,
    TemplateQueries,
    LadderQueries,
    ChannelViewQueries,
):
    """Every named query, over one engine."""


def _dispatches(store: Store) -> DispatchStore:
    """Never called: mypy checks here that a Store is a :class:`DispatchStore`."""
    return store


__all__ = [
    "ChannelViewQueries",
    "SentNow",
    "Moved",
    "TemplateQueries",
    "LadderQueries",
    "ApprovalRow",
    "Held",
    "Tell",
    "Awaiting",
    "Done",
    "DoneJob",
    "ArchiveQueries",
    "EventQueries",
    "EventScope",
    "Position",
    "decode_cursor",
    "encode_cursor",
    "last_position",
    "LatenessQueries",
    "NoticeQueries",
    "TakenNotice",
    "FAILED_RECEIPTS",
    "DeviceQueries",
    "PersonNow",
    "PreferenceQueries",
    "ProviderQueries",
    "ReceiptTaken",
    "CAPPED_ERROR",
    "CLAIM_COLUMNS",
    "RESPONSE_CHARS",
    "TEXT_CHARS",
    "AttemptFilter",
    "AttemptRecord",
    "AttemptRow",
    "AuditEntry",
    "AuditFilter",
    "Backlog",
    "CalendarHealth",
    "CalendarPage",
    "CalendarQueries",
    "CalendarRow",
    "ClaimedJob",
    "DeadFilter",
    "DeadGroup",
    "DeadLetter",
    "DispatchStore",
    "FetchRecord",
    "Figures",
    "HandBack",
    "KeptAlive",
    "QueueRow",
    "QueueStats",
    "ScheduleFilter",
    "ScheduleQuery",
    "Settled",
    "Slots",
    "Store",
    "Verdict",
    "new_idempotency_key",
]
