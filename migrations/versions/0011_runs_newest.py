"""runs: an index for paging every run newest first

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 18:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index('ix_runs_newest', 'runs', ['slot_at', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_runs_newest', table_name='runs')
