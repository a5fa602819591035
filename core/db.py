"""Database connection and schema management (Alembic).

Users give one URL (``sqlite:///herald.db`` or ``postgresql://user@host/db``); this
module turns it into the async engine the store uses and the sync one Alembic uses,
sets SQLite up for concurrent use, and checks or upgrades the schema.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from core.errors import DatabaseError

try:
    import fcntl
except ImportError:  # Windows: no flock; the dispatcher then always leaves its gaps
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: How long a write waits for SQLite's write lock before it fails (DatabaseError).
SQLITE_LOCK_WAIT_SECONDS = 30.0

#: SQLite's busy handler sleeps 1, 2, 5, 10, 15 ms… between tries, then 100 ms at a
#: time: a waiter polling that slowly rarely finds the lock free against a process
#: that takes it back to back. So each ``BEGIN IMMEDIATE`` gets this long of it (tries
#: at 0, 1, 3, 8 and 10 ms) and is repeated until ``SQLITE_LOCK_WAIT_SECONDS``.
SQLITE_BUSY_SLICE_MS = 10

#: The busy timeout of everything else (setting a connection up, reads, COMMIT): those
#: rarely meet a lock in WAL mode, and when they do SQLite's own wait is right.
SQLITE_BUSY_TIMEOUT_MS = 10_000

#: Taking the write lock: short slices of SQLite's busy wait, then the usual timeout.
SQLITE_SLICE_PRAGMA = f"PRAGMA busy_timeout = {SQLITE_BUSY_SLICE_MS}"
SQLITE_USUAL_PRAGMA = f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"

_SQLITE_BUSY = 5  # SQLITE_BUSY, the low byte of its extended codes


def _parse(url: str) -> URL:
    try:
        return make_url(url)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises ArgumentError and others
        raise DatabaseError(
            "HERALD_DATABASE_URL is not a database URL: use sqlite:///herald.db "
            "or postgresql://user@host:5432/dbname."
        ) from exc


def backend(url: str) -> str:
    """``"sqlite"`` or ``"postgresql"``; DatabaseError for anything else."""
    name = _parse(url).get_backend_name()
    if name not in ("sqlite", "postgresql"):
        raise DatabaseError(f"Herald runs on SQLite or PostgreSQL, not {name!r}.")
    return name


def sync_url(url: str) -> URL:
    """The URL with the synchronous driver Herald uses (sqlite3 / psycopg)."""
    parsed = _parse(url)
    if backend(url) == "sqlite":
        return parsed.set(drivername="sqlite")
    return parsed.set(drivername="postgresql+psycopg")


def async_url(url: str) -> URL:
    """The URL with the asyncio driver Herald uses (aiosqlite / psycopg)."""
    parsed = _parse(url)
    if backend(url) == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    return parsed.set(drivername="postgresql+psycopg")


def reason(exc: BaseException) -> str:
    """The first line of a driver error: what went wrong, without the driver's hints."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` (a driver error, or SQLAlchemy's wrapper of one) is SQLite's
    "database is locked": another connection holds the write lock."""
    cause = getattr(exc, "orig", None) or exc
    code = getattr(cause, "sqlite_errorcode", None)
    return (
        isinstance(cause, sqlite3.OperationalError)
        and code is not None
        and (code & 0xFF == _SQLITE_BUSY)
    )


def locked_message(url: str, waited: float) -> str:
    """What a user reads when a write gave up waiting for SQLite's write lock."""
    return (
        f"The database at {redacted(url)} is busy: another process held its write lock "
        f"for {waited:.0f} s. Nothing was changed; try again."
    )


def redacted(url: str) -> str:
    """The URL with any password hidden, fit for logs and messages."""
    return _parse(url).render_as_string(hide_password=True)


