"""Preferences, quiet hours and priorities

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 20:40:00.000000

``preference`` holds each member's say (core.preferences, JSON; the member id ``*``
a tenant's defaults). ``schedule.priority`` (urgent, normal, bulk) and ``job.priority``
(its rank: 0, 1, 2) order the queue; ``ix_job_waiting_priority`` is the claim's index
of waiting jobs by rank, then due time. Existing schedules and jobs are normal.

Down again only while every live schedule is normal and no member has preferences:
the downgrade names what would be lost and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.models

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WAITING = core.models.WAITING_SQL


def upgrade() -> None:
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('priority', sa.String(length=8), server_default='normal', nullable=False)
        )
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('priority', sa.SmallInteger(), server_default='1', nullable=False)
        )
    op.create_index(
        'ix_job_waiting_priority',
        'job',
        ['priority', 'due_at', 'id'],
        unique=False,
        sqlite_where=sa.text(_WAITING),
        postgresql_where=sa.text(_WAITING),
    )
    op.create_table(
        'preference',
        sa.Column('tenant', sa.String(length=200), nullable=False),
        sa.Column('member_id', sa.String(length=200), nullable=False),
        sa.Column('data', sa.Text(), nullable=False),
        sa.Column('updated_at', core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('updated_by', sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint('tenant', 'member_id'),
    )


def downgrade() -> None:
    bind = op.get_bind()
    prioritised = [
        int(row[0])
        for row in bind.execute(
            sa.text(
                "SELECT id FROM schedule WHERE priority <> 'normal' "
                "AND state NOT IN ('cancelled', 'completed') ORDER BY id"
            )
        )
    ]
    # a record cleared back to nothing ('{}') holds nothing to lose
    members = bind.execute(
        sa.text("SELECT count(*) FROM preference WHERE data <> '{}'")
    ).scalar_one()
    if prioritised or members:
        said = []
        if prioritised:
            shown = ', '.join(str(i) for i in prioritised[:50])
            more = f' and {len(prioritised) - 50} more' if len(prioritised) > 50 else ''
            said.append(f'schedules {shown}{more} are urgent or bulk')
        if members:
            said.append(
                '1 preference record is set' if members == 1
                else f'{members} preference records are set'
            )
        raise RuntimeError(
            f"Cannot go below revision 0016: {' and '.join(said)}, which the older schema "
            'cannot hold. Make those schedules normal and clear the preferences first.'
        )
    op.drop_table('preference')
    op.drop_index('ix_job_waiting_priority', table_name='job')
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_column('priority')
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.drop_column('priority')
