"""Until done and approvals

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 04:54:44.035240

``approval`` is the one table of what a second person decides (core.approvals): a dead
letter's retry request (until now four columns of ``job``, moved here: a pending request
is a pending row, the rejection a dead letter still shows a rejected row) and a
member's message awaiting approval before it is sent (``schedule.state`` ``awaiting``).

A job is one step of its occurrence's ladder (core.until_done): ``job.ladder`` is ""
for the occurrence's message and names a nag, an escalation or the "done" edit
otherwise; the unique key becomes (schedule_id, recipient, occurrence_at, ladder).
``job.thread`` is the message a step answers; ``notice.approval_id`` the approval an
approver is asked to decide or an author told of; ``done_by``/``done_at`` who marked an
occurrence done (state ``acknowledged``).

Down again only while no schedule awaits approval and no ladder step waits to be sent:
the downgrade names them and changes nothing. Sent ladder steps are deleted with their
attempts (the older key allows one job per occurrence), archived ones too,
acknowledged occurrences (active and archived) read as delivered, and
dead letters' current requests go back to their job's columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.models

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# A dead letter's retry request or its rejection, as a row of its own.
_MOVE_REQUESTS = """
INSERT INTO approval (tenant, kind, job_id, state, requested_by, requested_at, why,
    decided_by, decided_at, reason, shown)
SELECT schedule.tenant, 'retry', job.id,
    CASE WHEN job.retry_requested_by IS NOT NULL THEN 'pending' ELSE 'rejected' END,
    coalesce(job.retry_requested_by, ''), coalesce(job.retry_requested_at, job.updated_at),
    'a dead letter sent again',
    CASE WHEN job.retry_requested_by IS NULL THEN job.retry_rejected_by END,
    CASE WHEN job.retry_requested_by IS NULL THEN job.updated_at END,
    CASE WHEN job.retry_requested_by IS NULL THEN job.retry_reject_reason END,
    true
FROM job JOIN schedule ON schedule.id = job.schedule_id
WHERE job.retry_requested_by IS NOT NULL OR job.retry_rejected_by IS NOT NULL
ORDER BY job.id
"""
_REQUESTS_BACK_PENDING = """
UPDATE job SET retry_requested_by = (SELECT a.requested_by FROM approval AS a
        WHERE a.job_id = job.id AND a.shown AND a.state = 'pending' AND a.kind = 'retry'),
    retry_requested_at = (SELECT a.requested_at FROM approval AS a
        WHERE a.job_id = job.id AND a.shown AND a.state = 'pending' AND a.kind = 'retry')
WHERE job.id IN (SELECT job_id FROM approval
    WHERE shown AND state = 'pending' AND kind = 'retry')
"""
_REQUESTS_BACK_REJECTED = """
UPDATE job SET retry_rejected_by = (SELECT max(a.decided_by) FROM approval AS a
        WHERE a.job_id = job.id AND a.shown AND a.state = 'rejected' AND a.kind = 'retry'),
    retry_reject_reason = (SELECT max(a.reason) FROM approval AS a
        WHERE a.job_id = job.id AND a.shown AND a.state = 'rejected' AND a.kind = 'retry')
WHERE job.id IN (SELECT job_id FROM approval
    WHERE shown AND state = 'rejected' AND kind = 'retry')
