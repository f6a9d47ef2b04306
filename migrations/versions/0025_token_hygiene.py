"""tokens: expiry, job limits, rotation grace; console sessions

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0025'
down_revision: str | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), 'postgresql'
    )
    with op.batch_alter_table('api_tokens') as batch:
        batch.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('jobs', json, nullable=True))
        batch.add_column(sa.Column('previous_hash', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('previous_until', sa.DateTime(timezone=True), nullable=True))
        batch.create_unique_constraint(op.f('uq_api_tokens_previous_hash'), ['previous_hash'])
    op.create_table(
        'console_sessions',
        sa.Column('id_hash', sa.String(length=64), nullable=False),
        sa.Column('token_id', sa.String(length=32), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id_hash'),
    )
    op.create_index(
        op.f('ix_console_sessions_token_id'), 'console_sessions', ['token_id'], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f('ix_console_sessions_token_id'), table_name='console_sessions')
    op.drop_table('console_sessions')
    with op.batch_alter_table('api_tokens') as batch:
        batch.drop_constraint(op.f('uq_api_tokens_previous_hash'), type_='unique')
        batch.drop_column('previous_until')
        batch.drop_column('previous_hash')
        batch.drop_column('jobs')
        batch.drop_column('expires_at')
