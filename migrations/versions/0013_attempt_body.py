"""The text each attempt sent

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 12:00:00.000000

``attempt.body`` holds the message text as the attempt sent it: a schedule's text with
its variables filled in for that occurrence (``{date:%A}`` as the weekday), as it read
at the time, whatever the schedule says after an edit. Attempts written before this
revision have none (the delivery log shows their schedule's text then).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('attempt', schema=None) as batch_op:
        batch_op.add_column(sa.Column('body', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('attempt', schema=None) as batch_op:
        batch_op.drop_column('body')
