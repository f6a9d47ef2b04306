"""output schemas, the tool graph and DAG runs

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-22 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    # adapters.sql.tables.UtcDateTime stores through this type; migrations stay import-free.
    return sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('depends_on', _json(), server_default=sa.text("'[]'"), nullable=False))
        batch_op.add_column(sa.Column('dependants', _json(), server_default=sa.text("'[]'"), nullable=False))
        batch_op.add_column(sa.Column('only_if_changed', sa.Boolean(), server_default=sa.false(), nullable=False))

    op.create_table('output_schemas',
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('shape', _json(), nullable=False),
    sa.Column('through_slot', _utc(), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('updated_at', _utc(), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_output_schemas_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('endpoint_id', name=op.f('pk_output_schemas'))
    )
    op.create_table('schema_drift',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('at', _utc(), nullable=False),
    sa.Column('changes', _json(), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_schema_drift_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_schema_drift'))
    )
    op.create_index('ix_schema_drift_endpoint', 'schema_drift', ['endpoint_id', 'at'], unique=False)
    op.create_table('graph_edges',
    sa.Column('from_node', sa.String(length=401), nullable=False),
    sa.Column('to_node', sa.String(length=401), nullable=False),
    sa.Column('edge_type', sa.String(length=16), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('coverage', sa.String(length=16), nullable=True),
    sa.Column('updated_at', _utc(), nullable=False),
    sa.PrimaryKeyConstraint('from_node', 'to_node', 'edge_type', name=op.f('pk_graph_edges'))
    )
    op.create_index('ix_graph_edges_to_node', 'graph_edges', ['to_node'], unique=False)
    op.create_table('dag_waits',
    sa.Column('dag_run_id', sa.String(length=32), nullable=False),
    sa.Column('endpoint_id', sa.String(length=32), nullable=False),
    sa.Column('root', sa.String(length=200), nullable=False),
    sa.Column('arrived', _json(), nullable=False),
    sa.Column('ready', sa.Boolean(), nullable=False),
    sa.Column('parent_trace_id', sa.String(length=32), nullable=True),
    sa.Column('created_at', _utc(), nullable=False),
    sa.ForeignKeyConstraint(['endpoint_id'], ['endpoints.id'], name=op.f('fk_dag_waits_endpoint_id_endpoints'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('dag_run_id', 'endpoint_id', name=op.f('pk_dag_waits'))
    )


def downgrade() -> None:
    op.drop_table('dag_waits')
    op.drop_index('ix_graph_edges_to_node', table_name='graph_edges')
    op.drop_table('graph_edges')
    op.drop_index('ix_schema_drift_endpoint', table_name='schema_drift')
    op.drop_table('schema_drift')
    op.drop_table('output_schemas')
    with op.batch_alter_table('endpoints', schema=None) as batch_op:
        batch_op.drop_column('only_if_changed')
        batch_op.drop_column('dependants')
        batch_op.drop_column('depends_on')
