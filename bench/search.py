"""Search quality and speed: recall@5 and MRR of each leg and of the hybrid blend on the
labelled set (`tests/integration/search/labelled.py`: questions about the example jobs, intents over
a generated catalog of 1,000 endpoints) and on the held-out set (150 other intents over that
catalog: where a change of the blend is checked first, decision 0033), then, on a generated
catalog of 10,000 endpoints, the time to embed and index it (its words embedded too), the
memory the index holds, and the p95 latency of one search (embedding the query and its words
the index lacks included), in wall time and in CPU time with the involuntary context
switches (a wall time far above the CPU time on a busy machine is time spent waiting for a
core). Last, a served search (as the API answers it: `search_endpoints` with its index cache)
over 10,000 endpoints stored in SQLite: the first search, then the p95 of the next ones.

    python -m bench.search [--regions 50] [--served 10000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from bench.support import EndpointServer, Fleet, database, open_store, seed
from cronpilot.adapters.search.embedders import WORDLLAMA_MODEL, WordLlamaEmbedder
from cronpilot.domain.search.search import SearchIndex, checked_query
from cronpilot.usecases.search import SERVED_FRESH_SECONDS, IndexCache, search_endpoints
from tests.integration.search.catalog import catalog
from tests.integration.search.labelled import (
    LEGS,
    LabelledSet,
    catalog_set,
    example_set,
    held_out_set,
    measure,
)

LATENCY_QUERIES = 200


def quality(embed: Any) -> list[dict[str, Any]]:
    sets: list[LabelledSet] = [asyncio.run(example_set(embed)), catalog_set(embed)]
    rows: list[dict[str, Any]] = []
    for labelled in sets:
        for name, legs in LEGS.items():
            found = measure(labelled, embed, legs)
            rows.append(
                {
                    "set": labelled.name,
                    "intents": len(labelled.intents),
                    "ranking": name,
                    "recall_at_5": round(found.recall_at_5, 3),
                    "mrr": round(found.mrr, 3),
                }
            )
    total = sum(len(s.intents) for s in sets)
    per_set = list(rows)
    for name in LEGS:
        mine = [r for r in per_set if r["ranking"] == name]
        rows.append(
            {
                "set": "all",
                "intents": total,
                "ranking": name,
                "recall_at_5": round(sum(r["recall_at_5"] * r["intents"] for r in mine) / total, 3),
                "mrr": round(sum(r["mrr"] * r["intents"] for r in mine) / total, 3),
            }
        )
    held_out = held_out_set(sets[1])
    for name, legs in LEGS.items():
        found = measure(held_out, embed, legs)
        rows.append(
            {
                "set": held_out.name,
                "intents": len(held_out.intents),
                "ranking": name,
                "recall_at_5": round(found.recall_at_5, 3),
                "mrr": round(found.mrr, 3),
            }
        )
    return rows


def speed(embed: Any, regions: int) -> dict[str, Any]:
    made = catalog(regions, intents=LATENCY_QUERIES)
    started = time.perf_counter()
    embedded_texts = embed([t.text for t in made.texts])
    embedded = time.perf_counter() - started
    vectors = dict(zip([t.ref for t in made.texts], embedded_texts, strict=True))
    # Timed without tracemalloc (it slows every allocation several times), then measured.
    started, spent = time.perf_counter(), time.process_time()
    index = SearchIndex(made.texts, made.edges, vectors)
    built, built_cpu = time.perf_counter() - started, time.process_time() - spent
    started = time.perf_counter()
    index.use_word_vectors(dict(zip(index.vocabulary, embed(index.vocabulary), strict=True)))
    words_took = time.perf_counter() - started
    tracemalloc.start()
    SearchIndex(made.texts, made.edges, vectors)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    took, cpu = [], []
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
    for intent, _ in made.intents:
        started, spent = time.perf_counter(), time.thread_time()
        query = checked_query(intent)
        unknown = index.unknown_words(query)
        vector, *word_vectors = embed([query, *unknown])
        related = dict(zip(unknown, word_vectors, strict=True))
        index.search(query, vector, limit=10, word_vectors=related)
        took.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - spent) * 1000)
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw - switches
    took.sort()
    cpu.sort()
    return {
        "endpoints": len(made.texts),
        "edges": len(made.edges),
        "embed_s": round(embedded, 2),
        "index_s": round(built, 2),
        "index_cpu_s": round(built_cpu, 2),
        "words": len(index.vocabulary),
        "words_embed_s": round(words_took, 2),
        "index_mib": round(held / 2**20, 1),
        "index_peak_mib": round(peak / 2**20, 1),
        "searches": len(took),
        "p50_ms": round(took[len(took) // 2], 2),
        "p95_ms": round(took[int(0.95 * (len(took) - 1))], 2),
        "p95_cpu_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 2),
        "preempted": switches,
    }


async def served(count: int) -> dict[str, Any]:
    """`search_endpoints` as the API calls it, over `count` endpoints stored in SQLite."""
    embedder = WordLlamaEmbedder()
    cache = IndexCache(SERVED_FRESH_SECONDS)
    async with database("sqlite") as url:
        store = await open_store(url)
        try:
            # A server never started: the seeded endpoints are searched, never called.
            fleet = Fleet(count, 60, datetime.now(UTC), "orders/fetch-")
            await seed(store, EndpointServer(), fleet)

            async def one(query: str) -> tuple[float, float]:
                started, spent = time.perf_counter(), time.thread_time()
                await search_endpoints(
                    store.reading,
                    embedder,
                    query,
                    uow=store.unit_of_work,
                    now=datetime.now(UTC),
                    cache=cache,
                )
                return (time.perf_counter() - started) * 1000, (time.thread_time() - spent) * 1000

            first, _ = await one("fetch the orders")
            timed = [await one(f"orders of endpoint {i}") for i in range(LATENCY_QUERIES)]
        finally:
            await store.close()
    took = sorted(t for t, _ in timed)
    cpu = sorted(c for _, c in timed)
    return {
        "endpoints": count,
        "first_s": round(first / 1000, 2),
        "p50_ms": round(took[len(took) // 2], 2),
        "p95_ms": round(took[int(0.95 * (len(took) - 1))], 2),
        "p95_cpu_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regions", type=int, default=50, help="200 endpoints each")
    parser.add_argument("--served", type=int, default=10_000, help="endpoints stored")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embed = WordLlamaEmbedder().embed_now
    rows = quality(embed)
    fast = speed(embed, args.regions)
    api = asyncio.run(served(args.served))
    if args.json:
        print(json.dumps({"quality": rows, "speed": fast, "served": api}, indent=2))
        return
    version = platform.python_version()
    print(f"bench.search, {datetime.now(UTC):%Y-%m-%d}, {WORDLLAMA_MODEL}, CPython {version}")
    print("| set | intents | ranking | recall@5 | MRR |")
    print("| --- | ---: | --- | ---: | ---: |")
    for r in rows:
        figures = f"{r['recall_at_5']:.3f} | {r['mrr']:.3f}"
        print(f"| {r['set']} | {r['intents']} | {r['ranking']} | {figures} |")
    f = fast
    print()
    print(f"{f['endpoints']:,} endpoints, {f['edges']:,} edges: embedded in {f['embed_s']} s, ")
    print(
        f"indexed in {f['index_s']} s ({f['index_cpu_s']} s of CPU), "
        f"index {f['index_mib']} MiB (peak {f['index_peak_mib']} MiB), "
        f"its {f['words']:,} words embedded in {f['words_embed_s']} s"
    )
    print(
        f"hybrid search (query embedded), {f['searches']} searches: p50 {f['p50_ms']} ms, "
        f"p95 {f['p95_ms']} ms wall, p95 {f['p95_cpu_ms']} ms of CPU "
        f"({f['preempted']} involuntary context switches)"
    )
    print(
        f"served search (the API's path, SQLite, {api['endpoints']:,} endpoints): first "
        f"{api['first_s']} s (embed, save, index), then p50 {api['p50_ms']} ms, "
        f"p95 {api['p95_ms']} ms wall, p95 {api['p95_cpu_ms']} ms of CPU"
    )


if __name__ == "__main__":
    main()
