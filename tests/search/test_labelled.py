"""The labelled set: at least 60 intents, and the hybrid ranking better than every single leg
on it (recall@5 and MRR), with the bundled model."""

from __future__ import annotations

from cronpilot.adapters.search.embedders import WordLlamaEmbedder
from tests.search.labelled import LEGS, catalog_set, example_set, measure


async def test_hybrid_beats_every_single_leg_on_the_labelled_set() -> None:
    embed = WordLlamaEmbedder().embed_now
    sets = [await example_set(embed), catalog_set(embed)]
    assert sum(len(s.intents) for s in sets) >= 60
    assert len(sets[1].index.refs) >= 1_000

    def pooled(legs: str) -> tuple[float, float]:
        measured = [(measure(s, embed, LEGS[legs]), len(s.intents)) for s in sets]
        total = sum(n for _, n in measured)
        recall = sum(m.recall_at_5 * n for m, n in measured) / total
        mrr = sum(m.mrr * n for m, n in measured) / total
        return recall, mrr

    figures = {legs: pooled(legs) for legs in LEGS}
    hybrid = figures.pop("hybrid")
    for legs, (recall, mrr) in figures.items():
        assert hybrid[0] >= recall and hybrid[1] > mrr, (legs, figures, hybrid)
