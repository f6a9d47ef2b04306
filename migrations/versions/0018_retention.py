"""retention: the planner's last look at an endpoint, time indexes for pruning sessions and
notifications

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_analysed_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        'ix_analysis_sessions_started', 'analysis_sessions', ['started_at', 'id'], unique=False
    )
    op.create_index(
        'ix_notifications_created', 'notifications', ['created_at', 'id'], unique=False
    )


def downgrade() -> None:
    op.drop_index('ix_notifications_created', table_name='notifications')
    op.drop_index('ix_analysis_sessions_started', table_name='analysis_sessions')
    with op.batch_alter_table('planner_state', schema=None) as batch_op:
        batch_op.drop_column('last_analysed_at')
