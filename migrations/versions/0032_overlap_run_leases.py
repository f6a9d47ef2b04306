"""overlap: allow: a lease per run

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-29 08:30:00

A call of an endpoint under `overlap: allow` holds a lease of its own while its endpoint stays
free for the next slot (`domain.overlap`): `lease_until` on the queue's runs (and the
history's, whose columns are the queue's), with a partial index for the reaper. Runs written
before it hold none, as before.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HOLDS_LEASE = sa.text("lease_until IS NOT NULL")


def upgrade() -> None:
    for table in ("run_queue", "runs"):
        op.add_column(table, sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_run_queue_lease_until",
        "run_queue",
        ["lease_until"],
        postgresql_where=_HOLDS_LEASE,
        sqlite_where=_HOLDS_LEASE,
    )


def downgrade() -> None:
    op.drop_index("ix_run_queue_lease_until", table_name="run_queue")
    for table in ("runs", "run_queue"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("lease_until")
