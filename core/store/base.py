"""The gateway's plumbing: one engine, sessions in one transaction, driver errors
wrapped at the edge, and the audit insert every change shares."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from core import db
from core.actors import Actor
from core.errors import DatabaseError, HeraldError
from core.models import (
    LOCAL_TENANT,
    Approval,
    Attempt,
    Audit,
    Job,
    JobState,
    Member,
    Schedule,
)

log = logging.getLogger(__name__)

#: The PostgreSQL NOTIFY channel that wakes dispatchers.
NOTIFY_CHANNEL = "herald_due"
#: How often a dispatcher on SQLite looks whether another process (the CLI, a chat
#: adapter's process) committed: a message scheduled for a moment within this of now
#: may be this late. A look is one PRAGMA on the watcher's own connection (~0.1 ms).
SQLITE_WATCH_SECONDS = 0.1

#: On SQLite, while another writer waits for the lock (``db.WriteWaiters``), the
#: dispatcher's write transactions (``_tx``, ``_sqlite_run``) begin at least this long
#: after the previous one ended: time for that writer, polling every few milliseconds
#: (``db.SQLITE_BUSY_SLICE_MS``), to take it, instead of finding it taken again.
SQLITE_WRITE_GAP_SECONDS = 0.02

SCHEDULE = Schedule.__table__  # type: ignore[attr-defined]
JOB = Job.__table__  # type: ignore[attr-defined]
#: Where a job goes: its step's destination, else its schedule's (core.routing).
JOB_DESTINATION = sa.func.coalesce(JOB.c.destination, SCHEDULE.c.destination)
ATTEMPT = Attempt.__table__  # type: ignore[attr-defined]
AUDIT = Audit.__table__  # type: ignore[attr-defined]
APPROVAL = Approval.__table__  # type: ignore[attr-defined]
MEMBER = Member.__table__  # type: ignore[attr-defined]

T = TypeVar("T")

#: What a transaction run on SQLite's driver thread returns when another connection
#: held the write lock through SQLite's short busy wait (:meth:`Gateway._sqlite_run`).
_LOCKED = object()


@dataclass(frozen=True)
class AuditEntry:
    """One audit row to write in the same transaction as the change it records."""

    actor: str
    action: str
    object_type: str
    object_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: The tenant the action belongs to: the object's, else the actor's.
    tenant: str = LOCAL_TENANT
    #: Where the action came from (core.actors.Surface; None: the caller did not say).
    surface: str | None = None

    @classmethod
    def by(
        cls,
        actor: Actor,
        action: str,
        object_type: str,
        object_id: str = "",
        details: dict[str, Any] | None = None,
        *,
        tenant: str | None = None,
    ) -> AuditEntry:
        """An entry by ``actor`` in ``tenant`` (default: the actor's own), through the
        surface the actor's request came from."""
        details = details or {}
        if actor.via is not None:  # the API token the request came with
            details = {**details, "token": actor.via}
        return cls(
            actor.id,
            action,
            object_type,
            object_id,
            details,
            tenant or actor.tenant,
            None if actor.surface is None else actor.surface.value,
        )


def new_idempotency_key() -> str:
    """A fresh job idempotency key: 22 url-safe characters (fits Discord's nonce)."""
    return secrets.token_urlsafe(16)


@functools.lru_cache(maxsize=4096)
def sqlite_datetime(text: str) -> datetime:
    """A timestamp read below SQLAlchemy from SQLite (see :func:`core.models.sqlite_utc_text`).
    Remembered for the last few thousand: a claimed batch's jobs share a few due times
    (a datetime cannot change)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def aware(value: Any) -> datetime | None:
    """An aggregate's timestamp: SQLite returns the stored text, not a datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        return sqlite_datetime(value)
    moment: datetime = value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def held_by(worker: str, job_ids: Sequence[int]) -> sa.ColumnElement[bool]:
    """Jobs among ``job_ids`` that ``worker`` still holds a lease on."""
    return sa.and_(
        JOB.c.id.in_(list(job_ids)),
        JOB.c.lease_owner == worker,
        JOB.c.state == JobState.CLAIMED.value,
    )


def _transaction(
    driver: Any, work: Callable[[sqlite3.Connection], Any], abandoned: threading.Event, begun: bool
) -> Any:
    """On aiosqlite's thread: ``BEGIN IMMEDIATE`` (unless ``begun``), ``work`` and
    COMMIT, or ROLLBACK when ``work`` raised or its caller gave up meanwhile. Returns
    ``_LOCKED``, having begun nothing, when the write lock stayed held through SQLite's
    short busy wait (see :meth:`Gateway._sqlite_run`)."""
    sqlite: sqlite3.Connection = driver._conn
    if not begun:
        sqlite.execute(db.SQLITE_SLICE_PRAGMA)
        try:
            sqlite.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if db.is_locked(exc):
                return _LOCKED
            raise
        finally:
            sqlite.execute(db.SQLITE_USUAL_PRAGMA)
    try:
        result = None if abandoned.is_set() else work(sqlite)
        sqlite.execute("ROLLBACK" if abandoned.is_set() else "COMMIT")
    except BaseException:
        # SQLite may have rolled back already (e.g. a full disk): keep the original error
        with contextlib.suppress(sqlite3.Error):
            sqlite.execute("ROLLBACK")
        raise
    return result


def _read(driver: Any, work: Callable[[sqlite3.Connection], Any]) -> Any:
    """On aiosqlite's thread: ``work`` on the sqlite3 connection (:meth:`Gateway._sqlite_read`)."""
    return work(driver._conn)


class Gateway:
    """Owns the engine. Create with :meth:`open`, finish with :meth:`close`."""

    def __init__(
        self, engine: AsyncEngine, url: str, *, lock_wait: float = db.SQLITE_LOCK_WAIT_SECONDS
    ) -> None:
        self._engine = engine
        self.url = url
        self.backend = db.backend(url)
        #: How long a write waits for SQLite's write lock (the engine waits as long).
        self.lock_wait = lock_wait
        #: The dispatcher's SQLite writes one at a time, each after the gap.
        self._write_turn = asyncio.Lock()
        self._gap_until = 0.0
        self._waiters = db.WriteWaiters(url)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        lock_wait: float = db.SQLITE_LOCK_WAIT_SECONDS,
        **engine_kwargs: Any,
    ) -> Self:
        """Connect to ``url``. With ``migrate`` the schema is checked (and, on SQLite,
        upgraded) first; DatabaseError if it cannot be used. On SQLite a write waits up
        to ``lock_wait`` seconds for the write lock, then fails with DatabaseError."""
        if migrate:
            await asyncio.to_thread(db.ensure_schema, url)
        engine = db.make_async_engine(url, lock_wait=lock_wait, **engine_kwargs)
        return cls(engine, url, lock_wait=lock_wait)

    async def close(self) -> None:
        await self._engine.dispose()
        self._waiters.close()

    def _insert(self) -> Any:
        """This backend's INSERT (its ON CONFLICT clauses are the dialect's own)."""
        return postgresql.insert if self.backend == "postgresql" else sqlite_dialect.insert

    def _failed(self, exc: BaseException) -> DatabaseError:
        """A driver error, said once for every way the gateway reaches the database."""
        if db.is_locked(exc):
            return DatabaseError(db.locked_message(self.url, self.lock_wait))
        return DatabaseError(f"The database at {db.redacted(self.url)} failed: {db.reason(exc)}")

    @asynccontextmanager
    async def _dispatcher_write(self) -> AsyncIterator[None]:
        """On SQLite, one of the dispatcher's write transactions: after the previous one
        and, when another writer was waiting for the lock as it ended,
        :data:`SQLITE_WRITE_GAP_SECONDS` of leaving the lock free."""
        if self.backend != "sqlite":
            yield
            return
        async with self._write_turn:
            wait = self._gap_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                yield
            finally:
                if self._waiters.anyone():
                    self._gap_until = time.monotonic() + SQLITE_WRITE_GAP_SECONDS

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction, committed on success; driver errors become
        DatabaseError (the cause stays chained for the log)."""
        try:
            async with AsyncSession(self._engine, expire_on_commit=False) as session:
                async with session.begin():
                    yield session
        except HeraldError:
            raise
        except sa.exc.IntegrityError:
            raise
        except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
            raise self._failed(exc) from exc

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[AsyncConnection]:
        """A bare Core connection in one transaction (the dispatcher's queries: no ORM
        session; on SQLite each after a gap, see :meth:`_dispatcher_write`)."""
        try:
            async with self._dispatcher_write(), self._engine.begin() as conn:
                yield conn
        except HeraldError:
            raise
        except sa.exc.DBAPIError as exc:
            raise self._failed(exc) from exc

    async def _sqlite_run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """SQLite's hot path (claims, records, slot reservations): ``work`` run on the
        driver's thread (aiosqlite's), on the sqlite3 connection of a pooled
        connection, in one ``BEGIN IMMEDIATE`` transaction that commits when it
        returns. One round trip to the driver's thread, with BEGIN, the busy-wait
        pragmas and COMMIT: each round trip's reply waits behind whatever the event
        loop runs at that moment (a wave of webhook answers, say), and a slot
        reservation made of a round trip per statement (eight, with the pool's reset)
        took ~10 ms in a webhook burst while the sends waited for it. It begins after
        a gap (:meth:`_dispatcher_write`).

        ``work`` runs off the event loop: plain ``sqlite3`` calls and pure computation
        only. When another connection holds the write lock through SQLite's short busy
        wait, the lock is waited for as :meth:`_begin_immediate` does, then ``work``
        runs. A caller cancelled meanwhile leaves it rolled back, unless it had
        committed already (as with a COMMIT that was under way)."""
        try:
            async with self._dispatcher_write(), self._engine.connect() as conn:
                driver = (await conn.get_raw_connection()).driver_connection
                assert driver is not None
                abandoned = threading.Event()
                try:
                    # aiosqlite's ``_execute`` queues a callable for its thread (every
                    # public call is made of it)
                    result = await driver._execute(_transaction, driver, work, abandoned, False)
                    if result is _LOCKED:
                        await self._begin_immediate(driver)
                        result = await driver._execute(_transaction, driver, work, abandoned, True)
                except asyncio.CancelledError:
                    abandoned.set()
                    raise
                return result  # type: ignore[no-any-return]
        except HeraldError:
            raise
        except (sqlite3.Error, sa.exc.DBAPIError) as exc:
            raise self._failed(exc) from exc

    async def _sqlite_read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """One read on SQLite's driver thread in one round trip (see :meth:`_sqlite_run`):
        ``work``'s statement runs outside any transaction, which for one statement is
        the same consistent read, and takes no lock a writer waits for."""
        try:
            async with self._engine.connect() as conn:
                driver = (await conn.get_raw_connection()).driver_connection
                assert driver is not None
                result = await driver._execute(_read, driver, work)
                return result  # type: ignore[no-any-return]
        except HeraldError:
            raise
        except (sqlite3.Error, sa.exc.DBAPIError) as exc:
            raise self._failed(exc) from exc

    async def _begin_immediate(self, driver: Any) -> None:
        """``BEGIN IMMEDIATE`` on an aiosqlite connection, repeated while another
        connection holds the write lock (each try polls for ``db.SQLITE_BUSY_SLICE_MS``),
        for up to ``lock_wait`` seconds."""
        deadline = time.monotonic() + self.lock_wait
        await driver.execute_fetchall(db.SQLITE_SLICE_PRAGMA)
        try:
            try:
                await driver.execute_fetchall("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not db.is_locked(exc):
                    raise
            with self._waiters.waiting():
                while True:
                    try:
                        await driver.execute_fetchall("BEGIN IMMEDIATE")
                        return
                    except sqlite3.OperationalError as exc:
                        if not db.is_locked(exc) or time.monotonic() >= deadline:
                            raise
        finally:
            await driver.execute_fetchall(db.SQLITE_USUAL_PRAGMA)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction. On SQLite it begins DEFERRED, so readers (the
        console, metrics) never hold the write lock a dispatcher needs."""
        try:
            async with self._engine.connect() as conn:
                reader = await conn.execution_options(herald_read=True)
                async with reader.begin():
                    yield reader
        except HeraldError:
            raise
        except sa.exc.DBAPIError as exc:
            raise self._failed(exc) from exc

    @asynccontextmanager
    async def _read_session(self) -> AsyncIterator[AsyncSession]:
        """A session in a read-only transaction (see :meth:`_read`): every command
        reads who is acting, and on SQLite that need not wait for the write lock."""
        async with self._read() as conn:
            async with AsyncSession(bind=conn, expire_on_commit=False) as session:
                yield session

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[AsyncConnection]:
        async with self._session() as session:
            yield await session.connection()

    async def _notify_due(self, conn: AsyncConnection | AsyncSession) -> None:
        """Tell dispatchers in other processes that a job was created or moved
        (PostgreSQL NOTIFY, delivered when this transaction commits)."""
        if self.backend == "postgresql":
            await conn.execute(sa.text(f"SELECT pg_notify('{NOTIFY_CHANNEL}', '')"))

    async def listen_due(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever another process may have created or moved a job;
        runs until cancelled. PostgreSQL: LISTEN/NOTIFY. SQLite: the file's
        ``data_version`` changes when another connection commits (checked every
        :data:`SQLITE_WATCH_SECONDS`)."""
        if self.backend == "postgresql":
            await self._listen_postgres(callback)
        else:
            await self._watch_sqlite(callback)

    async def _listen_postgres(self, callback: Callable[[], None]) -> None:
        import psycopg

        conninfo = db.sync_url(self.url).set(drivername="postgresql")
        dsn = conninfo.render_as_string(hide_password=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    callback()  # anything missed while not listening
                    async for _ in conn.notifies():
                        callback()
            except psycopg.Error as exc:
                log.warning("LISTEN connection lost; reconnecting", extra={"error": db.reason(exc)})
                await asyncio.sleep(5)

    async def _watch_sqlite(self, callback: Callable[[], None]) -> None:
        import aiosqlite

        path = db.sync_url(self.url).database or ""
        if path in ("", ":memory:"):
            return
        async with aiosqlite.connect(path) as conn:

            async def version() -> Any:
                async with conn.execute("PRAGMA data_version") as cursor:
                    row = await cursor.fetchone()
                return row[0] if row else None

            last = await version()
            callback()  # anything committed before the first look (as on PostgreSQL)
            while True:
                await asyncio.sleep(SQLITE_WATCH_SECONDS)
                now = await version()
                if now != last:
                    callback()
                last = now

    async def ping(self) -> None:
        """Raise DatabaseError unless the database answers."""
        try:
            async with self._engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except sa.exc.DBAPIError as exc:
            raise self._failed(exc) from exc

    async def write_probe(self) -> None:
        """Raise DatabaseError unless the database takes a write that commits: the
        schema's version row rewritten as it is (nothing changes). A read-only database,
        a full disk or a lock held too long refuses it, where a read still answers."""
        async with self._tx() as conn:
            await conn.execute(sa.text("UPDATE alembic_version SET version_num = version_num"))

    async def optimize(self) -> None:
        """Refresh the query planner's statistics. SQLite has none until ANALYZE runs,
        and without them it picks the state index over primary-key lookups; an
        approximate ANALYZE (``analysis_limit``) takes milliseconds. PostgreSQL's
        autovacuum keeps its own."""
        if self.backend != "sqlite":
            return
        async with self._engine.begin() as conn:
            await conn.exec_driver_sql("PRAGMA analysis_limit = 1000")
            await conn.exec_driver_sql("ANALYZE")

    @staticmethod
    async def _audit_each(
        conn: Any,
        audit: AuditEntry,
        now: datetime,
        objects: Sequence[tuple[str, dict[str, Any]]],
    ) -> None:
        """One audit row per object (id, extra details) of one action, in one insert."""
        await conn.execute(
            sa.insert(AUDIT),
            [
                {
                    "at": now,
                    "actor": audit.actor,
                    "action": audit.action,
                    "object_type": audit.object_type,
                    "object_id": object_id,
                    "details": {**audit.details, **details},
                    "tenant": audit.tenant,
                    "surface": audit.surface,
                }
                for object_id, details in objects
            ],
        )

    @staticmethod
    async def _audit(conn: AsyncConnection | AsyncSession, entry: AuditEntry, at: datetime) -> None:
        await conn.execute(
            sa.insert(AUDIT).values(
                at=at,
                actor=entry.actor,
                action=entry.action,
                object_type=entry.object_type,
                object_id=entry.object_id,
                details=entry.details,
                tenant=entry.tenant,
                surface=entry.surface,
            )
        )
