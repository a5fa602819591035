"""The migrations and the models agree, and every revision goes down and up again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import core.models  # noqa: F401
from core import db

TABLES = {
    "schedule",
    "job",
    "attempt",
    "member",
    "audit",
    "worker",
    "calendar",
    "feed",
    "rate_bucket",
}


def _tables(url: str) -> set[str]:
    engine = db.make_sync_engine(url)
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_latest_migration_matches_the_models(db_url: str) -> None:
    db.upgrade(db_url)
    engine = db.make_sync_engine(db_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, SQLModel.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_upgrade_downgrade_upgrade(db_url: str) -> None:
    db.upgrade(db_url)
    assert db.current_revision(db_url) == db.head_revision()
    assert _tables(db_url) == TABLES
    db.downgrade(db_url, "base")
    assert db.current_revision(db_url) is None
    assert _tables(db_url) == set()
    db.upgrade(db_url)
    assert db.current_revision(db_url) == db.head_revision()
    assert _tables(db_url) == TABLES


def test_sqlite_is_upgraded_on_first_use_postgres_is_not(db_url: str) -> None:
    from core.errors import DatabaseError

    if db.backend(db_url) == "sqlite":
        db.ensure_schema(db_url)
        assert db.current_revision(db_url) == db.head_revision()
        return
    # PostgreSQL is shared by many processes: only `herald db upgrade` migrates it.
    with pytest.raises(DatabaseError, match="run `herald db upgrade`"):
        db.ensure_schema(db_url)
    assert db.current_revision(db_url) is None


def test_0008_backfills_what_each_schedule_last_did(db_url: str) -> None:
    db.upgrade(db_url, "0006")
    engine = db.make_sync_engine(db_url)
    at = "2026-03-02 12:00:00"
    schedule = (
        "INSERT INTO schedule (id, workspace, owner, destination, body, expression, timezone,"
        " starts_at, state, version, created_at, updated_at)"
        " VALUES (:id, '', 'local:a', 'log:', 'x', 'x', 'UTC', :at, 'completed', 1, :at, :at)"
    )
    job = (
        "INSERT INTO job (schedule_id, occurrence_at, due_at, state, attempts,"
        " idempotency_key, created_at, updated_at)"
        " VALUES (:sid, :occ, :occ, :state, 1, :key, :at, :at)"
    )
    rows = {1: ["dead"], 2: ["delivered"], 3: ["delivered", "expired"], 4: []}
    try:
        with engine.begin() as conn:
            for sid, states in rows.items():
                conn.execute(sa.text(schedule), {"id": sid, "at": at})
                for n, state in enumerate(states):
                    occ = f"2026-03-0{n + 2} 12:00:00"
                    values = {"sid": sid, "occ": occ, "state": state, "key": f"k{sid}{n}", "at": at}
                    conn.execute(sa.text(job), values)
        db.upgrade(db_url)
        with engine.connect() as conn:
            found = dict(conn.execute(sa.text("SELECT id, last_outcome FROM schedule")).all())
    finally:
        engine.dispose()
    assert found == {1: "failed", 2: "delivered", 3: "failed", 4: None}
