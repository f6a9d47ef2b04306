"""retries within a slot, Retry-After and endpoint hints

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retry', _json(), nullable=True))
        batch_op.add_column(sa.Column('accept_hints', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('retry_after_at', _utc(), nullable=True))
        batch_op.add_column(sa.Column('hint_interval_source', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('hint_oneshot_source', sa.String(length=16), nullable=True))

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('attempts', _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('attempts')

    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('hint_oneshot_source')
        batch_op.drop_column('hint_interval_source')
        batch_op.drop_column('retry_after_at')
        batch_op.drop_column('accept_hints')
        batch_op.drop_column('retry')
