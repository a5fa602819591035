"""a feed's reminders are linked to it, not found by their key

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 10:00:00.000000

``schedule.feed_id`` names the event feed a schedule is a reminder of. Before it, a
feed found its reminders by the idempotency-key prefix ``feed:<feed id>:``, which any
member could give a schedule of their own. Existing reminders are linked from their
keys, but only the schedules of the feed's own owner in the feed's own tenant: a row
someone else keyed that way stays an ordinary schedule of theirs. Going down drops the
link; the keys are still there for the older code.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL = """
UPDATE schedule SET feed_id = (
    SELECT feed.id FROM feed
    WHERE schedule.idempotency_key LIKE 'feed:' || CAST(feed.id AS VARCHAR(20)) || ':%'
        AND feed.owner = schedule.owner
        AND feed.tenant = schedule.tenant
)
WHERE idempotency_key LIKE 'feed:%'
"""


def upgrade() -> None:
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(sa.Column('feed_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_schedule_feed_id'), ['feed_id'], unique=False)
        batch_op.create_foreign_key(
            batch_op.f('fk_schedule_feed_id_feed'), 'feed', ['feed_id'], ['id'],
            ondelete='SET NULL',
        )
    op.execute(BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_schedule_feed_id_feed'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_schedule_feed_id'))
        batch_op.drop_column('feed_id')
