"""What the dispatcher needs of the store, and nothing more: :class:`DispatchStore`.

The dispatcher (:mod:`core.dispatcher`) is written against this protocol, not the
whole :class:`~core.store.Store`, so the queue's contract is one page: claim, finish
and release jobs; keep this worker's heartbeat and leases; reclaim what dead or
stalled workers held; share rate limits; and the housekeeping of a sweep. Each
method's docstring is its contract; the implementations (``core/store/queue.py``,
``workers.py``, ``rate_buckets.py``, ``dead_letters.py``, ``base.py``) say how.
APScheduler 4's ``abc.DataStore`` is the model.

``Store`` satisfies it structurally: mypy checks that in ``core/store/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from core.channels.base import ChannelStore
from core.events import OutcomePolicy
from core.models import Event, EventHook, Worker
from core.ratelimit import ClaimCaps, RateLimit
from core.store.base import AuditEntry
from core.store.preferences import PersonNow
from core.store.queue import ClaimedJob, QueueStats, Settled
from core.store.rate_buckets import Slots
from core.store.workers import Backlog, KeptAlive


class DispatchStore(ChannelStore, Protocol):
    """The store methods a dispatcher calls."""

    # --- the queue ------------------------------------------------------------------

    async def claim_due(
        self,
        *,
        now: datetime,
        worker: str,
        lease_until: datetime,
        limit: int,
        caps: ClaimCaps | None = None,
    ) -> list[ClaimedJob]:
        """Lease to ``worker`` up to ``limit`` jobs due by ``now``, oldest first (an
        attempt). With ``caps``, none beyond a destination's cap counting every
        worker's claimed jobs; those are due again later instead."""
        ...

    async def finish(
        self,
        results: Sequence[Settled],
        *,
        worker: str,
        now: datetime,
        policy: OutcomePolicy | None = None,
    ) -> set[int]:
        """Record a batch of outcomes in one transaction, with what ``policy`` says is
        told of them (events, notices, auto-pauses); the ids ``worker`` still held."""
        ...

    async def release(self, job_ids: Sequence[int], *, worker: str, now: datetime) -> int:
        """Hand back jobs ``worker`` claimed and never tried, refunding the attempt."""
        ...

    async def people_now(
        self, wanted: Mapping[str, Iterable[str]]
    ) -> dict[tuple[str, str], PersonNow]:
        """The preferences, zones, names and roles of these members of each tenant (and
        of ``*``, its defaults) as they are now, in one query; absent: none known."""
        ...

    async def next_due_at(self) -> datetime | None:
        """When the earliest waiting job falls due (None when nothing waits)."""
        ...

    # --- heartbeats and leases ------------------------------------------------------

    async def heartbeat(
        self,
        worker: str,
        *,
        host: str,
        pid: int,
        now: datetime,
        stopped: bool = False,
        machine: str | None = None,
    ) -> None:
        """Record that ``worker`` is alive at ``now`` (with ``stopped``: that it stopped)."""
        ...

    async def keep_alive(
        self,
        worker: str,
        *,
        host: str,
        pid: int,
        machine: str | None,
        now: datetime,
        job_ids: Sequence[int],
        until: datetime,
    ) -> KeptAlive:
        """In one transaction, the heartbeat and ``worker``'s held leases to ``until``."""
        ...

    async def running_workers(self) -> list[Worker]:
        """The dispatchers that have not stopped nor been declared dead."""
        ...

    async def reclaim_dead_workers(
        self, *, now: datetime, silent_since: datetime, gone: Sequence[str], me: str
    ) -> tuple[list[str], int]:
        """Declare silent or gone workers (not ``me``) dead; hand back their jobs."""
        ...

    async def reclaim_expired(self, *, now: datetime) -> int:
        """Hand back claimed jobs whose lease expired by ``now``; how many."""
        ...

    async def backlog(self, *, worker: str, after: datetime) -> Backlog:
        """What a drain leaves: jobs due after ``after``, jobs other workers hold."""
        ...

    # --- shared rate limits ---------------------------------------------------------

    async def reserve_slots(
        self,
        wanted: Mapping[str, tuple[int, RateLimit]],
        *,
        now: datetime,
        window: float,
        not_before: Mapping[str, datetime] | None = None,
        urgent: Mapping[str, tuple[int, datetime | None]] | None = None,
    ) -> dict[str, Slots]:
        """Take send slots from shared buckets, none beyond ``window`` seconds (urgent
        jobs' ahead of those handed out already)."""
        ...

    async def pause_bucket(self, key: str, until: datetime, limit: RateLimit) -> None:
        """No slot from ``key``'s shared bucket before ``until``, for any dispatcher."""
        ...

    # --- the sweep: figures and housekeeping ----------------------------------------

    async def queue_stats(self, *, now: datetime) -> QueueStats:
        """Jobs by state, retry requests awaiting an admin, the oldest overdue job."""
        ...

    async def job_counts(self, *, tenant: str | None = None) -> dict[str, int]:
        """How many jobs are in each state (of one tenant's schedules, when given)."""
        ...

    async def archive_finished(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Move jobs finished before ``before`` (not dead ones) with their attempts to
        the archive tables."""
        ...

    async def prune_archive(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Delete archived jobs finished before ``before`` with their attempts."""
        ...

    async def prune_events(self, *, before: datetime, batch: int = 5000) -> int:
        """Delete events that happened before ``before``."""
        ...

    async def prune_notices(self, *, before: datetime, batch: int = 5000) -> int:
        """Delete notices written before ``before`` that nobody was told."""
        ...

    async def write_lateness(self, worker: str, minutes: Mapping[datetime, Sequence[int]]) -> None:
        """Write ``worker``'s lateness counts of each minute (core.lateness)."""
        ...

    async def prune_lateness(self, *, before: datetime) -> int:
        """Delete the lateness counts of minutes before ``before``."""
        ...

    async def prune_receipts_seen(self, *, before: datetime) -> int:
        """Forget the provider callbacks taken before ``before`` (core.receipts)."""
        ...

    async def cap_dead_letters(
        self, *, older_than: datetime, keep: int, now: datetime, audit: AuditEntry
    ) -> int:
        """Discard dead letters too old or beyond the newest ``keep``, audited."""
        ...

    async def vacuum_after_archive(self, moved: int) -> bool:
        """On PostgreSQL, vacuum the job and attempt tables after many rows left them."""
        ...

    async def optimize(self) -> None:
        """Refresh the query planner's statistics where the database needs it."""
        ...

    # --- event hooks (core.dispatcher.hooks; core/store/events.py says how) ----------

    async def listening(self) -> dict[str, frozenset[str]]:
        """Tenant -> the event types its active hooks hear."""
        ...

    async def due_hooks(self, *, now: datetime, limit: int = 1000) -> list[EventHook]:
        """Active hooks due to be tried that no live lease holds."""
        ...

    async def claim_hook(
        self, hook_id: int, *, worker: str, now: datetime, lease_until: datetime
    ) -> EventHook | None:
        """Lease a due hook to ``worker``; None when it is not due or held."""
        ...

    async def events_waiting(self, hook: EventHook) -> bool:
        """Whether its tenant has events after ``hook``'s cursor, heard or not."""
        ...

    async def hook_batch(
        self, hook: EventHook, *, limit: int
    ) -> tuple[list[Event], tuple[int, int]]:
        """Events ``hook`` hears after its cursor, in commit-safe (tx, id) order, and
        how far the log was read for them."""
        ...

    async def hook_pushed(
        self,
        hook_id: int,
        *,
        worker: str,
        now: datetime,
        through: tuple[int, int] | None,
        delivered: int,
        failure: tuple[str, datetime] | None = None,
    ) -> EventHook | None:
        """Move the cursor, count a failure or forget them, let the lease go."""
        ...

    async def disable_hook(self, hook_id: int, *, now: datetime, reason: str) -> bool:
        """Disable a failing hook, audited, its chat owner told."""
        ...
