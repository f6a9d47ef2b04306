"""`GraphRepository` over SQL: the tool graph's edges."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, String, bindparam, delete, insert, or_, select, update
from sqlalchemy.engine import RowMapping

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import graph_edges
from cronpilot.domain.graph.graph import (
    Edge,
    EdgeKey,
    EdgeSighting,
    EdgeSource,
    EdgeType,
    retractable,
    sighted,
    touches_job,
)
from cronpilot.domain.ports import GraphRepository


@functools.cache
def _job_edges_statement() -> Select[Any]:
    job = bindparam("job", type_=String)
    prefix = bindparam("prefix", type_=String)
    return select(graph_edges).where(
        or_(
            graph_edges.c.from_node == job,
            graph_edges.c.to_node == job,
            graph_edges.c.from_node.like(prefix),
            graph_edges.c.to_node.like(prefix),
        )
    )


class SqlGraph(GraphRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, sightings: Sequence[EdgeSighting], now: datetime) -> None:
        if not sightings:
            return
        async with self._db.write() as conn:
            for sighting in sightings:
                key = _key(*sighting.key)
                row = (
                    (await conn.execute(select(graph_edges).where(*key).with_for_update()))
                    .mappings()
                    .one_or_none()
                )
                edge = sighted(None if row is None else _edge(row), sighting, now)
                values = {
                    "source": edge.source.value,
                    "count": edge.count,
                    "confidence": edge.confidence,
                    "coverage": edge.coverage,
                    "updated_at": edge.updated_at,
                }
                if row is None:
                    await conn.execute(
                        insert(graph_edges).values(
                            from_node=edge.from_node,
                            to_node=edge.to_node,
                            edge_type=edge.type.value,
                            **values,
                        )
                    )
                else:
                    await conn.execute(update(graph_edges).where(*key).values(values))

    async def list_edges(self, job: str | None = None) -> list[Edge]:
        async with self._db.read() as conn:
            if job is None:
                rows = (await conn.execute(select(graph_edges))).mappings().all()
                return sorted((_edge(row) for row in rows), key=lambda e: e.key)
            result = await conn.execute(_job_edges_statement(), {"job": job, "prefix": f"{job}/%"})
            rows = result.mappings().all()
        # LIKE only narrows (`_` in a job name is a wildcard there); sorted here, not in SQL, as
        # the databases' collations may order text differently.
        edges = [_edge(row) for row in rows]
        return sorted((e for e in edges if touches_job(e, job)), key=lambda e: e.key)

    async def retract(
        self, edge_type: EdgeType, into: Collection[str], keep: Collection[EdgeKey]
    ) -> int:
        if not into:
            return 0
        query = select(graph_edges).where(
            graph_edges.c.edge_type == edge_type.value,
            graph_edges.c.to_node.in_(list(into)),
            graph_edges.c.count == 0,
        )
        deleted = 0
        async with self._db.write() as conn:
            rows = (await conn.execute(query)).mappings().all()
            for edge in (_edge(row) for row in rows):
                if retractable(edge, edge_type, into, keep):
                    await conn.execute(delete(graph_edges).where(*_key(*edge.key)))
                    deleted += 1
        return deleted

    async def forget(self, nodes: Collection[str]) -> int:
        if not nodes:
            return 0
        names = list(nodes)
        async with self._db.write() as conn:
            result = await conn.execute(
                delete(graph_edges).where(
                    or_(graph_edges.c.from_node.in_(names), graph_edges.c.to_node.in_(names))
                )
            )
        return int(result.rowcount)


def _key(from_node: str, to_node: str, edge_type: EdgeType) -> list[Any]:
    return [
        graph_edges.c.from_node == from_node,
        graph_edges.c.to_node == to_node,
        graph_edges.c.edge_type == edge_type.value,
    ]


def _edge(row: RowMapping) -> Edge:
    return Edge(
        from_node=row["from_node"],
        to_node=row["to_node"],
        type=EdgeType(row["edge_type"]),
        source=EdgeSource(row["source"]),
        count=row["count"],
        updated_at=row["updated_at"],
        confidence=row["confidence"],
        coverage=row["coverage"],
    )
