"""a job's own pause, and a cancel asked for on a running run

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0022'
down_revision: str | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pause_reason', sa.Text(), nullable=True))
        # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
        batch_op.add_column(sa.Column('pause_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('pause_by', sa.String(length=200), nullable=True))

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cancel_requested_by', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('cancel_requested_by')

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('pause_by')
        batch_op.drop_column('pause_until')
        batch_op.drop_column('pause_reason')
