"""Fresh test databases cloned from a template instead of migrated, one template per
pytest process (each pytest-xdist worker has its own).

Why: migrating an empty database from 0001 to head (0019 then) with ``core.db.upgrade``
costs ~0.25-0.35 s on SQLite and ~0.23-0.28 s on PostgreSQL (measured 2026-12-06),
and thousands of tests pay it: every ``store`` fixture, every ``Store.open`` of a new
SQLite file (``core.db.ensure_schema`` upgrades it), every test that migrates its own
database. A clone costs a few milliseconds: SQLite's backup API copies the template's
pages; on PostgreSQL the template schema's ``pg_dump`` text (taken once) is replayed
into the test's schema.

:class:`Templates` stands in for ``core.db.upgrade`` for the whole test session (see
tests/conftest.py). Only ``upgrade(url)`` / ``upgrade(url, "head")`` of an EMPTY
database is cloned; anything else (an explicit revision, a database that already has
tables, an unusual URL) goes to the real function, so the migration tests still run
Alembic for real. ``herald`` processes that tests start run the real migrations.
tests/integration/test_template_db.py shows that a clone and a migrated database are
the same to the application (schema, rows, sequences).
"""

from __future__ import annotations

import contextlib
import functools
import re
import secrets
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from core import db
from core.errors import DatabaseError

Upgrade = Callable[..., None]

#: A schema name that needs no quoting in SQL: the dump's text is rewritten by
#: replacing the template's name with it, which is only right for such names.
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")

#: pg_dump writes ``x IN ('a', 'b')`` on a varchar column as
#: ``(ARRAY['a'::character varying, ...])::text[]``, which PostgreSQL reads back as
#: ``ARRAY[('a'::character varying)::text, ...]`` (a cast of an ARRAY[] constructor is
#: applied to its elements): the same index to the planner, but not the same text in
#: the catalog. Casting the array to varchar[] first reads back as written.
_ARRAY_CAST = re.compile(r"\(ARRAY\[((?:'[^']*'::character varying(?:, )?)+)\]\)::text\[\]")

_OBJECTS_IN_SCHEMA = """
    SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = n.oid)
         + (SELECT count(*) FROM pg_type WHERE typnamespace = n.oid)
         + (SELECT count(*) FROM pg_proc WHERE pronamespace = n.oid)
    FROM pg_namespace n WHERE n.nspname = %s
"""


def pg_server(url: str) -> str:
    """The libpq conninfo (URI) of ``url``'s server and database, without the
    ``options`` (search_path) that pick a test's schema."""
    parsed = make_url(url).set(drivername="postgresql")
    query = {k: v for k, v in parsed.query.items() if k != "options"}
    return parsed.set(query=query).render_as_string(hide_password=False)


def pg_schema(url: str) -> str | None:
    """The one schema ``url``'s connections use (``options=-csearch_path=NAME``), or
    None when the URL does not name exactly one plain schema that way."""
    options = make_url(url).query.get("options")
    if not isinstance(options, str):
        return None
    match = re.fullmatch(r"-c\s*search_path=(\S+)", options.strip())
    if match is None or not _PLAIN_NAME.fullmatch(match.group(1)):
        return None
    return match.group(1)


