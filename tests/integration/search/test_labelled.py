"""The labelled set: at least 60 intents, and the hybrid ranking better than every single leg
on it (recall@5 and MRR), with the bundled model; and so on the held-out set the blend was
checked on first (decision 0033)."""

from __future__ import annotations

from collections.abc import Sequence

from cronpilot.adapters.search.embedders import WordLlamaEmbedder
from tests.integration.search.labelled import (
    LEGS,
    Embed,
    LabelledSet,
    catalog_set,
    example_set,
    held_out_set,
    measure,
)


def _pooled(sets: Sequence[LabelledSet], embed: Embed, legs: str) -> tuple[float, float]:
    measured = [(measure(s, embed, LEGS[legs]), len(s.intents)) for s in sets]
    total = sum(n for _, n in measured)
    recall = sum(m.recall_at_5 * n for m, n in measured) / total
    mrr = sum(m.mrr * n for m, n in measured) / total
    return recall, mrr


async def test_hybrid_beats_every_single_leg_on_the_labelled_and_held_out_sets() -> None:
    embed = WordLlamaEmbedder().embed_now
    sets = [await example_set(embed), catalog_set(embed)]
    assert sum(len(s.intents) for s in sets) >= 60
    assert len(sets[1].index.refs) >= 1_000
    held_out = held_out_set(sets[1])
    assert len(held_out.intents) == 150
    assert not set(held_out.intents) & set(sets[1].intents)
    for measured in (sets, [held_out]):
        figures = {legs: _pooled(measured, embed, legs) for legs in LEGS}
        hybrid = figures.pop("hybrid")
        for legs, (recall, mrr) in figures.items():
            assert hybrid[0] > recall and hybrid[1] > mrr, (legs, figures, hybrid)
