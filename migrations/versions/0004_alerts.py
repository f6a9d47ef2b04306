"""failure alerts and auto-pause: endpoint notify settings and the notifications outbox

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('notify', _json(), server_default=sa.text("'[]'"), nullable=False))
        batch_op.add_column(sa.Column('notify_after', sa.Integer(), server_default=sa.text('3'), nullable=False))
        batch_op.add_column(sa.Column('pause_after', sa.Integer(), nullable=True))

    op.create_table('notifications',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('event', sa.String(length=32), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('payload', _json(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', _utc(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', _utc(), nullable=False),
    sa.Column('delivered_at', _utc(), nullable=True),
    sa.Column('lease_owner', sa.String(length=200), nullable=True),
    sa.Column('lease_until', _utc(), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_notifications_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_notifications_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notifications'))
    )
    op.create_index(
        'ix_notifications_due',
        'notifications',
        ['next_attempt_at'],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
        sqlite_where=sa.text("status = 'pending'"),
    )
    op.create_index('ix_notifications_endpoint', 'notifications', ['endpoint_id', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_notifications_endpoint', table_name='notifications')
    op.drop_index('ix_notifications_due', table_name='notifications')
    op.drop_table('notifications')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('pause_after')
        batch_op.drop_column('notify_after')
        batch_op.drop_column('notify')
