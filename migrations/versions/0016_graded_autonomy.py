"""graded autonomy: dangerous endpoints, the proposals' confidence, the jobs' autonomy steps

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('dangerous', sa.Boolean(), server_default=sa.false(), nullable=False)
        )

    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.add_column(sa.Column('confidence', sa.Float(), nullable=True))

    op.create_table(
        'autonomy_steps',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('job_id', sa.String(length=32), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('threshold', sa.Float(), nullable=False),
        sa.Column('approvals', sa.Integer(), nullable=False),
        sa.Column('rejections', sa.Integer(), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('proposal_id', sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_autonomy_steps_job', 'autonomy_steps', ['job_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_autonomy_steps_job', table_name='autonomy_steps')
    op.drop_table('autonomy_steps')

    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.drop_column('confidence')

    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('dangerous')
