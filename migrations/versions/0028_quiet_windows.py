"""quiet periods: the endpoints' quiet windows

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade() -> None:
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.add_column(sa.Column("quiet", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.drop_column("quiet")
