"""worker machine; schedule last outcome; shared rate buckets

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 21:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.models


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


WAITING = "state IN ('pending', 'retrying')"

# What each schedule's latest tried occurrence did, from its jobs (the dispatcher
# records it from now on, in the transaction that records the job's outcome).
BACKFILL = """
UPDATE schedule SET last_outcome = (
    SELECT CASE job.state
        WHEN 'delivered' THEN 'delivered' WHEN 'retrying' THEN 'retrying'
        WHEN 'skipped' THEN 'skipped' ELSE 'failed' END
    FROM job
    WHERE job.schedule_id = schedule.id
        AND job.state IN ('delivered', 'retrying', 'skipped', 'dead', 'expired', 'discarded')
    ORDER BY job.occurrence_at DESC
    LIMIT 1
)
"""


def upgrade() -> None:
    op.create_table('rate_bucket',
    sa.Column('destination', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('tat', core.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('destination', name=op.f('pk_rate_bucket'))
    )
    with op.batch_alter_table('worker', schema=None) as batch_op:
        batch_op.add_column(sa.Column('machine', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True))
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_outcome', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
    op.execute(BACKFILL)
    # claims take jobs due at the same moment in the order they were created, so a
    # dead dispatcher's jobs (claimed first) are the first a restarted one takes again
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_index('ix_job_waiting_due', sqlite_where=sa.text(WAITING), postgresql_where=sa.text(WAITING))
        batch_op.create_index('ix_job_waiting_due', ['due_at', 'id'], unique=False, sqlite_where=sa.text(WAITING), postgresql_where=sa.text(WAITING))


def downgrade() -> None:
    op.drop_table('rate_bucket')
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_index('ix_job_waiting_due', sqlite_where=sa.text(WAITING), postgresql_where=sa.text(WAITING))
        batch_op.create_index('ix_job_waiting_due', ['due_at'], unique=False, sqlite_where=sa.text(WAITING), postgresql_where=sa.text(WAITING))
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.drop_column('last_outcome')
    with op.batch_alter_table('worker', schema=None) as batch_op:
        batch_op.drop_column('machine')
