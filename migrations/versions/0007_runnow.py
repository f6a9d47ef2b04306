"""queued runs: run now and backfill

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('due_at', _utc(), nullable=True))
        batch_op.add_column(sa.Column('requested_by', sa.String(length=200), nullable=True))
    op.create_index(
        'ix_runs_queued',
        'runs',
        ['due_at'],
        unique=False,
        postgresql_where=sa.text("status = 'queued'"),
        sqlite_where=sa.text("status = 'queued'"),
    )


def downgrade() -> None:
    op.drop_index('ix_runs_queued', table_name='runs')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('requested_by')
        batch_op.drop_column('due_at')
