"""workers registry

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 17:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        'workers',
        sa.Column('id', sa.String(length=200), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('version', sa.String(length=64), nullable=False),
        sa.Column('started_at', _utc(), nullable=False),
        sa.Column('last_seen', _utc(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_workers')),
    )
    op.create_index('ix_workers_last_seen', 'workers', ['last_seen'], unique=False)
    op.create_index('ix_runs_worker', 'runs', ['worker_id', 'started_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_runs_worker', table_name='runs')
    op.drop_index('ix_workers_last_seen', table_name='workers')
    op.drop_table('workers')
