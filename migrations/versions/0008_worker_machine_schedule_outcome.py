"""worker machine; schedule last outcome

Revision ID: 0008
Revises: 0006
Create Date: 2026-12-01 21:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0008'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('worker', schema=None) as batch_op:
        batch_op.add_column(sa.Column('machine', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('worker', schema=None) as batch_op:
        batch_op.drop_column('machine')
