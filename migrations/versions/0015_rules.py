"""response rules: the endpoints' rules, rules sessions and the rules' planner state

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rules', _json(), nullable=True))

    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rules_seen_slot_at', _utc(), nullable=True))
        batch_op.add_column(sa.Column('rule_held', sa.Integer(), nullable=True))

    with op.batch_alter_table('analysis_sessions', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('rule_evaluations', _json(), server_default=sa.text("'[]'"), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('analysis_sessions', schema=None) as batch_op:
        batch_op.drop_column('rule_evaluations')

    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.drop_column('rule_held')
        batch_op.drop_column('rules_seen_slot_at')

    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('rules')
