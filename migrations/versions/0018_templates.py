"""Named templates with data

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 01:43:35.480473

``template`` holds a tenant's named messages (core.render), their current version's
parts; ``template_version`` every version as it was saved. ``schedule.template_id`` and
``template_version`` say which template and version a schedule sends (its ``body`` and
options hold that version's parts, copied when it was saved).

Down again only while no schedule uses a template (the older schema would send a
template's markup as written): the downgrade names how many do and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.models

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _parts() -> list[sa.Column[object]]:
    """The columns a template and each of its versions share."""
    return [
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("subject", sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=True),
        sa.Column("blocks", sa.JSON(), nullable=True),
        sa.Column("embeds", sa.JSON(), nullable=True),
        sa.Column("variables", sa.JSON(), server_default="{}", nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "template",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        *_parts(),
        sa.Column("created_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("updated_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("created_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_template")),
        sa.UniqueConstraint("tenant", "name", name="uq_template_tenant_name"),
    )
    op.create_table(
        "template_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        *_parts(),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("created_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["template_id"],
            ["template.id"],
            name=op.f("fk_template_version_template_id_template"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_template_version")),
        sa.UniqueConstraint("template_id", "version", name="uq_template_version"),
    )
    with op.batch_alter_table("schedule", schema=None) as batch_op:
        batch_op.add_column(sa.Column("template_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("template_version", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_schedule_template_id"), ["template_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_schedule_template_id_template"),
            "template",
            ["template_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    bind = op.get_bind()
    # a schedule that was saved with a template and may still send: live, or with a job
    # not yet finished (a dead letter may be retried), its template removed or not
    using = bind.execute(
        sa.text(
            "SELECT count(*) FROM schedule WHERE template_version IS NOT NULL AND ("
            "state IN ('active', 'paused') OR EXISTS (SELECT 1 FROM job WHERE "
            "job.schedule_id = schedule.id AND job.state IN "
            "('pending', 'claimed', 'retrying', 'dead')))"
        )
    ).scalar_one()
    if using:
        raise RuntimeError(
            f"Cannot go below revision 0018: {using} schedule{'s' if using != 1 else ''} "
            f"use{'s' if using == 1 else ''} a named template and may still send, which "
            "the older schema would send as written. Give them their own text first "
            "(herald edit ID --template none --text ...), or cancel them and discard "
            "their dead letters."
        )
    with op.batch_alter_table("schedule", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_schedule_template_id_template"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_schedule_template_id"))
        batch_op.drop_column("template_version")
        batch_op.drop_column("template_id")

    op.drop_table("template_version")
    op.drop_table("template")
