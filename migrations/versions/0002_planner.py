"""planner: analysis sessions, proposals, planner state

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 21:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table('planner_state',
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('seen_slot_at', _utc(), nullable=True),
    sa.Column('seen_failing', sa.Boolean(), nullable=False),
    sa.Column('next_analysis_at', _utc(), nullable=True),
    sa.Column('llm_failures', sa.Integer(), nullable=False),
    sa.Column('retry_at', _utc(), nullable=True),
    sa.Column('lease_owner', sa.String(length=200), nullable=True),
    sa.Column('lease_until', _utc(), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_planner_state_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('endpoint_id', name=op.f('pk_planner_state'))
    )
    op.create_table('analysis_sessions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('planner', sa.String(length=200), nullable=False),
    sa.Column('started_at', _utc(), nullable=False),
    sa.Column('finished_at', _utc(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('reasoning', sa.Text(), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('next_analysis_at', _utc(), nullable=True),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('completion_tokens', sa.Integer(), nullable=False),
    sa.Column('tool_errors', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('tool_calls', _json(), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_analysis_sessions_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_analysis_sessions_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_analysis_sessions'))
    )
    op.create_index('ix_analysis_sessions_endpoint', 'analysis_sessions', ['endpoint_id', 'started_at'], unique=False)
    op.create_table('proposals',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('session_id', sa.String(length=32), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('proposed_by', sa.String(length=200), nullable=False),
    sa.Column('created_at', _utc(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('interval_seconds', sa.Float(), nullable=True),
    sa.Column('at', _utc(), nullable=True),
    sa.Column('ttl_seconds', sa.Float(), nullable=True),
    sa.Column('expires_at', _utc(), nullable=True),
    sa.Column('decided_by', sa.String(length=200), nullable=True),
    sa.Column('decided_at', _utc(), nullable=True),
    sa.Column('outcome', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_proposals_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_proposals_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_proposals'))
    )
    op.create_index('ix_proposals_endpoint', 'proposals', ['endpoint_id', 'decided_at'], unique=False)
    op.create_index('ix_proposals_status', 'proposals', ['status', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_proposals_status', table_name='proposals')
    op.drop_index('ix_proposals_endpoint', table_name='proposals')
    op.drop_table('proposals')
    op.drop_index('ix_analysis_sessions_endpoint', table_name='analysis_sessions')
    op.drop_table('analysis_sessions')
    op.drop_table('planner_state')
