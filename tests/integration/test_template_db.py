"""A database cloned from the test session's template (tests/support/template_db.py)
is the same to the application as one migrated from 0001 to head: same schema, same
rows, sequences at the same values and independent of each other's."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from core import db
from core.actors import Principal
from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings, load_settings
from core.store import Store
from tests.conftest import PG_URL, _pg_conninfo, require_pg
from tests.support.template_db import Templates, dump_schema, pg_url_for

ANNA = Principal("local:anna")


def sqlite_contents(path: Path, *, fk_order: bool = True) -> dict[str, object]:
    """Everything in a SQLite file the application could see. ``fk_order=False``:
    without the order of a table's FOREIGN KEY clauses, which Alembic's batch mode
    (a table rebuilt by copy) writes in an order that changes from one Python process
    to the next (set order, PYTHONHASHSEED): two real migrations differ that way."""
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        if not fk_order:
            schema = [(k, n, t, fks_sorted(sql)) for k, n, t, sql in schema]
        tables = [name for kind, name, _, _ in schema if kind == "table"]
        rows = {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}
        pragmas = {
            p: conn.execute(f"PRAGMA {p}").fetchone()
            for p in ("user_version", "application_id", "page_size", "auto_vacuum", "encoding")
        }
        return {"schema": schema, "rows": rows, "pragmas": pragmas}
    finally:
        conn.close()


def fks_sorted(sql: str | None) -> str | None:
    if sql is None or not sql.endswith("\n)"):
        return sql
    parts = sql.removesuffix("\n)").split(", \n\t")
    fks = sorted(p for p in parts if " FOREIGN KEY(" in p)
    return ", \n\t".join([p for p in parts if " FOREIGN KEY(" not in p] + fks) + "\n)"


@pytest.fixture
def pg_schemas() -> Iterator[list[str]]:
    """Fresh empty schemas made on demand (append a name to get one), dropped after."""
    require_pg()
    made: list[str] = []
    yield made
    with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
        for schema in made:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def new_schema(made: list[str]) -> tuple[str, str]:
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    made.append(schema)
    return schema, pg_url_for(PG_URL, schema)


def test_the_session_clones_fresh_databases(_template_databases: Templates) -> None:
    """The stand-in is installed: core.db.upgrade is the session's Templates."""
    assert db.upgrade is _template_databases


def test_a_sqlite_clone_is_the_migrated_database(
    tmp_path: Path, _template_databases: Templates
) -> None:
    templates = _template_databases
    migrated, cloned = tmp_path / "migrated.db", tmp_path / "cloned.db"
    templates.real_upgrade(f"sqlite:///{migrated}")
    before = templates.cloned
    db.upgrade(f"sqlite:///{cloned}")
    assert templates.cloned == before + 1
    # the template is a real migration: the clone is the same, to the byte of its SQL
    assert sqlite_contents(cloned) == sqlite_contents(templates.sqlite_template())
    # and a migration made here differs at most in the order of foreign keys
    assert sqlite_contents(cloned, fk_order=False) == sqlite_contents(migrated, fk_order=False)
    assert sqlite_contents(cloned)["rows"]["alembic_version"] == [repr((db.SCHEMA_HEAD,))]  # type: ignore[index]
    assert db.current_revision(f"sqlite:///{cloned}") == db.head_revision()


def test_a_postgres_clone_is_the_migrated_schema(
    pg_schemas: list[str], _template_databases: Templates
) -> None:
    templates = _template_databases
    migrated, migrated_url = new_schema(pg_schemas)
    cloned, cloned_url = new_schema(pg_schemas)
    templates.real_upgrade(migrated_url)
    before = templates.cloned
    db.upgrade(cloned_url)
    assert templates.cloned == before + 1, "the PostgreSQL clone was not used (pg_dump?)"

    # the whole schema and its rows (with every sequence's setval), names normalised
    def dump(schema: str) -> str:
        return dump_schema(PG_URL, schema, "--inserts").replace(schema, "SCHEMA")

    assert dump(cloned) == dump(migrated)
    assert "CREATE TABLE SCHEMA.schedule" in dump(cloned)
    with psycopg.connect(_pg_conninfo(PG_URL)) as conn:
        rows = conn.execute(f'SELECT version_num FROM "{cloned}".alembic_version').fetchall()
    assert rows == [(db.SCHEMA_HEAD,)]
    assert db.current_revision(cloned_url) == db.head_revision()


def test_a_database_with_tables_is_migrated_for_real(
    tmp_path: Path, _template_databases: Templates
) -> None:
    """Only an empty database is cloned: one at an older revision is upgraded by
    Alembic (and so is an explicit revision)."""
    templates = _template_databases
    url = f"sqlite:///{tmp_path / 'old.db'}"
    before = templates.cloned
    db.upgrade(url, "0018")
    assert db.current_revision(url) == "0018"
    db.upgrade(url)
    assert db.current_revision(url) == db.head_revision()
    assert templates.cloned == before


