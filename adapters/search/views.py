"""A search result as the CLI's `--json`, the API, the MCP tool and the console show it: one
object per endpoint, best first, with the parts that explain its score and the blend's
weights."""

from __future__ import annotations

from typing import Any

from cronpilot.domain.search import SearchResult


def weights_view(result: SearchResult) -> dict[str, Any]:
    w = result.weights
    return {
        "alpha": w.alpha,
        "semantic": round(w.alpha * w.semantic, 3),
        "lexical": round(w.alpha * w.lexical, 3),
        "graph": round(w.graph, 3),
        "density": w.density,
    }


def hits_view(result: SearchResult) -> list[dict[str, Any]]:
    """`score` = weights.semantic x semantic + weights.lexical x lexical + weights.graph x graph."""
    weights = weights_view(result)
    return [
        {
            "endpoint": hit.ref,
            "score": hit.score,
            "semantic": hit.semantic,
            "lexical": hit.lexical,
            "graph": hit.graph,
            "community": hit.community,
            "weights": weights,
        }
        for hit in result.hits
    ]
