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
    "api_token",
    "provider_health",
    "device",
    "receipt_seen",
    "preference",
    "event",
    "event_hook",
    "notice",
    "lateness",
    "job_archive",
    "attempt_archive",
    "template",
    "template_version",
    "approval",
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


def test_0010_names_the_surface_only_where_old_rows_say_it(db_url: str) -> None:
    db.upgrade(db_url, "0009")
    engine = db.make_sync_engine(db_url)
    audit = (
        "INSERT INTO audit (id, at, tenant, actor, action, object_type, object_id, details)"
        " VALUES (:id, '2026-03-02 12:00:00', 'local', :actor, 'x', 'schedule', '1', :details)"
    )
    rows = {
        1: ("local:ann", '{"via": "console", "by": "1:00:00"}'),
        2: ("local:ann", "{}"),  # the CLI, or a console action that did not say
        3: ("slack:U1", "{}"),
        4: ("discord:42", '{"via": "elsewhere"}'),
        5: ("system:housekeeping", '{"reason": "dead-letter cap"}'),
    }
    try:
        with engine.begin() as conn:
            for id_, (actor, details) in rows.items():
                conn.execute(sa.text(audit), {"id": id_, "actor": actor, "details": details})
        db.upgrade(db_url)
        with engine.connect() as conn:
            found = dict(conn.execute(sa.text("SELECT id, surface FROM audit")).all())
        db.downgrade(db_url, "0009")
    finally:
        engine.dispose()
    assert found == {1: "console", 2: None, 3: "slack", 4: "discord", 5: "system"}


def test_0007_gives_existing_rows_the_local_tenant_and_goes_back(db_url: str) -> None:
    """Rows made before tenants belong to ``local``; nothing is lost on the way up or
    down (on SQLite the rebuilt tables must not cascade-delete their jobs)."""
    db.upgrade(db_url, "0006")
    engine = db.make_sync_engine(db_url)
    at = "2026-03-02 12:00:00"
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO member (id, display_name, role, platform_admin, created_at,"
                    " updated_at) VALUES ('slack:U1', 'Ada', 'operator', false, :at, :at)"
                ),
                {"at": at},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO schedule (id, workspace, owner, destination, body, expression,"
                    " timezone, starts_at, state, idempotency_key, version, created_at,"
                    " updated_at) VALUES (1, 'slack', 'slack:U1', 'log:', 'x', 'x', 'UTC', :at,"
                    " 'active', 'k1', 1, :at, :at)"
                ),
                {"at": at},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO job (schedule_id, occurrence_at, due_at, state, attempts,"
                    " idempotency_key, created_at, updated_at)"
                    " VALUES (1, :at, :at, 'pending', 0, 'j1', :at, :at)"
                ),
                {"at": at},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO audit (at, actor, action, object_type, object_id, details)"
                    " VALUES (:at, 'slack:U1', 'schedule.create', 'schedule', '1', '{}')"
                ),
                {"at": at},
            )
        db.upgrade(db_url, "0007")
        with engine.connect() as conn:
            tenants = {
                table: conn.execute(sa.text(f"SELECT tenant FROM {table}")).scalars().all()
                for table in ("member", "schedule", "audit")
            }
            jobs = conn.execute(sa.text("SELECT COUNT(*) FROM job")).scalar()
        assert tenants == {"member": ["local"], "schedule": ["local"], "audit": ["local"]}
        assert jobs == 1
        db.downgrade(db_url, "0006")
        with engine.connect() as conn:
            back = conn.execute(sa.text("SELECT owner, workspace FROM schedule")).all()
            members = conn.execute(sa.text("SELECT id, role FROM member")).all()
            jobs = conn.execute(sa.text("SELECT COUNT(*) FROM job")).scalar()
    finally:
        engine.dispose()
    assert [tuple(r) for r in back] == [("slack:U1", "slack")]
    assert [tuple(r) for r in members] == [("slack:U1", "operator")]
    assert jobs == 1


def test_the_quick_schema_check_knows_the_newest_migration(db_url: str) -> None:
    """Every command checks the schema without Alembic, against ``SCHEMA_HEAD``: it
    must be Alembic's head, and an older schema must still be found out."""
    assert db.SCHEMA_HEAD == db.head_revision()
    db.upgrade(db_url, "0007")
    if db.backend(db_url) == "sqlite":
        db.ensure_schema(db_url)  # upgraded on first use
        assert db.current_revision(db_url) == db.SCHEMA_HEAD
    else:
        from core.errors import DatabaseError

        with pytest.raises(DatabaseError, match="is at schema 0007"):
            db.ensure_schema(db_url)


_SCHEDULE_0013 = (
    "INSERT INTO schedule (id, owner, destination, body, expression, timezone, starts_at,"
    " state, version, created_at, updated_at)"
    " VALUES (:id, 'local:a', :dest, 'x', 'x', 'UTC', :at, 'active', 1, :at, :at)"
)
_JOB_0013 = (
    "INSERT INTO job (schedule_id, occurrence_at, due_at, state, attempts, idempotency_key,"
    " created_at, updated_at) VALUES (:sid, :at, :at, :state, 0, :key, :at, :at)"
)
_AT = "2026-03-02 12:00:00"


def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    engine = db.make_sync_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(query))]
    finally:
        engine.dispose()


def _json(value: object) -> object:
    import json

    return json.loads(value) if isinstance(value, str) else value


