"""signed calls, file references, conditional requests: where an endpoint's values came from

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )


def upgrade() -> None:
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("value_references", _json(), server_default=sa.text("'[]'"), nullable=False)
        )
        batch_op.add_column(
            sa.Column("conditional", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
    for table in ("runs", "run_queue"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("not_modified", sa.Boolean(), server_default=sa.false(), nullable=False)
            )


def downgrade() -> None:
    for table in ("run_queue", "runs"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("not_modified")
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.drop_column("conditional")
        batch_op.drop_column("value_references")
