"""runs: queued and running runs apart (run_queue); history partitioned by day on PostgreSQL

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27 18:00:00

Decision 0047. Unfinished runs move to `run_queue`; `runs` keeps the finished ones. On
PostgreSQL `runs` becomes a table partitioned by range of `slot_at`, a partition per UTC day
(`runs_pYYYYMMDD`) from the oldest run's day (at most `_PAST_DAYS` back; older runs go to the
DEFAULT partition, `runs_default`) to a week ahead; the old table's rows are copied into it. On
SQLite the history's key becomes (id, slot_at), as on PostgreSQL. `ix_runs_history` goes: the
(endpoint, slot) key serves the same reads.
"""

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0026'
down_revision: str | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PAST_DAYS = 400
_AHEAD_DAYS = 7
_UNFINISHED = "status IN ('queued', 'running')"
_OLD_INDEXES = ('ix_runs_history', 'ix_runs_trace_id', 'ix_runs_newest', 'ix_runs_queued', 'ix_runs_worker')


def _utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def _columns() -> list[sa.Column[object]]:
    json = sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), 'postgresql'
    )
    ident = sa.String(length=32)
    return [
        sa.Column('id', ident, nullable=False),
        sa.Column('endpoint_id', ident, nullable=False),
        sa.Column('job_id', ident, nullable=False),
        sa.Column('trace_id', ident, nullable=False),
        sa.Column('parent_trace_id', ident, nullable=True),
        sa.Column('dag_run_id', ident, nullable=True),
        sa.Column('trigger', sa.String(length=16), nullable=False),
        sa.Column('schedule_source', sa.String(length=32), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('slot_at', _utc(), nullable=False),
        sa.Column('started_at', _utc(), nullable=False),
        sa.Column('worker_id', sa.String(length=200), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('finished_at', _utc(), nullable=True),
        sa.Column('duration_ms', sa.Float(), nullable=True),
        sa.Column('status_code', sa.Integer(), nullable=True),
        sa.Column('body', json, nullable=True),
        sa.Column('body_absence', sa.String(length=16), nullable=True),
        sa.Column('size_bytes', sa.Integer(), nullable=True),
        sa.Column('body_hash', sa.String(length=128), nullable=True),
        sa.Column('error_kind', sa.String(length=32), nullable=True),
        sa.Column('error_message', sa.Text(), nullable=True),
        sa.Column('attempts', json, nullable=True),
        sa.Column('due_at', _utc(), nullable=True),
        sa.Column('requested_by', sa.String(length=200), nullable=True),
        sa.Column('request', json, nullable=True),
        sa.Column('cancel_requested_by', sa.String(length=200), nullable=True),
    ]


_NAMES = ', '.join(column.name for column in _columns())


def _foreign_keys(table: str) -> list[sa.ForeignKeyConstraint]:
    return [
        sa.ForeignKeyConstraint(
            ['endpoint_id'], ['endpoints.id'],
            name=f'fk_{table}_endpoint_id_endpoints', ondelete='CASCADE',
        ),
        sa.ForeignKeyConstraint(
            ['job_id'], ['jobs.id'], name=f'fk_{table}_job_id_jobs', ondelete='CASCADE'
        ),
    ]


def _history_indexes() -> None:
    op.create_index('ix_runs_trace_id', 'runs', ['trace_id'], unique=False)
    op.create_index('ix_runs_newest', 'runs', ['slot_at', 'id'], unique=False)
    op.create_index('ix_runs_worker', 'runs', ['worker_id', 'started_at'], unique=False)


def _partition_days(oldest: datetime | None) -> list[date]:
    today = datetime.now(UTC).date()
    first = today if oldest is None else max(oldest.astimezone(UTC).date(), today - timedelta(days=_PAST_DAYS))
    first = min(first, today)
    return [first + timedelta(days=n) for n in range((today - first).days + _AHEAD_DAYS)]


def _partition(day: date) -> str:
    start = datetime.combine(day, time(), UTC)
    end = start + timedelta(days=1)
    return (
        f"CREATE TABLE runs_p{day:%Y%m%d} PARTITION OF runs "
        f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
    )


def upgrade() -> None:
    op.create_table(
        'run_queue',
        *_columns(),
        *_foreign_keys('run_queue'),
        sa.PrimaryKeyConstraint('id', name='pk_run_queue'),
        sa.UniqueConstraint('endpoint_id', 'slot_at', name='uq_run_queue_endpoint_slot'),
    )
    queued = sa.text("status = 'queued'")
    op.create_index(
        'ix_run_queue_due_at', 'run_queue', ['due_at'], unique=False,
        postgresql_where=queued, sqlite_where=queued,
    )
    op.execute(f"INSERT INTO run_queue ({_NAMES}) SELECT {_NAMES} FROM runs WHERE {_UNFINISHED}")
    if op.get_bind().dialect.name == 'postgresql':
        _partition_history()
    else:
        _rekey_history()


def _partition_history() -> None:
    op.rename_table('runs', 'runs_unpartitioned')
    op.execute('ALTER TABLE runs_unpartitioned DROP CONSTRAINT pk_runs')
    op.execute('ALTER TABLE runs_unpartitioned DROP CONSTRAINT uq_runs_endpoint_slot')
    for index in _OLD_INDEXES:
        op.execute(f'DROP INDEX IF EXISTS {index}')
    op.create_table(
        'runs',
        *_columns(),
        *_foreign_keys('runs'),
        sa.PrimaryKeyConstraint('id', 'slot_at', name='pk_runs'),
        sa.UniqueConstraint('endpoint_id', 'slot_at', name='uq_runs_endpoint_slot'),
        postgresql_partition_by='RANGE (slot_at)',
    )
    _history_indexes()
    op.execute('CREATE TABLE runs_default PARTITION OF runs DEFAULT')
    oldest = op.get_bind().execute(sa.text('SELECT min(slot_at) FROM runs_unpartitioned')).scalar()
    for day in _partition_days(oldest):
        op.execute(_partition(day))
    op.execute(
        f"INSERT INTO runs ({_NAMES}) SELECT {_NAMES} FROM runs_unpartitioned "
        f"WHERE NOT ({_UNFINISHED})"
    )
    op.drop_table('runs_unpartitioned')


def _rekey_history() -> None:
    op.execute(f"DELETE FROM runs WHERE {_UNFINISHED}")
    op.drop_index('ix_runs_queued', table_name='runs')
    op.drop_index('ix_runs_history', table_name='runs')
    with op.batch_alter_table('runs', recreate='always') as batch:
        batch.drop_constraint('pk_runs', type_='primary')
        batch.create_primary_key('pk_runs', ['id', 'slot_at'])


def downgrade() -> None:
    raise NotImplementedError(
        "0026 moved unfinished runs apart and partitioned the history: restore the backup "
        "taken before upgrading instead of downgrading"
    )
