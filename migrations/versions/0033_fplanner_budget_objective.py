"""the built-in planner's budget per job and objective per endpoint

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-29 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('budget', sa.String(length=32), nullable=True))

    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('objective', sa.String(length=16), nullable=False, server_default='freshness')
        )


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('objective')

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('budget')
