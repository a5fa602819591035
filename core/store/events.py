"""Event hooks and the event log (core.events): hooks registered, listened to, pushed
from their cursors; events read after a cursor.

Events are read in ``(tx, id)`` order. On SQLite ``tx`` is 0 and its one writer commits
in id order, so ``id`` alone is the order. On PostgreSQL ``tx`` is the writing
transaction and a reader reads only rows of transactions older than every one still
running (``tx < pg_snapshot_xmin(pg_current_snapshot())``): an event whose transaction
commits after a later one's is not passed by a cursor that moved on meanwhile.

A hook is pushed by one dispatcher at a time: it is claimed with a lease
(``lease_owner``, ``lease_expires_at``), and its cursor moves only while the lease is
held. A crash leaves the cursor where it was, so the events after it are pushed again
(at least once, with the same ``webhook-id``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from core.errors import InvalidInput
from core.events import CHAT_PLATFORMS, NoticeKind, recipient_shown
from core.models import Event, EventHook, HookState, Notice
from core.store.base import AuditEntry, Gateway

EVENT = Event.__table__  # type: ignore[attr-defined]
HOOK = EventHook.__table__  # type: ignore[attr-defined]
NOTICE = Notice.__table__  # type: ignore[attr-defined]

#: PostgreSQL's oldest transaction still running: rows of older ones are all committed.
PG_XMIN: sa.ColumnElement[int] = sa.literal_column(
    "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
)
#: A new hook's cursor id on PostgreSQL: past every event of the transaction before
#: the oldest running one.
AFTER_ALL_IDS = 2**62
#: Who disables a hook that kept failing (the audit's actor).
HOOK_ACTOR = "system:event-hooks"
_CURSOR = re.compile(r"^(\d{1,19})\.(\d{1,19})$")

#: A position in the event log: (tx, id).
Position = tuple[int, int]


def encode_cursor(position: Position) -> str:
    """The opaque cursor of a position, as ``GET /v1/events`` hands it out."""
    return base64.urlsafe_b64encode(f"{position[0]}.{position[1]}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    """A position from a cursor :func:`encode_cursor` made; InvalidInput otherwise."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError):
        text = ""
    found = _CURSOR.match(text) if len(cursor) <= 60 else None
    if found is None:
        raise InvalidInput(
            "That is not an events cursor: pass the next_cursor a previous page returned, "
            "or none to start from the oldest event kept."
        )
    return int(found[1]), int(found[2])


@dataclass(frozen=True, slots=True)
class EventScope:
    """Which events a reader sees: one tenant's, of one owner's schedules unless
    tenant-wide, and optionally of some types, one schedule or a key prefix."""

    tenant: str
    owner: str | None = None
    types: frozenset[str] | None = None
    schedule_id: int | None = None
    key_prefix: str | None = None

    @classmethod
    def of_hook(cls, hook: EventHook) -> EventScope:
        return cls(
            tenant=hook.tenant,
            owner=None if hook.tenant_wide else hook.owner,
            types=frozenset(hook.types),
            schedule_id=hook.schedule_id,
            key_prefix=hook.key_prefix,
        )