def sqlite_path(url: str) -> Path | None:
    """The absolute path of a SQLite database's file; None for PostgreSQL and for
    SQLite in memory."""
    if backend(url) != "sqlite":
        return None
    database = _parse(url).database
    if database in (None, "", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute()


def location(url: str) -> str:
    """Which database ``url`` is, said to a person: a SQLite file's absolute path, else
    the URL with any password hidden."""
    path = sqlite_path(url)
    return str(path) if path is not None else redacted(url)


def _make_folder(url: str) -> None:
    """SQLite creates its file but not the folder it is in: the per-user data folder
    (:func:`core.settings.data_dir`, the default database's) is made here on first use,
    for its owner only. Any other missing folder stays an error that names the file."""
    path = sqlite_path(url)
    if path is not None and not path.parent.is_dir():
        from core.settings import data_dir

        if path.parent != data_dir().absolute():
            return
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(
                f"Cannot make the folder of the database {path}: {exc.strerror or exc}."
            ) from exc


class WriteWaiters:
    """Who waits for a SQLite file's write lock, across processes.

    A writer that found the lock taken holds a shared ``flock`` on ``<file>-waiting``
    until it gets the lock; the dispatcher, after each of its writes, tries an
    exclusive one without blocking, and leaves the lock free for a moment only when
    that fails (someone waits): no gaps, and no lost throughput, when nobody does."""

    def __init__(self, url: str) -> None:
        database = sync_url(url).database if backend(url) == "sqlite" else None
        usable = fcntl is not None and database not in (None, "", ":memory:")
        self.path = f"{database}-waiting" if usable else None
        self._probe: int | None = None

    def _open(self) -> int:
        assert self.path is not None
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Say so while waiting for the write lock."""
        if self.path is None:
            yield
            return
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # blocks only for a probe's microseconds
            yield
        finally:
            os.close(fd)

    def anyone(self) -> bool:
        """Whether a writer is waiting now (True when this cannot be told)."""
        if self.path is None:
            return True
        if self._probe is None:
            try:
                self._probe = self._open()
            except OSError:  # e.g. its folder is gone: the write itself says what failed
                return True
        try:
            fcntl.flock(self._probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._probe, fcntl.LOCK_UN)
        return False

    def close(self) -> None:
        if self._probe is not None:
            os.close(self._probe)
            self._probe = None


def _sqlite_setup(engine: sa.Engine, lock_wait: float) -> None:
    """WAL, foreign keys, and ``BEGIN IMMEDIATE`` retried in short slices of SQLite's
    busy wait (:data:`SQLITE_BUSY_SLICE_MS`), so that two writers wait for each other
    instead of failing with "database is locked" (for up to ``lock_wait`` seconds),
    saying so to the dispatcher meanwhile (:class:`WriteWaiters`)."""
    waiters = WriteWaiters(engine.url.render_as_string(hide_password=False))

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(SQLITE_USUAL_PRAGMA)
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        # readers (``herald_read``) take no lock until they read, and never block a writer
        if connection.get_execution_options().get("herald_read", False):
            connection.exec_driver_sql("BEGIN")
            return
        deadline = time.monotonic() + lock_wait
        connection.exec_driver_sql(SQLITE_SLICE_PRAGMA)
        try:
            try:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except sa.exc.OperationalError as exc:
                if not is_locked(exc):
                    raise
            with waiters.waiting():
                while True:
                    try:
                        connection.exec_driver_sql("BEGIN IMMEDIATE")
                        return
                    except sa.exc.OperationalError as exc:
                        if not is_locked(exc) or time.monotonic() >= deadline:
                            raise
        finally:
            connection.exec_driver_sql(SQLITE_USUAL_PRAGMA)


def make_async_engine(
    url: str, *, lock_wait: float = SQLITE_LOCK_WAIT_SECONDS, **kwargs: Any
) -> AsyncEngine:
    """The async engine for ``url``. On SQLite a write waits up to ``lock_wait``
    seconds for the write lock."""
    if backend(url) == "sqlite":
        _make_folder(url)
        # One connection per process: SQLite has one writer anyway, and waiting for
        # the connection in asyncio is far cheaper than SQLite's busy-wait sleeps
        # when two connections of the same process want the write lock.
        kwargs.setdefault("pool_size", 1)
        kwargs.setdefault("max_overflow", 0)
        kwargs.setdefault("pool_timeout", lock_wait * 3)
        # a connection coming back is reset by _reset_without_waiting, not by a
        # ROLLBACK the caller waits for
        kwargs.setdefault("pool_reset_on_return", None)
        engine = create_async_engine(async_url(url), **kwargs)
        _sqlite_setup(engine.sync_engine, lock_wait)
        if kwargs["pool_reset_on_return"] is None:
            sa.event.listen(engine.sync_engine, "reset", _reset_without_waiting)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_async_engine(async_url(url), **kwargs)


def _reset_without_waiting(dbapi_connection: Any, _record: Any, state: Any) -> None:
    """A pooled aiosqlite connection coming back: rolled back if a transaction is still
    open, on the driver's thread, without waiting for it (SQLAlchemy's own reset is a
    ROLLBACK its caller waits a round trip for, behind whatever the event loop runs:
    on the dispatcher's hot path, as long as the transaction itself). The driver runs
    its calls in order, so whoever takes the connection next finds it reset first.
    Connections closed outside a running event loop (``asyncio_safe`` false) are
    discarded, not reset; a transaction SQLAlchemy rolled back itself needs nothing."""
    if state.transaction_was_reset or not state.asyncio_safe:
        return
    driver = dbapi_connection.driver_connection
    # as SQLAlchemy's aiosqlite dialect does (isolation_level): a call queued for the
    # driver's thread, here with no future to answer
    driver._tx.put_nowait((None, functools.partial(_rollback_if_open, driver)))


def _rollback_if_open(driver: Any) -> None:
    conn: sqlite3.Connection | None = driver._connection
    if conn is not None and conn.in_transaction:
        conn.rollback()


def make_sync_engine(url: str, **kwargs: Any) -> sa.Engine:
    """The sync engine for ``url`` (migrations, tooling)."""
    if backend(url) == "sqlite":
        _make_folder(url)
    engine = sa.create_engine(sync_url(url), **kwargs)
    if backend(url) == "sqlite":
        _sqlite_setup(engine, SQLITE_LOCK_WAIT_SECONDS)
    return engine


# --- schema (Alembic) -------------------------------------------------------------


def _migrations_dir() -> Path:
    spec = find_spec("migrations")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("Herald's migrations are not installed; reinstall the package.")
    return Path(next(iter(spec.submodule_search_locations)))


def alembic_config(url: str) -> Any:
    """An Alembic ``Config`` pointing at Herald's migrations and ``url``."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_migrations_dir()))
    cfg.attributes["herald_url"] = url
    return cfg


#: The newest migration shipped with this code, so that the schema check every command
#: makes needs no Alembic (importing it and reading the migrations cost ~0.4 s a call);
#: a test keeps it equal to Alembic's head.
SCHEMA_HEAD = "0020"


def _stored_revision(url: str) -> str | None:
    """The revision recorded in the database, read without Alembic; None if there is
    none (or no Herald schema yet)."""
    engine = make_sync_engine(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(herald_read=True)
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version"))
            row = version.first()
            return None if row is None else str(row[0])
    except sa.exc.OperationalError as exc:
        if "alembic_version" in str(exc):  # SQLite: no such table
            return None
        raise DatabaseError(f"Cannot reach the database at {redacted(url)}: {reason(exc)}") from exc
    except sa.exc.ProgrammingError:  # PostgreSQL: relation does not exist
        return None
    finally:
        engine.dispose()


def head_revision() -> str:
    """The newest migration revision shipped with this code."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def current_revision(url: str) -> str | None:
    """The revision the database is at, None if it has no Herald schema yet."""
    from alembic.migration import MigrationContext

    engine = make_sync_engine(url)
    try:
        with engine.connect() as conn:
            # a read: on SQLite it does not wait for (or take) the write lock
            conn.execution_options(herald_read=True)
            return MigrationContext.configure(conn).get_current_revision()
    except sa.exc.OperationalError as exc:
        raise DatabaseError(f"Cannot reach the database at {redacted(url)}: {reason(exc)}") from exc
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision``."""
    from alembic import command

    try:
        command.upgrade(alembic_config(url), revision)
    except sa.exc.OperationalError as exc:
        if is_locked(exc):
            raise DatabaseError(locked_message(url, SQLITE_LOCK_WAIT_SECONDS)) from exc
        raise DatabaseError(f"Cannot reach the database at {redacted(url)}: {reason(exc)}") from exc


def downgrade(url: str, revision: str) -> None:
    """Revert migrations down to ``revision`` (``"base"`` removes everything)."""
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def ensure_schema(url: str) -> None:
    """Make sure the database is at the head revision.

    SQLite (the embedded default) is upgraded automatically. PostgreSQL, shared by many
    processes, is upgraded only by ``herald db upgrade``; until then this raises a
    DatabaseError that says so.
    """
    if _stored_revision(url) == SCHEMA_HEAD:
        return
    current = current_revision(url)
    head = head_revision()
    if current == head:
        return
    if backend(url) == "sqlite":
        log.info("upgrading database schema", extra={"from_revision": current, "to": head})
        upgrade(url)
        return
    raise DatabaseError(
        f"The database at {redacted(url)} is at schema {current or 'none'}, "
        f"this Herald needs {head}: run `herald db upgrade`."
    )
