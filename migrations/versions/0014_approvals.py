"""approval gates: a dependant's approval timeout and the approvals table

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-10 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('approval_timeout_seconds', sa.Float(), nullable=True))

    op.create_table('approvals',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('dag_run_id', sa.String(length=32), nullable=False),
    sa.Column('parent_run_id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('requested_at', _utc(), nullable=False),
    sa.Column('expires_at', _utc(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('decided_by', sa.String(length=200), nullable=True),
    sa.Column('decided_at', _utc(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_approvals_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_approvals_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approvals'))
    )
    op.create_index(
        'ix_approvals_pending',
        'approvals',
        ['expires_at'],
        unique=False,
        postgresql_where=sa.text("state = 'pending'"),
        sqlite_where=sa.text("state = 'pending'"),
    )
    op.create_index('ix_approvals_requested', 'approvals', ['requested_at', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_approvals_requested', table_name='approvals')
    op.drop_index('ix_approvals_pending', table_name='approvals')
    op.drop_table('approvals')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('approval_timeout_seconds')
