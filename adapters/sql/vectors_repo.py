"""`VectorRepository` over SQL: the search index's embeddings, as float32 bytes."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import endpoint_vectors, endpoints
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.ports import StoredVector, VectorRepository

_CHUNK = 500


class SqlVectors(VectorRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_vectors(self, model: str) -> dict[str, StoredVector]:
        table = endpoint_vectors
        statement = select(table.c.endpoint_id, table.c.digest, table.c.vector).where(
            table.c.model == model
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(statement)).all()
        return {
            endpoint_id: StoredVector(endpoint_id, model, digest, array("f", blob))
            for endpoint_id, digest, blob in rows
        }

    async def save_vectors(self, vectors: Sequence[StoredVector], now: datetime) -> None:
        if not vectors:
            return
        table = endpoint_vectors
        async with self._db.write() as conn:
            ids = [v.endpoint_id for v in vectors]
            known: set[str] = set()
            # In chunks: a catalog's worth of ids is more than one statement may bind.
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                found = await conn.execute(select(endpoints.c.id).where(endpoints.c.id.in_(chunk)))
                known.update(found.scalars().all())
            rows = [
                {
                    "endpoint_id": v.endpoint_id,
                    "model": v.model,
                    "digest": v.digest,
                    "vector": array("f", v.vector).tobytes(),
                    "updated_at": now,
                }
                for v in vectors
                if v.endpoint_id in known
            ]
            if not rows:
                return
            statement = conflict_insert(self._db.dialect, table)
            await conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[table.c.endpoint_id, table.c.model],
                    set_={
                        "digest": statement.excluded.digest,
                        "vector": statement.excluded.vector,
                        "updated_at": statement.excluded.updated_at,
                    },
                ),
                rows,
            )
