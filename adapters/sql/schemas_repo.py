"""`SchemaRepository` over SQL: learnt output schemas and their drift history."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, delete, insert, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import endpoints, output_schemas, schema_drift
from cronpilot.domain.errors import ConflictError, EndpointNotFound
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema
from cronpilot.domain.graph.schema_inference import ShapeNode
from cronpilot.domain.ports import SchemaRepository

_IDS_PER_QUERY = 500
"""Ids bound per `IN (...)`: SQLite builds before 3.32 allow 999 parameters a statement."""


def _output_schema(row: RowMapping) -> OutputSchema:
    return OutputSchema(
        row["endpoint_id"], ShapeNode.from_dict(row["shape"]), row["through_slot"], row["version"]
    )


@functools.cache
def _schema_statement() -> Select[Any]:
    return select(output_schemas).where(output_schemas.c.endpoint_id == bindparam("endpoint_id"))


class SqlSchemas(SchemaRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_output_schema(self, endpoint_id: str) -> OutputSchema | None:
        async with self._db.read() as conn:
            result = await conn.execute(_schema_statement(), {"endpoint_id": endpoint_id})
            row = result.mappings().one_or_none()
        return None if row is None else _output_schema(row)

    async def get_output_schemas(self, endpoint_ids: Collection[str]) -> dict[str, OutputSchema]:
        ids = sorted(set(endpoint_ids))
        rows: list[RowMapping] = []
        async with self._db.read() as conn:
            for start in range(0, len(ids), _IDS_PER_QUERY):
                chunk = ids[start : start + _IDS_PER_QUERY]
                query = select(output_schemas).where(output_schemas.c.endpoint_id.in_(chunk))
                rows += (await conn.execute(query)).mappings().all()
        return {row["endpoint_id"]: _output_schema(row) for row in rows}

    async def save_output_schema(
        self, schema: OutputSchema, drift: Sequence[DriftEvent], now: datetime, *, rebuilt: bool
    ) -> bool:
        try:
            async with self._db.write() as conn:
                if not await self._swap(conn, schema, now):
                    return False
                if rebuilt:
                    await conn.execute(
                        delete(schema_drift).where(schema_drift.c.endpoint_id == schema.endpoint_id)
                    )
                if drift:
                    await conn.execute(insert(schema_drift), [_drift_values(e) for e in drift])
        except ConflictError:
            # Another worker inserted the first version at the same moment.
            return False
        schema.version += 1
        return True

    async def _swap(self, conn: AsyncConnection, schema: OutputSchema, now: datetime) -> bool:
        """Write the schema if the stored version is the one it was read at."""
        exists = await conn.execute(
            select(endpoints.c.id).where(endpoints.c.id == schema.endpoint_id)
        )
        if exists.one_or_none() is None:
            raise EndpointNotFound(schema.endpoint_id)
        values = {
            "shape": schema.root.to_dict(),
            "through_slot": schema.through_slot,
            "version": schema.version + 1,
            "updated_at": now,
        }
        if schema.version == 0:
            stored = await conn.execute(
                select(output_schemas.c.version).where(
                    output_schemas.c.endpoint_id == schema.endpoint_id
                )
            )
            if stored.one_or_none() is not None:
                return False
            await conn.execute(
                insert(output_schemas).values(endpoint_id=schema.endpoint_id, **values)
            )
            return True
        result = await conn.execute(
            update(output_schemas)
            .where(
                output_schemas.c.endpoint_id == schema.endpoint_id,
                output_schemas.c.version == schema.version,
            )
            .values(values)
        )
        return bool(result.rowcount)

    async def list_drift(self, endpoint_id: str, limit: int = 50) -> list[DriftEvent]:
        query = (
            select(schema_drift)
            .where(schema_drift.c.endpoint_id == endpoint_id)
            .order_by(schema_drift.c.at.desc(), schema_drift.c.id.desc())
            .limit(limit)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            DriftEvent(row["endpoint_id"], row["run_id"], row["at"], tuple(row["changes"]))
            for row in rows
        ]


def _drift_values(event: DriftEvent) -> dict[str, Any]:
    return {
        "endpoint_id": event.endpoint_id,
        "run_id": event.run_id,
        "at": event.at,
        "changes": list(event.changes),
    }
