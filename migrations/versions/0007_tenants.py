"""tenants: every member, schedule, calendar, feed and audit row belongs to a tenant

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 21:40:00

Rows made before tenants existed belong to ``local`` (the terminal's tenant): nothing in
them says which workspace or server they came from. The member table's key becomes
(tenant, id), since a role is held per tenant. ``schedule.workspace`` (the platform name)
is replaced by ``schedule.tenant``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _tenant() -> sa.Column:
    return sa.Column('tenant', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False,
                     server_default='local')


def upgrade() -> None:
    with op.batch_alter_table('member', schema=None) as batch_op:
        batch_op.add_column(_tenant())
        batch_op.drop_constraint('pk_member', type_='primary')
        batch_op.create_primary_key('pk_member', ['tenant', 'id'])

    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(_tenant())
        batch_op.drop_index('ux_schedule_owner_key')
        batch_op.create_index('ux_schedule_owner_key', ['tenant', 'owner', 'idempotency_key'],
                              unique=True)
        batch_op.create_index('ix_schedule_tenant_state', ['tenant', 'state'], unique=False)
        batch_op.drop_column('workspace')

    with op.batch_alter_table('audit', schema=None) as batch_op:
        batch_op.add_column(_tenant())
        batch_op.create_index('ix_audit_tenant_at', ['tenant', 'at'], unique=False)

    with op.batch_alter_table('calendar', schema=None) as batch_op:
        batch_op.add_column(_tenant())
        batch_op.drop_index('ux_calendar_owner_source')
        batch_op.create_index('ux_calendar_owner_source', ['tenant', 'owner', 'source'],
                              unique=True)

    with op.batch_alter_table('feed', schema=None) as batch_op:
        batch_op.add_column(_tenant())
        batch_op.create_index(batch_op.f('ix_feed_tenant'), ['tenant'], unique=False)


def downgrade() -> None:
    # Going back to one tenant: rows of other tenants keep their ids; members seen in
    # several tenants keep one row (the local one if any, else any), as before 0007.
    with op.batch_alter_table('feed', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_feed_tenant'))
        batch_op.drop_column('tenant')

    with op.batch_alter_table('calendar', schema=None) as batch_op:
        batch_op.drop_index('ux_calendar_owner_source')
    op.execute(
        "DELETE FROM calendar WHERE id NOT IN "
        "(SELECT MIN(id) FROM calendar GROUP BY owner, source)"
    )
    with op.batch_alter_table('calendar', schema=None) as batch_op:
        batch_op.create_index('ux_calendar_owner_source', ['owner', 'source'], unique=True)
        batch_op.drop_column('tenant')

    with op.batch_alter_table('audit', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_tenant_at')
        batch_op.drop_column('tenant')

    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.add_column(sa.Column('workspace', sqlmodel.sql.sqltypes.AutoString(length=200),
                                      nullable=False, server_default=''))
        batch_op.drop_index('ix_schedule_tenant_state')
        batch_op.drop_index('ux_schedule_owner_key')
    op.execute("UPDATE schedule SET idempotency_key = NULL WHERE id NOT IN "
               "(SELECT MIN(id) FROM schedule GROUP BY owner, idempotency_key)")
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.create_index('ux_schedule_owner_key', ['owner', 'idempotency_key'], unique=True)
        batch_op.drop_column('tenant')
    op.execute("UPDATE schedule SET workspace = substr(owner, 1, instr(owner, ':') - 1)"
               if op.get_bind().dialect.name == 'sqlite' else
               "UPDATE schedule SET workspace = split_part(owner, ':', 1)")

    op.execute(
        "DELETE FROM member WHERE tenant <> 'local' AND id IN "
        "(SELECT id FROM member WHERE tenant = 'local')"
    )
    op.execute(
        "DELETE FROM member WHERE tenant <> (SELECT MIN(m.tenant) FROM member m "
        "WHERE m.id = member.id)"
    )
    with op.batch_alter_table('member', schema=None) as batch_op:
        batch_op.drop_constraint('pk_member', type_='primary')
        batch_op.create_primary_key('pk_member', ['id'])
        batch_op.drop_column('tenant')
