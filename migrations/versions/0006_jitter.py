"""jitter, catch-up and the floor on endpoints

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('jitter_seconds', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('catch_up', sa.String(length=8), server_default=sa.text("'one'"), nullable=False))
        batch_op.add_column(sa.Column('catch_up_window_seconds', sa.Float(), server_default=sa.text('86400'), nullable=False))
        batch_op.add_column(sa.Column('floor_seconds', sa.Float(), server_default=sa.text('1'), nullable=False))
        batch_op.add_column(sa.Column('next_slot_at', _utc(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('next_slot_at')
        batch_op.drop_column('floor_seconds')
        batch_op.drop_column('catch_up_window_seconds')
        batch_op.drop_column('catch_up')
        batch_op.drop_column('jitter_seconds')