async def test_a_clone_takes_writes(
    store: Store, settings: Settings, clock: ManualClock, _template_databases: Templates
) -> None:
    """Store.open on a clone (the ``store`` fixture) and a schedule written to it."""
    assert _template_databases.cloned > 0
    herald = Herald(store, settings, clock)
    schedule, created = await herald.create_schedule(
        ANNA, to="slack:C0TEMPLATE", when="in 1 hour", text="hello"
    )
    assert created and schedule.id == 1
    again, _ = await herald.create_schedule(
        ANNA, to="slack:C0TEMPLATE", when="in 2 hours", text="again"
    )
    assert again.id == 2


async def test_two_clones_count_on_their_own(
    pg_schemas: list[str], clock: ManualClock, _template_databases: Templates
) -> None:
    """Two PostgreSQL clones have sequences of their own: ids taken in one are not
    taken from the other (nor from the template)."""
    _, one_url = new_schema(pg_schemas)
    _, two_url = new_schema(pg_schemas)
    before = _template_databases.cloned
    ids: dict[str, list[int | None]] = {}
    for name, url, count in (("one", one_url, 3), ("two", two_url, 1)):
        db.upgrade(url)
        settings = load_settings(HERALD_DATABASE_URL=url, HERALD_DEFAULT_TZ="UTC", _env_file=None)
        store = await Store.open(url)
        try:
            herald = Herald(store, settings, clock)
            ids[name] = []
            for _ in range(count):
                made, _ = await herald.create_schedule(
                    ANNA, to="slack:C0T", when="in 1 hour", text="x"
                )
                ids[name].append(made.id)
        finally:
            await store.close()
    assert _template_databases.cloned == before + 2
    assert ids == {"one": [1, 2, 3], "two": [1]}


async def write_schedules(url: str, clock: ManualClock, count: int) -> None:
    """``count`` schedules saved into ``url``'s (migrated) database."""
    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_DEFAULT_TZ="UTC", _env_file=None)
    store = await Store.open(url)
    try:
        for _ in range(count):
            await Herald(store, settings, clock).create_schedule(
                ANNA, to="slack:C0T", when="in 1 hour", text="x"
            )
    finally:
        await store.close()


def recycled_and_migrated(
    templates: Templates, pg_schemas: list[str], used: str
) -> tuple[str, str]:
    """Recycle ``used`` into the pool, then make a schema migrated for real and one the
    next clone gives (the pooled one): their names, (cloned, migrated)."""
    assert templates.recycle(PG_URL, used)
    pg_schemas.remove(used)  # renamed into the pool: no longer there to drop
    migrated, migrated_url = new_schema(pg_schemas)
    templates.real_upgrade(migrated_url)
    fresh, fresh_url = new_schema(pg_schemas)
    before = templates.recycled
    db.upgrade(fresh_url)
    assert templates.recycled == before + 1, "the pooled schema was not used"
    return fresh, migrated


async def test_a_recycled_schema_is_a_fresh_clone(
    pg_schemas: list[str], clock: ManualClock, _template_databases: Templates
) -> None:
    """A finished test's schema, written to and then recycled (emptied, kept in the
    pool), is the next clone: the same dump as a migrated schema, rows and every
    sequence included; a schema whose shape a test changed is not recycled."""
    templates = _template_databases
    used, used_url = new_schema(pg_schemas)
    db.upgrade(used_url)
    await write_schedules(used_url, clock, 3)
    fresh, migrated = recycled_and_migrated(templates, pg_schemas, used)

    def dump(schema: str) -> str:
        return dump_schema(PG_URL, schema, "--inserts").replace(schema, "SCHEMA")

    assert dump(fresh) == dump(migrated)

    with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'CREATE INDEX ix_extra ON "{fresh}".job (id)')
    assert not templates.recycle(PG_URL, fresh)  # changed: dropped, not reused


def _planner_view(schema: str) -> list[tuple[object, ...]]:
    """What the planner and the pg_stat views know of ``schema``'s relations besides
    their definitions: each one's size on disk, a table's page and row counts (an
    index's differ between a built and a truncated one, to no effect), planner
    statistics and last vacuum."""
    with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
        return conn.execute(
            """
            SELECT c.relname, pg_relation_size(c.oid),
                   CASE WHEN c.relkind = 'r' THEN c.relpages END,
                   CASE WHEN c.relkind = 'r' THEN c.reltuples END,
                   (SELECT count(*) FROM pg_statistic WHERE starelid = c.oid),
                   s.last_vacuum IS NOT NULL
              FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
             WHERE n.nspname = %s ORDER BY c.relname
            """,
            (schema,),
        ).fetchall()


async def test_a_recycled_schema_keeps_nothing_the_planner_reads(
    pg_schemas: list[str], clock: ManualClock, _template_databases: Templates
) -> None:
    """A test's rows, vacuumed and analyzed, leave no trace in the schema the next test
    is given: not the pages they took (the planner counts a table's pages), not the
    statistics ANALYZE gathered, not the last vacuum (tests read pg_stat_user_tables)."""
    templates = _template_databases
    used, used_url = new_schema(pg_schemas)
    db.upgrade(used_url)
    await write_schedules(used_url, clock, 20)
    with psycopg.connect(_pg_conninfo(PG_URL), autocommit=True) as conn:
        conn.execute(f'VACUUM ANALYZE "{used}".schedule, "{used}".job')
    fresh, migrated = recycled_and_migrated(templates, pg_schemas, used)
    assert _planner_view(fresh) == _planner_view(migrated)
