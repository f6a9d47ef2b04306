"""endpoints: conditions (CEL), `run_if` on a DAG dependant and `success_when`

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('run_if', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('success_when', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('success_when')
        batch_op.drop_column('run_if')
