"""limits per target: the limits table, the key an endpoint counts against

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'limits',
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('concurrency', sa.Integer(), nullable=True),
        sa.Column('rate_calls', sa.Integer(), nullable=True),
        sa.Column('rate_seconds', sa.Float(), nullable=True),
        sa.Column('burst', sa.Integer(), nullable=False),
        sa.Column('tokens', sa.Float(), nullable=True),
        sa.Column('refilled_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('held', sa.Integer(), nullable=False),
        sa.Column('hold_reason', sa.String(length=16), nullable=True),
        sa.Column('held_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('open_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('key', name=op.f('pk_limits')),
    )
    with op.batch_alter_table('endpoints') as batch:
        batch.add_column(sa.Column('limit_key', sa.String(length=200), nullable=True))
    op.create_index(
        'ix_endpoints_limited',
        'endpoints',
        ['limit_key', 'next_run_at'],
        unique=False,
        postgresql_where=sa.text('limit_key IS NOT NULL'),
        sqlite_where=sa.text('limit_key IS NOT NULL'),
    )


def downgrade() -> None:
    op.drop_index(
        'ix_endpoints_limited',
        table_name='endpoints',
        postgresql_where=sa.text('limit_key IS NOT NULL'),
        sqlite_where=sa.text('limit_key IS NOT NULL'),
    )
    with op.batch_alter_table('endpoints') as batch:
        batch.drop_column('limit_key')
    op.drop_table('limits')
