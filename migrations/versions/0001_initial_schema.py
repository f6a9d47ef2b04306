"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:39:57.139969
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table('cronpilot_meta',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('key_check', sa.Text(), nullable=False),
    sa.CheckConstraint('id = 1', name=op.f('ck_cronpilot_meta_one_row')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cronpilot_meta'))
    )
    op.create_table('jobs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('planner_mode', sa.String(length=16), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs')),
    sa.UniqueConstraint('name', name=op.f('uq_jobs_name'))
    )
    op.create_table('endpoints',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('method', sa.String(length=16), nullable=False),
    sa.Column('headers', _json(), nullable=False),
    sa.Column('body', _json(), nullable=True),
    sa.Column('cron', sa.String(length=200), nullable=True),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('interval_seconds', sa.Float(), nullable=True),
    sa.Column('min_interval_seconds', sa.Float(), nullable=True),
    sa.Column('max_interval_seconds', sa.Float(), nullable=True),
    sa.Column('timeout_seconds', sa.Float(), nullable=False),
    sa.Column('max_response_bytes', sa.Integer(), nullable=False),
    sa.Column('planner_mode', sa.String(length=16), nullable=True),
    sa.Column('hint_interval_seconds', sa.Float(), nullable=True),
    sa.Column('hint_interval_expires_at', _utc(), nullable=True),
    sa.Column('hint_interval_reason', sa.Text(), nullable=True),
    sa.Column('hint_oneshot_at', _utc(), nullable=True),
    sa.Column('hint_oneshot_expires_at', _utc(), nullable=True),
    sa.Column('hint_oneshot_reason', sa.Text(), nullable=True),
    sa.Column('paused', sa.Boolean(), nullable=False),
    sa.Column('pause_until', _utc(), nullable=True),
    sa.Column('pause_reason', sa.Text(), nullable=True),
    sa.Column('failure_count', sa.Integer(), nullable=False),
    sa.Column('last_slot_at', _utc(), nullable=True),
    sa.Column('next_run_at', _utc(), nullable=True),
    sa.Column('next_run_source', sa.String(length=32), nullable=False),
    sa.Column('lease_owner', sa.String(length=200), nullable=True),
    sa.Column('lease_until', _utc(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_endpoints_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_endpoints')),
    sa.UniqueConstraint('job_id', 'name', name=op.f('uq_endpoints_job_id_name'))
    )
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.create_index('ix_endpoints_claim', ['next_run_at'], unique=False, postgresql_where=sa.text('lease_owner IS NULL'), sqlite_where=sa.text('lease_owner IS NULL'))
        batch_op.create_index('ix_endpoints_lease_until', ['lease_until'], unique=False, postgresql_where=sa.text('lease_owner IS NOT NULL'), sqlite_where=sa.text('lease_owner IS NOT NULL'))

    op.create_table('runs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('trace_id', sa.String(length=32), nullable=False),
    sa.Column('parent_trace_id', sa.String(length=32), nullable=True),
    sa.Column('trigger', sa.String(length=16), nullable=False),
    sa.Column('schedule_source', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('slot_at', _utc(), nullable=False),
    sa.Column('started_at', _utc(), nullable=False),
    sa.Column('worker_id', sa.String(length=200), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('finished_at', _utc(), nullable=True),
    sa.Column('duration_ms', sa.Float(), nullable=True),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('body', _json(), nullable=True),
    sa.Column('body_absence', sa.String(length=16), nullable=True),
    sa.Column('size_bytes', sa.Integer(), nullable=True),
    sa.Column('body_hash', sa.String(length=128), nullable=True),
    sa.Column('error_kind', sa.String(length=32), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_runs_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_runs_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs')),
    sa.UniqueConstraint('endpoint_id', 'slot_at', name='uq_runs_endpoint_slot')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_history', ['endpoint_id', sa.text('slot_at DESC')], unique=False)
        batch_op.create_index('ix_runs_trace_id', ['trace_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_trace_id')
        batch_op.drop_index('ix_runs_history')

    op.drop_table('runs')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_index('ix_endpoints_lease_until', postgresql_where=sa.text('lease_owner IS NOT NULL'), sqlite_where=sa.text('lease_owner IS NOT NULL'))
        batch_op.drop_index('ix_endpoints_claim', postgresql_where=sa.text('lease_owner IS NULL'), sqlite_where=sa.text('lease_owner IS NULL'))

    op.drop_table('endpoints')
    op.drop_table('jobs')
    op.drop_table('cronpilot_meta')
