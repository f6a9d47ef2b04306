"""Search with an OpenAI-compatible `/embeddings` (the suite's fake server, through the real
`openai` SDK): the semantic leg from its vectors, stored under its model; a server that fails
leaves search to its lexical and graph legs, which says so."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronpilot.adapters.jobs_file import load_declarations
from cronpilot.adapters.search.embedders import OpenAIEmbedder
from cronpilot.domain.search.search import Leg, SearchIndex
from cronpilot.usecases.declarations import apply_declarations, apply_to_catalog
from cronpilot.usecases.search import IndexCache, build_index, search_endpoints
from tests.support.fake_openai_server import FakeOpenAI
from tests.support.memory_store.store import MemoryStore

EXAMPLE = Path(__file__).parents[2] / "adapters" / "examples" / "jobs.yaml"
T0 = datetime(2030, 1, 1, tzinfo=UTC)


async def _examples() -> MemoryStore:
    store = MemoryStore()
    declared = load_declarations(EXAMPLE, ["127.0.0.0/8"], {"SIMULATOR_URL": "http://127.0.0.1:9"})
    await apply_declarations(store.unit_of_work, None, declared, "examples", actor="t", now=T0)
    return store


async def test_an_openai_compatible_embeddings_server_gives_the_semantic_leg() -> None:
    store = await _examples()
    async with FakeOpenAI([]) as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", None, 5)
        found = await search_endpoints(
            store.reading, embedder, "queue depth", uow=store.unit_of_work, now=T0, limit=3
        )
        again = await search_endpoints(
            store.reading, embedder, "fraud score", uow=store.unit_of_work, now=T0, limit=3
        )

    assert Leg.SEMANTIC in found.legs and found.notes == []
    assert found.hits[0].ref == "queue/depth" and found.hits[0].semantic > 0
    assert again.hits[0].ref == "flash-sale/fraud_score"
    # The endpoints once, then only the queries: the vectors were stored under the model.
    assert [len(texts) for texts in server.embedded] == [15, 1, 1]
    assert len(await store.vectors.get_vectors("openai/fake-embed")) == 15


async def test_a_failing_embeddings_server_leaves_lexical_and_graph_and_says_so() -> None:
    store = await _examples()
    async with FakeOpenAI([]) as server:
        server.embeddings_failure = 500
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", None, 5)
        found = await search_endpoints(store.reading, embedder, "queue depth", limit=3)

    assert Leg.SEMANTIC not in found.legs
    assert found.notes == [
        "no embedding model: HTTP 500 from the embeddings server: "
        "ranked by lexical and graph scores only"
    ]
    assert found.hits[0].ref == "queue/depth"


async def test_an_index_cache_builds_once_per_change_of_the_catalog() -> None:
    store = await _examples()
    cache = IndexCache()
    async with FakeOpenAI([]) as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", None, 5)

        async def built() -> SearchIndex:
            index, _ = await build_index(
                store.reading, embedder, uow=store.unit_of_work, now=T0, cache=cache
            )
            return index

        first = await built()
        second = await built()
        fetch = await store.catalog.get_endpoint("etl/fetch")
        declared = load_declarations(
            EXAMPLE, ["127.0.0.0/8"], {"SIMULATOR_URL": "http://127.0.0.1:9"}
        )
        etl = next(d for d in declared if d.job.name == "etl")
        changed = [
            replace(s, description="Pull fresh orders") if s.name == "fetch" else s
            for s in etl.endpoints
        ]
        await apply_to_catalog(store.catalog, [replace(etl, endpoints=changed)], T0)
        third = await built()

    assert second is first
    assert third is not first and fetch.spec.description != "Pull fresh orders"
    # The changed endpoint alone was embedded again.
    assert [len(texts) for texts in server.embedded] == [15, 1]


async def test_a_served_index_is_fresh_for_a_while_then_checked_in_the_background() -> None:
    store = await _examples()
    reads = 0
    reading = store.reading

    def counted() -> Any:
        nonlocal reads
        reads += 1
        return reading()

    cache = IndexCache(fresh_seconds=5)
    async with FakeOpenAI([]) as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", None, 5)

        async def built(second: int) -> SearchIndex:
            at = T0 + timedelta(seconds=second)
            index, _ = await build_index(
                counted, embedder, uow=store.unit_of_work, now=at, cache=cache
            )
            return index

        first = await built(0)
        await store.catalog.delete_endpoints([(await store.catalog.get_endpoint("etl/load")).id])
        within = await built(4)
        reads_within = reads
        past = await built(5)
        await asyncio.gather(*cache.checking.values())
        after = await built(6)

    # Within its freshness the index is served without a read; past it the search is still
    # answered from it while the catalog is read once in the background.
    assert within is first and past is first and reads_within == 1
    assert reads == 2 and not cache.checking
    assert "etl/load" in first.refs and "etl/load" not in after.refs


async def test_a_query_word_the_index_lacks_has_the_index_words_embedded_once() -> None:
    store = await _examples()
    cache = IndexCache()
    async with FakeOpenAI([]) as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", None, 5)

        async def search(query: str) -> None:
            await search_endpoints(
                store.reading, embedder, query, uow=store.unit_of_work, now=T0, cache=cache
            )

        await search("queue depth")
        await search("queue depthness")
        await search("queue wobble")
        [index] = [built for _, built in cache.built.values()]

    # Known words need no more than the query's vector; the first unknown word brings the
    # index's words with it (one request), kept with the index for the next one.
    endpoints, known, first, second = server.embedded
    assert (len(endpoints), known) == (15, ["queue depth"])
    assert first == ["queue depthness", "depthness", *index.vocabulary]
    assert second == ["queue wobble", "wobble"]
