"""Recipients: one schedule to several places, chains tried in order, each one's hour

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 17:00:00.000000

``schedule.recipients`` lists a schedule's recipients (core.routing); every existing
schedule becomes a one-recipient schedule (its destination, recipient 0). A job is for
one recipient (``job.recipient``) of one occurrence: the unique key becomes
(schedule_id, recipient, occurrence_at). ``job.destination`` is its current step's
destination when that is not the schedule's own (existing jobs: None, as they were),
``job.step`` and ``job.step_since`` where its recipient's chain stands, ``job.route``
its recipient when more than one destination or another zone; ``attempt.destination``
where a try went.

Down again only while no schedule has more than one recipient, a chain or a
recipient's own zone: the downgrade names those that would lose them and changes
nothing. Jobs of a removed recipient that share an occurrence with the current
recipient's (an edit replaced the destination) are deleted, as the old key allows one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.models

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FILL = {
    'sqlite': "UPDATE schedule SET recipients = json_array(json_object("
    "'id', 0, 'to', json_array(destination)))",
    'postgresql': "UPDATE schedule SET recipients = json_build_array(json_build_object("
    "'id', 0, 'to', json_build_array(destination)))",
}


def upgrade() -> None:
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('recipients', sa.JSON(), server_default='[]', nullable=False)
        )
    op.execute(_FILL[op.get_bind().dialect.name])
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.add_column(sa.Column('recipient', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('destination', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('step', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('route', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('step_since', core.models.UTCDateTime(timezone=True), nullable=True))
        batch_op.drop_constraint('uq_job_schedule_occurrence', type_='unique')
        batch_op.create_unique_constraint(
            'uq_job_schedule_recipient', ['schedule_id', 'recipient', 'occurrence_at']
        )
    with op.batch_alter_table('attempt', schema=None) as batch_op:
        batch_op.add_column(sa.Column('destination', sa.String(length=2000), nullable=True))


def _would_lose() -> list[int]:
    """Schedules with more than one recipient, a chain or a recipient's own zone."""
    rows = op.get_bind().execute(sa.text('SELECT id, recipients FROM schedule ORDER BY id'))
    losing = []
    for schedule_id, value in rows:
        items = json.loads(value) if isinstance(value, str) else (value or [])
        if len(items) > 1 or any(
            len(item.get('to') or ()) > 1 or item.get('zone') or item.get('timeout')
            for item in items
        ):
            losing.append(int(schedule_id))
    return losing


def downgrade() -> None:
    losing = _would_lose()
    if losing:
        shown = ', '.join(str(i) for i in losing[:50])
        more = f' and {len(losing) - 50} more' if len(losing) > 50 else ''
        raise RuntimeError(
            f'Cannot go below revision 0014: schedules {shown}{more} have several '
            'recipients, a fallback chain or a recipient\'s own time zone, which the older '
            'schema cannot hold. Cancel them, or edit them down to one destination, first.'
        )
    # one job per occurrence again: keep each occurrence's current recipient's job
    op.execute(
        'DELETE FROM job WHERE EXISTS (SELECT 1 FROM job AS other '
        'WHERE other.schedule_id = job.schedule_id '
        'AND other.occurrence_at = job.occurrence_at AND other.recipient > job.recipient)'
    )
    with op.batch_alter_table('attempt', schema=None) as batch_op:
        batch_op.drop_column('destination')
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_constraint('uq_job_schedule_recipient', type_='unique')
        batch_op.create_unique_constraint(
            'uq_job_schedule_occurrence', ['schedule_id', 'occurrence_at']
        )
        batch_op.drop_column('step_since')
        batch_op.drop_column('route')
        batch_op.drop_column('step')
        batch_op.drop_column('destination')
        batch_op.drop_column('recipient')
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.drop_column('recipients')