def test_0014_makes_every_schedule_a_one_recipient_schedule(db_url: str) -> None:
    db.upgrade(db_url, "0013")
    engine = db.make_sync_engine(db_url)
    try:
        with engine.begin() as conn:
            for sid, dest in ((1, "slack:C0OPS"), (2, "email:a@example.com")):
                conn.execute(sa.text(_SCHEDULE_0013), {"id": sid, "dest": dest, "at": _AT})
                conn.execute(
                    sa.text(_JOB_0013),
                    {"sid": sid, "at": _AT, "state": "pending", "key": f"k{sid}"},
                )
    finally:
        engine.dispose()
    db.upgrade(db_url)
    schedules = _rows(db_url, "SELECT id, destination, recipients FROM schedule ORDER BY id")
    assert [(sid, dest, _json(r)) for sid, dest, r in schedules] == [
        (1, "slack:C0OPS", [{"id": 0, "to": ["slack:C0OPS"]}]),
        (2, "email:a@example.com", [{"id": 0, "to": ["email:a@example.com"]}]),
    ]
    jobs = _rows(
        db_url,
        "SELECT schedule_id, recipient, destination, step, route, idempotency_key FROM job"
        " ORDER BY schedule_id",
    )
    # each job is its schedule's recipient 0, at its own destination, with its key
    assert jobs == [(1, 0, None, 0, None, "k1"), (2, 0, None, 0, None, "k2")]


def test_0014_goes_down_for_one_recipient_schedules(db_url: str) -> None:
    """A schedule whose only recipient an edit replaced (recipient 1 now, recipient 0's
    job of the same occurrence cancelled) goes down to one job per occurrence."""
    db.upgrade(db_url)
    engine = db.make_sync_engine(db_url)
    job = (
        "INSERT INTO job (schedule_id, recipient, destination, occurrence_at, due_at, state,"
        " attempts, idempotency_key, created_at, updated_at)"
        " VALUES (1, :recipient, :dest, :at, :at, :state, 0, :key, :at, :at)"
    )
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(_SCHEDULE_0013), {"id": 1, "dest": "slack:C0NEW", "at": _AT})
            conn.execute(
                sa.text("UPDATE schedule SET recipients = :r WHERE id = 1"),
                {"r": '[{"id": 1, "to": ["slack:C0NEW"]}]'},
            )
            for recipient, dest, state in ((0, "slack:C0OLD", "cancelled"), (1, None, "pending")):
                values = {"recipient": recipient, "dest": dest, "state": state, "at": _AT}
                conn.execute(sa.text(job), {**values, "key": f"k{recipient}"})
    finally:
        engine.dispose()
    db.downgrade(db_url, "0013")
    assert db.current_revision(db_url) == "0013"
    assert _rows(db_url, "SELECT schedule_id, state, idempotency_key FROM job") == [
        (1, "pending", "k1")
    ]
    assert _rows(db_url, "SELECT destination FROM schedule") == [("slack:C0NEW",)]
    db.upgrade(db_url)
    assert _json(_rows(db_url, "SELECT recipients FROM schedule")[0][0]) == [
        {"id": 0, "to": ["slack:C0NEW"]}
    ]


@pytest.mark.parametrize(
    "recipients",
    [
        '[{"id": 0, "to": ["slack:C0OPS"]}, {"id": 1, "to": ["slack:C0DEV"]}]',
        '[{"id": 0, "to": ["slack:@U1", "email:a@example.com"]}]',
        '[{"id": 0, "to": ["email:a@example.com"], "zone": "Asia/Kolkata"}]',
        '[{"id": 0, "to": ["slack:@U1", "email:a@example.com"], "timeout": 600}]',
    ],
    ids=["several", "chain", "zone", "timeout"],
)
def test_0014_refuses_to_go_down_naming_the_schedules_that_would_lose_recipients(
    db_url: str, recipients: str
) -> None:
    db.upgrade(db_url)
    db.downgrade(db_url, "0014")  # 0016 and 0015 go down with nothing of theirs to lose
    engine = db.make_sync_engine(db_url)
    try:
        with engine.begin() as conn:
            for sid in (1, 2, 3):
                conn.execute(sa.text(_SCHEDULE_0013), {"id": sid, "dest": "slack:C0OPS", "at": _AT})
                conn.execute(
                    sa.text(_JOB_0013),
                    {"sid": sid, "at": _AT, "state": "pending", "key": f"k{sid}"},
                )
            for sid in (2, 3):
                conn.execute(
                    sa.text("UPDATE schedule SET recipients = :r WHERE id = :id"),
                    {"r": recipients, "id": sid},
                )
    finally:
        engine.dispose()
    before = (
        _rows(db_url, "SELECT id, recipients FROM schedule ORDER BY id"),
        _rows(db_url, "SELECT id, recipient, idempotency_key FROM job ORDER BY id"),
    )
    with pytest.raises(RuntimeError, match=r"Cannot go below revision 0014: schedules 2, 3 have"):
        db.downgrade(db_url, "0013")
    assert db.current_revision(db_url) == "0014"  # nothing changed
    after = (
        _rows(db_url, "SELECT id, recipients FROM schedule ORDER BY id"),
        _rows(db_url, "SELECT id, recipient, idempotency_key FROM job ORDER BY id"),
    )
    assert after == before