class EventQueries(Gateway):
    """Event hooks and the event log (core.events): hooks registered, listened to,
    pushed from their cursors; events read after a cursor."""

    # --- hooks as people manage them ------------------------------------------------

    async def add_hook(self, hook: EventHook, *, audit: AuditEntry) -> EventHook:
        """Register ``hook`` with its cursor at the end of the log now (it hears only
        events recorded after it), audited in the same transaction."""
        async with self._session() as s:
            if self.backend == "postgresql":
                xmin = (await s.execute(sa.select(PG_XMIN))).scalar_one()
                hook.cursor_tx, hook.cursor_id = int(xmin) - 1, AFTER_ALL_IDS
            else:
                last = (await s.execute(sa.select(sa.func.max(EVENT.c.id)))).scalar_one()
                hook.cursor_tx, hook.cursor_id = 0, int(last or 0)
            s.add(hook)
            await s.flush()
            await self._audit(s, replace(audit, object_id=str(hook.id)), hook.created_at)
            return hook

    async def count_hooks(self, tenant: str) -> int:
        async with self._read() as conn:
            stmt = sa.select(sa.func.count()).select_from(HOOK).where(HOOK.c.tenant == tenant)
            return int((await conn.execute(stmt)).scalar_one())

    async def list_hooks(self, tenant: str, *, owner: str | None = None) -> list[EventHook]:
        """The hooks of ``tenant`` (of ``owner`` only, when given), oldest first."""
        stmt = select(EventHook).where(col(EventHook.tenant) == tenant)
        if owner is not None:
            stmt = stmt.where(col(EventHook.owner) == owner)
        async with self._read_session() as s:
            return list((await s.execute(stmt.order_by(col(EventHook.id)))).scalars())

    async def get_hook(self, tenant: str, hook_id: int) -> EventHook | None:
        async with self._read_session() as s:
            hook = await s.get(EventHook, hook_id)
            return hook if hook is not None and hook.tenant == tenant else None

    async def remove_hook(
        self, tenant: str, hook_id: int, *, now: datetime, audit: AuditEntry
    ) -> bool:
        """Remove a hook of ``tenant``; False when it has none by that id."""
        async with self._session() as s:
            hook = await s.get(EventHook, hook_id)
            if hook is None or hook.tenant != tenant:
                return False
            await s.delete(hook)
            await self._audit(s, audit, now)
            return True

    async def enable_hook(
        self, tenant: str, hook_id: int, *, now: datetime, audit: AuditEntry
    ) -> EventHook | None:
        """Make a hook active again with its failures forgotten: it is pushed at once,
        from where its cursor stopped. None when ``tenant`` has no hook by that id."""
        async with self._session() as s:
            hook = await s.get(EventHook, hook_id)
            if hook is None or hook.tenant != tenant:
                return None
            hook.state = HookState.ACTIVE.value
            hook.tries, hook.next_try_at, hook.failing_since = 0, None, None
            hook.last_error, hook.disabled_at, hook.updated_at = None, None, now
            await self._audit(s, audit, now)
            return hook

    # --- hooks as the dispatcher pushes them ----------------------------------------

    async def listening(self) -> dict[str, frozenset[str]]:
        """Tenant -> the event types its active hooks hear (core.events.OutcomePolicy)."""
        stmt = sa.select(HOOK.c.tenant, HOOK.c.types).where(HOOK.c.state == HookState.ACTIVE.value)
        heard: dict[str, set[str]] = {}
        async with self._read() as conn:
            for tenant, types in await conn.execute(stmt):
                heard.setdefault(tenant, set()).update(types or ())
        return {tenant: frozenset(types) for tenant, types in heard.items()}

    async def due_hooks(self, *, now: datetime, limit: int = 1000) -> list[EventHook]:
        """Active hooks whose next try is due and that no live lease holds (a read: the
        pusher claims only those with events waiting)."""
        stmt = (
            select(EventHook)
            .where(
                col(EventHook.state) == HookState.ACTIVE.value,
                sa.or_(col(EventHook.next_try_at).is_(None), col(EventHook.next_try_at) <= now),
                sa.or_(
                    col(EventHook.lease_expires_at).is_(None),
                    col(EventHook.lease_expires_at) < now,
                ),
            )
            .order_by(col(EventHook.id))
            .limit(limit)
        )
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def claim_hook(
        self, hook_id: int, *, worker: str, now: datetime, lease_until: datetime
    ) -> EventHook | None:
        """Lease an active, due hook to ``worker`` until ``lease_until``; None when it
        is not due, not active, or another worker holds it."""
        stmt = (
            sa.update(HOOK)
            .where(
                HOOK.c.id == hook_id,
                HOOK.c.state == HookState.ACTIVE.value,
                sa.or_(HOOK.c.next_try_at.is_(None), HOOK.c.next_try_at <= now),
                sa.or_(
                    HOOK.c.lease_expires_at.is_(None),
                    HOOK.c.lease_expires_at < now,
                    HOOK.c.lease_owner == worker,
                ),
            )
            .values(lease_owner=worker, lease_expires_at=lease_until)
            .returning(*HOOK.c)
        )
        async with self._tx() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else EventHook.model_validate(dict(row))

    async def hook_batch(self, hook: EventHook, *, limit: int) -> tuple[list[Event], Position]:
        """Up to ``limit`` events ``hook`` hears after its cursor, and how far the log
        was read for them: past the events it does not hear too, so that its cursor,
        moved there once they are delivered, never reads those again."""
        return await self._events(EventScope.of_hook(hook), (hook.cursor_tx, hook.cursor_id), limit)

    async def events_waiting(self, hook: EventHook) -> bool:
        """Whether the log of ``hook``'s tenant has events after its cursor, heard or
        not (one step of the index: the push that reads them moves the cursor past
        those it does not hear)."""
        after = (hook.cursor_tx, hook.cursor_id)
        stmt = sa.select(EVENT.c.id).where(*self._readable(hook.tenant, after)).limit(1)
        async with self._read() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def hook_pushed(
        self,
        hook_id: int,
        *,
        worker: str,
        now: datetime,
        through: Position | None,
        delivered: int,
        failure: tuple[str, datetime] | None = None,
    ) -> EventHook | None:
        """What a push of ``worker``'s did: its cursor moves to ``through`` (the last
        event delivered, when any was) and the lease is let go. With ``failure``
        (error, when to try again) the hook counts one more try and keeps failing
        since when it started; without, its failures are forgotten. None when the
        lease was lost meanwhile (another worker pushes it now: nothing changes)."""
        values: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "updated_at": now}
        if through is not None:
            values |= {"cursor_tx": through[0], "cursor_id": through[1]}
        if delivered:
            values |= {"delivered": HOOK.c.delivered + delivered, "last_delivered_at": now}
        if failure is None:
            values |= {"tries": 0, "next_try_at": None, "failing_since": None, "last_error": None}
        else:
            error, retry_at = failure
            values |= {
                "tries": HOOK.c.tries + 1,
                "next_try_at": retry_at,
                "failing_since": sa.func.coalesce(HOOK.c.failing_since, now),
                "last_error": error[:500],
            }
        stmt = (
            sa.update(HOOK)
            .where(HOOK.c.id == hook_id, HOOK.c.lease_owner == worker)
            .values(**values)
            .returning(*HOOK.c)
        )
        async with self._tx() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else EventHook.model_validate(dict(row))

    async def disable_hook(self, hook_id: int, *, now: datetime, reason: str) -> bool:
        """Disable an active hook that kept failing: audited ``hook.disable`` always,
        and its owner told (a ``hook_disabled`` notice) when they use a chat. False
        when it was no longer active."""
        async with self._tx() as conn:
            row = (
                (
                    await conn.execute(
                        sa.update(HOOK)
                        .where(HOOK.c.id == hook_id, HOOK.c.state == HookState.ACTIVE.value)
                        .values(
                            state=HookState.DISABLED.value,
                            disabled_at=now,
                            updated_at=now,
                            lease_owner=None,
                            lease_expires_at=None,
                        )
                        .returning(HOOK.c.tenant, HOOK.c.owner, HOOK.c.url)
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return False
            shown = recipient_shown("webhook:" + row["url"]).removeprefix("webhook:")
            if row["owner"].startswith(CHAT_PLATFORMS):
                await conn.execute(
                    sa.insert(NOTICE).values(
                        tenant=row["tenant"],
                        owner=row["owner"],
                        kind=NoticeKind.HOOK_DISABLED.value,
                        reason=f"Event hook {hook_id} ({shown}) was disabled: {reason}"[:300],
                        at=now,
                    )
                )
            entry = AuditEntry(
                HOOK_ACTOR,
                "hook.disable",
                "event_hook",
                str(hook_id),
                {"url": shown, "reason": reason[:300]},
                tenant=row["tenant"],
                surface="system",
            )
            await self._audit(conn, entry, now)
            return True

    # --- the pull feed --------------------------------------------------------------

    async def events_after(
        self, scope: EventScope, after: Position | None, *, limit: int
    ) -> list[Event]:
        """Up to ``limit`` events of ``scope`` after ``after`` (None: from the oldest
        kept), in (tx, id) order."""
        events, _ = await self.events_page(scope, after, limit=limit)
        return events

    async def events_page(
        self, scope: EventScope, after: Position | None, *, limit: int
    ) -> tuple[list[Event], Position]:
        """:meth:`events_after`, and the position to read on from: past the events of
        the tenant ``scope`` leaves out too, when fewer than ``limit`` were found."""
        return await self._events(scope, after or (0, 0), limit)

    def _readable(self, tenant: str, after: Position) -> list[Any]:
        """The conditions of ``tenant``'s events after ``after`` that a reader may read."""
        conditions: list[Any] = [
            EVENT.c.tenant == tenant,
            sa.tuple_(EVENT.c.tx, EVENT.c.id)
            > sa.tuple_(sa.literal(after[0]), sa.literal(after[1])),
        ]
        if self.backend == "postgresql":
            conditions.append(EVENT.c.tx < PG_XMIN)
        return conditions

    async def _events(
        self, scope: EventScope, after: Position, limit: int
    ) -> tuple[list[Event], Position]:
        """The events of ``scope`` after ``after`` and where the reader stands.

        The end of the readable log is read first and the events only up to it: every
        event up to that end was committed then, so a reader that found fewer than
        ``limit`` may stand at the end without passing an event committed later."""
        limit = max(1, min(limit, 1000))
        end_stmt = (
            sa.select(EVENT.c.tx, EVENT.c.id)
            .where(*self._readable(scope.tenant, after))
            .order_by(EVENT.c.tx.desc(), EVENT.c.id.desc())
            .limit(1)
        )
        async with self._read() as conn:
            end_row = (await conn.execute(end_stmt)).first()
        if end_row is None:
            return [], after
        end: Position = (int(end_row[0]), int(end_row[1]))
        conditions = self._readable(scope.tenant, after)
        conditions.append(
            sa.tuple_(EVENT.c.tx, EVENT.c.id) <= sa.tuple_(sa.literal(end[0]), sa.literal(end[1]))
        )
        if scope.owner is not None:
            conditions.append(EVENT.c.owner == scope.owner)
        if scope.types is not None:
            conditions.append(EVENT.c.type.in_(sorted(scope.types)))
        if scope.schedule_id is not None:
            conditions.append(EVENT.c.schedule_id == scope.schedule_id)
        if scope.key_prefix:
            prefix = scope.key_prefix
            conditions.append(sa.func.substr(EVENT.c.key, 1, len(prefix)) == prefix)
        stmt = sa.select(EVENT).where(*conditions).order_by(EVENT.c.tx, EVENT.c.id).limit(limit)
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        events = [Event.model_validate(dict(row)) for row in rows]
        return events, (last_position(events) or after) if len(events) == limit else end


def last_position(events: Sequence[Event]) -> Position | None:
    """Where a reader that read ``events`` stands (None: it read none)."""
    return None if not events else (events[-1].tx, events[-1].id or 0)
