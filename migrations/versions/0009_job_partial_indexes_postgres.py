"""job indexes on PostgreSQL hold only the rows their queries read

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 03:10:00.000000

Claiming a job and recording its outcome each write a new version of its row, and a new
entry in every index of the table. Measured on a 2,000-job claim, the three indexes on
``state`` cost about half of the statement (282 ms with them, 132 ms without). On
PostgreSQL each now holds only the states its queries ask for, so a claim or a delivery
adds entries to four indexes instead of six. SQLite keeps its indexes: its planner uses
a partial index only for queries that repeat its condition.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# as core.models says them when this was written
WAITING_SQL = "state IN ('pending', 'retrying')"
FINISHED_SQL = "state NOT IN ('pending', 'retrying', 'claimed')"
LEASED_SQL = "state = 'claimed'"

INDEXES = (
    ('ix_job_state_due', ['state', 'due_at'], WAITING_SQL),
    ('ix_job_state_finished', ['state', 'finished_at'], FINISHED_SQL),
    ('ix_job_lease', ['state', 'lease_expires_at'], LEASED_SQL),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for name, columns, where in INDEXES:
        op.drop_index(name, table_name='job')
        op.create_index(name, 'job', columns, unique=False, postgresql_where=sa.text(where))


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for name, columns, _ in INDEXES:
        op.drop_index(name, table_name='job')
        op.create_index(name, 'job', columns, unique=False)
