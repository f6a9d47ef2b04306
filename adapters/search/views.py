"""A search result as the CLI's `--json`, the API, the MCP tool and the console show it: one
object per endpoint, best first, with the parts that explain its score and the blend's
weights, and the query's words the lexical leg matched by meaning."""

from __future__ import annotations

from typing import Any

from cronpilot.domain.search.search import SearchResult


def weights_view(result: SearchResult, alpha: float | None = None) -> dict[str, Any]:
    """The legs' weights at `alpha` (an endpoint's own), or at the mean density's."""
    w = result.weights
    alpha = w.alpha if alpha is None else alpha
    return {
        "alpha": alpha,
        "semantic": round(alpha * w.semantic, 3),
        "lexical": round(alpha * w.lexical, 3),
        "graph": round(1 - alpha, 3),
        "density": w.density,
    }


def hits_view(result: SearchResult) -> list[dict[str, Any]]:
    """`score` = weights.semantic x semantic + weights.lexical x lexical + weights.graph x graph,
    with each endpoint's own weights (its alpha follows the links around it)."""
    return [
        {
            "endpoint": hit.ref,
            "score": hit.score,
            "semantic": hit.semantic,
            "lexical": hit.lexical,
            "graph": hit.graph,
            "community": hit.community,
            "weights": weights_view(result, hit.alpha),
        }
        for hit in result.hits
    ]


def related_view(result: SearchResult) -> dict[str, list[dict[str, Any]]]:
    """The query's words the index lacks, each with the indexed words the lexical leg matched
    for it by meaning and their similarity (its lexical score counts them times that)."""
    return {
        word: [{"word": other, "similarity": similarity} for other, similarity in near]
        for word, near in result.related.items()
    }


def result_view(result: SearchResult) -> dict[str, Any]:
    """The whole result, as the API and the MCP tool answer: the hits, the weights, the words
    matched by meaning, and `notes` on a leg that is missing."""
    return {
        "items": hits_view(result),
        "weights": weights_view(result),
        "related": related_view(result),
        "notes": result.notes,
    }
