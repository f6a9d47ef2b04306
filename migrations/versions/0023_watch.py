"""missed and late runs: the endpoints' watch settings and alert episodes

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('missed_after_seconds', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('late_after_seconds', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('late_since', _utc(), nullable=True))
    op.create_index(
        'ix_endpoints_watched',
        'endpoints',
        ['next_run_at'],
        unique=False,
        postgresql_where=sa.text('missed_after_seconds IS NOT NULL'),
        sqlite_where=sa.text('missed_after_seconds IS NOT NULL'),
    )
    op.create_table(
        'alert_episodes',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('subject', sa.String(length=32), nullable=False),
        sa.Column('endpoint_id', sa.String(length=32), nullable=True),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('started_at', _utc(), nullable=False),
        sa.Column('opened_at', _utc(), nullable=False),
        sa.Column('recovered_at', _utc(), nullable=True),
        sa.ForeignKeyConstraint(
            ['endpoint_id'],
            ['endpoints.id'],
            name=op.f('fk_alert_episodes_endpoint_id_endpoints'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_episodes')),
        sa.UniqueConstraint(
            'subject',
            'kind',
            'started_at',
            name=op.f('uq_alert_episodes_subject_kind_started_at'),
        ),
    )
    op.create_index(
        'ix_alert_episodes_open',
        'alert_episodes',
        ['subject', 'kind'],
        unique=True,
        postgresql_where=sa.text('recovered_at IS NULL'),
        sqlite_where=sa.text('recovered_at IS NULL'),
    )
    op.create_index(
        'ix_alert_episodes_opened', 'alert_episodes', ['opened_at', 'id'], unique=False
    )


def downgrade() -> None:
    op.drop_index('ix_alert_episodes_opened', table_name='alert_episodes')
    op.drop_index('ix_alert_episodes_open', table_name='alert_episodes')
    op.drop_table('alert_episodes')
    op.drop_index('ix_endpoints_watched', table_name='endpoints')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('late_since')
        batch_op.drop_column('late_after_seconds')
        batch_op.drop_column('missed_after_seconds')