def pg_url_for(server_url: str, schema: str) -> str:
    """``server_url`` with its connections in ``schema`` (as the ``pg_url`` fixture)."""
    url = make_url(server_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def dump_schema(server_url: str, schema: str, *extra: str) -> str:
    """``pg_dump`` of one schema as SQL text, without psql's meta-commands (pg_dump
    15.14+ brackets its output in ``\\restrict KEY`` / ``\\unrestrict KEY``, which only
    psql understands and whose key is new each time)."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise FileNotFoundError("pg_dump is not installed")
    proc = subprocess.run(
        [pg_dump, f"--schema={schema}", "--no-owner", "--no-privileges", *extra,
         "--dbname", pg_server(server_url)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {proc.stderr.strip()[:500]}")
    return "".join(
        line for line in proc.stdout.splitlines(keepends=True) if not line.startswith("\\")
    )


class Templates:
    """A migrated SQLite file and PostgreSQL schema, made on first need, that fresh
    databases are cloned from. Call an instance as ``core.db.upgrade``."""

    def __init__(self, real_upgrade: Upgrade, pg_url: str) -> None:
        self.real_upgrade = real_upgrade
        self.pg_url = pg_url  # the server the PostgreSQL template lives on
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._sqlite: Path | None = None
        self._pg_schema: str | None = None  # the template schema, to drop at the end
        self._pg_dump: str | None = None  # its dump, the template's name replaceable
        self._pg_failed = False  # no pg_dump (or it failed): PostgreSQL migrates for real
        self.cloned = 0  # how many upgrades were clones (for the tests of this module)
        #: Schemas a finished test left in the template's shape, emptied, waiting to be
        #: the next clone (:meth:`recycle`); and the template's shape, once known.
        self._pool: list[str] = []
        self._shape: str | None = None
        self.recycled = 0  # how many clones were pooled schemas (for the tests)
        #: This process's one connection for the schemas' work (:meth:`admin`).
        self._admin: psycopg.Connection[tuple[object, ...]] | None = None
        self._admin_lock = threading.RLock()

    # --- the stand-in for core.db.upgrade ----------------------------------------

    def __call__(self, url: str, revision: str = "head") -> None:
        if revision == "head" and self._clone(url):
            self.cloned += 1
            return
        self.real_upgrade(url, revision)

    def _clone(self, url: str) -> bool:
        """Clone the template into ``url``'s database if it is empty."""
        try:
            backend = db.backend(url)
        except DatabaseError:  # not a URL Herald takes: the real upgrade says so
            return False
        return self._clone_sqlite(url) if backend == "sqlite" else self._clone_pg(url)

    @contextlib.contextmanager
    def admin(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """The connection (autocommit) that creates, clones, empties, renames and drops
        the tests' schemas on the template's server, one for the whole session and
        one user at a time. A new connection is a new PostgreSQL backend, which costs
        the server ~20 ms of CPU to start and fill its catalog caches: connecting for
        each step cost every PostgreSQL test ~45 ms of the server's CPU more (a test's
        create, clone and recycle: 90 -> 45 ms of wall clock). One the server dropped
        (a restart) is replaced on the next use."""
        with self._admin_lock:
            conn = self._admin
            if conn is None or conn.closed or conn.broken:
                conn = self._admin = psycopg.connect(pg_server(self.pg_url), autocommit=True)
            yield conn

    def create_schema(self, schema: str) -> None:
        """An empty schema for a test (the ``pg_url`` fixture)."""
        with self.admin() as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"'.encode())

    def drop_schema(self, schema: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())

    # --- SQLite -----------------------------------------------------------------

    def sqlite_template(self) -> Path:
        """The template file, migrated by the real upgrade on first call."""
        with self._lock:
            if self._sqlite is None:
                path = self._tempdir() / "template.db"
                self.real_upgrade(f"sqlite:///{path}")
                # the engine is disposed: WAL checkpointed, the file holds everything
                self._sqlite = path
            return self._sqlite

    def _clone_sqlite(self, url: str) -> bool:
        path = db.sqlite_path(url)
        if path is None or not path.parent.is_dir() or not _sqlite_empty(path):
            return False
        source = sqlite3.connect(self.sqlite_template())
        try:
            target = sqlite3.connect(path)
            try:
                # a page-by-page copy in one write transaction of the target: the
                # template's schema, rows and header (user_version, page size...)
                source.backup(target)
            finally:
                target.close()
        finally:
            source.close()
        return True

    # --- PostgreSQL -------------------------------------------------------------

    def pg_template(self) -> str | None:
        """The template schema's dump (its name replaceable), made on first call; None
        when pg_dump is missing or fails, or the dump does not replay to the same
        schema (the real upgrade is used instead)."""
        with self._lock:
            if self._pg_dump is None and not self._pg_failed:
                try:
                    self._pg_dump = self._make_pg_template()
                except (OSError, RuntimeError, subprocess.SubprocessError, psycopg.Error) as exc:
                    warnings.warn(f"no PostgreSQL template ({exc}): tests migrate", stacklevel=2)
                    self._pg_failed = True
            return self._pg_dump

    def _make_pg_template(self) -> str:
        schema = f"herald_tmpl_{secrets.token_hex(8)}"
        with psycopg.connect(pg_server(self.pg_url), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        self._pg_schema = schema  # dropped by close() whatever happens next
        self.real_upgrade(pg_url_for(self.pg_url, schema))
        dumped = dump_schema(self.pg_url, schema, "--inserts")
        # the test's schema exists already: drop the dump's CREATE SCHEMA
        text, found = re.subn(rf"^CREATE SCHEMA {schema};\n", "", dumped, flags=re.MULTILINE)
        if found != 1:
            raise RuntimeError("pg_dump's output has no CREATE SCHEMA line")
        text = _ARRAY_CAST.sub(r"(ARRAY[\1]::character varying[])::text[]", text)
        # Replayed, the dump must give back exactly the template (as pg_dump sees it):
        # else a clone would differ from a migrated schema, and tests would not run
        # on the schema users get.
        check = f"herald_check_{secrets.token_hex(8)}"
        with psycopg.connect(pg_server(self.pg_url), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{check}"')
            try:
                conn.execute(text.replace(schema, check).encode())
                again = dump_schema(self.pg_url, check, "--inserts")
            finally:
                conn.execute(f'DROP SCHEMA "{check}" CASCADE')
        if again.replace(check, schema) != dumped:
            raise RuntimeError("the template's pg_dump does not replay to the same schema")
        return text

    def _clone_pg(self, url: str) -> bool:
        schema = pg_schema(url)
        if schema is None or pg_server(url) != pg_server(self.pg_url):
            return False
        with self.admin() as conn, conn.transaction():  # all or nothing
            row = conn.execute(_OBJECTS_IN_SCHEMA, (schema,)).fetchone()
            if row is None or row[0] != 0:  # no such schema, or not empty
                return False
            with self._lock:
                pooled = self._pool.pop() if self._pool else None
            if pooled is not None:
                # a schema is its objects' namespace: renamed, everything in it follows
                # (sequence defaults and foreign keys refer to objects, not names)
                conn.execute(f'DROP SCHEMA "{schema}"')
                conn.execute(f'ALTER SCHEMA "{pooled}" RENAME TO "{schema}"')
                self.recycled += 1
                return True
            dump = self.pg_template()
            if dump is None:
                return False
            assert self._pg_schema is not None
            # without parameters psycopg sends the text as is, many statements at once
            conn.execute(dump.replace(self._pg_schema, schema).encode())
        return True

    def recycle(self, server_url: str, schema: str) -> bool:
        """After a test: if ``schema`` is still exactly the template's shape (tables,
        columns and their types, indexes, constraints, triggers, functions, types and
        the migration it is at), empty it back to the template's rows and sequences
        and keep it for the next clone; False (the caller drops it) otherwise.

        Why: creating a schema from the dump and dropping it costs ~0.3 + ~0.2 s of
        PostgreSQL's catalog work; emptying ~24 small tables and renaming costs a few
        milliseconds, and about half of the suite's tests run on PostgreSQL."""
        if self._pg_schema is None or self._pg_dump is None or not _PLAIN_NAME.fullmatch(schema):
            return False
        if pg_server(server_url) != pg_server(self.pg_url):
            return False
        try:
            with self.admin() as conn, conn.transaction():  # all or nothing
                if self._shape is None:
                    self._shape = _shape(conn, self._pg_schema)
                if _shape(conn, schema) != self._shape:
                    return False
                # a table never written to has no page, so no row: only the others
                # need emptying (each TRUNCATE costs new files)
                tables = [row[0] for row in conn.execute(_WRITTEN_TABLES, (schema,))]
                # triggers are not fired while the template's rows go back (superuser
                # only; elsewhere this raises and the schema is dropped as before)
                conn.execute("SET LOCAL session_replication_role = replica")
                _as_new(conn, schema, tables)
                conn.execute(self._rows_and_sequences.replace(self._pg_schema, schema).encode())
                pooled = f"herald_pool_{secrets.token_hex(8)}"
                conn.execute(f'ALTER SCHEMA "{schema}" RENAME TO "{pooled}"')
        except psycopg.Error:
            return False
        with self._lock:
            self._pool.append(pooled)
        return True

    @functools.cached_property
    def _rows_and_sequences(self) -> str:
        """The dump's rows (alembic_version's) and sequence positions, as SQL (read out
        of the dump once, not on every recycle)."""
        assert self._pg_dump is not None
        return "".join(
            line + "\n"
            for line in self._pg_dump.splitlines()
            if line.startswith(("INSERT INTO ", "SELECT pg_catalog.setval("))
        )

    # --- the end of the session ---------------------------------------------------

    def close(self) -> None:
        """Drop the PostgreSQL template schema and the pooled ones, close the session's
        connection, and remove the SQLite template."""
        for pooled in self._pool:
            with contextlib.suppress(psycopg.Error):
                self.drop_schema(pooled)
        self._pool.clear()
        if self._pg_schema is not None:
            with contextlib.suppress(psycopg.Error):
                self.drop_schema(self._pg_schema)
            self._pg_schema = None
        with self._admin_lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _tempdir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="herald-tmpl-"))
        return self._dir


#: What a schema is made of, as one text: every relation (table, index, sequence, view)
#: with its kind, every column with its type, nullability and default, every
#: constraint, trigger, function and type, and the migration recorded in it.
_SHAPE = """
    WITH n AS (SELECT oid FROM pg_namespace WHERE nspname = %(schema)s)
    SELECT string_agg(part, E'\\n' ORDER BY part) FROM (
        SELECT 'r ' || relname || ' ' || relkind::text FROM pg_class
         WHERE relnamespace = (SELECT oid FROM n)
        UNION ALL
        SELECT 'a ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
               || ' ' || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = (SELECT oid FROM n) AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'i ' || indexrelid::regclass::text || ' ' || pg_get_indexdef(indexrelid)
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE c.relnamespace = (SELECT oid FROM n)
        UNION ALL
        SELECT 'k ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
         WHERE connamespace = (SELECT oid FROM n)
        UNION ALL
        SELECT 'g ' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = (SELECT oid FROM n) AND NOT t.tgisinternal
        UNION ALL
        SELECT 'p ' || proname FROM pg_proc WHERE pronamespace = (SELECT oid FROM n)
        UNION ALL
        SELECT 't ' || typname FROM pg_type WHERE typnamespace = (SELECT oid FROM n)
    ) AS parts(part)
"""


#: The tables of a schema (``%s``) that have pages on disk: the ones ever written to.
_WRITTEN_TABLES = """
    SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = %s AND c.relkind = 'r' AND pg_relation_size(c.oid) > 0
"""


def _as_new(conn: psycopg.Connection[tuple[object, ...]], schema: str, tables: list[str]) -> None:
    """Empty ``tables`` of ``schema`` as a fresh clone has them, not only of their rows:
    TRUNCATE gives each table and index new, empty files (a DELETE left the pages, which
    the planner counts) and resets their page and row counts to "never vacuumed" (with
    CASCADE, the tables whose foreign keys refer to them too, written or not); the
    planner's statistics an ANALYZE (a test's or autovacuum's) gathered and the tables'
    activity counters (the last vacuum...) go too. Else the next test's plans and
    pg_stat_* views would depend on what the test before it wrote."""
    if tables:
        names = ", ".join(f'"{schema}"."{table}"' for table in tables)
        conn.execute(f"TRUNCATE {names} CASCADE".encode())
    relations = (
        "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s"
    )
    conn.execute(
        f"DELETE FROM pg_catalog.pg_statistic WHERE starelid IN ({relations})".encode(), (schema,)
    )
    conn.execute(
        f"SELECT pg_stat_reset_single_table_counters(oid) FROM ({relations}) AS r".encode(),
        (schema,),
    )


def _shape(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> str:
    """``schema``'s shape (:data:`_SHAPE`) with its own name taken out, and the
    migration it is at."""
    row = conn.execute(_SHAPE, {"schema": schema}).fetchone()
    shape = str(row[0] if row else "").replace(f"{schema}.", "")
    try:
        with conn.transaction():  # a savepoint: the missing table's error undone alone
            version = conn.execute(
                f'SELECT version_num FROM "{schema}".alembic_version'.encode()
            ).fetchall()
    except psycopg.Error:
        return shape + "\nno alembic_version"
    return shape + f"\nat {sorted(str(v[0]) for v in version)}"


def _sqlite_empty(path: Path) -> bool:
    """Whether the file is missing, zero bytes, or a database without any schema (as
    ``ensure_schema`` leaves it: its first read makes a 4 KiB file in WAL mode)."""
    if not path.exists() or path.stat().st_size == 0:
        return True
    try:
        conn = sqlite3.connect(path)
    except sqlite3.Error:
        return False
    try:
        return bool(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0)
    except sqlite3.Error:  # not a database: the real upgrade says so
        return False
    finally:
        conn.close()