"""


def upgrade() -> None:
    op.create_table(
        "approval",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("schedule_version", sa.Integer(), nullable=True),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("requested_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("requested_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("why", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("decided_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("decided_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("reason", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("expires_at", core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("shown", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_approval_job_id_job"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedule.id"],
            name=op.f("fk_approval_schedule_id_schedule"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approval")),
    )
    with op.batch_alter_table("approval", schema=None) as batch_op:
        batch_op.create_index("ix_approval_due", ["state", "expires_at"], unique=False)
        batch_op.create_index("ix_approval_job", ["job_id"], unique=False)
        batch_op.create_index("ix_approval_schedule", ["schedule_id"], unique=False)
        batch_op.create_index("ix_approval_tenant_state", ["tenant", "state", "id"], unique=False)
    op.execute(_MOVE_REQUESTS)
    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.add_column(sa.Column("approval_id", sa.Integer(), nullable=True))

    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "ladder",
                sqlmodel.sql.sqltypes.AutoString(length=24),
                server_default="",
                nullable=False,
            )
        )
        batch_op.add_column(
            sa.Column("thread", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True)
        )
        batch_op.add_column(
            sa.Column("done_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True)
        )
        batch_op.add_column(
            sa.Column("done_at", core.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.drop_constraint(batch_op.f("uq_job_schedule_recipient"), type_="unique")
        batch_op.create_unique_constraint(
            "uq_job_schedule_ladder", ["schedule_id", "recipient", "occurrence_at", "ladder"]
        )
        batch_op.drop_column("retry_requested_at")
        batch_op.drop_column("retry_rejected_by")
        batch_op.drop_column("retry_requested_by")
        batch_op.drop_column("retry_reject_reason")

    with op.batch_alter_table("job_archive", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "ladder",
                sqlmodel.sql.sqltypes.AutoString(length=24),
                server_default="",
                autoincrement=False,
                nullable=False,
            )
        )
        batch_op.add_column(
            sa.Column(
                "thread",
                sqlmodel.sql.sqltypes.AutoString(length=200),
                autoincrement=False,
                nullable=True,
            )
        )
        batch_op.add_column(
            sa.Column(
                "done_by",
                sqlmodel.sql.sqltypes.AutoString(length=200),
                autoincrement=False,
                nullable=True,
            )
        )
        batch_op.add_column(
            sa.Column(
                "done_at",
                core.models.UTCDateTime(timezone=True),
                autoincrement=False,
                nullable=True,
            )
        )
        batch_op.drop_column("retry_requested_at")
        batch_op.drop_column("retry_rejected_by")
        batch_op.drop_column("retry_requested_by")
        batch_op.drop_column("retry_reject_reason")


def _refusals() -> list[str]:
    """What the older schema cannot hold, in words (empty: nothing)."""
    bind = op.get_bind()
    awaiting = (
        bind.execute(
            sa.text("SELECT id FROM schedule WHERE state = 'awaiting' ORDER BY id LIMIT 51")
        )
        .scalars()
        .all()
    )
    steps = bind.execute(
        sa.text(
            "SELECT count(*) FROM job WHERE ladder <> '' "
            "AND state IN ('pending', 'retrying', 'claimed')"
        )
    ).scalar_one()
    said = []
    if awaiting:
        shown = ", ".join(str(i) for i in awaiting[:50])
        said.append(f"schedules {shown} await approval (approve, reject or cancel them)")
    if steps:
        said.append(
            f"{steps} nag(s) or escalation(s) of messages sent until done still wait "
            "(mark those messages done, or cancel their schedules)"
        )
    return said


def downgrade() -> None:
    refusals = _refusals()
    if refusals:
        raise RuntimeError(
            "Cannot go below revision 0019: " + "; ".join(refusals) + ". Nothing was changed."
        )
    # their attempts first: SQLite migrates with its foreign keys off (nothing cascades),
    # and a later job given a deleted step's id would inherit them
    op.execute("DELETE FROM attempt WHERE job_id IN (SELECT id FROM job WHERE ladder <> '')")
    op.execute("DELETE FROM job WHERE ladder <> ''")
    op.execute("UPDATE job SET state = 'delivered' WHERE state = 'acknowledged'")
    op.execute(
        "DELETE FROM attempt_archive WHERE job_id IN (SELECT id FROM job_archive"
        " WHERE ladder <> '')"
    )
    op.execute("DELETE FROM job_archive WHERE ladder <> ''")
    op.execute("UPDATE job_archive SET state = 'delivered' WHERE state = 'acknowledged'")
    with op.batch_alter_table("job_archive", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retry_reject_reason", sa.VARCHAR(length=500), nullable=True))
        batch_op.add_column(sa.Column("retry_requested_by", sa.VARCHAR(length=200), nullable=True))
        batch_op.add_column(sa.Column("retry_rejected_by", sa.VARCHAR(length=200), nullable=True))
        batch_op.add_column(
            sa.Column("retry_requested_at", core.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.drop_column("done_at")
        batch_op.drop_column("done_by")
        batch_op.drop_column("thread")
        batch_op.drop_column("ladder")

    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retry_reject_reason", sa.VARCHAR(length=500), nullable=True))
        batch_op.add_column(sa.Column("retry_requested_by", sa.VARCHAR(length=200), nullable=True))
        batch_op.add_column(sa.Column("retry_rejected_by", sa.VARCHAR(length=200), nullable=True))
        batch_op.add_column(
            sa.Column("retry_requested_at", core.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.drop_constraint("uq_job_schedule_ladder", type_="unique")
        batch_op.create_unique_constraint(
            batch_op.f("uq_job_schedule_recipient"), ["schedule_id", "recipient", "occurrence_at"]
        )
        batch_op.drop_column("done_at")
        batch_op.drop_column("done_by")
        batch_op.drop_column("thread")
        batch_op.drop_column("ladder")
    op.execute(_REQUESTS_BACK_PENDING)
    op.execute(_REQUESTS_BACK_REJECTED)

    op.execute("DELETE FROM notice WHERE approval_id IS NOT NULL")
    with op.batch_alter_table("notice", schema=None) as batch_op:
        batch_op.drop_column("approval_id")
    with op.batch_alter_table("approval", schema=None) as batch_op:
        batch_op.drop_index("ix_approval_tenant_state")
        batch_op.drop_index("ix_approval_schedule")
        batch_op.drop_index("ix_approval_job")
        batch_op.drop_index("ix_approval_due")

    op.drop_table("approval")
