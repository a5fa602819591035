"""Outcomes told back: events, hooks, notices, lateness, archive, auto-pause

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 22:38:35.794537

``event`` is the outbox of what applications hear (core.events), read in ``(tx, id)``
order; ``event_hook`` their subscriptions; ``notice`` what chat authors are told;
``lateness`` per-minute counts of how late sends started; ``job_archive`` and
``attempt_archive`` hold finished history past the retention (the same columns as
``job`` and ``attempt``). ``schedule.failed_streak``/``failed_through``/``auto_pause``
pause a recurring schedule that keeps failing; ``attempt.late_ms``/``delayed`` mark a
late send.

Down again only while the archive is empty and no event hook is registered (the
downgrade names what would be lost and changes nothing); pending events, notices,
lateness counts, each schedule's failure streak and its ``--no-auto-pause`` choice are
dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.models

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "attempt_archive",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "job_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "started_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "finished_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "outcome",
            sqlmodel.sql.sqltypes.AutoString(length=16),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("status_code", sa.Integer(), autoincrement=False, nullable=True),
        sa.Column("error", sa.Text(), autoincrement=False, nullable=True),
        sa.Column(
            "provider_message_id",
            sqlmodel.sql.sqltypes.AutoString(length=200),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "worker",
            sqlmodel.sql.sqltypes.AutoString(length=200),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "destination",
            sqlmodel.sql.sqltypes.AutoString(length=2000),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column("body", sa.Text(), autoincrement=False, nullable=True),
        sa.Column(
            "provider",
            sqlmodel.sql.sqltypes.AutoString(length=40),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "receipt",
            sqlmodel.sql.sqltypes.AutoString(length=16),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "receipt_at", core.models.UTCDateTime(timezone=True), autoincrement=False, nullable=True
        ),
        sa.Column("receipt_detail", sa.Text(), autoincrement=False, nullable=True),
        sa.Column("late_ms", sa.Integer(), autoincrement=False, nullable=True),
        sa.Column("delayed", sa.Boolean(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempt_archive")),
    )
    with op.batch_alter_table("attempt_archive", schema=None) as batch_op:
        batch_op.create_index("ix_attempt_archive_job_id", ["job_id"], unique=False)
        batch_op.create_index("ix_attempt_archive_started_at", ["started_at"], unique=False)

    op.create_table(
        "event",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("tx", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event")),
        # an id is never given twice, even after every event was pruned: cursors are ids
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index("ix_event_at", ["at"], unique=False)
        batch_op.create_index("ix_event_tenant_order", ["tenant", "tx", "id"], unique=False)

    op.create_table(
        "event_hook",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("tenant_wide", sa.Boolean(), nullable=False),
        sa.Column("url", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
        sa.Column("types", sa.JSON(), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("key_prefix", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("secret", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("cursor_tx", sa.BigInteger(), nullable=False),
        sa.Column("cursor_id", sa.BigInteger(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("next_try_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("failing_since", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered", sa.BigInteger(), nullable=False),
        sa.Column("last_delivered_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("lease_expires_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_hook")),
    )
    with op.batch_alter_table("event_hook", schema=None) as batch_op:
        batch_op.create_index("ix_event_hook_tenant", ["tenant", "state"], unique=False)

    op.create_table(
        "job_archive",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("schedule_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("recipient", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column(
            "occurrence_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "due_at", core.models.UTCDateTime(timezone=True), autoincrement=False, nullable=False
        ),
        sa.Column(
            "destination",
            sqlmodel.sql.sqltypes.AutoString(length=2000),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column("step", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("route", sa.Text(), autoincrement=False, nullable=True),
        sa.Column(
            "step_since", core.models.UTCDateTime(timezone=True), autoincrement=False, nullable=True
        ),
        sa.Column(
            "state",
            sqlmodel.sql.sqltypes.AutoString(length=16),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("priority", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("attempts", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column(
            "lease_owner",
            sqlmodel.sql.sqltypes.AutoString(length=200),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "lease_expires_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "idempotency_key",
            sqlmodel.sql.sqltypes.AutoString(length=64),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("last_error", sa.Text(), autoincrement=False, nullable=True),
        sa.Column(
            "retry_requested_by",
            sqlmodel.sql.sqltypes.AutoString(length=200),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "retry_requested_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "retry_rejected_by",
            sqlmodel.sql.sqltypes.AutoString(length=200),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "retry_reject_reason",
            sqlmodel.sql.sqltypes.AutoString(length=500),
            autoincrement=False,
            nullable=True,
        ),
        sa.Column(
            "created_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column(
            "finished_at",
            core.models.UTCDateTime(timezone=True),
            autoincrement=False,
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_archive")),
    )
    with op.batch_alter_table("job_archive", schema=None) as batch_op:
        batch_op.create_index("ix_job_archive_finished_at", ["finished_at"], unique=False)
        batch_op.create_index(
            "ix_job_archive_schedule_id_occurrence_at",
            ["schedule_id", "occurrence_at"],
            unique=False,
        )

    op.create_table(
        "lateness",
        sa.Column("worker", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("minute", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("worker", "minute", name=op.f("pk_lateness")),
    )
    op.create_table(
        "notice",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("lease_until", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notice")),
    )
    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.create_index("ix_notice_owner", ["owner", "id"], unique=False)

    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.add_column(sa.Column("late_ms", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("delayed", sa.Boolean(), server_default=sa.false(), nullable=False)
        )

    with op.batch_alter_table("schedule", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("failed_streak", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(
            sa.Column("failed_through", core.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("auto_pause", sa.Boolean(), server_default=sa.true(), nullable=False)
        )


def downgrade() -> None:
    bind = op.get_bind()
    counted = {
        "archived jobs": "SELECT count(*) FROM job_archive",
        "event hooks": "SELECT count(*) FROM event_hook",
    }
    said = [
        f"{n} {what}"
        for what, query in counted.items()
        if (n := bind.execute(sa.text(query)).scalar_one())
    ]
    if said:
        raise RuntimeError(
            f"Cannot go below revision 0017: {' and '.join(said)} would be lost, which the "
            "older schema cannot hold. Prune the archive (HERALD_ARCHIVE_DAYS) and remove "
            "the event hooks first."
        )
    with op.batch_alter_table("schedule", schema=None) as batch_op:
        batch_op.drop_column("auto_pause")
        batch_op.drop_column("failed_through")
        batch_op.drop_column("failed_streak")

    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.drop_column("delayed")
        batch_op.drop_column("late_ms")

    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.drop_index("ix_notice_owner")

    op.drop_table("notice")
    op.drop_table("lateness")
    with op.batch_alter_table("job_archive", schema=None) as batch_op:
        batch_op.drop_index("ix_job_archive_schedule_id_occurrence_at")
        batch_op.drop_index("ix_job_archive_finished_at")

    op.drop_table("job_archive")
    with op.batch_alter_table("event_hook", schema=None) as batch_op:
        batch_op.drop_index("ix_event_hook_tenant")

    op.drop_table("event_hook")
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_index("ix_event_tenant_order")
        batch_op.drop_index("ix_event_at")

    op.drop_table("event")
    with op.batch_alter_table("attempt_archive", schema=None) as batch_op:
        batch_op.drop_index("ix_attempt_archive_started_at")
        batch_op.drop_index("ix_attempt_archive_job_id")

    op.drop_table("attempt_archive")
