"""Providers: failover health, push devices, delivery receipts

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 20:00:00.000000

``attempt.provider`` names the provider that took a try when its channel goes through
several (``sendgrid``, ``twilio``); ``attempt.receipt``, ``receipt_at`` and
``receipt_detail`` hold what the provider reported later (delivered, undelivered,
bounced), found by (provider, provider_message_id). ``provider_health`` holds the
providers found down, shared by every dispatcher; ``device`` members' push devices;
``receipt_seen`` the callbacks already taken (a replay is refused).

Down again only while no live schedule sends to ``sms:``, ``push:`` or ``ntfy:``
(the older code cannot read them): the downgrade names those schedules and changes
nothing. Receipts, devices and provider health are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.models

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NEW_KINDS = ("sms:", "push:", "ntfy:")


def upgrade() -> None:
    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.add_column(sa.Column("provider", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("receipt", sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column("receipt_at", core.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("receipt_detail", sa.Text(), nullable=True))
        batch_op.create_index(
            "ix_attempt_provider_message", ["provider", "provider_message_id"], unique=False
        )
    op.create_table(
        "provider_health",
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("down_until", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("changed_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("provider"),
    )
    op.create_table(
        "device",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("member_id", sa.String(length=200), nullable=False),
        sa.Column("token", sa.String(length=4096), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("created_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant", "member_id", "token", name="uq_device_member_token"),
    )
    op.create_index("ix_device_member", "device", ["tenant", "member_id"], unique=False)
    op.create_table(
        "receipt_seen",
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("seen_at", core.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("provider", "digest"),
    )


def _would_lose() -> list[int]:
    """Live schedules that send to a kind the older code cannot read."""
    likes = " OR ".join(
        f"destination LIKE '{kind}%' OR CAST(recipients AS TEXT) LIKE '%\"{kind}%'"
        for kind in _NEW_KINDS
    )
    rows = op.get_bind().execute(
        sa.text(
            f"SELECT id FROM schedule WHERE state NOT IN ('cancelled', 'completed') AND ({likes}) "
            "ORDER BY id"
        )
    )
    return [int(row[0]) for row in rows]


def downgrade() -> None:
    losing = _would_lose()
    if losing:
        shown = ", ".join(str(i) for i in losing[:50])
        more = f" and {len(losing) - 50} more" if len(losing) > 50 else ""
        raise RuntimeError(
            f"Cannot go below revision 0015: schedules {shown}{more} send to sms:, push: "
            "or ntfy:, which the older code cannot deliver. Cancel them, or edit their "
            "destinations, first."
        )
    op.drop_table("receipt_seen")
    op.drop_index("ix_device_member", table_name="device")
    op.drop_table("device")
    op.drop_table("provider_health")
    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.drop_index("ix_attempt_provider_message")
        batch_op.drop_column("receipt_detail")
        batch_op.drop_column("receipt_at")
        batch_op.drop_column("receipt")
        batch_op.drop_column("provider")
