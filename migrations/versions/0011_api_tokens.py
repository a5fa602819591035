"""API tokens: bearer tokens of the HTTP API, stored as hashes

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 13:00:00.000000

``api_token`` holds one row per token: the member (and tenant) it acts as, its scope
(read, write, admin), who made it, when it expires or was revoked, and a SHA-256 of its
secret; the secret itself is printed once when the token is made and never stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.models

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'api_token',
        sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('tenant', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('member_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('scope', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('secret_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('created_at', core.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('expires_at', core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column('revoked_at', core.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column('last_used_at', core.models.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_api_token_member', 'api_token', ['tenant', 'member_id'])


def downgrade() -> None:
    op.drop_index('ix_api_token_member', table_name='api_token')
    op.drop_table('api_token')
