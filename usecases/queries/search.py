"""Search: endpoints ranked by how well they answer an intent (`domain.search`), from the
stored texts, vectors and graph in one read-only unit. Endpoints whose vector is missing or
stale (a change the learner has not embedded yet) are embedded for this search, not saved: a
read stays a read. Without an embedding model the ranking falls back to its lexical and graph
legs, and the result says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cronpilot.domain.errors import EmbedderUnavailable
from cronpilot.domain.ports import Embedder, ReadingFactory, StoredVector
from cronpilot.domain.search import (
    ALL_LEGS,
    DEFAULT_LIMIT,
    Leg,
    SearchIndex,
    SearchResult,
    checked_query,
)
from cronpilot.usecases.search_index import Indexed, indexed_endpoints


async def build_index(
    reading: ReadingFactory, embedder: Embedder | None, job: str | None = None
) -> tuple[SearchIndex, str | None]:
    """The index of every endpoint (of `job`), and why it has no semantic leg (None when it
    has one). Raises `JobNotFound`."""
    async with reading() as read:
        found = await indexed_endpoints(read, job)
        edges = await read.graph.list_edges(job)
        stored = await read.vectors.get_vectors(embedder.model) if embedder else {}
    texts = [item.text for item in found]
    if embedder is None:
        return SearchIndex(texts, edges), "no embedding model configured"

    try:
        vectors = await _vectors(found, stored, embedder)
    except EmbedderUnavailable as exc:
        return SearchIndex(texts, edges), str(exc)
    return SearchIndex(texts, edges, vectors), None


async def _vectors(
    found: Sequence[Indexed], stored: Mapping[str, StoredVector], embedder: Embedder
) -> dict[str, Sequence[float]]:
    vectors: dict[str, Sequence[float]] = {}
    missing = []
    for item in found:
        known = stored.get(item.endpoint.id)
        if known is not None and known.digest == item.text.digest:
            vectors[item.text.ref] = known.vector
        else:
            missing.append(item)
    if missing:
        made = await embedder.embed([item.text.text for item in missing])
        vectors.update({item.text.ref: v for item, v in zip(missing, made, strict=True)})
    return vectors


async def search_endpoints(
    reading: ReadingFactory,
    embedder: Embedder | None,
    query: str,
    *,
    job: str | None = None,
    limit: int = DEFAULT_LIMIT,
    context: Sequence[str] = (),
    legs: frozenset[Leg] = ALL_LEGS,
) -> SearchResult:
    """The best `limit` endpoints for `query`. Raises `InvalidQuery` (empty, too long, another
    script) before reading anything, `JobNotFound` for an unknown `job`."""
    query = checked_query(query)
    index, why_not = await build_index(reading, embedder, job)
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
