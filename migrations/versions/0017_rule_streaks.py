"""damped rules: the rule that held first on an endpoint's latest rules passes, and since when

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rule_holding', sa.Integer(), nullable=True))
        # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
        batch_op.add_column(sa.Column('rule_holding_since', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.drop_column('rule_holding_since')
        batch_op.drop_column('rule_holding')
