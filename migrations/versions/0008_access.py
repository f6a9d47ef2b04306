"""access control: API tokens, the audit log, who paused

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        'api_tokens',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('scope', sa.String(length=16), nullable=False),
        sa.Column('secret_hash', sa.String(length=64), nullable=False),
        sa.Column('created_at', _utc(), nullable=False),
        sa.Column('created_by', sa.String(length=200), nullable=False),
        sa.Column('revoked_at', _utc(), nullable=True),
        sa.Column('revoked_by', sa.String(length=200), nullable=True),
        sa.Column('last_used_at', _utc(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
        sa.UniqueConstraint('secret_hash', name=op.f('uq_api_tokens_secret_hash')),
    )
    op.create_index(
        'uq_api_tokens_live_name',
        'api_tokens',
        ['name'],
        unique=True,
        postgresql_where=sa.text('revoked_at IS NULL'),
        sqlite_where=sa.text('revoked_at IS NULL'),
    )
    op.create_table(
        'audit_log',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('at', _utc(), nullable=False),
        sa.Column('actor', sa.String(length=200), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('target', sa.Text(), nullable=False),
        sa.Column('detail', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_log')),
    )
    op.create_index('ix_audit_log_at', 'audit_log', ['at', 'id'], unique=False)
    op.create_index('ix_audit_log_actor', 'audit_log', ['actor', 'at'], unique=False)
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pause_by', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('pause_by')
    op.drop_index('ix_audit_log_actor', table_name='audit_log')
    op.drop_index('ix_audit_log_at', table_name='audit_log')
    op.drop_table('audit_log')
    op.drop_index('uq_api_tokens_live_name', table_name='api_tokens')
    op.drop_table('api_tokens')
