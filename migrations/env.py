"""Alembic environment for Herald. The URL comes from the Config (see core.db)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import core.models  # noqa: F401  (registers the tables)
from core.db import make_sync_engine

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=str(config.attributes.get("herald_url") or config.get_main_option("sqlalchemy.url")),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.attributes.get("herald_url") or config.get_main_option("sqlalchemy.url")
    engine = make_sync_engine(str(url))
    try:
        with engine.connect() as conn:
            _run(conn)
    finally:
        engine.dispose()


def _run(connection: object) -> None:
    sqlite = connection.dialect.name == "sqlite"  # type: ignore[attr-defined]
    if sqlite:
        # Batch mode rebuilds a table (copy, drop, rename): with foreign keys on, the
        # drop would delete every row that references it (jobs of a schedule, ON
        # DELETE CASCADE). The pragma only works outside a transaction, so it goes
        # through the driver before the migration's transaction begins.
        _driver(connection).execute("PRAGMA foreign_keys = OFF")
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite needs batch mode to alter tables
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()  # type: ignore[attr-defined]
    if sqlite:
        _driver(connection).execute("PRAGMA foreign_keys = ON")


def _driver(connection: object) -> object:
    """The DB-API connection under a SQLAlchemy one."""
    return connection.connection.driver_connection  # type: ignore[attr-defined]


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
