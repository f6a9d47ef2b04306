"""Search: endpoints ranked by how well they answer an intent (`domain.search.search`), from the
stored texts, vectors and graph in one read-only unit. Endpoints whose vector is missing or
stale (declared, or changed by an `apply` since) are embedded for this search and, given a unit
of work, saved in a short one after the read: the index follows `apply` without `apply` paying
for a model. The scheduler's learner keeps the vectors a search made in step with the learnt
fields (`refresh_vectors`). Without an embedding model the ranking falls back to its lexical and
graph legs, and the result says so."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.errors import EmbedderUnavailable
from cronpilot.domain.graph.graph import Edge
from cronpilot.domain.ports import Embedder, ReadingFactory, StoredVector, UnitOfWorkFactory
from cronpilot.domain.search.search import (
    ALL_LEGS,
    DEFAULT_LIMIT,
    Leg,
    SearchIndex,
    SearchResult,
    checked_query,
)
from cronpilot.usecases.queries.reach import reached_edges
from cronpilot.usecases.search_index import Indexed, indexed_endpoints

SERVED_FRESH_SECONDS = 5.0
"""How long the API, the console and the MCP server serve an index without reading the
catalog (`IndexCache.fresh_seconds`)."""
Key = tuple[str | None, frozenset[str] | None, str]
"""An index's job filter, the reach it was built for (`Reach.jobs`) and model."""


@dataclass
class IndexCache:
    """The indexes last built, by job filter and model, each kept while the texts, vectors and
    edges it was built from are unchanged: a process that searches often (the API, the MCP
    server) builds once per change of the catalog, not once per search (10,000 endpoints take
    seconds to index, a search milliseconds).

    Telling whether the catalog changed means reading all of it: at 10,000 endpoints that
    read, not the search, was the served search's time (seconds on a busy machine). With
    `fresh_seconds`, an index checked less than that ago is served without a read; past it,
    the search is answered from it while one background task reads the catalog and rebuilds
    what changed. A search waits for the catalog only when nothing is built yet."""

    fresh_seconds: float = 0.0
    """0: the catalog is read at every search (the index is never behind it)."""
    built: dict[Key, tuple[str, SearchIndex]] = field(default_factory=dict)
    checked_at: dict[Key, datetime] = field(default_factory=dict)
    checking: dict[Key, asyncio.Task[object]] = field(default_factory=dict)

    def served(self, key: Key, now: datetime | None) -> SearchIndex | None:
        """The index to answer from without reading the catalog, if any."""
        kept = self.built.get(key)
        if self.fresh_seconds <= 0 or now is None or kept is None:
            return None
        return kept[1]

    def due(self, key: Key, now: datetime) -> bool:
        """Whether the index should be checked against the catalog (none under way)."""
        checked = self.checked_at.get(key)
        stale = checked is None or (now - checked).total_seconds() >= self.fresh_seconds
        return stale and key not in self.checking

    def check_later(self, key: Key, check: Coroutine[Any, Any, object]) -> None:
        task = asyncio.create_task(check)
        self.checking[key] = task

        def done(ended: asyncio.Task[object]) -> None:
            del self.checking[key]
            if ended.cancelled() or ended.exception() is not None:
                # The job gone, the store down: the next search reads (and says) for itself.
                self.built.pop(key, None)

        task.add_done_callback(done)


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
    reach: Reach = EVERY_JOB,
) -> tuple[SearchIndex, str | None]:
    """The index of every endpoint in reach (of `job`), and why it has no semantic leg (None when it
    has one); the vectors it had to make saved through `uow` at `now` when given; taken from
    `cache` when nothing changed since it was built, or when it was checked less than its
    `fresh_seconds` ago (past them, checked in the background). Raises `JobNotFound`."""
    if embedder is not None and cache is not None:
        key = (job, reach.jobs, embedder.model)
        served = cache.served(key, now)
        if served is not None and now is not None:
            if cache.due(key, now):
                cache.check_later(
                    key,
                    _read_and_build(
                        reading, embedder, job, uow=uow, now=now, cache=cache, reach=reach
                    ),
                )
            return served, None
    return await _read_and_build(reading, embedder, job, uow=uow, now=now, cache=cache, reach=reach)


async def _read_and_build(
    reading: ReadingFactory,
    embedder: Embedder | None,
    job: str | None,
    *,
    uow: UnitOfWorkFactory | None,
    now: datetime | None,
    cache: IndexCache | None,
    reach: Reach,
) -> tuple[SearchIndex, str | None]:
    async with reading() as read:
        found = await indexed_endpoints(read, job, reach)
        edges = await reached_edges(read, job, reach)
        stored = await read.vectors.get_vectors(embedder.model) if embedder else {}
    texts = [item.text for item in found]
    if embedder is None:
        return SearchIndex(texts, edges), "no embedding model configured"
    fresh = {
        item.endpoint.id
        for item in found
        if (known := stored.get(item.endpoint.id)) is not None and known.digest == item.text.digest
    }
    key = (job, reach.jobs, embedder.model)
    fingerprint = _fingerprint(found, edges, fresh)
    if cache is not None and len(fresh) == len(found):
        kept = cache.built.get(key)
        if kept is not None and kept[0] == fingerprint:
            if now is not None:
                cache.checked_at[key] = now
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
    # In a thread: BM25, PageRank and Louvain take seconds at 10,000 endpoints, and a served
    # search's event loop goes on answering meanwhile.
    index = await asyncio.to_thread(SearchIndex, texts, edges, vectors)
    if cache is not None and (not made or uow is not None):
        cache.built[key] = (fingerprint, index)
        if now is not None:
            cache.checked_at[key] = now
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
    reach: Reach = EVERY_JOB,
) -> SearchResult:
    """The best `limit` endpoints in reach for `query`. Raises `InvalidQuery` (empty, too
    long, another script) before reading anything, `JobNotFound` for an unknown `job`."""
    query = checked_query(query)
    index, why_not = await build_index(
        reading, embedder, job, uow=uow, now=now, cache=cache, reach=reach
    )
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
    """`query` (checked) against a built index, with the embeddings `embedder` makes in one
    call: the query's, and those of its words the index lacks, which the lexical leg matches
    by meaning. The first such query also embeds the index's words, kept with the index (a
    few hundred to a few thousand words; a query of indexed words only needs none)."""
    vector = None
    related: dict[str, Sequence[float]] = {}
    semantic = Leg.SEMANTIC in legs
    unknown = index.unknown_words(query) if Leg.LEXICAL in legs else []
    vocabulary = index.vocabulary if unknown and not index.relates_words else []
    wanted = [query] if semantic else []
    if embedder is not None and why_not is None and (wanted or unknown):
        try:
            made = await embedder.embed([*wanted, *unknown, *vocabulary])
        except EmbedderUnavailable as exc:
            why_not = str(exc)
        else:
            vector = made[0] if semantic else None
            words = made[len(wanted) :]
            related = dict(zip(unknown, words[: len(unknown)], strict=True))
            if vocabulary:
                index.use_word_vectors(dict(zip(vocabulary, words[len(unknown) :], strict=True)))
    result = index.search(
        query, vector, limit=limit, job=job, context=context, legs=legs, word_vectors=related
    )
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
