"""the admin's word stands: the jobs' rejection cool-down, superseded proposals' pointers

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rejection_cooldown_seconds', sa.Float(), nullable=True))

    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.add_column(sa.Column('superseded_by', sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.drop_column('superseded_by')

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('rejection_cooldown_seconds')
