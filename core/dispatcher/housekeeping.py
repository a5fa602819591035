"""The hourly housekeeping: finished jobs and their attempts archived, the archive pruned,
dead letters capped."""

from __future__ import annotations

import logging
from datetime import timedelta

from core.actors import Surface
from core.clock import Clock
from core.dispatcher.config import DispatcherConfig
from core.store import AuditEntry, DispatchStore

log = logging.getLogger("core.dispatcher")
#: The console's lateness counts are read over the last day at most.
LATENESS_KEPT = timedelta(days=2)


async def housekeeping(
    store: DispatchStore, clock: Clock, config: DispatcherConfig
) -> dict[str, int]:
    """Move finished jobs past the retention, with their attempts, to the archive; prune
    the archive (and the events, which are kept as long as the history) past
    ``archive_days`` more, unless it is 0; forget notices nobody could be told within
    the retention; cap the dead letters by age and count, with a warning (never
    silently). Returns how many of each went."""
    now = clock.now()
    await store.optimize()
    retention = timedelta(days=config.retention_days)
    moved = await store.archive_finished(before=now - retention)
    pruned = {"archived_jobs": moved["jobs"], "archived_attempts": moved["attempts"]}
    await store.vacuum_after_archive(moved["jobs"] + moved["attempts"])
    if config.archive_days:
        horizon = now - retention - timedelta(days=config.archive_days)
        gone = await store.prune_archive(before=horizon)
        pruned |= {"pruned_jobs": gone["jobs"], "pruned_attempts": gone["attempts"]}
        pruned["events"] = await store.prune_events(before=horizon)
    pruned["notices"] = await store.prune_notices(before=now - retention)
    pruned["receipts_seen"] = await store.prune_receipts_seen(before=now - retention)
    pruned["lateness"] = await store.prune_lateness(before=now - LATENESS_KEPT)
    capped = await store.cap_dead_letters(
        older_than=now - timedelta(days=config.dead_letter_days),
        keep=config.dead_letter_max,
        now=now,
        audit=AuditEntry(
            "system:housekeeping",
            "dead.discard",
            "job",
            details={
                "reason": "dead-letter cap",
                "max": config.dead_letter_max,
                "max_age_days": config.dead_letter_days,
            },
            surface=Surface.SYSTEM.value,
        ),
    )
    if capped:
        log.warning(
            "discarded dead letters over the cap",
            extra={
                "jobs": capped,
                "max": config.dead_letter_max,
                "max_age_days": config.dead_letter_days,
            },
        )
    return {**pruned, "dead_discarded": capped}
