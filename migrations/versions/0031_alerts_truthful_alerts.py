"""alerts that tell the truth: notifications in order per episode; overlap policy

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29 05:00:00

Issue 32, item 3. `notifications.episode_key` names the episode and destination of a row
(`domain.alerts.alerts.episode_key`); a row waits while an earlier one of its key is pending. Rows
written before it have none, and wait for nothing, as before. `endpoints.overlap` (skip,
queue_one; `skip` for every endpoint declared before) and `endpoints.overrun_since`
(`domain.schedule.overlap`). `notifications.held_by`: the DAG upstream that held a row
(`domain.alerts.alert_holding`, issue 34).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("overlap", sa.String(16), server_default=sa.text("'skip'"), nullable=False)
        )
        batch_op.add_column(sa.Column("overrun_since", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("episode_key", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("held_by", sa.Text(), nullable=True))
    op.create_index(
        "ix_notifications_episode",
        "notifications",
        ["episode_key"],
        postgresql_where=_PENDING,
        sqlite_where=_PENDING,
    )


def downgrade() -> None:
    op.drop_index("ix_notifications_episode", table_name="notifications")
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_column("held_by")
        batch_op.drop_column("episode_key")
