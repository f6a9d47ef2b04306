"""Search: endpoints ranked by how well they answer an intent (`domain.search`), from the
stored texts, vectors and graph in one read-only unit. Endpoints whose vector is missing or
stale (declared, or changed by an `apply` since) are embedded for this search and, given a unit
of work, saved in a short one after the read: the index follows `apply` without `apply` paying
for a model. The scheduler's learner keeps the vectors a search made in step with the learnt
fields (`refresh_vectors`). Without an embedding model the ranking falls back to its lexical and
graph legs, and the result says so."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime

from cronpilot.domain.errors import EmbedderUnavailable
from cronpilot.domain.graph import Edge
from cronpilot.domain.ports import Embedder, ReadingFactory, StoredVector, UnitOfWorkFactory
from cronpilot.domain.search import (
    ALL_LEGS,
    DEFAULT_LIMIT,
    Leg,
    SearchIndex,
    SearchResult,
    checked_query,
)
from cronpilot.usecases.search_index import Indexed, indexed_endpoints


@dataclass
class IndexCache:
    """The indexes last built, by job filter and model, each kept while the texts, vectors and
    edges it was built from are unchanged: a process that searches often (the API, the MCP
    server) builds once per change of the catalog, not once per search (10,000 endpoints take
    seconds to index, a search milliseconds)."""

    built: dict[tuple[str | None, str], tuple[str, SearchIndex]] = field(default_factory=dict)


def _fingerprint(found: Sequence[Indexed], edges: Sequence[Edge], known: Set[str]) -> str:
    digest = hashlib.sha256()
    for item in found:
        digest.update(f"{item.text.ref} {item.text.digest} {item.endpoint.id in known}\n".encode())
    for edge in edges:
        digest.update(f"{edge.from_node} {edge.to_node} {edge.type} {edge.weight}\n".encode())
    return digest.hexdigest()


async def build_index(
    reading: ReadingFactory,
    embedder: Embedder | None,
    job: str | None = None,
    *,
    uow: UnitOfWorkFactory | None = None,
    now: datetime | None = None,
    cache: IndexCache | None = None,
) -> tuple[SearchIndex, str | None]:
    """The index of every endpoint (of `job`), and why it has no semantic leg (None when it
    has one); the vectors it had to make saved through `uow` at `now` when given; taken from
    `cache` when nothing changed since it was built. Raises `JobNotFound`."""
    async with reading() as read:
        found = await indexed_endpoints(read, job)
        edges = await read.graph.list_edges(job)
        stored = await read.vectors.get_vectors(embedder.model) if embedder else {}
    texts = [item.text for item in found]
    if embedder is None:
        return SearchIndex(texts, edges), "no embedding model configured"
    fresh = {
        item.endpoint.id
        for item in found
        if (known := stored.get(item.endpoint.id)) is not None and known.digest == item.text.digest
    }
    key = (job, embedder.model)
    fingerprint = _fingerprint(found, edges, fresh)
    if cache is not None and len(fresh) == len(found):
        kept = cache.built.get(key)
        if kept is not None and kept[0] == fingerprint:
            return kept[1], None

    vectors: dict[str, Sequence[float]] = {}
    missing = []
    for item in found:
        known = stored.get(item.endpoint.id)
        if known is not None and known.digest == item.text.digest:
            vectors[item.text.ref] = known.vector
        else:
            missing.append(item)
    try:
        made = await embedder.embed([item.text.text for item in missing]) if missing else []
    except EmbedderUnavailable as exc:
        return SearchIndex(texts, edges), str(exc)
    vectors.update({item.text.ref: v for item, v in zip(missing, made, strict=True)})
    if made and uow is not None and now is not None:
        await _save(uow, embedder.model, missing, made, now)
        fingerprint = _fingerprint(found, edges, {item.endpoint.id for item in found})
    index = SearchIndex(texts, edges, vectors)
    if cache is not None and (not made or uow is not None):
        cache.built[key] = (fingerprint, index)
    return index, None


async def _save(
    uow: UnitOfWorkFactory,
    model: str,
    items: Sequence[Indexed],
    vectors: Sequence[Sequence[float]],
    now: datetime,
) -> None:
    rows = [
        StoredVector(item.endpoint.id, model, item.text.digest, tuple(vector))
        for item, vector in zip(items, vectors, strict=True)
    ]
    async with uow() as tx:
        await tx.vectors.save_vectors(rows, now)
        await tx.commit()


async def search_endpoints(
    reading: ReadingFactory,
    embedder: Embedder | None,
    query: str,
    *,
    uow: UnitOfWorkFactory | None = None,
    now: datetime | None = None,
    job: str | None = None,
    limit: int = DEFAULT_LIMIT,
    context: Sequence[str] = (),
    legs: frozenset[Leg] = ALL_LEGS,
    cache: IndexCache | None = None,
) -> SearchResult:
    """The best `limit` endpoints for `query`. Raises `InvalidQuery` (empty, too long, another
    script) before reading anything, `JobNotFound` for an unknown `job`."""
    query = checked_query(query)
    index, why_not = await build_index(reading, embedder, job, uow=uow, now=now, cache=cache)
    return await search_index(
        index, embedder, query, why_not, limit=limit, context=context, legs=legs
    )


async def search_index(
    index: SearchIndex,
    embedder: Embedder | None,
    query: str,
    why_not: str | None,
    *,
    limit: int = DEFAULT_LIMIT,
    context: Sequence[str] = (),
    legs: frozenset[Leg] = ALL_LEGS,
    job: str | None = None,
) -> SearchResult:
    """`query` (checked) against a built index; the query's embedding made by `embedder`."""
    vector = None
    if embedder is not None and why_not is None and Leg.SEMANTIC in legs:
        try:
            vector = (await embedder.embed([query]))[0]
        except EmbedderUnavailable as exc:
            why_not = str(exc)
    result = index.search(query, vector, limit=limit, job=job, context=context, legs=legs)
    if why_not is not None and Leg.SEMANTIC in legs:
        result.notes[:] = [f"{why_not}: ranked by lexical and graph scores only"]
    return result


async def refresh_vectors(
    reading: ReadingFactory,
    uow: UnitOfWorkFactory,
    embedder: Embedder,
    now: datetime,
    job: str,
) -> int:
    """Embed again the endpoints of `job` whose indexed text changed since their vector was
    made, and save those vectors; returns how many. Only vectors a search made are kept in
    step: an endpoint never embedded waits for the first search (a scheduler whose catalog
    nobody searches loads no model). Raises `EmbedderUnavailable` (nothing saved)."""
    async with reading() as read:
        stored = await read.vectors.get_vectors(embedder.model)
        found = await indexed_endpoints(read, job) if stored else []
    stale = [
        item
        for item in found
        if (known := stored.get(item.endpoint.id)) is not None and known.digest != item.text.digest
    ]
    if stale:
        made = await embedder.embed([item.text.text for item in stale])
        await _save(uow, embedder.model, stale, made, now)
    return len(stale)
