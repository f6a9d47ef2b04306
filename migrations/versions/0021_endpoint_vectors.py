"""search: the endpoints' embeddings

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'endpoint_vectors',
        sa.Column('endpoint_id', sa.String(length=32), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('vector', sa.LargeBinary(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('endpoint_id', 'model'),
    )


def downgrade() -> None:
    op.drop_table('endpoint_vectors')
