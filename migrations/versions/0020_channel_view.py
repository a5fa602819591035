"""The channel's view: private schedules

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 08:45:00

``schedule.private`` keeps a schedule out of its channel's agenda (what everyone who
can see a channel is shown is scheduled into it) and out of other members' duplicate
warnings. Every schedule saved before is public to its channel, as the agenda is new.
``ix_job_waiting_destination`` finds the waiting jobs of one destination that is not
their schedule's own (the congestion forecast reads a destination's planned jobs).

Down again at any time: the index and the column are dropped (who marked what private
is lost).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


_WAITING_ELSEWHERE = "state IN ('pending', 'retrying') AND destination IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table("schedule") as batch:
        batch.add_column(
            sa.Column("private", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_index(
        "ix_job_waiting_destination",
        "job",
        ["destination", "due_at"],
        sqlite_where=sa.text(_WAITING_ELSEWHERE),
        postgresql_where=sa.text(_WAITING_ELSEWHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_job_waiting_destination", table_name="job")
    with op.batch_alter_table("schedule") as batch:
        batch.drop_column("private")
