"""audit rows name their surface; a rejected retry request keeps who and why

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 10:00:00.000000

``audit.surface`` says where an action came from (cli, console, slack, discord, api,
system), as the entry point said. Rows written before it are filled in only where the
old rows say so for certain: ``via: console`` in their details (the console's bulk
actions), chat members' ids (``slack:``, ``discord:``) and Herald's own ``system:``
actors. A ``local:`` row without ``via`` came from the CLI or from one of the console's
single-row actions, which did not say: it stays NULL (unknown).

``job.retry_rejected_by`` and ``job.retry_reject_reason`` keep the answer to a dead
letter's retry request that an admin turned down, so whoever asked can read it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# as the console read ``via`` before this revision
VIA = {
    'sqlite': "json_extract(details, '$.via')",
    'postgresql': "(details::jsonb ->> 'via')",
}
# (only the rows that get a surface are written)
BACKFILL = """
UPDATE audit SET surface = CASE
    WHEN {via} = 'console' THEN 'console'
    WHEN actor LIKE 'slack:%' THEN 'slack'
    WHEN actor LIKE 'discord:%' THEN 'discord'
    ELSE 'system'
END
WHERE {via} = 'console' OR actor LIKE 'slack:%' OR actor LIKE 'discord:%'
    OR actor LIKE 'system:%'
"""


def upgrade() -> None:
    with op.batch_alter_table('audit', schema=None) as batch_op:
        batch_op.add_column(sa.Column('surface', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retry_rejected_by', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))
        batch_op.add_column(sa.Column('retry_reject_reason', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True))
    op.execute(BACKFILL.format(via=VIA[op.get_bind().dialect.name]))


def downgrade() -> None:
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_column('retry_reject_reason')
        batch_op.drop_column('retry_rejected_by')
    with op.batch_alter_table('audit', schema=None) as batch_op:
        batch_op.drop_column('surface')
