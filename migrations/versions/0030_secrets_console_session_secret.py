"""console sessions: the secret that opened each

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29 05:00:00

A session now lasts only as long as the token's secret that opened it: that secret's hash is
kept with it. Sessions opened before are ended (their secret is unknown): their browsers sign
in again. The URL secrets older versions stored in clear are sealed by `cronpilot db upgrade`
after this revision (`adapters.sql.sealing`): it needs the secret key, which a migration has
not.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(sa.text('DELETE FROM console_sessions'))
    with op.batch_alter_table('console_sessions') as batch:
        batch.add_column(sa.Column('secret_hash', sa.String(length=64), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('console_sessions') as batch:
        batch.drop_column('secret_hash')
