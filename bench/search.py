"""Search quality and speed: recall@5 and MRR of each leg and of the hybrid blend on the
labelled set (`tests/search/labelled.py`: questions about the example jobs, intents over a
generated catalog of 1,000 endpoints), then, on a generated catalog of 10,000 endpoints, the
time to embed and index it, the memory the index holds, and the p95 latency of one search
(embedding the query included).

    python -m bench.search [--endpoints-regions 50] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from cronpilot.adapters.search.embedders import WORDLLAMA_MODEL, WordLlamaEmbedder
from cronpilot.domain.search import SearchIndex, checked_query
from tests.search.catalog import catalog
from tests.search.labelled import LEGS, LabelledSet, catalog_set, example_set, measure

LATENCY_QUERIES = 200


def quality(embed: Any) -> list[dict[str, Any]]:
    sets: list[LabelledSet] = [asyncio.run(example_set(embed)), catalog_set(embed)]
    rows = []
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
    for name in LEGS:
        mine = [r for r in rows if r["ranking"] == name]
        rows.append(
            {
                "set": "all",
                "intents": total,
                "ranking": name,
                "recall_at_5": round(sum(r["recall_at_5"] * r["intents"] for r in mine) / total, 3),
                "mrr": round(sum(r["mrr"] * r["intents"] for r in mine) / total, 3),
            }
        )
    return rows


def speed(embed: Any, regions: int) -> dict[str, Any]:
    made = catalog(regions, intents=LATENCY_QUERIES)
    started = time.perf_counter()
    vectors = embed([t.text for t in made.texts])
    embedded = time.perf_counter() - started
    tracemalloc.start()
    started = time.perf_counter()
    index = SearchIndex(
        made.texts, made.edges, dict(zip([t.ref for t in made.texts], vectors, strict=True))
    )
    built = time.perf_counter() - started
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    took, cpu = [], []
    for intent, _ in made.intents:
        started, spent = time.perf_counter(), time.thread_time()
        query = checked_query(intent)
        index.search(query, embed([query])[0], limit=10)
        took.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - spent) * 1000)
    took.sort()
    cpu.sort()
    return {
        "endpoints": len(made.texts),
        "edges": len(made.edges),
        "embed_s": round(embedded, 2),
        "index_s": round(built, 2),
        "index_mib": round(held / 2**20, 1),
        "index_peak_mib": round(peak / 2**20, 1),
        "searches": len(took),
        "p50_ms": round(took[len(took) // 2], 2),
        "p95_ms": round(took[int(0.95 * (len(took) - 1))], 2),
        "p95_cpu_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regions", type=int, default=50, help="200 endpoints each")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embed = WordLlamaEmbedder().embed_now
    rows = quality(embed)
    fast = speed(embed, args.regions)
    if args.json:
        print(json.dumps({"quality": rows, "speed": fast}, indent=2))
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
        f"indexed in {f['index_s']} s, index {f['index_mib']} MiB (peak {f['index_peak_mib']} MiB)"
    )
    print(
        f"hybrid search (query embedded), {f['searches']} searches: p50 {f['p50_ms']} ms, "
        f"p95 {f['p95_ms']} ms wall, p95 {f['p95_cpu_ms']} ms of CPU"
    )


if __name__ == "__main__":
    main()
